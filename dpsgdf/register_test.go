package dpsgdf

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/fairdp/fairdp/dpops/accounting"
	"github.com/fairdp/fairdp/loaders"
	"github.com/fairdp/fairdp/trainer"
)

// TestPresets checks the Xu, Du and Wu 2021 settings each preset applies.
func TestPresets(t *testing.T) {
	tests := []struct {
		name, dataset, model string
		epochs               int
		lr, sigma, clip, l2  float64
	}{
		{"dpsgdf-mnist", "mnist-unbalanced", "mnist-cnn", 60, 0.01, 0.8, 1, 0},
		// lr = 1/sqrt(20 · round(36,177/256)) = 1/sqrt(2,820).
		{"dpsgdf-adult", "adult-dpsgdf", "logistic", 20, 1 / math.Sqrt(2820), 1, 0.5, 0.01},
		// lr = 1/sqrt(20 · round(48,336/256)) = 1/sqrt(3,780).
		{"dpsgdf-dutch", "dutch-dpsgdf", "logistic", 20, 1 / math.Sqrt(3780), 1, 0.5, 0.01},
	}
	for _, tc := range tests {
		cfg := trainer.Defaults()
		if err := trainer.ApplyPreset(&cfg, tc.name); err != nil {
			t.Fatal(err)
		}
		if err := cfg.Validate(); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
		got := []any{cfg.Algo, cfg.Dataset, cfg.Model, cfg.Epochs, cfg.Batch, cfg.Optimizer, cfg.TrainFrac,
			cfg.Privacy.Sigma, cfg.Privacy.Clip, cfg.Privacy.Delta, cfg.Privacy.Sampling, cfg.Fair.CountNoiseRatio, cfg.Fair.WeightDecay}
		want := []any{Name, tc.dataset, tc.model, tc.epochs, 256, trainer.OptimizerSGD, 0.8,
			tc.sigma, tc.clip, 1e-6, "poisson", 10.0, tc.l2}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%s: setting %d is %v, want %v", tc.name, i, got[i], want[i])
			}
		}
		if math.Abs(cfg.LR-tc.lr) > 1e-15 {
			t.Errorf("%s: lr %v, want %v", tc.name, cfg.LR, tc.lr)
		}
		if !math.IsInf(cfg.Privacy.Epsilon, 1) {
			t.Errorf("%s: ε %v, want +Inf (σ is given)", tc.name, cfg.Privacy.Epsilon)
		}
	}
	if got := PaperLR(45222, 20, 256); math.Abs(got-0.018831) > 5e-7 {
		t.Errorf("PaperLR(Adult) = %v, want 0.018831", got)
	}
}

// TestPaperSchema loads the compact encodings from the small samples in
// testdata/ (the first 60 lines of adult.data, every 400th row of
// dutch.csv) and checks the feature counts and columns the doc promises.
func TestPaperSchema(t *testing.T) {
	tests := []struct {
		name, file string
		dim        int
		has, lacks []string
	}{
		{"adult", "adult_sample.data", 45,
			[]string{"age", "native-country", "occupation=Sales", "race=Black"},
			[]string{"fnlwgt", "education=Bachelors", "native-country=Cuba", "sex=Male"}},
		{"dutch", "dutch_sample.csv", 37,
			[]string{"age", "household_size", "prev_residence_place", "cur_eco_activity=135"},
			[]string{"age=4", "household_size=111", "sex=1"}},
		{"dutch35", "dutch_sample.csv", 35,
			[]string{"age", "citizenship", "country_birth=2", "cur_eco_activity=135"},
			[]string{"citizenship=1", "household_size=111", "sex=1"}},
	}
	for _, tc := range tests {
		s, err := PaperSchema(tc.name)
		if err != nil {
			t.Fatal(err)
		}
		train, test, prep, err := loaders.LoadCSV(loaders.CSVOptions{Schema: s, Files: []string{tc.file}, Dir: "testdata",
			Split: loaders.SplitOptions{TrainFrac: 0.8, Rand: rand.New(rand.NewPCG(1, 1))}})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if prep.Dim() != tc.dim || train.Dim != tc.dim {
			t.Errorf("%s: %d features, want %d: %v", tc.name, prep.Dim(), tc.dim, prep.FeatureNames())
		}
		names := prep.FeatureNames()
		for _, f := range tc.has {
			if !slices.Contains(names, f) {
				t.Errorf("%s: no feature %q in %v", tc.name, f, names)
			}
		}
		for _, f := range tc.lacks {
			if slices.Contains(names, f) {
				t.Errorf("%s: unexpected feature %q", tc.name, f)
			}
		}
		if !slices.Equal(train.GroupNames, []string{"Male", "Female"}) || test.N() == 0 {
			t.Errorf("%s: groups %v, %d test records", tc.name, train.GroupNames, test.N())
		}
	}
	if _, err := PaperSchema("credit"); err == nil {
		t.Error("credit has no paper encoding, want an error")
	}
	// The encodings are the built-in data sets adult-dpsgdf and
	// dutch-dpsgdf (what the presets load; Adult also from the embedded
	// copy), and the paper normalises numeric attributes to [0, 1]: each
	// numeric feature spans exactly [0, 1] on the training split.
	train, _, prep, err := loaders.LoadBuiltin("adult-dpsgdf", "", loaders.SplitOptions{TrainFrac: 0.8, Rand: rand.New(rand.NewPCG(1, 1))})
	if err != nil {
		t.Fatal(err)
	}
	if prep.Dim() != 45 {
		t.Errorf("adult-dpsgdf: %d features, want 45", prep.Dim())
	}
	for k, col := range prep.Schema().Numeric {
		lo, hi := math.Inf(1), math.Inf(-1)
		for i := range train.N() {
			v := train.X[i*train.Dim+k]
			lo, hi = min(lo, v), max(hi, v)
		}
		if math.Abs(lo) > 1e-12 || math.Abs(hi-1) > 1e-12 {
			t.Errorf("adult-dpsgdf: numeric %q spans [%v, %v] on the training split, want [0, 1]", col, lo, hi)
		}
	}
}

// TestPaperDataCounts checks the split sizes on the real files (Xu, Du and
// Wu 2021 split 80/20: Adult 80 % of 45,222 = 36,177 training records).
func TestPaperDataCounts(t *testing.T) {
	dir := os.Getenv(loaders.DataDirEnv)
	if dir == "" {
		dir = filepath.Join("..", "..", "shared", "data")
	}
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("needs the real Adult and Dutch files: %s not found (set %s)", dir, loaders.DataDirEnv)
	}
	for _, tc := range []struct {
		name        string
		train, test int
	}{{"adult", 36177, 9045}, {"dutch", 48336, 12084}} {
		train, test, _, err := LoadPaperData(tc.name, dir, rand.New(rand.NewPCG(1, 1)))
		if err != nil {
			t.Fatal(err)
		}
		if train.N() != tc.train || test.N() != tc.test {
			t.Errorf("%s: %d/%d records, want %d/%d", tc.name, train.N(), test.N(), tc.train, tc.test)
		}
	}
}

// TestTrainWritesBoundsAndCost runs `fairdp train --algo dpsgdf|naive
// --baseline --out DIR` through the trainer on (embedded) Adult: every
// metrics.jsonl line has the per-group series, the plot is a PNG, and
// report.json has the cost of privacy and the series.
func TestTrainWritesBoundsAndCost(t *testing.T) {
	for _, tc := range []struct{ algo, key, plot string }{
		{"dpsgdf", "clip_bounds", BoundsPlot},
		{"naive", "group_weights", WeightsPlot},
	} {
		t.Run(tc.algo, func(t *testing.T) {
			cfg := trainer.Defaults()
			seed := uint64(2)
			cfg.Seed, cfg.Quiet, cfg.Algo, cfg.Dataset, cfg.Limit = &seed, true, trainer.AlgoName(tc.algo), "adult", 3000
			cfg.Epochs, cfg.Baseline, cfg.Out = 3, true, t.TempDir()
			cfg.Privacy.Sigma, cfg.Privacy.Epsilon = 1, math.Inf(1) // σ uncapped
			job, err := trainer.Prepare(cfg, trainer.PrepareOptions{Log: &bytes.Buffer{}})
			if err != nil {
				t.Fatal(err)
			}
			rep, err := trainer.Train(context.Background(), job)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Algorithm != tc.algo || rep.CostOfPrivacy == nil || len(rep.CostOfPrivacy.Groups) != 2 {
				t.Fatalf("report: algorithm %q, cost %+v", rep.Algorithm, rep.CostOfPrivacy)
			}
			f, err := os.Open(filepath.Join(cfg.Out, "metrics.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			lines := 0
			for sc := bufio.NewScanner(f); sc.Scan(); lines++ {
				// "algo" also holds numbers; decode only the per-group map.
				var raw struct {
					Algo map[string]json.RawMessage `json:"algo"`
				}
				if err := json.Unmarshal(sc.Bytes(), &raw); err != nil {
					t.Fatal(err)
				}
				var series map[string]float64
				if err := json.Unmarshal(raw.Algo[tc.key], &series); err != nil {
					t.Fatalf("line %d: %s: %v", lines+1, tc.key, err)
				}
				if len(series) != 2 || !(series["Male"] > 0) || !(series["Female"] > 0) {
					t.Errorf("line %d: %s = %v", lines+1, tc.key, series)
				}
			}
			if lines != 3 {
				t.Errorf("%d metrics lines, want 3", lines)
			}
			png, err := os.ReadFile(filepath.Join(cfg.Out, tc.plot))
			if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
				t.Errorf("%s: %v", tc.plot, err)
			}
			raw, err := os.ReadFile(filepath.Join(cfg.Out, "report.json"))
			if err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Cost  map[string]any             `json:"cost_of_privacy"`
				Extra map[string]json.RawMessage `json:"extra"`
			}
			if err := json.Unmarshal(raw, &doc); err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"tau", "max_gap", "equal", "groups"} {
				if _, ok := doc.Cost[k]; !ok {
					t.Errorf("report.json cost_of_privacy lacks %q", k)
				}
			}
			var series map[string][]float64
			if err := json.Unmarshal(doc.Extra[tc.key], &series); err != nil || len(series) != 2 || len(series["Female"]) != 3 {
				t.Errorf("report.json extra.%s = %s (%v), want 3 epochs for each of 2 groups", tc.key, doc.Extra[tc.key], err)
			}
		})
	}
}

// TestEqualEpsilonEpochs: the paper's unbalanced-MNIST settings (n =
// 54,649, batch 256, σ2 = 0.8, σ1 = 8, δ = 1e-6, 60 epochs) give DPSGD-F
// and Naïve the largest whole number of epochs whose joint charge (σ_eff =
// (σ2⁻² + σ1⁻²)^-½: both releases share each Poisson sample) stays within DPSGD's ε, computed
// here from the RDP formula directly: 58 (59 would overspend).
func TestEqualEpsilonEpochs(t *testing.T) {
	const n, batch = 54649, 256
	cfg := Config{Policy: Adaptive, Clip: 1, Sigma: 0.8, Delta: 1e-6, CountNoiseRatio: 10, Batch: batch, Epochs: 60,
		Groups: []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}}
	q := float64(batch) / n
	perEpoch := int(math.Round(1 / q))
	eps := func(sigma float64, epochs int) float64 {
		orders := accounting.OpacusOrders()
		rdp := make([]float64, len(orders))
		for i, a := range orders {
			rdp[i] = float64(epochs*perEpoch) * accounting.SubsampledGaussianRDP(q, sigma, a)
		}
		e, _, err := accounting.EpsilonFromRDP(orders, rdp, 1e-6)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	joint := accounting.JointSigma(0.8, 8)
	target := eps(0.8, 60)
	want := 60
	for eps(joint, want) > target {
		want--
	}
	if want != 58 {
		t.Fatalf("independent count: %d epochs, expected 58 (ε %.4f at 58, %.4f at 59, DPSGD %.4f)", want, eps(joint, 58), eps(joint, 59), target)
	}
	for _, p := range []Policy{Adaptive, Naive} {
		c := cfg
		c.Policy = p
		got, err := EqualEpsilonEpochs(c, n)
		if err != nil || got != want {
			t.Errorf("%s: %d epochs (%v), want %d", p, got, err, want)
		}
	}
	flat := cfg
	flat.Policy = Flat
	if got, _ := EqualEpsilonEpochs(flat, n); got != 60 {
		t.Errorf("DPSGD keeps its epochs: got %d", got)
	}
}
