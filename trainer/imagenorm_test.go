package trainer

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestImageNormInputs: with ImageMean/ImageStd the model inputs are
// (p/255 − m)/sd, checked against the raw pixel bytes by hand, and without
// them they stay p/255 (today's behaviour).
func TestImageNormInputs(t *testing.T) {
	cfg := Defaults()
	cfg.Dataset, cfg.DataDir, cfg.Limit = "mnist", "testdata/mnist-sample", 300
	plain, plainTest, _, err := LoadData(cfg, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	const m, sd = 0.1307, 0.3081
	cfg.ImageMean, cfg.ImageStd = []float64{m}, []float64{sd}
	norm, normTest, _, err := LoadData(cfg, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	if plain.Standardise || plainTest.Standardise {
		t.Fatal("MNIST without ImageMean must stay p/255")
	}
	idx := []int{0, 7, 299}
	size := norm.InputSize()
	got := make([]float64, len(idx)*size)
	base := make([]float64, len(idx)*size)
	norm.FillFloat64(idx, got)
	plain.FillFloat64(idx, base)
	for k, i := range idx {
		for j := 0; j < size; j++ {
			p := float64(norm.Pix[i*size+j])
			if want := (p/255 - m) / sd; math.Abs(got[k*size+j]-want) > 1e-12 {
				t.Fatalf("record %d pixel %d: input %v, want (%v/255 − %v)/%v = %v", i, j, got[k*size+j], p, m, sd, want)
			}
			if want := p / 255; base[k*size+j] != want {
				t.Fatalf("record %d pixel %d: plain input %v, want %v", i, j, base[k*size+j], want)
			}
		}
	}
	if !normTest.Standardise || normTest.Mean[0] != m || normTest.Std[0] != sd {
		t.Errorf("the test split must be normalised alike: %v %v %v", normTest.Standardise, normTest.Mean, normTest.Std)
	}
	if !strings.Contains(strings.Join(norm.Notes, "\n"), "no privacy spent") {
		t.Errorf("notes do not say the constants are public: %q", norm.Notes)
	}
}

// TestImageNormRefused: the constants must fit the data and each other.
func TestImageNormRefused(t *testing.T) {
	for _, tc := range []struct {
		name      string
		mean, std []float64
		field     string
	}{
		{"mean without std", []float64{0.1}, nil, "ImageMean"},
		{"zero std", []float64{0.1}, []float64{0}, "ImageStd"},
		{"NaN mean", []float64{math.NaN()}, []float64{1}, "ImageMean"},
	} {
		cfg := Defaults()
		cfg.ImageMean, cfg.ImageStd = tc.mean, tc.std
		var fe FieldErrors
		if err := cfg.Validate(); !errors.As(err, &fe) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: Validate = %v, want a FieldError on %s", tc.name, err, tc.field)
		}
	}
	cfg := Defaults()
	cfg.Dataset, cfg.DataDir, cfg.Limit = "mnist", "testdata/mnist-sample", 100
	cfg.ImageMean, cfg.ImageStd = []float64{0.5, 0.5}, []float64{0.2, 0.2}
	if _, _, _, err := LoadData(cfg, rand.New(rand.NewPCG(1, 2))); err == nil || !strings.Contains(err.Error(), "1 channels") {
		t.Errorf("two channels' constants on MNIST: %v", err)
	}
	cfg = Defaults() // embedded Adult: tabular
	cfg.ImageMean, cfg.ImageStd = []float64{0.5}, []float64{0.2}
	if _, _, _, err := LoadData(cfg, rand.New(rand.NewPCG(1, 2))); err == nil || !strings.Contains(err.Error(), "tabular") {
		t.Errorf("image constants on tabular data: %v", err)
	}
}
