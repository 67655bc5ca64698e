package trainer

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/loaders"
)

// TestDefaultsDoNotCollapse: a default private run on a
// small table (750 training records, 30 % minority class) must learn
// something. With the old fixed defaults (batch 256, 20 epochs, η = 0.005)
// DP-SGD's test error was 0.303, 0.262 and 0.266 at ε = 0.3, 1 and 3,
// against the majority class's 0.300; with the data-aware defaults it is
// 0.179, 0.171 and 0.171.
func TestDefaultsDoNotCollapse(t *testing.T) {
	for _, eps := range []float64{0.3, 1, 3} {
		job := tableJob(t, "dpsgd", 750, 8, -1.5, &bytes.Buffer{})
		job.Cfg.Privacy.Epsilon, job.Cfg.Quiet = eps, true
		job.Cfg, _ = AdaptToData(job.Cfg, job.Train, nil)
		rep, err := Train(context.Background(), job)
		if err != nil {
			t.Fatal(err)
		}
		maj := majorityError(job.Test)
		sel := rep.Test.Groups[0].SelectionRate
		if !(rep.Test.Error < maj-0.05) || sel < 0.02 || sel > 0.98 {
			t.Errorf("ε = %v: default run's test error %.4f (majority class %.4f), selection rate %.3f: "+
				"the default does not beat the majority class", eps, rep.Test.Error, maj, sel)
		}
	}
}

// TestAdaptToDataRules: the settings follow the rule of dataRuleFor, fixed
// settings and runs the rule does not cover are left alone.
func TestAdaptToDataRules(t *testing.T) {
	table := func(n int) *loaders.Dataset { return &loaders.Dataset{Dim: 1, X: make([]float64, n)} }
	base := Defaults()
	base.Algo = "dpsgd"
	cases := []struct {
		name   string
		algo   AlgoName
		n      int
		eps    float64
		fixed  map[string]bool
		mutate func(*Config)
		// want, derived from the rule: ε·n < 2000 → q 0.25, 20 epochs,
		// η 0.1, clip/10; else q 0.05, 40 epochs, η 0.03, clip.
		batch, epochs int
		lr, clip      float64
	}{
		{"small budget", "dpsgd", 750, 1, nil, nil, int(math.Round(0.25 * 750)), 20, 0.1, 0.1},
		{"large budget", "dpsgd", 750, 3, nil, nil, int(math.Round(0.05 * 750)), 40, 0.03, 1},
		{"large table", "naive", 30000, 0.3, nil, nil, 1500, 40, 0.03, 1},
		{"tiny table", "dpsgdf", 40, 1, nil, nil, 16, 20, 0.1, 0.1 * dpsgdfClipX},
		{"fixed", "dpsgd", 750, 1, map[string]bool{"Batch": true, "Epochs": true, "LR": true, "Privacy.Clip": true}, nil,
			base.Batch, base.Epochs, base.LR, base.Privacy.Clip},
		{"fixed lr", "dpsgd", 750, 1, map[string]bool{"LR": true}, nil, 188, 20, base.LR, 0.1},
		{"sgd", "sgd", 750, 1, nil, nil, base.Batch, base.Epochs, base.LR, base.Privacy.Clip},
		{"fermi", "fermi", 750, 1, nil, nil, int(math.Round(0.25 * 750)), 20, 0.1, 0.1},
		{"steffle with Adam", "steffle", 750, 1, nil, nil, base.Batch, base.Epochs, base.LR, base.Privacy.Clip},
		{"sigma given", "dpsgd", 750, 1, nil, func(c *Config) { c.Privacy.Sigma = 2 }, base.Batch, base.Epochs, base.LR, base.Privacy.Clip},
		{"not private", "dpsgd", 750, math.Inf(1), nil, nil, base.Batch, base.Epochs, base.LR, base.Privacy.Clip},
		{"sgd optimizer", "dpsgd", 750, 1, nil, func(c *Config) { c.Optimizer = "sgd" }, base.Batch, base.Epochs, base.LR, base.Privacy.Clip},
	}
	for _, c := range cases {
		cfg := base
		cfg.Algo, cfg.Privacy.Epsilon = c.algo, c.eps
		if c.mutate != nil {
			c.mutate(&cfg)
		}
		got, note := AdaptToData(cfg, table(c.n), c.fixed)
		if got.Batch != c.batch || got.Epochs != c.epochs || got.LR != c.lr || math.Abs(got.Privacy.Clip-c.clip) > 1e-15 {
			t.Errorf("%s: batch %d epochs %d lr %v clip %v, want %d %d %v %v", c.name, got.Batch, got.Epochs, got.LR,
				got.Privacy.Clip, c.batch, c.epochs, c.lr, c.clip)
		}
		if (note == "") != (got.Batch == cfg.Batch && got.Epochs == cfg.Epochs && got.LR == cfg.LR && got.Privacy.Clip == cfg.Privacy.Clip) {
			t.Errorf("%s: note %q does not match what changed", c.name, note)
		}
	}
	// λ (DP-FERMI, SteFFLe) only when the caller says it is not fixed, and
	// SteFFLe's rule on one silo's records with its own SGD step.
	for _, c := range []struct {
		name        string
		algo        AlgoName
		n, silos    int
		eps         float64
		fixed       map[string]bool
		batch       int
		lr, lambda  float64
		noteSubText string
	}{
		{"fermi λ, small budget", "fermi", 750, 1, 1, map[string]bool{"Fair.Lambda": false}, 188, 0.1, fairLambdaSmall, "λ 0.5"},
		{"fermi, medium budget", "fermi", 5000, 1, 1, map[string]bool{"Fair.Lambda": false}, 250, 0.03, fairLambdaLarge, "λ 2"},
		{"fermi, large budget: Adult's tuned defaults", "fermi", 20000, 1, 1, map[string]bool{"Fair.Lambda": false}, base.Batch, base.LR, base.Fair.Lambda, ""},
		{"fermi, Adult", "fermi", 33916, 1, 1, map[string]bool{"Fair.Lambda": false}, base.Batch, base.LR, base.Fair.Lambda, ""},
		// Large budget but too few of Defaults()' steps (20·n/256 < 1,500):
		// the middle rule.
		{"fermi, large budget, few steps", "fermi", 10000, 1, 1, map[string]bool{"Fair.Lambda": false}, 500, 0.03, fairLambdaLarge, "λ 2"},
		{"fermi, ε = 4, few steps", "fermi", 4406, 1, 4, map[string]bool{"Fair.Lambda": false}, 220, 0.03, fairLambdaLarge, "λ 2"},
		{"fermi, enough steps, small budget", "fermi", 40000, 1, 0.2, map[string]bool{"Fair.Lambda": false}, 2000, 0.03, fairLambdaLarge, "λ 2"},
		{"fermi λ not named", "fermi", 750, 1, 1, nil, 188, 0.1, base.Fair.Lambda, "batch 188"},
		{"fermi λ given", "fermi", 750, 1, 1, map[string]bool{"Fair.Lambda": true}, 188, 0.1, base.Fair.Lambda, "batch 188"},
		{"dpsgd has no λ", "dpsgd", 750, 1, 1, map[string]bool{"Fair.Lambda": false}, 188, 0.1, base.Fair.Lambda, "batch 188"},
		// SteFFLe: q 0.05 of a silo, C as given; η and λ by ε·ñ.
		{"steffle, 3 silos", "steffle", 3000, 3, 1, map[string]bool{"Fair.Lambda": false}, 50, 0.1, fairLambdaSmall, "1000 training records a silo"},
		{"steffle, large silos", "steffle", 60000, 3, 1, map[string]bool{"Fair.Lambda": false}, 1000, 0.5, fairLambdaLarge, "20000 training records a silo"},
		{"steffle, silo budget just below", "steffle", 5997, 3, 1, map[string]bool{"Fair.Lambda": false}, 100, 0.1, fairLambdaSmall, "1999 training records a silo"},
		{"steffle, silo budget just above", "steffle", 6000, 3, 1, map[string]bool{"Fair.Lambda": false}, 100, 0.5, fairLambdaLarge, "2000 training records a silo"},
	} {
		cfg := base
		cfg.Algo, cfg.Privacy.Epsilon, cfg.Federation.Silos = c.algo, c.eps, c.silos
		if c.algo == "steffle" {
			cfg.Optimizer = "sgd"
		}
		got, note := AdaptToData(cfg, table(c.n), c.fixed)
		if got.Batch != c.batch || got.LR != c.lr || got.Fair.Lambda != c.lambda || !strings.Contains(note, c.noteSubText) {
			t.Errorf("%s: batch %d lr %v λ %v note %q; want %d %v %v and a note with %q", c.name, got.Batch, got.LR, got.Fair.Lambda, note,
				c.batch, c.lr, c.lambda, c.noteSubText)
		}
	}
	img := &loaders.Dataset{C: 1, H: 2, W: 2, Pix: make([]uint8, 4*100)}
	if got, _ := AdaptToData(base, img, nil); got.Batch != base.Batch || got.LR != base.LR {
		t.Errorf("image data: adapted to batch %d, lr %v", got.Batch, got.LR)
	}
}

// TestNewPrivateAdaptsDefaults: the library's entry point takes the
// data-aware defaults for the options left 0 and keeps the others.
func TestNewPrivateAdaptsDefaults(t *testing.T) {
	p, err := NewPrivate(PrivateOptions{Dataset: "adult", Limit: 800, Epsilon: 1, Epochs: 3})
	if err != nil {
		t.Fatal(err)
	}
	c, n := p.Config(), p.Train.N()
	if c.Batch != int(math.Round(0.25*float64(n))) || c.Epochs != 3 || c.LR != 0.1 || c.Privacy.Clip != 0.1 {
		t.Errorf("%d records at ε = 1: batch %d, epochs %d, lr %v, clip %v; want batch q·n with q = 0.25, the given 3 epochs, lr 0.1, clip 0.1",
			n, c.Batch, c.Epochs, c.LR, c.Privacy.Clip)
	}
}

// TestAdaptToDataGuards: on a table DPSGD-F's default count guard and
// Naïve's default guard are smooth and DPSGD-F's C0 is half the rule's
// clip; a guard the caller named is kept, a fixed clip is not halved, and
// the other algorithms' guards are left alone.
func TestAdaptToDataGuards(t *testing.T) {
	table := &loaders.Dataset{Dim: 1, X: make([]float64, 15000)}
	for _, c := range []struct {
		name                   string
		algo                   AlgoName
		countGuard, naiveGuard string
		fixed                  map[string]bool
		wantCount, wantNaive   string
		clip                   float64
	}{
		{"dpsgdf", "dpsgdf", "", "", nil, "smooth", "", 0.5},
		{"dpsgdf, guard named", "dpsgdf", "c0", "", nil, "c0", "", 0.5},
		{"dpsgdf, clip fixed", "dpsgdf", "", "", map[string]bool{"Privacy.Clip": true}, "smooth", "", 1},
		{"naive", "naive", "", "", nil, "", "smooth", 1},
		{"naive, guard named", "naive", "", "one", nil, "", "one", 1},
		{"dpsgd", "dpsgd", "", "", nil, "", "", 1},
	} {
		cfg := Defaults()
		cfg.Algo, cfg.Privacy.Epsilon, cfg.Fair.CountGuard, cfg.Fair.NaiveGuard = c.algo, 1, c.countGuard, c.naiveGuard
		got, note := AdaptToData(cfg, table, c.fixed)
		if got.Fair.CountGuard != c.wantCount || got.Fair.NaiveGuard != c.wantNaive || got.Privacy.Clip != c.clip {
			t.Errorf("%s: count guard %q, naive guard %q, clip %v; want %q, %q, %v", c.name, got.Fair.CountGuard, got.Fair.NaiveGuard,
				got.Privacy.Clip, c.wantCount, c.wantNaive, c.clip)
		}
		if changed := got.Fair.CountGuard != cfg.Fair.CountGuard || got.Fair.NaiveGuard != cfg.Fair.NaiveGuard; changed && !strings.Contains(note, "guard smooth") {
			t.Errorf("%s: note %q does not name the guard", c.name, note)
		}
	}
}
