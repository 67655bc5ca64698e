package loaders

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/disintegration/imaging"
)

// The UTKFace fixture (testdata/utkface) in name order; Row is the position.
// Each JPEG has four coloured quadrants; the bottom-right one depends on the
// row, so images are told apart.
var utkFixture = []struct {
	name string
	w, h int    // 0: not a JPEG written by the generator
	body string // content of non-JPEG files
}{
	{name: "0_1_2_20170110000000001.jpg.chip.jpg", w: 32, h: 32},     // age 0: no age bucket
	{name: "10_1_1_20170110000000002.jpg.chip.jpg", w: 32, h: 32},    // (0,10]
	{name: "11_0_2_20170110000000003.jpg.chip.jpg", w: 32, h: 32},    // (10,15]
	{name: "1_0_0_20170110000000004.jpg.chip.jpg", w: 32, h: 32},     // (0,10]
	{name: "24_0_1_20170116220224657 .jpg.chip.jpg", w: 32, h: 32},   // space before .jpg: accepted
	{name: "26_1_2_20170110000000008.jpg.chip.jpg", w: 48, h: 32},    // not square: centre crop
	{name: "30_0_3_20170110000000005.jpg.chip.jpg", body: "no JPEG"}, // undecodable
	{name: "39_1_20170116174525125.jpg.chip.jpg", w: 32, h: 32},      // no race field
	{name: "55_0_0_20170116232725357jpg.chip.jpg", w: 32, h: 32},     // missing dot: accepted
	{name: "60_1_3_20170110000000006.jpg.chip.jpg", w: 32, h: 32},    // (50,60]
	{name: "61_1_4_20170110000000007.jpg.chip.jpg", w: 32, h: 32},    // (60,120]
	{name: "README.txt", body: "UTKFace-style fixture for fairdp/loaders tests\n"},
}

var (
	utkTL = color.NRGBA{220, 40, 40, 255}
	utkTR = color.NRGBA{40, 200, 60, 255}
	utkBL = color.NRGBA{30, 50, 210, 255}
)

func utkBR(row int) color.NRGBA {
	return color.NRGBA{uint8(20*row + 10), uint8(240 - 20*row), 128, 255}
}

func utkFixtureImage(row, w, h int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			c := utkTL
			switch {
			case x >= w/2 && y < h/2:
				c = utkTR
			case x < w/2 && y >= h/2:
				c = utkBL
			case x >= w/2 && y >= h/2:
				c = utkBR(row)
			}
			img.SetNRGBA(x, y, c)
		}
	}
	return img
}

func TestWriteUTKFixtures(t *testing.T) {
	if !*updateImageFixtures {
		t.Skip("fixture generator: run with -update-image-fixtures to rewrite testdata/utkface")
	}
	dir := filepath.Join("testdata", "utkface")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for row, f := range utkFixture {
		b := []byte(f.body)
		if f.w > 0 {
			var buf bytes.Buffer
			if err := jpeg.Encode(&buf, utkFixtureImage(row, f.w, f.h), &jpeg.Options{Quality: 95}); err != nil {
				t.Fatal(err)
			}
			b = buf.Bytes()
		}
		if err := os.WriteFile(filepath.Join(dir, f.name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestParseUTKName(t *testing.T) {
	tests := []struct {
		name              string
		age, gender, race int
		err               string // "" = accepted
	}{
		{"100_0_0_20170112213500903.jpg.chip.jpg", 100, 0, 0, ""},
		{"1_1_4_20161221193016140.jpg.chip.jpg", 1, 1, 4, ""},
		{"24_0_1_20170116220224657 .jpg.chip.jpg", 24, 0, 1, ""},
		{"55_0_0_20170116232725357jpg.chip.jpg", 55, 0, 0, ""},
		{"UTKFace/26_1_3_20170119180600000.jpg.chip.jpg", 26, 1, 3, ""},
		{"9_1_2_20161219204347420.jpg", 9, 1, 2, ""},
		{"39_1_20170116174525125.jpg.chip.jpg", 0, 0, 0, "only 3 '_'-separated fields: no race field"},
		{"61_1_20170109142408075.jpg.chip.jpg", 0, 0, 0, "no race field"},
		{"24_0_5_20170116220224657.jpg.chip.jpg", 0, 0, 0, `race field "5": want 0..4`},
		{"24_2_1_20170116220224657.jpg.chip.jpg", 0, 0, 0, `gender field "2": want 0 (male) or 1 (female)`},
		{"x_0_1_20170116220224657.jpg.chip.jpg", 0, 0, 0, `age field "x": want 1 to 3 digits`},
		{"1000_0_1_20170116220224657.jpg.chip.jpg", 0, 0, 0, `age field "1000"`},
		{"-1_0_1_20170116220224657.jpg.chip.jpg", 0, 0, 0, `age field "-1"`},
		{"+1_0_1_20170116220224657.jpg.chip.jpg", 0, 0, 0, `age field "+1"`},
		{"24_0_1_.jpg.chip.jpg", 0, 0, 0, `datetime field ".jpg.chip.jpg": want digits`},
		{"24_0_1_20170116220224657.png", 0, 0, 0, "want a name ending in .jpg"},
		{"24_0_1", 0, 0, 0, "no race field"},
		{"", 0, 0, 0, "want age_gender_race_datetime"},
		{"README.txt", 0, 0, 0, "want age_gender_race_datetime"},
	}
	for _, tc := range tests {
		age, gender, race, err := ParseUTKName(tc.name)
		if tc.err == "" {
			if err != nil || age != tc.age || gender != tc.gender || race != tc.race {
				t.Errorf("ParseUTKName(%q) = %d, %d, %d, %v; want %d, %d, %d", tc.name, age, gender, race, err, tc.age, tc.gender, tc.race)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("ParseUTKName(%q) error = %v, want %q", tc.name, err, tc.err)
		}
	}
}

// DP-FERMI's (Lowy et al. 2022) buckets (0,10], (10,15], (15,20], (20,25],
// (25,30], (30,40], (40,50], (50,60], (60,120].
func TestUTKAgeBucket(t *testing.T) {
	tests := []struct {
		age, bucket int
		ok          bool
	}{
		{0, 0, false}, {-3, 0, false}, {1, 0, true}, {10, 0, true}, {11, 1, true}, {15, 1, true},
		{16, 2, true}, {20, 2, true}, {21, 3, true}, {25, 3, true}, {26, 4, true}, {30, 4, true},
		{31, 5, true}, {40, 5, true}, {41, 6, true}, {50, 6, true}, {51, 7, true}, {60, 7, true},
		{61, 8, true}, {116, 8, true}, {120, 8, true}, {121, 0, false},
	}
	for _, tc := range tests {
		b, ok := UTKAgeBucket(tc.age)
		if b != tc.bucket || ok != tc.ok {
			t.Errorf("UTKAgeBucket(%d) = %d, %v; want %d, %v", tc.age, b, ok, tc.bucket, tc.ok)
		}
	}
	want := []string{"(0,10]", "(10,15]", "(15,20]", "(20,25]", "(25,30]", "(30,40]", "(40,50]", "(50,60]", "(60,120]"}
	if got := utkAgeBucketNames(); !slices.Equal(got, want) {
		t.Errorf("bucket names %v, want %v", got, want)
	}
}

func skipNames(s []UTKSkip) []string {
	var names []string
	for _, k := range s {
		names = append(names, k.Name)
	}
	return names
}

func TestLoadUTKFaceFixture(t *testing.T) {
	dir := filepath.Join("testdata", "utkface")
	d, stats, err := LoadUTKFace(dir, UTKOptions{Size: 8, Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	if d.Name != "utkface" || d.C != 3 || d.H != 8 || d.W != 8 || len(d.Pix) != 8*3*64 {
		t.Fatalf("name %q C,H,W = %d,%d,%d with %d bytes, want 8 images of 3×8×8", d.Name, d.C, d.H, d.W, len(d.Pix))
	}
	if stats.Files != 12 || stats.Loaded != 8 || stats.CacheHit || stats.CacheFile != "" || stats.CacheErr != nil {
		t.Errorf("stats %+v", stats)
	}
	wantSkips := []UTKSkip{
		{"0_1_2_20170110000000001.jpg.chip.jpg", "age 0 outside the age buckets"},
		{"30_0_3_20170110000000005.jpg.chip.jpg", "not a readable JPEG"},
		{"39_1_20170116174525125.jpg.chip.jpg", "no race field"},
		{"README.txt", "not a .jpg file"},
	}
	if len(stats.Skipped) != len(wantSkips) {
		t.Fatalf("skipped %v, want %v", stats.Skipped, wantSkips)
	}
	for i, w := range wantSkips {
		if s := stats.Skipped[i]; s.Name != w.Name || !strings.Contains(s.Reason, w.Reason) {
			t.Errorf("skip %d = %+v, want %s with %q", i, s, w.Name, w.Reason)
		}
	}
	wantRows := []int{1, 2, 3, 4, 5, 8, 9, 10}
	if !slices.Equal(d.Row, wantRows) {
		t.Errorf("rows %v, want %v", d.Row, wantRows)
	}
	if want := []int{0, 1, 0, 3, 4, 7, 7, 8}; !slices.Equal(d.Labels, want) {
		t.Errorf("age buckets %v, want %v", d.Labels, want)
	}
	if want := []int{1, 2, 0, 1, 2, 0, 3, 4}; !slices.Equal(d.Groups, want) {
		t.Errorf("races %v, want %v", d.Groups, want)
	}
	if !slices.Equal(d.GroupNames, []string{"White", "Black", "Asian", "Indian", "Others"}) || len(d.LabelNames) != 9 {
		t.Errorf("names %v %v", d.LabelNames, d.GroupNames)
	}
	for i, row := range d.Row {
		if want := filepath.Join(dir, utkFixture[row].name); d.Sources[d.SourceOf[i]] != want {
			t.Errorf("source of %d = %q, want %q", i, d.Sources[d.SourceOf[i]], want)
		}
	}
	if d.Standardise || d.Mean != nil {
		t.Error("Standardise set without the option")
	}
	if err := d.Validate(); err != nil {
		t.Error(err)
	}
	wantNotes := []string{
		"decoded 8 JPEGs, resized to 8×8 with a bilinear filter",
		"skipped 4 of 12 files (0_1_2_20170110000000001.jpg.chip.jpg, 30_0_3_20170110000000005.jpg.chip.jpg, 39_1_20170116174525125.jpg.chip.jpg, README.txt)",
	}
	if !slices.Equal(d.Notes, wantNotes) {
		t.Errorf("notes %q, want %q", d.Notes, wantNotes)
	}

	// Quadrant centres keep their colours (JPEG and the resize move them a
	// few levels; the tolerance is 6).
	at := func(i, c, y, x int) int { return int(d.Pix[i*3*64+c*64+y*8+x]) }
	for i, row := range d.Row {
		for _, q := range []struct {
			y, x int
			col  color.NRGBA
		}{{1, 1, utkTL}, {1, 6, utkTR}, {6, 1, utkBL}, {6, 6, utkBR(row)}} {
			want := []int{int(q.col.R), int(q.col.G), int(q.col.B)}
			for c := 0; c < 3; c++ {
				if got := at(i, c, q.y, q.x); math.Abs(float64(got-want[c])) > 6 {
					t.Errorf("image %d (%s) channel %d at (%d,%d) = %d, want %d ± 6", i, utkFixture[row].name, c, q.y, q.x, got, want[c])
				}
			}
		}
	}

	// Layout: every byte equals the NRGBA pixel imaging produces, read with
	// At(x, y), so planes, rows and columns are where Dataset says they are.
	for i, row := range d.Row {
		f, err := os.Open(d.Sources[d.SourceOf[i]])
		if err != nil {
			t.Fatal(err)
		}
		src, err := jpeg.Decode(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		ref := imaging.Fill(src, 8, 8, imaging.Center, imaging.Linear)
		for y := 0; y < 8; y++ {
			for x := 0; x < 8; x++ {
				p := ref.NRGBAAt(x, y)
				for c, v := range []uint8{p.R, p.G, p.B} {
					if got := at(i, c, y, x); got != int(v) {
						t.Fatalf("image %d (row %d) channel %d at (%d,%d) = %d, want %d", i, row, c, y, x, got, v)
					}
				}
			}
		}
	}
}

func TestLoadUTKFaceGenderLabel(t *testing.T) {
	d, stats, err := LoadUTKFace(filepath.Join("testdata", "utkface"), UTKOptions{Size: 4, Label: "gender"})
	if err != nil {
		t.Fatal(err)
	}
	// Age 0 is fine when age is not the label.
	if want := []int{0, 1, 2, 3, 4, 5, 8, 9, 10}; !slices.Equal(d.Row, want) {
		t.Errorf("rows %v, want %v", d.Row, want)
	}
	if want := []int{1, 1, 0, 0, 0, 1, 0, 1, 1}; !slices.Equal(d.Labels, want) {
		t.Errorf("genders %v, want %v", d.Labels, want)
	}
	if want := []int{2, 1, 2, 0, 1, 2, 0, 3, 4}; !slices.Equal(d.Groups, want) {
		t.Errorf("races %v, want %v", d.Groups, want)
	}
	if !slices.Equal(d.LabelNames, []string{"male", "female"}) || len(stats.Skipped) != 3 {
		t.Errorf("label names %v, skipped %v", d.LabelNames, skipNames(stats.Skipped))
	}

	d, _, err = LoadUTKFace(filepath.Join("testdata", "utkface"), UTKOptions{Size: 4, Sensitive: "gender"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{1, 0, 0, 0, 1, 0, 1, 1}; !slices.Equal(d.Groups, want) || !slices.Equal(d.GroupNames, []string{"male", "female"}) {
		t.Errorf("gender groups %v %v, want %v", d.Groups, d.GroupNames, want)
	}
}

func TestLoadUTKFaceOptionErrors(t *testing.T) {
	dir := filepath.Join("testdata", "utkface")
	tests := []struct {
		opts UTKOptions
		want string
	}{
		{UTKOptions{Size: -1}, "Size = -1: want 1..1024"},
		{UTKOptions{Size: 5000}, "Size = 5000"},
		{UTKOptions{Label: "race"}, `Label = "race": want "age" or "gender"`},
		{UTKOptions{Sensitive: "age"}, `Sensitive = "age": want "race" or "gender"`},
		{UTKOptions{Label: "gender", Sensitive: "gender"}, "both \"gender\""},
		{UTKOptions{Limit: -2}, "Limit = -2"},
	}
	for _, tc := range tests {
		if _, _, err := LoadUTKFace(dir, tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.opts, err, tc.want)
		}
	}
	if _, _, err := LoadUTKFace(filepath.Join(t.TempDir(), "missing"), UTKOptions{}); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("missing folder: error %v", err)
	}
	empty := t.TempDir()
	os.WriteFile(filepath.Join(empty, "39_1_20170116174525125.jpg.chip.jpg"), nil, 0o644)
	if _, stats, err := LoadUTKFace(empty, UTKOptions{}); err == nil || !strings.Contains(err.Error(), "no usable images among 1 files (1 skipped)") || len(stats.Skipped) != 1 {
		t.Errorf("folder of bad names: error %v, stats %+v", err, stats)
	}
	broken := t.TempDir()
	os.WriteFile(filepath.Join(broken, "20_1_2_20170116174525125.jpg.chip.jpg"), []byte("no"), 0o644)
	if _, _, err := LoadUTKFace(broken, UTKOptions{}); err == nil || !strings.Contains(err.Error(), "none of 1 images decoded") {
		t.Errorf("folder of broken JPEGs: error %v", err)
	}
}

func TestLoadUTKFaceLimitAndProgress(t *testing.T) {
	var calls [][2]int
	d, stats, err := LoadUTKFace(filepath.Join("testdata", "utkface"), UTKOptions{
		Size: 8, Limit: 3, Workers: 2,
		Progress: func(done, total int) { calls = append(calls, [2]int{done, total}) },
	})
	if err != nil {
		t.Fatal(err)
	}
	// Nine usable names (rows 1–6 and 8–10); Limit 3 takes the 1st, 4th and
	// 7th of them, spread over the name order (and so over ages). Row 6 does
	// not decode, so row 8 is image 5 of a full load.
	if !slices.Equal(d.Row, []int{1, 4, 8}) || stats.Loaded != 3 {
		t.Errorf("rows %v, loaded %d, want rows 1 4 8", d.Row, stats.Loaded)
	}
	if want := [][2]int{{1, 3}, {2, 3}, {3, 3}}; !slices.Equal(calls, want) {
		t.Errorf("progress calls %v, want %v", calls, want)
	}
	full, _, err := LoadUTKFace(filepath.Join("testdata", "utkface"), UTKOptions{Size: 8, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	per := 3 * 8 * 8
	for i, j := range []int{0, 3, 5} {
		if !bytes.Equal(d.Pix[i*per:(i+1)*per], full.Pix[j*per:(j+1)*per]) {
			t.Errorf("limited image %d differs from image %d of a full load", i, j)
		}
	}
}

// The number of workers must not change a single byte.
func TestLoadUTKFaceWorkersAgree(t *testing.T) {
	dir := filepath.Join("testdata", "utkface")
	one, _, err := LoadUTKFace(dir, UTKOptions{Size: 16, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	many, _, err := LoadUTKFace(dir, UTKOptions{Size: 16, Workers: 7})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(one.Pix, many.Pix) || !slices.Equal(one.Row, many.Row) {
		t.Error("1 and 7 workers disagree")
	}
}

func copyDir(t *testing.T, from string) string {
	t.Helper()
	to := t.TempDir()
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return to
}

func TestLoadUTKFaceCache(t *testing.T) {
	dir := copyDir(t, filepath.Join("testdata", "utkface"))
	cache := filepath.Join(t.TempDir(), "cache")
	opts := UTKOptions{Size: 8, CacheDir: cache}
	ref, refStats, err := LoadUTKFace(dir, UTKOptions{Size: 8})
	if err != nil {
		t.Fatal(err)
	}
	same := func(what string, d *Dataset, stats UTKStats, hit bool) {
		t.Helper()
		if stats.CacheHit != hit {
			t.Errorf("%s: CacheHit = %v, want %v (CacheErr %v)", what, stats.CacheHit, hit, stats.CacheErr)
		}
		if !bytes.Equal(d.Pix, ref.Pix) || !slices.Equal(d.Row, ref.Row) || !slices.Equal(d.Labels, ref.Labels) ||
			!slices.Equal(d.Groups, ref.Groups) || !slices.Equal(d.Sources, ref.Sources) {
			t.Errorf("%s: dataset differs from an uncached load", what)
		}
		if !slices.Equal(stats.Skipped, refStats.Skipped) || stats.Loaded != refStats.Loaded || stats.Files != refStats.Files {
			t.Errorf("%s: stats %+v, want %+v", what, stats, refStats)
		}
	}

	d, stats, err := LoadUTKFace(dir, opts)
	if err != nil || stats.CacheErr != nil {
		t.Fatal(err, stats.CacheErr)
	}
	same("first load", d, stats, false)
	if _, err := os.Stat(stats.CacheFile); err != nil || filepath.Dir(stats.CacheFile) != cache {
		t.Fatalf("cache file %q not written: %v", stats.CacheFile, err)
	}
	var progress []int
	hitOpts := opts
	hitOpts.Progress = func(done, total int) { progress = append(progress, done, total) }
	d, stats, err = LoadUTKFace(dir, hitOpts)
	if err != nil || stats.CacheErr != nil {
		t.Fatal(err, stats.CacheErr)
	}
	same("second load", d, stats, true)
	// 9 images were to be decoded (one of them failed, and the cache knows).
	if !slices.Equal(progress, []int{9, 9}) {
		t.Errorf("progress on a cache hit: %v, want [9 9]", progress)
	}

	// Damage the cache in several ways: each is detected and rebuilt.
	raw, err := os.ReadFile(stats.CacheFile)
	if err != nil {
		t.Fatal(err)
	}
	damages := map[string][]byte{
		"flipped pixel":  slices.Concat(raw[:len(raw)-100], []byte{raw[len(raw)-100] ^ 1}, raw[len(raw)-99:]),
		"truncated":      raw[:len(raw)/2],
		"trailing bytes": slices.Concat(raw, []byte{0}),
		"empty":          nil,
		"wrong magic":    slices.Concat([]byte("FDPUTK0\n"), raw[8:]),
		"huge count":     slices.Concat(raw[:44], []byte{0xff, 0xff, 0xff, 0x7f}, raw[48:]),
	}
	for what, b := range damages {
		if err := os.WriteFile(stats.CacheFile, b, 0o644); err != nil {
			t.Fatal(err)
		}
		d, st, err := LoadUTKFace(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		if st.CacheErr == nil || !strings.Contains(st.CacheErr.Error(), "unusable, rebuilt") {
			t.Errorf("%s: CacheErr = %v", what, st.CacheErr)
		}
		same(what, d, st, false)
		if rebuilt, _ := os.ReadFile(stats.CacheFile); !bytes.Equal(rebuilt, raw) {
			t.Errorf("%s: cache not rewritten", what)
		}
	}

	// Other options or another listing use another cache file.
	other := opts
	other.Size = 4
	if _, st, _ := LoadUTKFace(dir, other); st.CacheHit || st.CacheFile == stats.CacheFile {
		t.Error("Size 4 reused the Size 8 cache")
	}
	other = opts
	other.Label = "gender"
	if _, st, _ := LoadUTKFace(dir, other); st.CacheHit || st.CacheFile == stats.CacheFile {
		t.Error("Label gender reused the age cache")
	}
	os.WriteFile(filepath.Join(dir, "notes.md"), []byte("x"), 0o644)
	if _, st, _ := LoadUTKFace(dir, opts); st.CacheHit || st.CacheFile == stats.CacheFile {
		t.Error("a changed listing reused the cache")
	}
	// No temp files are left behind.
	entries, _ := os.ReadDir(cache)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("temp file %s left in the cache folder", e.Name())
		}
	}

	// A cache folder that cannot be written does not stop the load.
	blocker := filepath.Join(t.TempDir(), "file")
	os.WriteFile(blocker, nil, 0o644)
	bad := opts
	bad.CacheDir = filepath.Join(blocker, "sub")
	d, st, err := LoadUTKFace(dir, bad)
	if err != nil || st.CacheErr == nil || !strings.Contains(st.CacheErr.Error(), "writing cache") || len(d.Labels) != 8 {
		t.Errorf("unwritable cache: err %v, CacheErr %v", err, st.CacheErr)
	}
}

// channelStatsSlow is the textbook two-pass mean and population standard
// deviation over float64 values p/255.
func channelStatsSlow(d *Dataset, idx []int) (mean, std []float64) {
	plane := d.H * d.W
	per := d.C * plane
	mean, std = make([]float64, d.C), make([]float64, d.C)
	for c := 0; c < d.C; c++ {
		var vals []float64
		for _, i := range idx {
			for _, p := range d.Pix[i*per+c*plane : i*per+(c+1)*plane] {
				vals = append(vals, float64(p)/255)
			}
		}
		for _, v := range vals {
			mean[c] += v
		}
		mean[c] /= float64(len(vals))
		for _, v := range vals {
			std[c] += (v - mean[c]) * (v - mean[c])
		}
		std[c] = math.Sqrt(std[c] / float64(len(vals)))
	}
	return mean, std
}

func TestChannelStats(t *testing.T) {
	// Literal: one channel, two 1×2 images [0 255] and [255 255]:
	// values 0, 1, 1, 1 → mean 0.75, std sqrt(0.1875) = 0.4330127.
	d := &Dataset{Pix: []uint8{0, 255, 255, 255}, C: 1, H: 1, W: 2}
	mean, std := ChannelStats(d, nil)
	if math.Abs(mean[0]-0.75) > 1e-15 || math.Abs(std[0]-0.4330127018922193) > 1e-15 {
		t.Errorf("mean %v std %v, want 0.75 and 0.4330127", mean, std)
	}
	// Only image 1: constant channel → std 1, not 0.
	mean, std = ChannelStats(d, []int{1})
	if mean[0] != 1 || std[0] != 1 {
		t.Errorf("constant channel: mean %v std %v, want 1 and 1", mean, std)
	}
	if m, s := ChannelStats(&Dataset{X: []float64{1}, Dim: 1}, nil); m != nil || s != nil {
		t.Error("tabular dataset gave image statistics")
	}

	// Random images against the slow path, all records and a subset.
	rng := rand.New(rand.NewPCG(5, 6))
	r := &Dataset{C: 3, H: 5, W: 7, Pix: make([]uint8, 40*3*35)}
	for i := range r.Pix {
		r.Pix[i] = uint8(rng.IntN(256) * (i%3 + 1) / 3) // channels differ in spread
	}
	all := make([]int, 40)
	for i := range all {
		all[i] = i
	}
	for _, idx := range [][]int{nil, {3, 1, 4, 1, 5, 9, 2, 6}} {
		mean, std := ChannelStats(r, idx)
		want := idx
		if want == nil {
			want = all
		}
		wm, ws := channelStatsSlow(r, want)
		for c := 0; c < 3; c++ {
			if math.Abs(mean[c]-wm[c]) > 1e-12 || math.Abs(std[c]-ws[c]) > 1e-12 {
				t.Errorf("idx %v channel %d: %v, %v; slow path %v, %v", idx, c, mean[c], std[c], wm[c], ws[c])
			}
		}
	}
}

func TestLoadUTKFaceStandardise(t *testing.T) {
	d, _, err := LoadUTKFace(filepath.Join("testdata", "utkface"), UTKOptions{Size: 8, Standardise: true})
	if err != nil {
		t.Fatal(err)
	}
	all := make([]int, len(d.Labels))
	for i := range all {
		all[i] = i
	}
	wm, ws := channelStatsSlow(d, all)
	if !d.Standardise || len(d.Mean) != 3 || len(d.Std) != 3 {
		t.Fatalf("Standardise %v Mean %v Std %v", d.Standardise, d.Mean, d.Std)
	}
	if err := d.Validate(); err != nil {
		t.Error(err)
	}
	for c := 0; c < 3; c++ {
		if math.Abs(d.Mean[c]-wm[c]) > 1e-12 || math.Abs(d.Std[c]-ws[c]) > 1e-12 {
			t.Errorf("channel %d: %v, %v; slow path %v, %v", c, d.Mean[c], d.Std[c], wm[c], ws[c])
		}
	}
}

// Facts from /work/shared/data/README.md (utkface row), checked by parsing
// names only. The README's race and gender counts already leave out the three
// names without a race field (they sum to 23,704), so the loader's counts
// equal them exactly. Age-bucket counts were tallied independently with awk
// over the file names.
func TestUTKFaceRealNames(t *testing.T) {
	dir := imageDataDir(t, filepath.Join("utkface", "UTKFace"))
	o, err := resolveUTKOptions(UTKOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := scanUTKDir(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	if l.files != 23707 || len(l.images) != 23704 {
		t.Errorf("%d files, %d usable, want 23,707 and 23,704", l.files, len(l.images))
	}
	wantSkipped := []string{
		"39_1_20170116174525125.jpg.chip.jpg",
		"61_1_20170109142408075.jpg.chip.jpg",
		"61_1_20170109150557335.jpg.chip.jpg",
	}
	if got := skipNames(l.skipped); !slices.Equal(got, wantSkipped) {
		t.Errorf("skipped %v, want %v", got, wantSkipped)
	}
	race, gender, bucket := make([]int, 5), make([]int, 2), make([]int, 9)
	for _, img := range l.images {
		race[img.race]++
		gender[img.gender]++
		bucket[img.label]++
	}
	if want := []int{10078, 4525, 3434, 3975, 1692}; !slices.Equal(race, want) {
		t.Errorf("race counts %v, want %v", race, want)
	}
	if want := []int{12390, 11314}; !slices.Equal(gender, want) {
		t.Errorf("gender counts %v, want %v", gender, want)
	}
	if want := []int{3217, 610, 1049, 2760, 5024, 4338, 2100, 2211, 2395}; !slices.Equal(bucket, want) {
		t.Errorf("age bucket counts %v, want %v", bucket, want)
	}
	for _, odd := range []string{"24_0_1_20170116220224657 .jpg.chip.jpg", "55_0_0_20170116232725357jpg.chip.jpg"} {
		if !slices.ContainsFunc(l.images, func(img utkImage) bool { return img.name == odd }) {
			t.Errorf("%q not loaded", odd)
		}
	}
}

// The full decode of 23,704 images takes about a minute on 2 cores; it runs
// only with FAIRDP_LONG=1.
func TestUTKFaceRealDecode(t *testing.T) {
	if os.Getenv("FAIRDP_LONG") != "1" {
		t.Skip("full UTKFace decode: set FAIRDP_LONG=1 to run")
	}
	dir := imageDataDir(t, filepath.Join("utkface", "UTKFace"))
	d, stats, err := LoadUTKFace(dir, UTKOptions{Size: 32})
	if err != nil {
		t.Fatal(err)
	}
	if stats.Loaded != 23704 || len(d.Pix) != 23704*3*32*32 || len(stats.Skipped) != 3 {
		t.Errorf("loaded %d, skipped %v, want 23,704 and 3", stats.Loaded, skipNames(stats.Skipped))
	}
	mean, std := ChannelStats(d, nil)
	t.Logf("UTKFace at 32×32: channel mean %.4f, std %.4f", mean, std)
}

func benchmarkJPEG(b *testing.B) []byte {
	// A 200×200 UTKFace-sized JPEG with texture, so the decoder does real work.
	img := image.NewNRGBA(image.Rect(0, 0, 200, 200))
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range img.Pix {
		img.Pix[i] = uint8(128 + 60*math.Sin(float64(i%800)/40) + float64(rng.IntN(40)))
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 90}); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkDecodeUTKImage measures one decode + resize of a 200×200 JPEG on
// one goroutine (imaging itself may use more), per filter and size.
func BenchmarkDecodeUTKImage(b *testing.B) {
	path := filepath.Join(b.TempDir(), "30_0_0_20170101000000000.jpg.chip.jpg")
	if err := os.WriteFile(path, benchmarkJPEG(b), 0o644); err != nil {
		b.Fatal(err)
	}
	saved := utkFilter
	defer func() { utkFilter = saved }()
	for _, f := range []struct {
		name   string
		filter imaging.ResampleFilter
	}{{"linear", imaging.Linear}, {"lanczos", imaging.Lanczos}} {
		for _, size := range []int{32, 64, 128} {
			b.Run(fmt.Sprintf("%s/%d", f.name, size), func(b *testing.B) {
				utkFilter = f.filter
				dst := make([]uint8, 3*size*size)
				for b.Loop() {
					if err := decodeUTKImage(path, size, dst); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "images/s")
			})
		}
	}
}

// BenchmarkLoadUTKFaceReal loads the first 1,000 real images with all cores.
func BenchmarkLoadUTKFaceReal(b *testing.B) {
	dir := imageDataDir(b, filepath.Join("utkface", "UTKFace"))
	for _, size := range []int{64, 128} {
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			n := 0
			for b.Loop() {
				d, _, err := LoadUTKFace(dir, UTKOptions{Size: size, Limit: 1000})
				if err != nil {
					b.Fatal(err)
				}
				n += len(d.Labels)
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "images/s")
		})
	}
}

func FuzzParseUTKName(f *testing.F) {
	for _, s := range []string{
		"100_0_0_20170112213500903.jpg.chip.jpg", "24_0_1_20170116220224657 .jpg.chip.jpg",
		"55_0_0_20170116232725357jpg.chip.jpg", "39_1_20170116174525125.jpg.chip.jpg",
		"", "_", "___", "1_1_1_1.jpg", "a/b/1_0_0_2.jpg", "1_0_0_2.JPG",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		age, gender, race, err := ParseUTKName(name)
		if err != nil {
			if age != 0 || gender != 0 || race != 0 {
				t.Fatal("error with non-zero results")
			}
			return
		}
		if age < 0 || age > 999 || gender < 0 || gender > 1 || race < 0 || race > 4 {
			t.Fatalf("%q: out of range %d %d %d", name, age, gender, race)
		}
		base := filepath.Base(name)
		if !hasJPGSuffix(base) || strings.Count(base, "_") < 3 {
			t.Fatalf("%q accepted without .jpg or 3 underscores", name)
		}
		// The fields read back as the numbers returned.
		f := strings.SplitN(base, "_", 4)
		if a, _ := parseDigits(f[0], 3); a != age || f[1] != fmt.Sprint(gender) || f[2] != fmt.Sprint(race) {
			t.Fatalf("%q parsed as %d %d %d", name, age, gender, race)
		}
	})
}

func ExampleLoadUTKFace() {
	d, stats, err := LoadUTKFace("testdata/utkface", UTKOptions{Size: 16, Label: "age", Sensitive: "race"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(d.Labels), "images of", d.C, "×", d.H, "×", d.W, "bytes;", len(stats.Skipped), "files skipped")
	fmt.Println(d.LabelNames[d.Labels[0]], d.GroupNames[d.Groups[0]])
	mean, std := ChannelStats(d, []int{0, 1, 2}) // e.g. the training split
	fmt.Printf("%.2f %.2f\n", mean[0], std[0])
	// Output:
	// 8 images of 3 × 16 × 16 bytes; 4 files skipped
	// (0,10] Black
	// 0.33 0.30
}

func ExampleParseUTKName() {
	for _, name := range []string{"24_0_1_20170116220224657 .jpg.chip.jpg", "39_1_20170116174525125.jpg.chip.jpg"} {
		age, gender, race, err := ParseUTKName(name)
		fmt.Println(age, gender, race, err)
	}
	// Output:
	// 24 0 1 <nil>
	// 0 0 0 UTKFace name "39_1_20170116174525125.jpg.chip.jpg": only 3 '_'-separated fields: no race field (want age_gender_race_datetime.jpg.chip.jpg)
}
