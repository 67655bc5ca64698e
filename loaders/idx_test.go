package loaders

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// go test ./loaders -run 'Fixtures' -update-image-fixtures rewrites
// testdata/mnist and testdata/utkface from the generators below.
var updateImageFixtures = flag.Bool("update-image-fixtures", false, "rewrite the MNIST and UTKFace fixtures in testdata")

// The MNIST fixture: 8 training images (labels 5 0 4 1 9 8 8 8, stored
// gzip-compressed) and 3 test images (labels 7 2 1, stored raw), 28×28, with
// pixel (i, r, c) = (50i + 9r + c) mod 256.
var (
	mnistFixtureTrainLabels = []int{5, 0, 4, 1, 9, 8, 8, 8}
	mnistFixtureTestLabels  = []int{7, 2, 1}
)

func mnistFixturePixel(i, r, c int) uint8 { return uint8((50*i + 9*r + c) % 256) }

// idxBytes builds an IDX file from a magic number, dimensions and payload.
func idxBytes(magic uint32, dims []uint32, payload []byte) []byte {
	var b bytes.Buffer
	binary.Write(&b, binary.BigEndian, magic)
	for _, d := range dims {
		binary.Write(&b, binary.BigEndian, d)
	}
	b.Write(payload)
	return b.Bytes()
}

func gzipBytes(t testing.TB, raw []byte) []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write(raw); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func mnistFixtureFiles(labels []int) (images, lbls []byte) {
	pix := make([]byte, 0, len(labels)*28*28)
	for i := range labels {
		for r := 0; r < 28; r++ {
			for c := 0; c < 28; c++ {
				pix = append(pix, mnistFixturePixel(i, r, c))
			}
		}
	}
	lb := make([]byte, len(labels))
	for i, l := range labels {
		lb[i] = byte(l)
	}
	return idxBytes(idxMagicImages, []uint32{uint32(len(labels)), 28, 28}, pix),
		idxBytes(idxMagicLabels, []uint32{uint32(len(labels))}, lb)
}

func TestWriteMNISTFixtures(t *testing.T) {
	if !*updateImageFixtures {
		t.Skip("fixture generator: run with -update-image-fixtures to rewrite testdata/mnist")
	}
	dir := filepath.Join("testdata", "mnist")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	trImg, trLbl := mnistFixtureFiles(mnistFixtureTrainLabels)
	teImg, teLbl := mnistFixtureFiles(mnistFixtureTestLabels)
	files := map[string][]byte{
		"train-images-idx3-ubyte.gz": gzipBytes(t, trImg),
		"train-labels-idx1-ubyte.gz": gzipBytes(t, trLbl),
		"t10k-images-idx3-ubyte":     teImg,
		"t10k-labels-idx1-ubyte":     teLbl,
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestReadIDXFixtures(t *testing.T) {
	tests := []struct {
		file     string
		dims     []int
		checkAt  []int // byte offsets into the payload
		wantAt   []byte
		wantSize int
	}{
		// image 2, row 3, col 4 is at 2·784 + 3·28 + 4 = 1656: (100 + 27 + 4) = 131.
		// image 7, row 27, col 27 is at 7·784 + 783 = 6271: (350 + 243 + 27) mod 256 = 108.
		{"train-images-idx3-ubyte.gz", []int{8, 28, 28}, []int{0, 1656, 6271}, []byte{0, 131, 108}, 8 * 784},
		{"train-labels-idx1-ubyte.gz", []int{8}, []int{0, 1, 2, 5, 7}, []byte{5, 0, 4, 8, 8}, 8},
		// test image 1, row 0, col 27 at 784 + 27 = 811: 50 + 27 = 77.
		{"t10k-images-idx3-ubyte", []int{3, 28, 28}, []int{811}, []byte{77}, 3 * 784},
		{"t10k-labels-idx1-ubyte", []int{3}, []int{0, 1, 2}, []byte{7, 2, 1}, 3},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", "mnist", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			dims, data, err := ReadIDX(f)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(dims, tc.dims) {
				t.Errorf("dims = %v, want %v", dims, tc.dims)
			}
			if len(data) != tc.wantSize {
				t.Fatalf("len(data) = %d, want %d", len(data), tc.wantSize)
			}
			for k, off := range tc.checkAt {
				if data[off] != tc.wantAt[k] {
					t.Errorf("data[%d] = %d, want %d", off, data[off], tc.wantAt[k])
				}
			}
		})
	}
}

// The same bytes must come out of the raw and the gzip form.
func TestReadIDXRawEqualsGzip(t *testing.T) {
	raw, _ := mnistFixtureFiles(mnistFixtureTrainLabels)
	d1, p1, err := ReadIDX(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	d2, p2, err := ReadIDX(bytes.NewReader(gzipBytes(t, raw)))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d1, d2) || !bytes.Equal(p1, p2) || !bytes.Equal(p1, raw[16:]) {
		t.Fatal("raw and gzip IDX differ")
	}
}

func TestReadIDXErrors(t *testing.T) {
	three := []byte{1, 2, 3}
	tests := []struct {
		name  string
		input []byte
		want  string
	}{
		{"empty", nil, "truncated IDX header"},
		{"short magic", []byte{0, 0, 8}, "truncated IDX header"},
		{"float magic", idxBytes(0x0d03, []uint32{1, 1, 1}, []byte{1, 2, 3, 4}), "bad IDX magic 3331 (0x00000d03): want 2049"},
		{"png", []byte("\x89PNG\r\n\x1a\n...."), "bad IDX magic"},
		{"missing dims", idxBytes(idxMagicImages, []uint32{1, 28}, nil), "want 3 dimension sizes after magic 2051, got 2"},
		{"truncated data", idxBytes(idxMagicLabels, []uint32{4}, three), "truncated IDX file: dimensions [4] need 4 data bytes, file holds 3"},
		{"trailing data", idxBytes(idxMagicLabels, []uint32{2}, three), "dimensions do not match the data length"},
		{"absurd size", idxBytes(idxMagicImages, []uint32{1 << 20, 1 << 10, 1 << 10}, three), "claim more than 1073741824 bytes"},
		{"absurd label count", idxBytes(idxMagicLabels, []uint32{0xffffffff}, three), "refusing to allocate"},
		{"truncated gzip", gzipBytes(t, idxBytes(idxMagicLabels, []uint32{3}, three))[:20], "unexpected EOF"},
		{"bad gzip header", []byte{0x1f, 0x8b, 0, 0}, "gzip header"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := ReadIDX(bytes.NewReader(tc.input))
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "IDX input: ") {
				t.Errorf("error %q, want prefix %q and %q", err, "IDX input: ", tc.want)
			}
		})
	}
}

func TestReadIDXErrorNamesFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad-images-idx3-ubyte")
	if err := os.WriteFile(path, idxBytes(idxMagicImages, []uint32{2, 2, 2}, []byte{1}), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, _, err = ReadIDX(f)
	want := path + ": truncated IDX file: dimensions [2 2 2] need 8 data bytes, file holds 1"
	if err == nil || err.Error() != want {
		t.Errorf("error = %v, want %q", err, want)
	}
}

func TestLoadMNISTFixture(t *testing.T) {
	train, test, err := LoadMNIST(filepath.Join("testdata", "mnist"), MNISTOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		d      *Dataset
		name   string
		labels []int
		source string
	}{
		{train, "mnist-train", mnistFixtureTrainLabels, "train-images-idx3-ubyte.gz"},
		{test, "mnist-test", mnistFixtureTestLabels, "t10k-images-idx3-ubyte"},
	} {
		d := tc.d
		n := len(tc.labels)
		if err := d.Validate(); err != nil {
			t.Error(err)
		}
		if d.Name != tc.name || d.C != 1 || d.H != 28 || d.W != 28 || len(d.Pix) != n*784 {
			t.Fatalf("%s: name %q C,H,W = %d,%d,%d, %d bytes", tc.name, d.Name, d.C, d.H, d.W, len(d.Pix))
		}
		if !slices.Equal(d.Labels, tc.labels) || !slices.Equal(d.Groups, tc.labels) {
			t.Errorf("%s: labels %v groups %v, want both %v", tc.name, d.Labels, d.Groups, tc.labels)
		}
		if !slices.Equal(d.Row, []int{0, 1, 2, 3, 4, 5, 6, 7}[:n]) {
			t.Errorf("%s: rows %v", tc.name, d.Row)
		}
		if filepath.Base(d.Sources[d.SourceOf[n-1]]) != tc.source {
			t.Errorf("%s: source %v", tc.name, d.Sources)
		}
		if !slices.Equal(d.LabelNames, []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}) || !slices.Equal(d.GroupNames, d.LabelNames) {
			t.Errorf("%s: names %v %v", tc.name, d.LabelNames, d.GroupNames)
		}
		for i := 0; i < n; i++ {
			for r := 0; r < 28; r++ {
				for c := 0; c < 28; c++ {
					if got, want := d.Pix[i*784+r*28+c], mnistFixturePixel(i, r, c); got != want {
						t.Fatalf("%s: pixel (%d,%d,%d) = %d, want %d", tc.name, i, r, c, got, want)
					}
				}
			}
		}
	}
	// Literal spot check: train image 3, row 10, col 5 = 150 + 90 + 5 = 245.
	if got := train.Pix[3*784+10*28+5]; got != 245 {
		t.Errorf("train pixel (3,10,5) = %d, want 245", got)
	}
}

func TestLoadMNISTKeepClass(t *testing.T) {
	dir := filepath.Join("testdata", "mnist")
	train, test, err := LoadMNIST(dir, MNISTOptions{KeepClass: 8, KeepN: 1, Rand: rand.New(rand.NewPCG(1, 2))})
	if err != nil {
		t.Fatal(err)
	}
	if len(test.Labels) != 3 {
		t.Errorf("test set cut to %d, want 3", len(test.Labels))
	}
	if len(train.Labels) != 6 || len(train.Pix) != 6*784 {
		t.Fatalf("train has %d labels, %d bytes, want 6 images", len(train.Labels), len(train.Pix))
	}
	if !slices.Equal(train.Labels, []int{5, 0, 4, 1, 9, 8}) || !slices.Equal(train.Row[:5], []int{0, 1, 2, 3, 4}) {
		t.Fatalf("labels %v rows %v", train.Labels, train.Row)
	}
	if err := train.Validate(); err != nil {
		t.Error(err)
	}
	if want := []string{"kept 1 of 3 training images of class 8, chosen at random (DPSGD-F's unbalanced MNIST)"}; !slices.Equal(train.Notes, want) {
		t.Errorf("notes %q, want %q", train.Notes, want)
	}
	kept := train.Row[5]
	if kept < 5 || kept > 7 {
		t.Fatalf("kept row %d, want one of the 8s at rows 5..7", kept)
	}
	// The kept image's pixels are those of its file row.
	if train.Pix[5*784+100] != mnistFixturePixel(kept, 100/28, 100%28) {
		t.Error("kept image pixels do not follow its row")
	}

	// Uniform choice: each of the three 8s is kept in about 1/3 of 3,000
	// draws; the binomial sd is sqrt(3000·1/3·2/3) ≈ 25.8, allow 5 sd.
	full, _, err := LoadMNIST(dir, MNISTOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	counts := map[int]int{}
	for k := 0; k < 3000; k++ {
		d, err := keepOfClass(full, 8, 1, rng)
		if err != nil {
			t.Fatal(err)
		}
		counts[d.Row[5]]++
	}
	for row := 5; row <= 7; row++ {
		if c := counts[row]; c < 1000-129 || c > 1000+129 {
			t.Errorf("row %d kept %d of 3000 times, want 1000 ± 129", row, c)
		}
	}

	// KeepN equal to the class size keeps everything.
	all, err := keepOfClass(full, 8, 3, rng)
	if err != nil || !bytes.Equal(all.Pix, full.Pix) || !slices.Equal(all.Row, full.Row) {
		t.Errorf("KeepN = class size changed the data (err %v)", err)
	}
}

func TestLoadMNISTErrors(t *testing.T) {
	dir := filepath.Join("testdata", "mnist")
	rng := rand.New(rand.NewPCG(1, 1))
	tests := []struct {
		name string
		dir  string
		opts MNISTOptions
		want string
	}{
		{"negative KeepN", dir, MNISTOptions{KeepN: -1}, "KeepN = -1"},
		{"bad class", dir, MNISTOptions{KeepClass: 10, KeepN: 1, Rand: rng}, "KeepClass = 10: want a digit 0..9"},
		{"no rand", dir, MNISTOptions{KeepClass: 8, KeepN: 1}, "needs Rand"},
		{"too many", dir, MNISTOptions{KeepClass: 8, KeepN: 4, Rand: rng}, "KeepN = 4 but class 8 has only 3 images"},
		{"missing dir", filepath.Join(t.TempDir(), "nope"), MNISTOptions{}, "want train-images-idx3-ubyte or train-images-idx3-ubyte.gz, found neither"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := LoadMNIST(tc.dir, tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// Broken folders: each case writes the four files with one of them wrong.
func TestLoadMNISTBadFiles(t *testing.T) {
	trImg, trLbl := mnistFixtureFiles([]int{1, 2})
	teImg, teLbl := mnistFixtureFiles([]int{3})
	badLabel := idxBytes(idxMagicLabels, []uint32{2}, []byte{1, 12})
	tests := []struct {
		name    string
		replace string
		content []byte
		want    string
	}{
		{"label out of range", "train-labels-idx1-ubyte", badLabel, "train-labels-idx1-ubyte: label 12 at index 1: want a digit 0..9"},
		{"count mismatch", "t10k-labels-idx1-ubyte", idxBytes(idxMagicLabels, []uint32{2}, []byte{1, 2}), "holds 2 labels but"},
		{"labels as images", "train-images-idx3-ubyte", trLbl, "train-images-idx3-ubyte: want an images file (magic 2051"},
		{"images as labels", "t10k-labels-idx1-ubyte", teImg, "t10k-labels-idx1-ubyte: want a labels file (magic 2049)"},
		{"empty images", "train-images-idx3-ubyte", idxBytes(idxMagicImages, []uint32{0, 28, 28}, nil), "want at least one image"},
		{"truncated", "t10k-images-idx3-ubyte", teImg[:100], "t10k-images-idx3-ubyte: truncated IDX file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			files := map[string][]byte{
				"train-images-idx3-ubyte": trImg, "train-labels-idx1-ubyte": trLbl,
				"t10k-images-idx3-ubyte": teImg, "t10k-labels-idx1-ubyte": teLbl,
			}
			files[tc.replace] = tc.content
			for name, b := range files {
				if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, _, err := LoadMNIST(dir, MNISTOptions{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// imageDataDir returns /work/shared/data/<sub> (or $FAIRDP_DATA/<sub>) and
// skips the test when it is absent.
func imageDataDir(tb testing.TB, sub string) string {
	tb.Helper()
	root := os.Getenv("FAIRDP_DATA")
	if root == "" {
		root = filepath.Join("..", "..", "shared", "data")
	}
	dir := filepath.Join(root, sub)
	if _, err := os.Stat(dir); err != nil {
		tb.Skipf("real data %s not found (set FAIRDP_DATA to the shared data folder): %v", dir, err)
	}
	return dir
}

// Facts from the data directory's README (mnist row) and Xu, Du and Wu 2021
// (class 8 cut to 500).
func TestLoadMNISTReal(t *testing.T) {
	dir := imageDataDir(t, "mnist")
	train, test, err := LoadMNIST(dir, MNISTOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(train.Labels) != 60000 || len(test.Labels) != 10000 || len(train.Pix) != 60000*784 {
		t.Fatalf("train %d, test %d images, want 60,000 and 10,000", len(train.Labels), len(test.Labels))
	}
	if !slices.Equal(train.Labels[:10], []int{5, 0, 4, 1, 9, 2, 1, 3, 1, 4}) {
		t.Errorf("first train labels %v", train.Labels[:10])
	}
	if !slices.Equal(test.Labels[:10], []int{7, 2, 1, 0, 4, 1, 4, 9, 5, 9}) {
		t.Errorf("first test labels %v", test.Labels[:10])
	}
	count := func(d *Dataset, class int) int {
		n := 0
		for _, l := range d.Labels {
			if l == class {
				n++
			}
		}
		return n
	}
	if c8, c2 := count(train, 8), count(train, 2); c8 != 5851 || c2 != 5958 {
		t.Errorf("train digit 8: %d (want 5,851), digit 2: %d (want 5,958)", c8, c2)
	}
	// Pixel sums computed independently with Python's gzip module.
	sum := func(p []uint8) int {
		s := 0
		for _, v := range p {
			s += int(v)
		}
		return s
	}
	if s := sum(train.Pix[:784]); s != 27525 || train.Pix[14*28+14] != 240 {
		t.Errorf("first train image: sum %d (want 27,525), centre %d (want 240)", s, train.Pix[14*28+14])
	}
	if s := sum(train.Pix); s != 1567298545 {
		t.Errorf("train pixel sum %d, want 1,567,298,545", s)
	}
	if s := sum(test.Pix); s != 264923200 {
		t.Errorf("test pixel sum %d, want 264,923,200", s)
	}

	unb, _, err := LoadMNIST(dir, MNISTOptions{KeepClass: 8, KeepN: 500, Rand: rand.New(rand.NewPCG(7, 7))})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(unb.Labels); n != 54649 || count(unb, 8) != 500 || count(unb, 2) != 5958 {
		t.Errorf("unbalanced train: %d images, %d eights, want 54,649 and 500", n, count(unb, 8))
	}
	for i := range unb.Labels {
		if r := unb.Row[i]; unb.Labels[i] != train.Labels[r] || unb.Pix[i*784+400] != train.Pix[r*784+400] {
			t.Fatalf("unbalanced record %d does not match file row %d", i, r)
		}
	}
}

func FuzzReadIDX(f *testing.F) {
	for _, name := range []string{"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"} {
		b, err := os.ReadFile(filepath.Join("testdata", "mnist", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(idxBytes(idxMagicImages, []uint32{1, 1, 2}, []byte{9, 9}))
	f.Add(idxBytes(idxMagicLabels, []uint32{0xffffffff}, nil))
	f.Add(gzipBytes(f, idxBytes(idxMagicLabels, []uint32{3}, []byte{1, 2, 3})))
	f.Add([]byte{0x1f, 0x8b})
	f.Fuzz(func(t *testing.T, in []byte) {
		dims, data, err := ReadIDX(bytes.NewReader(in))
		if err != nil {
			if dims != nil || data != nil {
				t.Fatal("error with non-nil results")
			}
			return
		}
		n := 1
		for _, d := range dims {
			n *= d
		}
		if (len(dims) != 1 && len(dims) != 3) || len(data) != n {
			t.Fatalf("dims %v with %d bytes", dims, len(data))
		}
	})
}

func ExampleLoadMNIST() {
	train, test, err := LoadMNIST("testdata/mnist", MNISTOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(train.Labels), len(test.Labels), train.C, train.H, train.W)
	fmt.Println(train.Labels, train.GroupNames[train.Groups[0]])
	// Output:
	// 8 3 1 28 28
	// [5 0 4 1 9 8 8 8] 5
}
