package trainer

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/fairdp/fairdp/dpops"
)

// tuneQualityMargin is how much worse than the data-aware default a tuned
// run may be, in mean test error over tuneQualitySeeds, on the table of
// TestTuneNotWorseThanDefault. A search pays for its trials (each trial
// here spends about 0.6 of the ε a single run would), so the tuned model
// may be a little worse; on Communities at ε = 1 it was +.008 over 6 seeds.
const tuneQualityMargin = 0.015

// tuneQualitySeeds are seeds whose number of trials K is above 1 (8, 3 and
// 6 trials): with K = 1 the search returns one setting drawn at random and
// there is no choice for the test to judge.
var tuneQualitySeeds = []uint64{1, 2, 4}

// TestTuneNotWorseThanDefault trains a 600-record, 20-feature table
// (46 % positives) at ε = 1 with the data-aware defaults and with Tune's
// defaults, 3 seeds each: the tuned model must beat the majority class by
// 0.02 and be within tuneQualityMargin of the default. With trials scored
// on a held-out fifth of the training records (the old default;
// FAIRDP_TUNE_TEST_VALID_FRAC=0.2 runs it) the score's noise alone had
// standard deviation 0.13 in accuracy (σ ≈ 16 correct predictions of
// about 120), so the search chose almost at random among trials trained
// on 480 records: tuned mean .229 against the default's .170 (seeds 1, 2,
// 4: .189, .209, .288); scored on the trained-on records, .181 (.180,
// .176, .187). It trains 3 defaults and 3 searches (17 trials): about 30 s
// on an idle core, so -short skips it.
func TestTuneNotWorseThanDefault(t *testing.T) {
	if testing.Short() {
		t.Skip("17 private trials and 3 default runs")
	}
	frac := 0.0
	if v := os.Getenv("FAIRDP_TUNE_TEST_VALID_FRAC"); v != "" { // to see the test fail with a hold-out
		frac, _ = strconv.ParseFloat(v, 64)
	}
	var def, tuned, maj float64
	for _, seed := range tuneQualitySeeds {
		cfg := Defaults()
		cfg.Algo, cfg.Seed, cfg.Quiet, cfg.Model = "dpsgd", &seed, true, "logistic"
		cfg.Privacy.Epsilon = 1
		data := rand.New(rand.NewPCG(7, seed))
		train, test := syntheticTable(600, 20, -0.5, data), syntheticTable(2000, 20, -0.5, data)
		cfg, _ = AdaptToData(cfg, train, map[string]bool{})
		job := func() *Job {
			r, src := dpops.NewRand(&seed)
			return &Job{Cfg: cfg, Train: train, Test: test, Rand: r, Source: src, Log: &bytes.Buffer{}}
		}
		d, err := Train(context.Background(), job())
		if err != nil {
			t.Fatal(err)
		}
		tu, err := Tune(context.Background(), job(), TuneOptions{ValidFrac: frac})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("seed %d: majority %.4f, default %.4f, tuned %.4f (%d trials)", seed, majorityError(test), d.Test.Error,
			tu.Test.Error, TuneResultOf(tu).Trials)
		k := float64(len(tuneQualitySeeds))
		def += d.Test.Error / k
		tuned += tu.Test.Error / k
		maj += majorityError(test) / k
	}
	if !(tuned < maj-0.02) || tuned > def+tuneQualityMargin {
		t.Errorf("tuned mean test error %.4f: want below the majority class's %.4f by 0.02 and within %v of the default's %.4f",
			tuned, maj, tuneQualityMargin, def)
	}
}
