package bench

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/fairdp/fairdp/loaders"
	"github.com/fairdp/fairdp/models"
	"github.com/fairdp/fairdp/nn"
	"github.com/fairdp/fairdp/trainer"
)

// sharedData is the real data directory ($FAIRDP_DATA, else ../../shared/data
// from this package), or "" when it is absent.
func sharedData() string {
	d := os.Getenv("FAIRDP_DATA")
	if d == "" {
		d = filepath.Join("..", "..", "shared", "data")
	}
	if st, err := os.Stat(d); err != nil || !st.IsDir() {
		return ""
	}
	return d
}

func full(t *testing.T) {
	if os.Getenv("FAIRDP_FULL") == "" {
		t.Skip("full profile: set FAIRDP_FULL=1")
	}
}

// TestFoundationVGGStepOnUTKFace: one training step of the ≈1.6M-parameter
// VGG-like CNN on a batch of 64 real 128×128×3 UTKFace images runs and lowers
// the loss on that batch (the peer-figure layout of bench/RESULTS.md).
func TestFoundationVGGStepOnUTKFace(t *testing.T) {
	dir := sharedData()
	if dir == "" {
		t.Skip("needs ../shared/data/utkface (set FAIRDP_DATA)")
	}
	d, stats, err := loaders.LoadUTKFace(filepath.Join(dir, "utkface", "UTKFace"), loaders.UTKOptions{Size: 128, Limit: 64})
	if err != nil {
		t.Fatal(err)
	}
	if d.N() != 64 || stats.Loaded != 64 {
		t.Fatalf("loaded %d images", d.N())
	}
	m, err := models.New[float32](models.Spec{Arch: "vgg", InShape: []int{3, 128, 128}, Classes: 9}, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	if p := m.NumParams(); math.Abs(float64(p)-1.6e6) > 0.05*1.6e6 {
		t.Fatalf("VGG-like has %d parameters, want 1.6M ± 5%%", p)
	}
	idx := make([]int, 64)
	for i := range idx {
		idx[i] = i
	}
	x := make([]float32, 64*3*128*128)
	d.FillFloat32(idx, x)
	loss := func() float64 {
		logits := m.Forward(x, 64, true)
		l, dl := make([]float32, 64), make([]float32, 64*9)
		m.Loss(logits, d.Labels, nil, l, dl)
		m.ZeroGrads()
		m.Backward(dl)
		m.ParamGrads(nil)
		var s float64
		for _, v := range l {
			s += float64(v)
		}
		return s
	}
	before := loss()
	opt := nn.NewAdam[float32](1e-3)
	opt.Step(m.Params())
	after := loss()
	t.Logf("VGG-like on 64 UTKFace images: summed loss %.4f → %.4f after one Adam step", before, after)
	if !(after < before) {
		t.Errorf("one step did not lower the loss: %.4f → %.4f", before, after)
	}
}

// TestFoundationAdultBaseline: non-private logistic regression on Adult with
// the DP-FERMI preprocessing, the default job over 5 seeds (the DP-FERMI
// reference code's ε=∞ λ=0 cell is .1555/.1980).
func TestFoundationAdultBaseline(t *testing.T) {
	full(t)
	var errSum, dpSum float64
	for s := uint64(1); s <= 5; s++ {
		cfg := trainer.Defaults()
		cfg.Algo, cfg.Seed, cfg.Quiet = "sgd", &s, true
		rep := trainReport(t, cfg)
		t.Logf("seed %d: test error %.4f, DP violation %.4f (%.1f s)", s, rep.Test.Error, rep.Test.DPViolation, rep.Seconds)
		errSum += rep.Test.Error
		dpSum += rep.Test.DPViolation
	}
	t.Logf("mean of 5 seeds: test error %.4f, DP violation %.4f", errSum/5, dpSum/5)
	if e := errSum / 5; e < 0.145 || e > 0.160 {
		t.Errorf("mean test error %.4f", e)
	}
	if v := dpSum / 5; v < 0.17 || v > 0.22 {
		t.Errorf("mean DP violation %.4f outside [0.17, 0.22]", v)
	}
}

// TestFoundationMNISTCNN: 2 epochs of non-private training of the
// 431,080-parameter MNIST CNN reach ≥ 97 % test accuracy.
func TestFoundationMNISTCNN(t *testing.T) {
	full(t)
	if sharedData() == "" {
		t.Skip("needs ../shared/data/mnist")
	}
	s := uint64(1)
	cfg := trainer.Defaults()
	cfg.Algo, cfg.Dataset, cfg.DataDir, cfg.Model = "sgd", "mnist", sharedData(), "mnist-cnn"
	cfg.Epochs, cfg.Batch, cfg.LR, cfg.Seed, cfg.Quiet = 2, 256, 1e-3, &s, true
	rep := trainReport(t, cfg)
	t.Logf("MNIST CNN (%d parameters), 2 epochs: test accuracy %.4f in %.0f s", rep.Params, rep.Test.Accuracy, rep.Seconds)
	if rep.Params != 431080 || rep.Test.Accuracy < 0.97 {
		t.Errorf("params %d, test accuracy %.4f", rep.Params, rep.Test.Accuracy)
	}
}

// trainReport prepares and trains cfg as `fairdp train` would, quietly,
// and returns the report.
func trainReport(t *testing.T, cfg trainer.Config) *trainer.Report {
	t.Helper()
	job, err := trainer.Prepare(cfg, trainer.PrepareOptions{Log: &bytes.Buffer{}})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := trainer.Train(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}
