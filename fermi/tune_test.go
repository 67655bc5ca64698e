package fermi_test

import (
	"context"
	"io"
	"math"
	"slices"
	"testing"

	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/dpops/accounting"
	"github.com/fairdp/fairdp/fermi"
	"github.com/fairdp/fairdp/trainer"
)

// TestTuneFermi runs the private search (trainer.Tune) on DP-FERMI end to
// end, on a generated 1,500-record table at ε = 1 with the data-aware
// defaults (λ = 0.5 there): the receipt is the whole search's (ε at most
// the target and calibrated within 1 % of it), lists the chosen trial's
// group-count release at the noise a given σ implies (σ·sqrt(T)), and
// extra.tune carries the chosen λ (one of λ/2, λ, 2λ, repeated in the
// report's config) and the noisy violation of the fairness notion that
// scored it. With --public-group-sizes and equalized odds the receipt has
// no count release and the score is the equalized-odds one. Before DP-FERMI
// was tunable Tune refused it ("Algo fermi cannot be tuned privately yet").
func TestTuneFermi(t *testing.T) {
	train, test, majority := defaultsSplit(t, 5, 10, -1.6, 1500, 1000, 0.18, 0.34)
	for _, c := range []struct {
		fairness string
		public   bool
	}{{"dp", false}, {"eo", true}} {
		cfg := trainer.Defaults()
		seed := uint64(4)
		cfg.Algo, cfg.Seed, cfg.Quiet, cfg.Model, cfg.Privacy.Epsilon = fermi.Name, &seed, true, "logistic", 1
		cfg.Fair.Fairness, cfg.Fair.PublicGroupSizes = c.fairness, c.public
		cfg, _ = trainer.AdaptToData(cfg, train, map[string]bool{"Fair.Lambda": false})
		lambda := cfg.Fair.Lambda
		rr, src := dpops.NewRand(cfg.Seed)
		job := &trainer.Job{Cfg: cfg, Train: train, Test: test, Rand: rr, Source: src, Log: io.Discard}
		rep, err := trainer.Tune(context.Background(), job, trainer.TuneOptions{MeanTrials: 3})
		if err != nil {
			t.Fatal(err)
		}
		if eps := *rep.Privacy.Epsilon; eps > 1 || eps < 0.99 {
			t.Errorf("%s: the search's ε = %v, want at most 1 and within 1 %% of it", c.fairness, eps)
		}
		res := trainer.TuneResultOf(rep)
		ch := res.Chosen
		if ch.Lambda == nil || !slices.Contains([]float64{lambda / 2, lambda, 2 * lambda}, *ch.Lambda) ||
			!slices.Equal(res.Space.Lambda, []float64{lambda / 2, lambda, 2 * lambda}) || rep.Config.Fair.Lambda != *ch.Lambda {
			t.Errorf("%s: chosen λ %v, space %v, config λ %v: want one of λ/2, λ, 2λ around %v, repeated in the config",
				c.fairness, ch.Lambda, res.Space.Lambda, rep.Config.Fair.Lambda, lambda)
		}
		if res.Fairness != c.fairness || res.Violation == nil {
			t.Errorf("%s: extra.tune scored fairness %q, violation %v", c.fairness, res.Fairness, res.Violation)
		}
		var counts []accounting.Mechanism
		steps := 0
		for _, m := range rep.Privacy.Mechanisms {
			if fermi.IsCountRelease(m) {
				counts = append(counts, m)
			} else if m.Kind == accounting.KindSubsampledGaussian {
				steps += m.Steps
			}
		}
		switch {
		case c.public && len(counts) != 0:
			t.Errorf("%s: public group sizes, yet the receipt lists a count release %+v", c.fairness, counts)
		case !c.public && (len(counts) != 1 || counts[0].NoiseMultiplier != ch.Sigma*math.Sqrt(float64(steps))):
			t.Errorf("%s: count releases %+v, want one with σ·sqrt(T) = %v", c.fairness, counts, ch.Sigma*math.Sqrt(float64(steps)))
		}
		t.Logf("%s: K = %d, chosen λ %v, noisy accuracy %.4f and violation %.4f, test error %.4f", c.fairness, res.Trials,
			*ch.Lambda, res.Score, *res.Violation, rep.Test.Error)
		if !(rep.Test.Error < majority) {
			t.Errorf("%s: tuned test error %.4f, not better than the majority class's %.4f", c.fairness, rep.Test.Error, majority)
		}
	}
}
