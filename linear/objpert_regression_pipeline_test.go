package linear

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/trainer"
)

// regressionCSV writes a table y = 3 + 2·x0 − x1 + N(0, 0.5²) with a
// sensitive column s and its schema (target y, label y > 3) to dir, and
// returns the schema's path.
func regressionCSV(t *testing.T, dir string, n int) (csv, schema string) {
	t.Helper()
	x, y := regressionData(n, 3, 21)
	var b strings.Builder
	b.WriteString("x0,x1,x2,s,y\n")
	for i := range n {
		fmt.Fprintf(&b, "%g,%g,%g,%d,%g\n", x[3*i], x[3*i+1], x[3*i+2], i%2, y[i])
	}
	csv, schema = filepath.Join(dir, "reg.csv"), filepath.Join(dir, "reg.schema.json")
	if err := os.WriteFile(csv, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	s := `{"name": "reg", "files": ["reg.csv"], "format": {"header": true}, "target": "y",
	  "label": {"column": "y", "threshold": 3}, "sensitive": {"columns": ["s"]}, "numeric": ["x0", "x1", "x2"]}`
	if err := os.WriteFile(schema, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return csv, schema
}

// TestRunObjPertLeastSquares: a schema with a target runs least squares
// through the same pipeline: the receipt is pure ε with the loss and the
// label range in its note, the test split is scored by its MSPE (without
// privacy close to the noise's 0.25, far below the target's variance of
// about 5), the private training statistics stay out, the released weights
// are in extra.objpert.regression, and model.ckpt is a regression model
// that `fairdp eval` scores with the same MSPE.
func TestRunObjPertLeastSquares(t *testing.T) {
	dir := t.TempDir()
	csv, schema := regressionCSV(t, dir, 3000)
	for _, eps := range []float64{1, math.Inf(1)} {
		cfg := trainer.Defaults()
		seed := uint64(4)
		cfg.Algo, cfg.Dataset, cfg.Schema, cfg.Seed = "objpert", csv, schema, &seed
		cfg.Privacy.Epsilon = eps
		cfg = WithObjPertConfig(cfg, ObjPertConfig{LabelRange: []float64{-4, 10}})
		cfg.Out = filepath.Join(dir, fmt.Sprint(eps))
		rep, err := trainer.RunConfig(context.Background(), cfg, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		private := !math.IsInf(eps, 1)
		extra := ObjPertExtra(rep)
		if extra == nil || extra.Regression == nil || extra.Curvature != 1 || len(extra.Regression.Weights) != 3 {
			t.Fatalf("extra %+v", extra)
		}
		if rep.Test.MSPE == nil {
			t.Fatalf("test split %+v has no MSPE", rep.Test)
		}
		mspe := *rep.Test.MSPE
		if limit := map[bool]float64{false: 0.5, true: 1.5}[private]; !(mspe < limit) {
			t.Errorf("ε %v: test MSPE %.4f, want < %v (target variance ≈ 5)", eps, mspe, limit)
		}
		if testing.Verbose() {
			t.Logf("ε %v: test MSPE %.4f", eps, mspe)
		}
		if rep.Privacy.Private() != private || (private && (*rep.Privacy.Epsilon != eps || !strings.Contains(rep.Privacy.Note, "[-4, 10]"))) {
			t.Errorf("ε %v: receipt %+v", eps, rep.Privacy)
		}
		if (rep.Train != nil) != !private || (extra.Regression.ClippedLabels != nil) != !private {
			t.Errorf("ε %v: training statistics shown %v, clipped labels %v; want shown only without privacy", eps, rep.Train != nil, extra.Regression.ClippedLabels)
		}
		if r := ObjPertConfigOf(rep.Config); len(r.LabelRange) != 2 || r.ResidualScale != DefaultResidualScale {
			t.Errorf("config %+v does not record the range and h used", r)
		}
		raw, err := os.ReadFile(filepath.Join(cfg.Out, "report.json"))
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		// model.ckpt is a zoo regression model that eval scores on the
		// held-out split with the MSPE training reported, group by group.
		ev, err := trainer.EvaluateCheckpoint(trainer.EvalOptions{Checkpoint: filepath.Join(cfg.Out, "model.ckpt"), Data: trainer.Defaults()})
		if err != nil {
			t.Fatalf("ε %v: eval of the regression checkpoint: %v", eps, err)
		}
		if !ev.HeldOut || ev.Arch != "linear-regression" || ev.Test.MSPE == nil || *ev.Test.MSPE != mspe ||
			len(ev.Test.Groups) != len(rep.Test.Groups) {
			t.Fatalf("ε %v: eval held out %v, arch %q, split %+v; training reported MSPE %v", eps, ev.HeldOut, ev.Arch, ev.Test, mspe)
		}
		for i, g := range ev.Test.Groups {
			if w := rep.Test.Groups[i]; g.N != w.N || (g.MSPE == nil) != (w.MSPE == nil) || (g.MSPE != nil && *g.MSPE != *w.MSPE) {
				t.Errorf("ε %v: eval group %+v, training reported %+v", eps, g, w)
			}
		}
		// The stored weights are the released ones (an independent path:
		// ŷ = w·x + b by hand on the test records).
		if got := handMSPE(t, extra.Regression, ev); math.Abs(got-mspe) > 1e-12*math.Max(1, mspe) {
			t.Errorf("ε %v: MSPE by hand from extra.objpert.regression %v, eval %v", eps, got, mspe)
		}
	}
	// Without the public label range the run is refused, naming it.
	cfg := trainer.Defaults()
	cfg.Algo, cfg.Dataset, cfg.Schema = "objpert", csv, schema
	_, err := trainer.RunConfig(context.Background(), cfg, io.Discard)
	var fe trainer.FieldErrors
	if !errors.As(err, &fe) || fe[0].Field != "ObjPert.LabelRange" {
		t.Errorf("no label range: error %v, want a field error naming ObjPert.LabelRange", err)
	}
}

// handMSPE is the mean squared prediction error of the released weights on
// the records eval scored, computed directly from the report's weights.
func handMSPE(t *testing.T, r *ObjPertRegressionReport, ev *trainer.EvalResult) float64 {
	t.Helper()
	d := ev.Data
	n, dim := d.N(), len(r.Weights)
	if len(d.X) != n*dim {
		t.Fatalf("eval data has %d values for %d records of %d features", len(d.X), n, dim)
	}
	sum := 0.0
	for i := range n {
		yhat := r.Intercept
		for j, w := range r.Weights {
			yhat += w * float64(d.X[i*dim+j])
		}
		e := yhat - d.Targets[i]
		sum += e * e
	}
	return sum / float64(n)
}
