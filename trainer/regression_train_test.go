package trainer_test

import (
	"context"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/models"
	"github.com/fairdp/fairdp/nn"
	"github.com/fairdp/fairdp/trainer"
)

// The regression sample (testdata/regression-sample/README.md): 1,500
// synthetic records, a target and no class label.
const (
	regressionCSV    = "testdata/regression-sample/regression.csv"
	regressionSchema = "testdata/regression-sample/regression.schema.json"
)

// TestDPSGDRegression: DP-SGD (and DPSGD-F, whose group rule reads no
// label) on a regression schema trains the zoo's linear-regression with
// the squared loss: at ε = 1 its test MSPE is well below the constant
// predictor's (the test targets' own mean, about 5.25) — trained as a
// classifier's logit with cross-entropy on labels 0 the predictions run
// negative and the MSPE exceeds it. The receipt has the usual shape,
// model.ckpt is a regression model that eval scores with the same MSPE
// (as do the epoch lines),
// and the algorithms that train classifiers refuse, naming the choices.
func TestDPSGDRegression(t *testing.T) {
	dir := t.TempDir()
	for _, algo := range []string{"dpsgd", "dpsgdf", "naive", "sgd"} {
		cfg := trainer.Defaults()
		seed := uint64(5)
		cfg.Algo, cfg.Dataset, cfg.Schema, cfg.Seed = trainer.AlgoName(algo), regressionCSV, regressionSchema, &seed
		cfg.Epochs, cfg.Batch, cfg.LR, cfg.Privacy.Epsilon = 10, 128, 0.05, 1
		private := algo != "sgd"
		if !private {
			cfg.Privacy.Epsilon = math.Inf(1)
		}
		cfg.Out = filepath.Join(dir, algo)
		var log strings.Builder
		rep, err := trainer.RunConfig(context.Background(), cfg, &log)
		if err != nil {
			t.Fatalf("%s: %v", algo, err)
		}
		if !regexp.MustCompile(`epoch 10: .*test MSPE `).MatchString(log.String()) {
			t.Errorf("%s: the epoch lines do not show the test MSPE:\n%s", algo, log.String())
		}
		if rep.Model != models.RegressionArch || rep.Test.MSPE == nil || len(rep.Test.Groups) != 2 || rep.Test.Groups[0].MSPE == nil {
			t.Fatalf("%s: model %q, test split %+v; want a linear-regression scored by MSPE per group", algo, rep.Model, rep.Test)
		}
		ev, err := trainer.EvaluateCheckpoint(trainer.EvalOptions{Checkpoint: filepath.Join(cfg.Out, "model.ckpt"), Data: trainer.Defaults()})
		if err != nil {
			t.Fatalf("%s: eval: %v", algo, err)
		}
		mean := 0.0
		for _, y := range ev.Data.Targets {
			mean += y
		}
		mean /= float64(len(ev.Data.Targets))
		constant := 0.0
		for _, y := range ev.Data.Targets {
			constant += (y - mean) * (y - mean)
		}
		constant /= float64(len(ev.Data.Targets))
		mspe := *rep.Test.MSPE
		t.Logf("%s: test MSPE %.4f, constant predictor %.4f, receipt %s", algo, mspe, constant, rep.Privacy)
		if !(mspe < constant/3) {
			t.Errorf("%s: test MSPE %.4f, want below a third of the constant predictor's %.4f", algo, mspe, constant)
		}
		if rep.Privacy.Private() != private || (private && (*rep.Privacy.Epsilon > 1+1e-9 || rep.Train != nil)) {
			t.Errorf("%s: receipt %+v, train stats shown %v", algo, rep.Privacy, rep.Train != nil)
		}
		if !ev.HeldOut || ev.Arch != models.RegressionArch || ev.Test.MSPE == nil || *ev.Test.MSPE != mspe {
			t.Errorf("%s: eval held out %v, arch %q, split %+v; training reported MSPE %v", algo, ev.HeldOut, ev.Arch, ev.Test, mspe)
		}
	}
	for _, algo := range []string{"fermi", "steffle"} {
		cfg := trainer.Defaults()
		cfg.Algo, cfg.Dataset, cfg.Schema, cfg.Epochs = trainer.AlgoName(algo), regressionCSV, regressionSchema, 1
		_, err := trainer.RunConfig(context.Background(), cfg, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "trains classifiers") || !strings.Contains(err.Error(), "dpsgd") {
			t.Errorf("%s on a regression schema: error %v, want a refusal naming the algorithms that train regressions", algo, err)
		}
	}
}

// TestRegressionNeedsTargets: a regression model (a spec naming the
// regression arch, or a caller's own) on data without a target is refused
// before training, as is a regression output under DP-FERMI; data with both
// a label and a target trains a classifier unless Model names the
// regression arch. This replaces the refusal of every regression model by
// the SGD trainers (TestSGDRefusesRegressionSpec).
func TestRegressionNeedsTargets(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "spec.json")
	if err := os.WriteFile(spec, []byte(`{"arch": "linear-regression", "classes": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := trainer.Defaults()
	cfg.Algo, cfg.Limit, cfg.Epochs, cfg.ModelSpecFile = "dpsgd", 500, 1, spec
	_, err := trainer.RunConfig(context.Background(), cfg, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "no regression target") {
		t.Errorf("regression spec on adult: error %v, want a refusal naming the missing target", err)
	}
	cfg.ModelSpecFile = ""
	job, err := trainer.Prepare(cfg, trainer.PrepareOptions{Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	m, err := models.New[float32](models.Spec{Arch: models.RegressionArch, InShape: []int{job.Train.Dim}, Classes: 1}, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	job.Model = m
	if _, err := trainer.Train(context.Background(), job); err == nil || !strings.Contains(err.Error(), "no regression target") {
		t.Errorf("Job.Model regression on adult: error %v", err)
	}
	job.Cfg.Algo = "fermi"
	if _, err := trainer.Train(context.Background(), job); err == nil || !strings.Contains(err.Error(), "trains classifiers") {
		t.Errorf("Job.Model regression under fermi: error %v", err)
	}
	// A schema with both a target and a label trains a classifier unless
	// Model names the regression arch; DP-FERMI refuses that.
	both := filepath.Join(dir, "both.schema.json")
	if err := os.WriteFile(both, []byte(`{"name": "both", "files": ["regression.csv"], "format": {"header": true}, "target": "y",
	  "label": {"column": "y", "threshold": 0}, "sensitive": {"columns": ["s"]}, "numeric": ["f0", "f1", "f2", "f3", "bias"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg = trainer.Defaults()
	cfg.Dataset, cfg.Schema, cfg.Epochs, cfg.Batch, cfg.Quiet = regressionCSV, both, 1, 64, true
	for _, tc := range []struct {
		algo, model string
		regression  bool
	}{{"dpsgd", "", false}, {"dpsgd", models.RegressionArch, true}, {"fermi", models.RegressionArch, false}} {
		cfg.Algo, cfg.Model = trainer.AlgoName(tc.algo), tc.model
		rep, err := trainer.RunConfig(context.Background(), cfg, io.Discard)
		switch {
		case tc.algo == "fermi":
			if err == nil || !strings.Contains(err.Error(), "trains classifiers") {
				t.Errorf("fermi with model %s: error %v", tc.model, err)
			}
		case err != nil:
			t.Errorf("%s with model %q: %v", tc.algo, tc.model, err)
		case (rep.Test.MSPE != nil) != tc.regression || (rep.Model == models.RegressionArch) != tc.regression:
			t.Errorf("%s with model %q: trained %s, test MSPE %v", tc.algo, tc.model, rep.Model, rep.Test.MSPE)
		}
	}
}

// TestSquaredLossPerSampleGradients: the per-sample gradients DP-SGD reads
// from the taps for a regression network (Linear, Tanh, Linear to one
// output, Classes 1) under the squared loss equal central finite
// differences of each record's (f(x_i) − y_i)², and the clipped sum is
// Σ_i min(1, C/‖g_i‖)·g_i of those.
func TestSquaredLossPerSampleGradients(t *testing.T) {
	m := &models.Model[float64]{Arch: "my-regression", InShape: []int{3}, Classes: 1, Layers: []nn.Layer[float64]{
		nn.NewLinear[float64](3, 4), nn.NewTanh[float64](), nn.NewLinear[float64](4, 1)}}
	rng := rand.New(rand.NewPCG(9, 9))
	for _, p := range m.Params() {
		for i := range p.Value {
			p.Value[i] = rng.NormFloat64()
		}
	}
	const n, clip, h = 5, 0.7, 1e-6
	b := trainer.Batch[float64]{Idx: make([]int, n), X: make([]float64, 3*n), Labels: make([]int, n),
		Groups: make([]int, n), Targets: make([]float64, n)}
	for i := range b.X {
		b.X[i] = rng.NormFloat64()
	}
	for i := range b.Targets {
		b.Targets[i] = 4 * rng.NormFloat64()
	}
	// The slow path: each record's loss differenced parameter by parameter.
	lossOf := func(i int) float64 {
		p := m.Forward(b.X[3*i:3*i+3], 1, false)[0]
		return (p - b.Targets[i]) * (p - b.Targets[i])
	}
	fd := make([][]float64, n)
	for i := range n {
		for _, p := range m.Params() {
			for j := range p.Value {
				v := p.Value[j]
				p.Value[j] = v + h
				up := lossOf(i)
				p.Value[j] = v - h
				down := lossOf(i)
				p.Value[j] = v
				fd[i] = append(fd[i], (up-down)/(2*h))
			}
		}
	}
	var pass trainer.Pass[float64]
	m.ZeroGrads()
	pass.Run(m, b, nil)
	norms := make([]float64, n)
	m.SqNorms(norms)
	scale := make([]float64, n)
	want := make([]float64, len(fd[0]))
	for i := range n {
		sq := 0.0
		for _, g := range fd[i] {
			sq += g * g
		}
		if math.Abs(norms[i]-sq) > 1e-6*math.Max(1, sq) {
			t.Errorf("record %d: squared norm %.10g from the taps, %.10g by finite differences", i, norms[i], sq)
		}
		scale[i] = dpops.ClipFactor(math.Sqrt(norms[i]), clip)
		for j, g := range fd[i] {
			want[j] += dpops.ClipFactor(math.Sqrt(sq), clip) * g
		}
	}
	m.ParamGrads(scale)
	k := 0
	for _, p := range m.Params() {
		for _, g := range p.Grad {
			if math.Abs(g-want[k]) > 1e-6 {
				t.Errorf("clipped sum [%d] = %.10g, finite differences %.10g", k, g, want[k])
			}
			k++
		}
	}
}
