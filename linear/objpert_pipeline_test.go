package linear

import (
	"context"
	"github.com/fairdp/fairdp/dpops"
	"io"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/models"
	"github.com/fairdp/fairdp/trainer"
)

func objPertConfig(eps float64) trainer.Config {
	cfg := trainer.Defaults()
	seed := uint64(3)
	cfg.Algo, cfg.Limit, cfg.Seed = "objpert", 2000, &seed
	cfg.Privacy.Epsilon = eps
	return cfg
}

// TestRunObjPert: the pipeline's report keeps the private training
// split's statistics out unless asked, states the receipt and what it
// does not cover, records the bound it used, and writes a checkpoint that
// scores the test split as the report does.
func TestRunObjPert(t *testing.T) {
	for _, tc := range []struct {
		name       string
		eps        float64
		trainStats bool
	}{
		{"private", 1, false},
		{"private with training statistics", 1, true},
		{"not private", math.Inf(1), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := objPertConfig(tc.eps)
			cfg.ReportTrainStats = tc.trainStats
			cfg.Out = t.TempDir()
			rep, err := trainer.RunConfig(context.Background(), cfg, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			private := !math.IsInf(tc.eps, 1)
			extra := ObjPertExtra(rep)
			if extra == nil || rep.Algorithm != "objpert" {
				t.Fatalf("report %+v", rep)
			}
			// The default B is √(source columns): counted here from the
			// encoded feature names (a one-hot block is "column=value").
			_, split := dpops.NewRand(cfg.Seed)
			train, _, _, err := trainer.LoadData(cfg, split.Derive("data"))
			if err != nil {
				t.Fatal(err)
			}
			columns := columnsOfNames(train.FeatureNames)
			if columns >= rep.Params-1 {
				t.Fatalf("%d source columns for %d features: the test needs one-hot columns", columns, rep.Params-1)
			}
			if want := math.Sqrt(float64(columns)); extra.RowBound != want || ObjPertConfigOf(rep.Config).RowBound != want {
				t.Errorf("row bound %v, config %v; want the default √%d (source columns)", extra.RowBound, ObjPertConfigOf(rep.Config).RowBound, columns)
			}
			if got := rep.Privacy.Private(); got != private {
				t.Fatalf("receipt private %v, want %v", got, private)
			}
			var items []string
			for _, nc := range rep.Privacy.NotCovered {
				items = append(items, nc.Item)
			}
			showTrain := !private || tc.trainStats
			if (rep.Train != nil) != showTrain || (extra.ClippedRows != nil) != showTrain || rep.TrainNotPrivate != (private && tc.trainStats) {
				t.Errorf("train stats %v, clipped rows %v, not-private mark %v; want shown %v", rep.Train != nil, extra.ClippedRows, rep.TrainNotPrivate, showTrain)
			}
			if private {
				// The default (auto) chooses from public facts and says why;
				// the Gaussian mechanism's δ is 1/n² of the training records.
				wantDelta := 0.0
				if extra.Mechanism == MechanismGaussian {
					wantDelta = 1 / float64(rep.TrainRecords*rep.TrainRecords)
				}
				if *rep.Privacy.Epsilon != tc.eps || math.Abs(rep.Privacy.Delta-wantDelta) > 1e-12*wantDelta || extra.EpsilonPrime == nil ||
					extra.Choice == "" || ObjPertConfigOf(rep.Config).Mechanism != MechanismAuto || extra.Mechanism == "" {
					t.Errorf("receipt ε %v δ %v (want %v), ε' %v, mechanism %q chosen because %q, config %+v", *rep.Privacy.Epsilon,
						rep.Privacy.Delta, wantDelta, extra.EpsilonPrime, extra.Mechanism, extra.Choice, ObjPertConfigOf(rep.Config))
				}
				for _, want := range []string{"exact_minimiser", "test_evaluation", "record_count", "preprocessing"} {
					if !slices.Contains(items, want) {
						t.Errorf("not_covered %v lacks %s", items, want)
					}
				}
				if tc.trainStats && !slices.Contains(items, "training_statistics") {
					t.Errorf("not_covered %v lacks training_statistics", items)
				}
			}
			checkCheckpointScores(t, cfg, rep)
		})
	}
}

// checkCheckpointScores checks that the checkpoint cfg's run wrote to
// cfg.Out carries its receipt and preprocessing and scores the test split
// as its report rep did.
func checkCheckpointScores(t *testing.T, cfg trainer.Config, rep *trainer.Report) {
	t.Helper()
	m, meta, err := models.LoadFile(filepath.Join(cfg.Out, "model.ckpt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(meta.Privacy) == 0 || len(meta.Preprocess) == 0 {
		t.Fatalf("checkpoint without receipt or preprocessing")
	}
	job, err := trainer.Prepare(cfg, trainer.PrepareOptions{Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	got, err := trainer.Evaluate(m.(*models.Model[float64]), job.Test)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, rep.Test) {
		t.Errorf("checkpoint's test metrics %+v, report's %+v", got, rep.Test)
	}
}

func TestRunObjPertRefuses(t *testing.T) {
	for name, mutate := range map[string]func(c *trainer.Config){
		"negative bound": func(c *trainer.Config) { *c = WithObjPertConfig(*c, ObjPertConfig{RowBound: -1}) },
		// An infinite Λ cannot be held in a configuration section (JSON
		// has no infinity); a negative one is the reachable bad value.
		"negative L2":      func(c *trainer.Config) { *c = WithObjPertConfig(*c, ObjPertConfig{L2: -1}) },
		"ε zero":           func(c *trainer.Config) { c.Privacy.Epsilon = 0 },
		"image data":       func(c *trainer.Config) { c.Dataset = "mnist"; c.DataDir = t.TempDir() },
		"other algorithm":  func(c *trainer.Config) { c.Algo = "postproc" },
		"train fraction 1": func(c *trainer.Config) { c.TrainFrac = 1 },
	} {
		cfg := objPertConfig(1)
		mutate(&cfg)
		if _, err := RunObjPert(context.Background(), cfg); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// columnsOfNames counts the source columns behind encoded feature names (a
// one-hot block's names are "column=value"): the tests' own count, apart
// from loaders.Preprocessor.Columns.
func columnsOfNames(names []string) int {
	columns := map[string]bool{}
	for _, f := range names {
		columns[strings.SplitN(f, "=", 2)[0]] = true
	}
	return len(columns)
}
