package bench

// Would a private choice of objpert's decision threshold help? The
// measurement behind bench/results/tabular.md's "objpert: the Jacobian
// charged once, and a private threshold measured" section: for each seed,
// ε and share s, objpert's default is fitted at ε(1 − s) exactly as
// `--algo objpert` fits it (the same split, noise stream, mechanism and Λ),
// and the training and test errors of its logit thresholded at each shift
// of a public grid are written out, so bench/objpert_intercept.py can
// compute the expected test error of the exponential mechanism (McSherry
// and Talwar 2007) choosing a shift at ε·s from the training errors
// (sensitivity 1 under replace-one neighbours) exactly, without drawing.
//
//	FAIRDP_FULL=1 FAIRDP_BENCH_OUT=DIR FAIRDP_INTERCEPT_SETS=adult,... \
//	  go test -tags openblas -timeout 0 -run TabularObjPertIntercept -v ./bench
//	/usr/bin/python3 bench/objpert_intercept.py DIR/objpert_intercept.csv
//
// FAIRDP_INTERCEPT_SEEDS (default 5), FAIRDP_INTERCEPT_EPS (default
// "0.5,1,4") and FAIRDP_INTERCEPT_SHARES (default "0,0.05,0.1") change the
// grid.

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/linear"
	"github.com/fairdp/fairdp/loaders"
)

// interceptShifts is the public grid of logit shifts: −∞ and +∞ are the
// two constant classifiers.
var interceptShifts = []float64{math.Inf(-1), -4, -2, -1, -0.5, -0.25, 0, 0.25, 0.5, 1, 2, 4, math.Inf(1)}

// defaultObjPertModel fits `--algo objpert`'s default on train at ε with
// the run seed's noise stream, as RunObjPert does.
func defaultObjPertModel(t *testing.T, train *loaders.Dataset, eps float64, seed uint64) (w []float64, b float64) {
	t.Helper()
	n := train.N()
	o := linear.ObjPertDefaults()
	delta := 1 / float64(n) / float64(n)
	ch, err := linear.ChooseObjPert(linear.ObjPertFacts{N: n, D: train.Dim, Epsilon: eps, Delta: delta,
		Curvature: linear.LogisticCurvature, Calibration: o.Calibration})
	if err != nil {
		t.Fatal(err)
	}
	opt := linear.ObjPertOptions{Epsilon: eps, RowBound: linear.DefaultRowBound(train.Dim, 0), L2: ch.L2, Mechanism: ch.Mechanism, Calibration: o.Calibration}
	if ch.Mechanism == linear.MechanismGaussian {
		opt.Delta = delta
	}
	_, src := dpops.NewRand(&seed)
	res, err := linear.ObjectivePerturbation(src.Derive("noise"), train.X, n, train.Dim, train.Labels, opt)
	if err != nil {
		t.Fatal(err)
	}
	return res.Weights, res.Intercept
}

// shiftErrors counts d's records misclassified by the logit w·x + b + s
// for each shift s.
func shiftErrors(d *loaders.Dataset, w []float64, b float64) []int {
	errs := make([]int, len(interceptShifts))
	for i := range d.N() {
		m := b
		for j, v := range d.X[i*d.Dim : (i+1)*d.Dim] {
			m += w[j] * v
		}
		for k, s := range interceptShifts {
			if pred := m+s > 0; pred != (d.Labels[i] == 1) {
				errs[k]++
			}
		}
	}
	return errs
}

func TestTabularObjPertIntercept(t *testing.T) {
	data, out, sets, seeds := tabularBench(t, "FAIRDP_INTERCEPT", 5)
	epss := envFloats(t, "FAIRDP_INTERCEPT_EPS", "0.5,1,4")
	shares := envFloats(t, "FAIRDP_INTERCEPT_SHARES", "0,0.05,0.1")
	f, err := os.Create(filepath.Join(out, "objpert_intercept.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fmt.Fprintf(f, "dataset,seed,epsilon,share,train_records,test_records,shifts,train_errors,test_errors\n")
	join := func(v any) string { return strings.Join(strings.Fields(strings.Trim(fmt.Sprint(v), "[]")), " ") }
	for _, path := range sets {
		for s := 1; s <= seeds; s++ {
			_, set, train, test := objPertSplit(t, path, data, s)
			for _, eps := range epss {
				for _, share := range shares {
					w, b := defaultObjPertModel(t, train, eps*(1-share), uint64(s))
					tr, te := shiftErrors(train, w, b), shiftErrors(test, w, b)
					fmt.Fprintf(f, "%s,%d,%g,%g,%d,%d,%s,%s,%s\n", set, s, eps, share, train.N(), test.N(), join(interceptShifts), join(tr), join(te))
					t.Logf("%s seed %d ε %g share %g: test error at shift 0 %.4f", set, s, eps, share, float64(te[6])/float64(test.N()))
				}
			}
		}
	}
}
