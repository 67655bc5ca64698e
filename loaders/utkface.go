package loaders

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"image"
	"image/jpeg"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/fairdp/fairdp/atomicfile"

	"github.com/disintegration/imaging"
)

// UTKFace attribute codes as the file names spell them.
var (
	utkRaceNames   = []string{"White", "Black", "Asian", "Indian", "Others"}
	utkGenderNames = []string{"male", "female"}
	// utkAgeUpper are the upper ends of DP-FERMI's nine age buckets
	// (0,10], (10,15], (15,20], (20,25], (25,30], (30,40], (40,50], (50,60], (60,120].
	utkAgeUpper = []int{10, 15, 20, 25, 30, 40, 50, 60, 120}
)

const (
	// utkDefaultSize is DP-FERMI's input size (Lowy et al. 2022: 128×128).
	utkDefaultSize = 128
	// utkMaxSize bounds Size so that a typo cannot ask for terabytes.
	utkMaxSize = 1024
	// utkMaxSourcePixels rejects JPEGs whose header claims an absurd size
	// before they are decoded (UTKFace images are 200×200).
	utkMaxSourcePixels = 1 << 26
)

// utkFilter is the resampling filter: imaging.Linear is a bilinear (tent)
// filter whose support widens when shrinking, i.e. the antialiased bilinear
// resize PIL and torchvision use, which is what DP-FERMI's reference code fed
// its network; it is also about twice as fast as Lanczos here.
var utkFilter = imaging.Linear

// utkFilterName enters the cache key, so changing the filter invalidates caches.
const utkFilterName = "linear"

// UTKOptions configure LoadUTKFace. The zero value gives DP-FERMI's setup:
// 128×128 images, age buckets as labels, race as the sensitive attribute.
type UTKOptions struct {
	Size        int    // output width and height in pixels (default 128)
	Label       string // "age" (9 buckets, default) or "gender"
	Sensitive   string // "race" (5 groups, default) or "gender"
	Standardise bool   // set Dataset.Standardise with Mean/Std of all loaded images
	Workers     int    // parallel decoders (default GOMAXPROCS)
	// Limit > 0 loads only Limit usable images, evenly spaced in name order
	// (every len/Limit-th), for quick runs. Names start with the age, so
	// the first Limit files would hold a few ages only; a spread subset
	// spans every age bucket and race.
	Limit int
	// Progress, if set, is called from one goroutine after each decoded image
	// with the number done and the total to decode.
	Progress func(done, total int)
	// CacheDir, if set, keeps the decoded pixels in a file there keyed by the
	// folder listing (names, sizes, modification times), Size, Limit and
	// Label, so the next load skips decoding; a damaged cache is rebuilt.
	CacheDir string
}

// UTKSkip names a file LoadUTKFace did not load and why.
type UTKSkip struct {
	Name   string
	Reason string
}

// UTKStats reports what LoadUTKFace did, so a run can say how many images it
// skipped and whether it decoded them or reused a cache.
type UTKStats struct {
	Files     int       // regular files in the folder
	Loaded    int       // images in the Dataset
	Skipped   []UTKSkip // files not loaded (bad names, ages outside the buckets, undecodable JPEGs), in name order
	CacheFile string    // the cache file used or written ("" without CacheDir)
	CacheHit  bool      // pixels came from the cache
	CacheErr  error     // a cache problem that did not stop the load (damaged cache rebuilt, write failed)
}

// ParseUTKName reads age, gender (0 male, 1 female) and race (0 White,
// 1 Black, 2 Asian, 3 Indian, 4 Others) from a UTKFace file name
// "age_gender_race_datetime.jpg.chip.jpg". It accepts the data set's known
// oddities (a space before ".jpg", a missing dot before "jpg.chip.jpg") and
// rejects names without a race field. A directory part is ignored.
func ParseUTKName(name string) (age, gender, race int, err error) {
	base := filepath.Base(name)
	bad := func(format string, args ...any) (int, int, int, error) {
		return 0, 0, 0, fmt.Errorf("UTKFace name %q: %s", base, fmt.Sprintf(format, args...))
	}
	fields := strings.SplitN(base, "_", 4)
	if len(fields) < 4 {
		if len(fields) == 3 {
			return bad("only 3 '_'-separated fields: no race field (want age_gender_race_datetime.jpg.chip.jpg)")
		}
		return bad("want age_gender_race_datetime.jpg.chip.jpg")
	}
	age, ok := parseDigits(fields[0], 3)
	if !ok {
		return bad("age field %q: want 1 to 3 digits", fields[0])
	}
	gender, ok = parseDigits(fields[1], 1)
	if !ok || gender > 1 {
		return bad("gender field %q: want 0 (male) or 1 (female)", fields[1])
	}
	race, ok = parseDigits(fields[2], 1)
	if !ok || race > 4 {
		return bad("race field %q: want 0..4 (White, Black, Asian, Indian, Others)", fields[2])
	}
	rest := fields[3]
	if rest == "" || rest[0] < '0' || rest[0] > '9' {
		return bad("datetime field %q: want digits", rest)
	}
	if !hasJPGSuffix(rest) {
		return bad("want a name ending in .jpg")
	}
	return age, gender, race, nil
}

// parseDigits parses 1..maxLen ASCII digits (no sign, no spaces).
func parseDigits(s string, maxLen int) (int, bool) {
	if len(s) == 0 || len(s) > maxLen {
		return 0, false
	}
	v := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		v = 10*v + int(s[i]-'0')
	}
	return v, true
}

func hasJPGSuffix(name string) bool {
	return len(name) >= 4 && strings.EqualFold(name[len(name)-4:], ".jpg")
}

// UTKAgeBucket maps an age in years to DP-FERMI's nine buckets
// (0,10], (10,15], …, (50,60], (60,120] (Lowy et al. 2022); ok is false outside (0,120].
func UTKAgeBucket(age int) (bucket int, ok bool) {
	if age <= 0 {
		return 0, false
	}
	for b, upper := range utkAgeUpper {
		if age <= upper {
			return b, true
		}
	}
	return 0, false
}

func utkAgeBucketNames() []string {
	names := make([]string, len(utkAgeUpper))
	lower := 0
	for b, upper := range utkAgeUpper {
		names[b] = fmt.Sprintf("(%d,%d]", lower, upper)
		lower = upper
	}
	return names
}

// utkImage is one usable file: its position in the sorted folder listing
// and the attributes its name carries.
type utkImage struct {
	row               int
	name              string
	age, gender, race int
	label, group      int
}

// utkListing is the parse-only view of a folder: usable images, skipped files
// and (when a cache is wanted) a hash of the listing.
type utkListing struct {
	files   int
	images  []utkImage
	skipped []UTKSkip
	hash    [sha256.Size]byte
}

// utkResolved is UTKOptions with defaults filled in and values checked.
type utkResolved struct {
	UTKOptions
	labelNames, groupNames []string
}

func resolveUTKOptions(opts UTKOptions) (utkResolved, error) {
	r := utkResolved{UTKOptions: opts}
	if r.Size == 0 {
		r.Size = utkDefaultSize
	}
	if r.Size < 1 || r.Size > utkMaxSize {
		return r, fmt.Errorf("UTKFace options: Size = %d: want 1..%d pixels (0 means %d)", opts.Size, utkMaxSize, utkDefaultSize)
	}
	if r.Label == "" {
		r.Label = "age"
	}
	if r.Sensitive == "" {
		r.Sensitive = "race"
	}
	switch r.Label {
	case "age":
		r.labelNames = utkAgeBucketNames()
	case "gender":
		r.labelNames = utkGenderNames
	default:
		return r, fmt.Errorf("UTKFace options: Label = %q: want \"age\" or \"gender\"", opts.Label)
	}
	switch r.Sensitive {
	case "race":
		r.groupNames = utkRaceNames
	case "gender":
		r.groupNames = utkGenderNames
	default:
		return r, fmt.Errorf("UTKFace options: Sensitive = %q: want \"race\" or \"gender\"", opts.Sensitive)
	}
	if r.Label == r.Sensitive {
		return r, fmt.Errorf("UTKFace options: Label and Sensitive are both %q: want different attributes", r.Label)
	}
	if r.Limit < 0 {
		return r, fmt.Errorf("UTKFace options: Limit = %d: want 0 (all) or a positive count", opts.Limit)
	}
	if r.Workers <= 0 {
		r.Workers = runtime.GOMAXPROCS(0)
	}
	return r, nil
}

// scanUTKDir lists dir in name order and parses every file name, without
// decoding anything. Row numbers count all regular files (skipped ones too).
func scanUTKDir(dir string, opts utkResolved) (*utkListing, error) {
	entries, err := os.ReadDir(dir) // sorted by file name
	if err != nil {
		return nil, fmt.Errorf("UTKFace folder: %w", err)
	}
	l := &utkListing{}
	var h hash.Hash
	if opts.CacheDir != "" {
		h = sha256.New()
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		name := e.Name()
		row := l.files
		l.files++
		if h != nil {
			info, err := e.Info()
			if err != nil {
				return nil, fmt.Errorf("UTKFace folder %s: %w", dir, err)
			}
			fmt.Fprintf(h, "%q %d %d\n", name, info.Size(), info.ModTime().UnixNano())
		}
		if !hasJPGSuffix(name) {
			l.skipped = append(l.skipped, UTKSkip{name, "not a .jpg file"})
			continue
		}
		age, gender, race, err := ParseUTKName(name)
		if err != nil {
			l.skipped = append(l.skipped, UTKSkip{name, err.Error()})
			continue
		}
		img := utkImage{row: row, name: name, age: age, gender: gender, race: race}
		switch opts.Label {
		case "age":
			b, ok := UTKAgeBucket(age)
			if !ok {
				l.skipped = append(l.skipped, UTKSkip{name, fmt.Sprintf("age %d outside the age buckets (0,120]", age)})
				continue
			}
			img.label = b
		case "gender":
			img.label = gender
		}
		switch opts.Sensitive {
		case "race":
			img.group = race
		case "gender":
			img.group = gender
		}
		l.images = append(l.images, img)
	}
	if h != nil {
		h.Sum(l.hash[:0])
	}
	return l, nil
}

// LoadUTKFace loads a folder of UTKFace images (file names
// age_gender_race_datetime.jpg.chip.jpg) as an image Dataset: each JPEG is
// decoded once, resized to Size×Size with a bilinear filter (imaging.Linear)
// and stored as 3×Size×Size bytes in Pix. Files are taken in name order;
// Row[i] is the image's position among the folder's files and
// Sources[SourceOf[i]] its path. Files whose names lack an attribute, whose
// age falls outside the buckets, or that do not decode are skipped and listed
// in UTKStats.Skipped; an error is returned only when the folder cannot be
// read, the options are wrong, or nothing is left to load.
//
// With Standardise, Mean/Std are set from all loaded images; replace them
// with ChannelStats on the training split before training.
func LoadUTKFace(dir string, opts UTKOptions) (*Dataset, UTKStats, error) {
	var stats UTKStats
	o, err := resolveUTKOptions(opts)
	if err != nil {
		return nil, stats, err
	}
	l, err := scanUTKDir(dir, o)
	if err != nil {
		return nil, stats, err
	}
	stats.Files = l.files
	stats.Skipped = l.skipped
	images := spread(l.images, o.Limit)
	if len(images) == 0 {
		return nil, stats, fmt.Errorf("UTKFace folder %s: no usable images among %d files (%d skipped)", dir, l.files, len(l.skipped))
	}

	per := 3 * o.Size * o.Size
	var (
		pix   []uint8
		fails []UTKSkip
		key   [sha256.Size]byte
	)
	if o.CacheDir != "" {
		key = utkCacheKey(l.hash, o)
		stats.CacheFile = filepath.Join(o.CacheDir, "utkface-"+hex.EncodeToString(key[:12])+".cache")
		pix, fails, err = readUTKCache(stats.CacheFile, key, o.Size, images)
		switch {
		case err == nil:
			stats.CacheHit = true
			if o.Progress != nil {
				o.Progress(len(images), len(images))
			}
		case errors.Is(err, fs.ErrNotExist):
		default:
			stats.CacheErr = fmt.Errorf("cache %s unusable, rebuilt: %w", stats.CacheFile, err)
		}
	}
	if !stats.CacheHit {
		pix, fails = decodeUTKImages(dir, images, o, per)
		if o.CacheDir != "" {
			if err := writeUTKCache(stats.CacheFile, key, o.Size, images, fails, pix); err != nil {
				stats.CacheErr = errors.Join(stats.CacheErr, fmt.Errorf("writing cache: %w", err))
			}
		}
	}

	failed := make(map[string]string, len(fails))
	for _, f := range fails {
		failed[f.Name] = f.Reason
	}
	n := len(images) - len(fails)
	if n == 0 {
		stats.Skipped = mergeSkips(stats.Skipped, fails)
		return nil, stats, fmt.Errorf("UTKFace folder %s: none of %d images decoded (first: %s: %s)", dir, len(images), fails[0].Name, fails[0].Reason)
	}
	d := &Dataset{
		Name:       "utkface",
		Pix:        pix[:n*per],
		C:          3,
		H:          o.Size,
		W:          o.Size,
		Labels:     make([]int, 0, n),
		LabelNames: o.labelNames,
		Groups:     make([]int, 0, n),
		GroupNames: o.groupNames,
		Row:        make([]int, 0, n),
		SourceOf:   make([]int, 0, n),
		Sources:    make([]string, 0, n),
	}
	for _, img := range images {
		if _, bad := failed[img.name]; bad {
			continue
		}
		d.Labels = append(d.Labels, img.label)
		d.Groups = append(d.Groups, img.group)
		d.Row = append(d.Row, img.row)
		d.SourceOf = append(d.SourceOf, len(d.Sources))
		d.Sources = append(d.Sources, filepath.Join(dir, img.name))
	}
	stats.Loaded = n
	stats.Skipped = mergeSkips(stats.Skipped, fails)
	d.Notes = utkNotes(stats, o)
	if o.Standardise {
		d.Standardise = true
		d.Mean, d.Std = ChannelStats(d, nil)
	}
	return d, stats, nil
}

// utkNotes says for reports how the images were made and what was left out.
func utkNotes(stats UTKStats, o utkResolved) []string {
	how := fmt.Sprintf("decoded %d JPEGs, resized to %d×%d with a bilinear filter", stats.Loaded, o.Size, o.Size)
	if stats.CacheHit {
		how = fmt.Sprintf("%d images resized to %d×%d read from the cache %s", stats.Loaded, o.Size, o.Size, stats.CacheFile)
	}
	notes := []string{how}
	if o.Limit > 0 {
		notes = append(notes, fmt.Sprintf("limited to %d usable images evenly spaced in name order", o.Limit))
	}
	if k := len(stats.Skipped); k > 0 {
		var names []string
		for _, s := range stats.Skipped[:min(k, 5)] {
			names = append(names, s.Name)
		}
		more := ""
		if k > 5 {
			more = ", …"
		}
		notes = append(notes, fmt.Sprintf("skipped %d of %d files (%s%s)", k, stats.Files, strings.Join(names, ", "), more))
	}
	if o.Standardise {
		notes = append(notes, "channel means and stds computed on all loaded images; refit them on the training split")
	}
	return notes
}

// spread returns limit elements of all evenly spaced by position (element
// i·len/limit for i < limit), or all of them when limit is 0 or not smaller.
func spread[E any](all []E, limit int) []E {
	if limit <= 0 || len(all) <= limit {
		return all
	}
	out := make([]E, limit)
	for i := range out {
		out[i] = all[i*len(all)/limit]
	}
	return out
}

// mergeSkips adds decode failures to the name-level skips, keeping name order.
func mergeSkips(a, b []UTKSkip) []UTKSkip {
	if len(b) == 0 {
		return a
	}
	out := make([]UTKSkip, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		if j == len(b) || (i < len(a) && a[i].Name < b[j].Name) {
			out = append(out, a[i])
			i++
		} else {
			out = append(out, b[j])
			j++
		}
	}
	return out
}

// decodeUTKImages decodes images in parallel into one CHW byte tensor, packed
// in listing order with undecodable images left out (they are returned as
// skips, in order).
func decodeUTKImages(dir string, images []utkImage, o utkResolved, per int) ([]uint8, []UTKSkip) {
	pix := make([]uint8, len(images)*per)
	errs := make([]error, len(images))
	jobs := make(chan int)
	done := make(chan int)
	workers := min(o.Workers, len(images))
	for w := 0; w < workers; w++ {
		go func() {
			for i := range jobs {
				errs[i] = decodeUTKImage(filepath.Join(dir, images[i].name), o.Size, pix[i*per:(i+1)*per])
				done <- i
			}
		}()
	}
	go func() {
		for i := range images {
			jobs <- i
		}
		close(jobs)
	}()
	for k := 1; k <= len(images); k++ {
		<-done
		if o.Progress != nil {
			o.Progress(k, len(images))
		}
	}

	var fails []UTKSkip
	n := 0
	for i, err := range errs {
		if err != nil {
			fails = append(fails, UTKSkip{images[i].name, err.Error()})
			continue
		}
		if n != i {
			copy(pix[n*per:(n+1)*per], pix[i*per:(i+1)*per])
		}
		n++
	}
	return pix[:n*per], fails
}

// decodeUTKImage decodes one JPEG, resizes it to size×size and writes it
// channel-major (R plane, G plane, B plane) into dst.
func decodeUTKImage(path string, size int, dst []uint8) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	cfg, err := jpeg.DecodeConfig(bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("not a readable JPEG: %w", err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 || int64(cfg.Width)*int64(cfg.Height) > utkMaxSourcePixels {
		return fmt.Errorf("JPEG is %d×%d pixels: want at most %d pixels", cfg.Width, cfg.Height, utkMaxSourcePixels)
	}
	img, err := jpeg.Decode(bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("not a readable JPEG: %w", err)
	}
	var out *image.NRGBA
	if b := img.Bounds(); b.Dx() == b.Dy() {
		out = imaging.Resize(img, size, size, utkFilter)
	} else { // not in UTKFace, but keep the aspect ratio: crop the centre
		out = imaging.Fill(img, size, size, imaging.Center, utkFilter)
	}
	plane := size * size
	r, g, b := dst[:plane], dst[plane:2*plane], dst[2*plane:3*plane]
	for y := 0; y < size; y++ {
		line := out.Pix[y*out.Stride : y*out.Stride+4*size]
		for x := 0; x < size; x++ {
			o := y*size + x
			r[o], g[o], b[o] = line[4*x], line[4*x+1], line[4*x+2]
		}
	}
	return nil
}

// ImageNetMean and ImageNetStd are the per-channel (R, G, B) statistics of
// ImageNet that torchvision normalises with. They are public, so
// standardising a private image set with them costs no privacy, unlike
// ChannelStats on the private training split (which would be a release).
var (
	ImageNetMean = []float64{0.485, 0.456, 0.406}
	ImageNetStd  = []float64{0.229, 0.224, 0.225}
)

// ChannelStats returns the per-channel mean and standard deviation of the
// pixels of records idx (all records when idx is nil), on the p/255 scale
// that Dataset.Standardise uses, so the caller can fix them on the training
// split. A channel with zero spread gets std 1 so that standardising it does
// not divide by zero. It returns nil, nil for a Dataset without images and,
// like slice indexing, panics on an index outside 0..N-1.
func ChannelStats(d *Dataset, idx []int) (mean, std []float64) {
	if d == nil || d.C <= 0 || len(d.Pix) == 0 {
		return nil, nil
	}
	plane := d.H * d.W
	per := d.C * plane
	// Exact per-value counts, then mean and variance from 256 bins: no
	// rounding drift over a billion pixels.
	counts := make([][256]int64, d.C)
	add := func(i int) {
		img := d.Pix[i*per : (i+1)*per]
		for c := range counts {
			h := &counts[c]
			for _, p := range img[c*plane : (c+1)*plane] {
				h[p]++
			}
		}
	}
	if idx == nil {
		for i := 0; i < len(d.Pix)/per; i++ {
			add(i)
		}
	} else {
		for _, i := range idx {
			add(i)
		}
	}
	mean = make([]float64, d.C)
	std = make([]float64, d.C)
	for c, h := range counts {
		var n, sum int64
		for v, k := range h {
			n += k
			sum += int64(v) * k
		}
		if n == 0 {
			mean[c], std[c] = 0, 1
			continue
		}
		m := float64(sum) / float64(n)
		var ss float64
		for v, k := range h {
			dv := float64(v) - m
			ss += dv * dv * float64(k)
		}
		mean[c] = m / 255
		std[c] = math.Sqrt(ss/float64(n)) / 255
		if std[c] == 0 {
			std[c] = 1
		}
	}
	return mean, std
}

// UTKFace pixel cache: a versioned header, the names of the decoded images
// and the undecodable ones with reasons, the pixels, and a CRC-32C of all of
// it. Anything that does not match exactly is treated as absent.
const utkCacheMagic = "FDPUTK2\n" // 2: Limit selects evenly spaced images

func utkCacheKey(listing [sha256.Size]byte, o utkResolved) [sha256.Size]byte {
	h := sha256.New()
	fmt.Fprintf(h, "%s listing=%x size=%d limit=%d label=%s filter=%s",
		utkCacheMagic, listing, o.Size, o.Limit, o.Label, utkFilterName)
	var k [sha256.Size]byte
	h.Sum(k[:0])
	return k
}

var utkCRC = crc32.MakeTable(crc32.Castagnoli)

func writeUTKCache(path string, key [sha256.Size]byte, size int, images []utkImage, fails []UTKSkip, pix []uint8) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return atomicfile.Write(path, func(tmp io.Writer) error {
		crc := crc32.New(utkCRC)
		w := bufio.NewWriterSize(io.MultiWriter(tmp, crc), 1<<20)
		failed := make(map[string]bool, len(fails))
		for _, f := range fails {
			failed[f.Name] = true
		}
		u32 := func(v int) { binary.Write(w, binary.LittleEndian, uint32(v)) }
		str := func(s string) { u32(len(s)); w.WriteString(s) }
		w.WriteString(utkCacheMagic)
		w.Write(key[:])
		u32(size)
		u32(len(images) - len(fails))
		u32(len(fails))
		for _, img := range images {
			if !failed[img.name] {
				str(img.name)
			}
		}
		for _, f := range fails {
			str(f.Name)
			str(f.Reason)
		}
		w.Write(pix)
		if err := w.Flush(); err != nil {
			return err
		}
		return binary.Write(tmp, binary.LittleEndian, crc.Sum32())
	})
}

// readUTKCache returns the cached pixels and decode failures if the file at
// path was written for this key and exactly these images.
func readUTKCache(path string, key [sha256.Size]byte, size int, images []utkImage) ([]uint8, []UTKSkip, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<20)
	crc := crc32.New(utkCRC)
	r := io.TeeReader(br, crc)

	head := make([]byte, len(utkCacheMagic)+len(key))
	if _, err := io.ReadFull(r, head); err != nil {
		return nil, nil, fmt.Errorf("header: %w", err)
	}
	if string(head[:len(utkCacheMagic)]) != utkCacheMagic || !bytes.Equal(head[len(utkCacheMagic):], key[:]) {
		return nil, nil, errors.New("header: wrong format version or key")
	}
	var hdr [3]uint32
	if err := binary.Read(r, binary.LittleEndian, &hdr); err != nil {
		return nil, nil, fmt.Errorf("header: %w", err)
	}
	if int(hdr[0]) != size || int64(hdr[1])+int64(hdr[2]) != int64(len(images)) {
		return nil, nil, fmt.Errorf("header: size %d with %d+%d images, want size %d with %d images", hdr[0], hdr[1], hdr[2], size, len(images))
	}
	nOK, nFail := int(hdr[1]), int(hdr[2])
	str := func() (string, error) {
		var n uint32
		if err := binary.Read(r, binary.LittleEndian, &n); err != nil {
			return "", err
		}
		if n > 1<<16 {
			return "", fmt.Errorf("string of %d bytes", n)
		}
		b := make([]byte, n)
		_, err := io.ReadFull(r, b)
		return string(b), err
	}
	okNames := make([]string, nOK)
	for i := range okNames {
		if okNames[i], err = str(); err != nil {
			return nil, nil, fmt.Errorf("image names: %w", err)
		}
	}
	fails := make([]UTKSkip, nFail)
	for i := range fails {
		if fails[i].Name, err = str(); err != nil {
			return nil, nil, fmt.Errorf("decode failures: %w", err)
		}
		if fails[i].Reason, err = str(); err != nil {
			return nil, nil, fmt.Errorf("decode failures: %w", err)
		}
	}
	// The two name lists must interleave back into exactly images.
	i, j := 0, 0
	for _, img := range images {
		switch {
		case i < nOK && okNames[i] == img.name:
			i++
		case j < nFail && fails[j].Name == img.name:
			j++
		default:
			return nil, nil, fmt.Errorf("image list does not match the folder at %q", img.name)
		}
	}
	pix := make([]uint8, nOK*3*size*size)
	if _, err := io.ReadFull(r, pix); err != nil {
		return nil, nil, fmt.Errorf("pixels: %w", err)
	}
	want := crc.Sum32()
	var got uint32
	if err := binary.Read(br, binary.LittleEndian, &got); err != nil {
		return nil, nil, fmt.Errorf("checksum: %w", err)
	}
	if got != want {
		return nil, nil, fmt.Errorf("checksum %08x, computed %08x", got, want)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		return nil, nil, errors.New("trailing bytes after the checksum")
	}
	return pix, fails, nil
}
