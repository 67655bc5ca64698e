package trainer

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/models"
	"github.com/fairdp/fairdp/nn"
)

func quick(t *testing.T, mutate func(*Config)) (*Report, string) {
	t.Helper()
	cfg := Defaults()
	seed := uint64(7)
	cfg.Seed = &seed
	cfg.Epochs = 2
	cfg.Quiet = true
	cfg.Out = t.TempDir()
	if mutate != nil {
		mutate(&cfg)
	}
	job, err := Prepare(cfg, PrepareOptions{Log: &bytes.Buffer{}})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Train(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	return rep, cfg.Out
}

// TestDefaultRunWritesTheContract trains the default job's non-private
// baseline (--algo sgd; embedded Adult, logistic) briefly and checks every
// file of the results contract.
func TestDefaultRunWritesTheContract(t *testing.T) {
	rep, dir := quick(t, func(c *Config) { c.Algo = "sgd" })
	if rep.Train.N+rep.Test.N != 45222 {
		t.Errorf("Adult has %d records, want 45,222 (DP-FERMI's Adult)", rep.Train.N+rep.Test.N)
	}
	if rep.Test.Error > 0.17 || rep.Test.Error < 0.13 {
		t.Errorf("test error %.4f, want about 0.15 (DP-FERMI reference code, ε=∞ λ=0: .1555)", rep.Test.Error)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"algorithm", "dataset", "model", "train", "test", "privacy"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("report.json lacks %q", k)
		}
	}
	test := doc["test"].(map[string]any)
	for _, k := range []string{"n", "error", "accuracy", "dp_violation", "eo_violation", "groups"} {
		if _, ok := test[k]; !ok {
			t.Errorf("report.json test object lacks %q", k)
		}
	}
	g := test["groups"].([]any)[0].(map[string]any)
	for _, k := range []string{"group", "n", "accuracy", "tpr", "fpr", "selection_rate"} {
		if _, ok := g[k]; !ok {
			t.Errorf("report.json group lacks %q", k)
		}
	}
	priv := doc["privacy"].(map[string]any)
	if eps, ok := priv["epsilon"]; !ok || eps != nil {
		t.Errorf("non-private run: privacy.epsilon = %v, want null", eps)
	}
	if priv["seeded"] != true {
		t.Errorf("seeded run not recorded as seeded: %v", priv)
	}
	lines := bytes.Count(must(os.ReadFile(filepath.Join(dir, "metrics.jsonl"))), []byte("\n"))
	if lines != 2 {
		t.Errorf("metrics.jsonl has %d lines, want one per epoch (2)", lines)
	}
	m, meta, err := models.LoadFile(filepath.Join(dir, "model.ckpt"))
	if err != nil {
		t.Fatal(err)
	}
	if m.(*models.Model[float32]).NumParams() != 103 {
		t.Error("checkpoint is not the 103-parameter logistic model")
	}
	if len(meta.Privacy) == 0 || len(meta.Preprocess) == 0 {
		t.Error("checkpoint lacks the receipt or the preprocessing")
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 3 {
		t.Errorf("output dir holds %d entries, want exactly 3 (no temp files left)", len(ents))
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// TestSeedReproduces: the same seed gives bit-identical results.
func TestSeedReproduces(t *testing.T) {
	a, _ := quick(t, func(c *Config) { c.Algo = "dpsgd"; c.Privacy.Epsilon = 2 })
	b, _ := quick(t, func(c *Config) { c.Algo = "dpsgd"; c.Privacy.Epsilon = 2 })
	if a.Test.Error != b.Test.Error || a.Test.DPViolation != b.Test.DPViolation {
		t.Errorf("same seed, different results: %v vs %v", a.Test.Error, b.Test.Error)
	}
}

// TestDPSGDSpendsAtMostItsBudget: the issue-3 acceptance on Adult with a
// short run: ε ≤ target and a usable model.
func TestDPSGDSpendsAtMostItsBudget(t *testing.T) {
	rep, _ := quick(t, func(c *Config) { c.Algo = "dpsgd"; c.Privacy.Epsilon = 1; c.Epochs = 3 })
	if rep.Privacy.Epsilon == nil || *rep.Privacy.Epsilon > 1 || *rep.Privacy.Epsilon < 0.9 {
		t.Fatalf("privacy.epsilon = %v, want just below 1", rep.Privacy.Epsilon)
	}
	if want := 1 / (33916.0 * 33916); math.Abs(rep.Privacy.Delta-want) > 1e-15*want {
		t.Errorf("default δ = %v, want 1/n² = %v for n = 33,916", rep.Privacy.Delta, want)
	}
	if rep.Test.Error > 0.19 {
		t.Errorf("DP-SGD ε=1 test error %.4f", rep.Test.Error)
	}
	if len(rep.Privacy.Mechanisms) != 1 || rep.Privacy.Mechanisms[0].Steps != 3*132 { // round(1/q) = round(33916/256) = 132 steps per epoch
		t.Errorf("mechanisms %+v, want one subsampled Gaussian over 396 steps", rep.Privacy.Mechanisms)
	}
}

// TestEpsilonInfIsNonPrivate: --epsilon inf gives the non-private model.
func TestEpsilonInfIsNonPrivate(t *testing.T) {
	a, _ := quick(t, func(c *Config) { c.Algo = "sgd" })
	b, _ := quick(t, func(c *Config) { c.Algo = "dpsgd"; c.Privacy.Epsilon = math.Inf(1) })
	if a.Test.Error != b.Test.Error || b.Privacy.Epsilon != nil {
		t.Errorf("dpsgd ε=∞ gave error %v (ε %v), sgd %v", b.Test.Error, b.Privacy.Epsilon, a.Test.Error)
	}
}

func TestConfigErrors(t *testing.T) {
	c := Defaults()
	c.Epochs, c.Batch, c.LR, c.DType = 0, 0, -1, "int8"
	err := c.Validate()
	if err == nil {
		t.Fatal("bad config accepted")
	}
	for _, want := range []string{"Epochs must", "Batch must", "LR must", "DType must"} {
		if !bytes.Contains([]byte(err.Error()), []byte(want)) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
	if _, err := Prepare(Config{}, PrepareOptions{}); err == nil {
		t.Error("zero config accepted")
	}
}

// TestFloat64NoiseNote: a private float64 run's receipt says its noise was
// not drawn with the hardened sampler; float32 runs and
// non-private runs say nothing of it.
func TestFloat64NoiseNote(t *testing.T) {
	for _, tc := range []struct {
		dtype DType
		algo  AlgoName
		want  bool
	}{{"float64", "dpsgd", true}, {"float32", "dpsgd", false}, {"float64", "sgd", false}} {
		rep, _ := quick(t, func(c *Config) {
			c.Algo, c.DType, c.Privacy.Epsilon, c.Epochs = tc.algo, tc.dtype, 2, 1
			if tc.algo == "sgd" {
				c.Privacy.Epsilon = math.Inf(1)
			}
		})
		if got := strings.Contains(rep.Privacy.Note, "not hardened against floating-point attacks"); got != tc.want {
			t.Errorf("%s %s: note %q", tc.dtype, tc.algo, rep.Privacy.Note)
		}
	}
}

// TestOwnModelRefusals: a caller's model that does not fit the data, or
// a request the model cannot meet, is a clear error before training.
func TestOwnModelRefusals(t *testing.T) {
	seed := uint64(4)
	cfg := Defaults()
	cfg.Algo, cfg.Epochs, cfg.Seed, cfg.Quiet, cfg.Limit = "dpsgd", 1, &seed, true, 500
	job, err := Prepare(cfg, PrepareOptions{Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	mlp := func(in, out int) *models.Model[float32] {
		return &models.Model[float32]{Arch: "mine", InShape: []int{in}, Classes: 2,
			Layers: []nn.Layer[float32]{nn.NewLinear[float32](in, out)}}
	}
	dim := job.Train.Dim
	for _, tc := range []struct {
		name string
		m    *models.Model[float32]
		edit func(*Job)
		want string
	}{
		{"inputs", mlp(dim+1, 1), nil, "takes"},
		{"outputs", mlp(dim, 3), nil, "outputs"},
		{"baseline", mlp(dim, 1), func(j *Job) { j.Cfg.Baseline = true }, "Baseline cannot"},
	} {
		j := *job
		if tc.edit != nil {
			tc.edit(&j)
		}
		if _, err := trainModel(context.Background(), &j, tc.m); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
	var wrongType Job = *job
	wrongType.Model = &models.Model[float64]{}
	if _, err := Train(context.Background(), &wrongType); err == nil || !strings.Contains(err.Error(), "DType") {
		t.Errorf("a float64 model in a float32 run: %v", err)
	}
}
