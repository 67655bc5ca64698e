package bench

// Private logistic regression on tabular data: fairdp's objective
// perturbation (--algo objpert) side by side with IBM's diffprivlib 0.6.6
// LogisticRegression and scikit-learn's non-private one, on the same
// splits and the same encoded features (bench/results/tabular.md).
//
// The Go half fits objpert at every ε and seed and writes each split's
// encoded features for the Python half:
//
//	FAIRDP_FULL=1 FAIRDP_BENCH_OUT=/tmp/tabular CGO_LDFLAGS=-lopenblas \
//	  go test -tags openblas -timeout 0 -run TabularObjPert -v ./bench
//
// then the Python half (diffprivlib's source on PYTHONPATH, Debian's
// python3-sklearn) fits scikit-learn and diffprivlib on those files:
//
//	PYTHONPATH=/path/to/differential-privacy-library /usr/bin/python3 \
//	  bench/tabular_diffprivlib.py /tmp/tabular
//
// FAIRDP_TABULAR_SETS (default "adult,credit"; an entry ending in .csv is
// a generated table with its NAME.schema.json beside it, as
// bench/tabular_synthetic.py writes them), FAIRDP_TABULAR_SEEDS
// (default 5), FAIRDP_TABULAR_EPS (default "0.5,1,4"), FAIRDP_TABULAR_L2
// (objpert's Λ, default 0: the mechanism's default), FAIRDP_TABULAR_K
// (Λ as K times the smallest regulariser the budget allows for the
// training records, linear.ObjPertMinL2; overrides FAIRDP_TABULAR_L2),
// FAIRDP_TABULAR_W (with K: the weight-only penalty as W times the
// expected noise norm over n, linear.ObjPertNoiseNorm; default 0),
// FAIRDP_TABULAR_MECH (objpert's mechanism: auto, pure, gaussian; default
// auto), FAIRDP_TABULAR_CAL (the calibration: tight, the default,
// profile or kst2012, the ones before) and
// FAIRDP_TABULAR_BOUND (B, default 0: the rule's), FAIRDP_TABULAR_BOUND_SQRTD
// (B as multiples of √d; overrides FAIRDP_TABULAR_BOUND) and
// FAIRDP_TABULAR_CLIP (1, the default: the model clips rows to B at
// prediction, linear.ObjPertConfig.ClipAtPredict; 0: as before it) change
// the grid.

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/linear"
	"github.com/fairdp/fairdp/loaders"
	"github.com/fairdp/fairdp/trainer"
)

func envFloats(t *testing.T, name, def string) []float64 {
	s := os.Getenv(name)
	if s == "" {
		s = def
	}
	var out []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out = append(out, v)
	}
	return out
}

// writeSplitCSV writes label then the encoded features, one row a record,
// with the group last (for the reader's per-group checks).
func writeSplitCSV(path string, d *loaders.Dataset) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for i := range d.N() {
		fmt.Fprintf(w, "%d", d.Labels[i])
		for _, v := range d.X[i*d.Dim : (i+1)*d.Dim] {
			w.WriteString(",")
			w.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
		}
		fmt.Fprintf(w, ",%d\n", d.Groups[i])
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// tabularBench is a tabular bench's setup: it skips unless FAIRDP_FULL,
// the shared data and FAIRDP_BENCH_OUT are there, makes the output
// directory, and reads the data sets and seed count from PREFIX_SETS and
// PREFIX_SEEDS (defaults "adult,credit" and seeds).
func tabularBench(t *testing.T, prefix string, seeds int) (data, out string, sets []string, n int) {
	t.Helper()
	full(t)
	data = sharedData()
	if data == "" {
		t.Skip("needs ../shared/data (set FAIRDP_DATA)")
	}
	out = os.Getenv("FAIRDP_BENCH_OUT")
	if out == "" {
		t.Skip("set FAIRDP_BENCH_OUT to the directory for the splits and results")
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	sets = strings.Split(orDefault(os.Getenv(prefix+"_SETS"), "adult,credit"), ",")
	n, err := strconv.Atoi(orDefault(os.Getenv(prefix+"_SEEDS"), strconv.Itoa(seeds)))
	if err != nil {
		t.Fatal(err)
	}
	return data, out, sets, n
}

// tabularConfig is cfg for data set path (a built-in name, or a generated
// table NAME.csv with NAME.schema.json beside it) with split and noise
// seed s; it returns the set's short name too.
func tabularConfig(cfg trainer.Config, path, data string, s int) (trainer.Config, string) {
	seed := uint64(s)
	cfg.Dataset, cfg.DataDir, cfg.Seed, cfg.SplitSeed = path, data, &seed, &seed
	if strings.HasSuffix(path, ".csv") { // a generated table (bench/tabular_synthetic.py) and its schema
		cfg.Schema, cfg.DataDir = strings.TrimSuffix(path, ".csv")+".schema.json", ""
	}
	return cfg, strings.TrimSuffix(filepath.Base(path), ".csv")
}

// objPertSplit is the objpert run's configuration for data set path with
// split and noise seed s, its short name, and RunObjPert's split of it
// (the split seed's "data" stream).
func objPertSplit(t *testing.T, path, data string, s int) (cfg trainer.Config, set string, train, test *loaders.Dataset) {
	t.Helper()
	cfg, set = tabularConfig(trainer.Defaults(), path, data, s)
	cfg.Algo = "objpert"
	_, split := dpops.NewRand(cfg.Seed)
	train, test, _, err := trainer.LoadData(cfg, split.Derive("data"))
	if err != nil {
		t.Fatal(err)
	}
	return cfg, set, train, test
}

func TestTabularObjPert(t *testing.T) {
	data, out, sets, seeds := tabularBench(t, "FAIRDP_TABULAR", 5)
	eps := append(envFloats(t, "FAIRDP_TABULAR_EPS", "0.5,1,4"), math.Inf(1))
	l2s := envFloats(t, "FAIRDP_TABULAR_L2", "0")
	bounds := envFloats(t, "FAIRDP_TABULAR_BOUND", "0")
	var sqrtd []float64
	if os.Getenv("FAIRDP_TABULAR_BOUND_SQRTD") != "" {
		sqrtd = envFloats(t, "FAIRDP_TABULAR_BOUND_SQRTD", "")
	}
	clip := os.Getenv("FAIRDP_TABULAR_CLIP") != "0"
	var ks []float64
	if os.Getenv("FAIRDP_TABULAR_K") != "" {
		ks = envFloats(t, "FAIRDP_TABULAR_K", "")
	}
	ws := envFloats(t, "FAIRDP_TABULAR_W", "0")
	mechs := strings.Split(orDefault(os.Getenv("FAIRDP_TABULAR_MECH"), linear.MechanismAuto), ",")
	cal := orDefault(os.Getenv("FAIRDP_TABULAR_CAL"), linear.ObjPertDefaults().Calibration)
	res, err := os.Create(filepath.Join(out, "objpert.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	fmt.Fprintln(res, "dataset,seed,epsilon,mechanism_asked,mechanism,k,w,row_bound,l2,weight_l2,test_error,dp_violation,eo_violation")
	for _, path := range sets {
		for s := 1; s <= seeds; s++ {
			cfg, set, train, test := objPertSplit(t, path, data, s)
			for _, sp := range []struct {
				name string
				d    *loaders.Dataset
			}{{"train", train}, {"test", test}} {
				if err := writeSplitCSV(filepath.Join(out, fmt.Sprintf("%s_%d_%s.csv", set, s, sp.name)), sp.d); err != nil {
					t.Fatal(err)
				}
			}
			type point struct{ k, l2 float64 }
			var grid []point
			for _, l2 := range l2s {
				grid = append(grid, point{0, l2})
			}
			if ks != nil {
				grid = grid[:0]
				for _, k := range ks {
					grid = append(grid, point{k, 0})
				}
			}
			bs := bounds
			if sqrtd != nil {
				bs = nil
				for _, f := range sqrtd {
					bs = append(bs, f*math.Sqrt(float64(train.Dim)))
				}
			}
			for _, e := range eps {
				for _, b := range bs {
					for _, m := range mechs {
						for _, p := range grid {
							for _, w := range ws {
								var wl2 float64
								if p.k != 0 && !math.IsInf(e, 1) {
									p.l2 = p.k * linear.ObjPertMinL2(e, train.N(), linear.LogisticCurvature)
									// W in units of the expected noise in the mean gradient.
									mech := m
									if mech == linear.MechanismAuto {
										ch, err := linear.ChooseObjPert(linear.ObjPertFacts{N: train.N(), D: train.Dim, Epsilon: e,
											Delta: 1 / float64(train.N()*train.N()), Curvature: linear.LogisticCurvature, Calibration: cal})
										if err != nil {
											t.Fatal(err)
										}
										mech = ch.Mechanism
									}
									ep, _ := linear.ObjPertBudget(e, train.N(), p.l2)
									wl2 = w * linear.ObjPertNoiseNorm(mech, train.Dim, ep, 1/float64(train.N()*train.N())) / float64(train.N())
								}
								cfg.Privacy.Epsilon = e
								cfg = linear.WithObjPertConfig(cfg, linear.ObjPertConfig{Mechanism: m, Calibration: cal, RowBound: b, L2: p.l2, WeightL2: wl2,
									ClipAtPredict: clip})
								rep, err := linear.RunObjPert(context.Background(), cfg)
								if err != nil {
									t.Fatal(err)
								}
								ran := linear.ObjPertExtra(rep).Mechanism
								fmt.Fprintf(res, "%s,%d,%g,%s,%s,%g,%g,%g,%g,%g,%.6f,%.6f,%.6f\n", set, s, e, m, ran, p.k, w,
									linear.ObjPertConfigOf(rep.Config).RowBound, linear.ObjPertExtra(rep).L2, linear.ObjPertExtra(rep).WeightL2,
									rep.Test.Error, rep.Test.DPViolation, rep.Test.EOViolation)
								t.Logf("%s seed %d ε %g %s→%s K %g W %g B %.3g Λ %.3g: test error %.4f", set, s, e, m, ran, p.k, w,
									linear.ObjPertConfigOf(rep.Config).RowBound, linear.ObjPertExtra(rep).L2, rep.Test.Error)
							}
						}
					}
				}
			}
		}
	}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
