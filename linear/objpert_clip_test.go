package linear

import (
	"context"
	"io"
	"math"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/fairdp/fairdp/models"
	"github.com/fairdp/fairdp/trainer"
)

// TestObjPertClipsAtPredict: with ClipAtPredict (the default) the released
// model scores every row clipped to the bound B its weights were fitted on
// (Chaudhuri, Monteleoni and Sarwate 2011, Algorithm 2 clips the training
// rows): the report's test error, the checkpoint's and `fairdp eval`'s all
// equal a slow path that clips each test row by hand and applies the
// checkpoint's weights; without ClipAtPredict (settings written before
// it) they equal the unclipped rows' error, as those runs scored.
func TestObjPertClipsAtPredict(t *testing.T) {
	for _, clip := range []bool{true, false} {
		cfg := objPertConfig(1)
		cfg.Out = t.TempDir()
		o := ObjPertDefaults()
		o.ClipAtPredict, o.RowBound = clip, 1.5 // small enough that many test rows are longer
		cfg = WithObjPertConfig(cfg, o)
		rep, err := trainer.RunConfig(context.Background(), cfg, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if got := ObjPertConfigOf(rep.Config).ClipAtPredict; got != clip {
			t.Fatalf("clip %v: the report's config records clip_at_predict %v", clip, got)
		}
		ckpt := filepath.Join(cfg.Out, "model.ckpt")
		m, meta, err := models.LoadFile(ckpt)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]float64{true: 1.5, false: 0}[clip]; meta.Spec.InputNormBound != want {
			t.Errorf("clip %v: checkpoint's input_norm_bound %v, want %v", clip, meta.Spec.InputNormBound, want)
		}
		ps := m.(*models.Model[float64]).Params()
		w, b := ps[0].Value, ps[1].Value[0]
		job, err := trainer.Prepare(cfg, trainer.PrepareOptions{Log: io.Discard})
		if err != nil {
			t.Fatal(err)
		}
		test := job.Test
		d := test.Dim
		var wrongClipped, wrongPlain, longer int
		for i := range test.N() {
			row := test.X[i*d : (i+1)*d]
			var dot, nn float64
			for j, v := range row {
				dot += v * w[j]
				nn += v * v
			}
			f := 1.0
			if n := math.Sqrt(nn); n > 1.5 {
				f, longer = 1.5/n, longer+1
			}
			if (f*dot+b > 0) != (test.Labels[i] == 1) {
				wrongClipped++
			}
			if (dot+b > 0) != (test.Labels[i] == 1) {
				wrongPlain++
			}
		}
		if longer == 0 || wrongClipped == wrongPlain {
			t.Fatalf("the test does not separate the two: %d rows longer than B, %d vs %d errors", longer, wrongClipped, wrongPlain)
		}
		want := float64(wrongPlain) / float64(test.N())
		if clip {
			want = float64(wrongClipped) / float64(test.N())
		}
		if math.Abs(rep.Test.Error-want) > 1e-12 {
			t.Errorf("clip %v: report's test error %v, the slow path's %v (clipped %v, unclipped %v)", clip, rep.Test.Error, want,
				float64(wrongClipped)/float64(test.N()), float64(wrongPlain)/float64(test.N()))
		}
		ev, err := trainer.EvaluateCheckpoint(trainer.EvalOptions{Checkpoint: ckpt})
		if err != nil {
			t.Fatal(err)
		}
		if ev.Test.Error != rep.Test.Error {
			t.Errorf("clip %v: eval of model.ckpt gives test error %v, the report %v", clip, ev.Test.Error, rep.Test.Error)
		}
	}
}

// TestObjPertLeastSquaresClipsAtPredict: least squares shares the clip
// (its rows are objPertRows' too): with ClipAtPredict the released
// "linear-regression" model predicts a test row longer than B as the row
// scaled to B, and the report's MSPE equals a slow path that clips by hand;
// `fairdp eval` of model.ckpt gives the same MSPE.
func TestObjPertLeastSquaresClipsAtPredict(t *testing.T) {
	dir := t.TempDir()
	csv, schema := regressionCSV(t, dir, 2000)
	cfg := trainer.Defaults()
	seed := uint64(4)
	cfg.Algo, cfg.Dataset, cfg.Schema, cfg.Seed, cfg.Out = "objpert", csv, schema, &seed, filepath.Join(dir, "out")
	cfg.Privacy.Epsilon = math.Inf(1)
	o := ObjPertDefaults()
	o.RowBound, o.LabelRange = 1, []float64{-4, 10}
	cfg = WithObjPertConfig(cfg, o)
	rep, err := trainer.RunConfig(context.Background(), cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	g := ObjPertExtra(rep).Regression
	job, err := trainer.Prepare(cfg, trainer.PrepareOptions{Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	test := job.Test
	d := test.Dim
	var clipped, plain float64
	longer := 0
	for i := range test.N() {
		row := test.X[i*d : (i+1)*d]
		var dot, nn float64
		for j, v := range row {
			dot += v * g.Weights[j]
			nn += v * v
		}
		f := 1.0
		if n := math.Sqrt(nn); n > 1 {
			f, longer = 1/n, longer+1
		}
		clipped += math.Pow(f*dot+g.Intercept-test.Targets[i], 2)
		plain += math.Pow(dot+g.Intercept-test.Targets[i], 2)
	}
	clipped, plain = clipped/float64(test.N()), plain/float64(test.N())
	if longer == 0 || math.Abs(clipped-plain) < 1e-6 {
		t.Fatalf("the test does not separate the two: %d rows longer than B, MSPE %v vs %v", longer, clipped, plain)
	}
	if rep.Test.MSPE == nil {
		t.Fatal("no MSPE in the report")
	}
	if got := *rep.Test.MSPE; math.Abs(got-clipped) > 1e-9*clipped {
		t.Fatalf("report's MSPE %v, the clipped slow path's %v (unclipped %v)", got, clipped, plain)
	}
	ev, err := trainer.EvaluateCheckpoint(trainer.EvalOptions{Checkpoint: filepath.Join(cfg.Out, "model.ckpt")})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ev.Test.MSPE, rep.Test.MSPE) {
		t.Errorf("eval of model.ckpt gives MSPE %v, the report %v", *ev.Test.MSPE, *rep.Test.MSPE)
	}
}

// TestPostprocObjPertBaseClipsAtPredict: with BaseClipAtPredict
// (PostprocDefaults) the objpert base scores each row clipped to its row
// bound, as its weights were fitted; without it (settings written before
// it) it scores the rows as they are. Both are checked against a slow path
// on the base's released weights.
func TestPostprocObjPertBaseClipsAtPredict(t *testing.T) {
	for _, clip := range []bool{true, false} {
		cfg := privateBaseConfig()
		cfg = WithObjPertConfig(cfg, ObjPertConfig{}) // objpert's own settings are not the base's
		editPostproc(&cfg, func(pc *PostprocConfig) { pc.BaseClipAtPredict = clip })
		d, err := LoadFairData(cfg)
		if err != nil {
			t.Fatal(err)
		}
		bound, w := d.PrivateBase.RowBound, d.BaseFit.W
		if got := d.Base.RowBound; (got == bound) != clip || (got == 0) == clip {
			t.Fatalf("clip %v: the base's row bound %v (objpert's B %v)", clip, got, bound)
		}
		s := d.Test
		var longer int
		for i := range s.N() {
			row := s.X[i*s.Dim : (i+1)*s.Dim]
			var dot, nn float64
			for j, v := range row {
				dot += v * w[j+1]
				nn += v * v
			}
			if n := math.Sqrt(nn); clip && n > bound {
				dot, longer = dot*bound/n, longer+1
			}
			if want := 1 / (1 + math.Exp(-(dot + w[0]))); math.Abs(s.Scores[i]-want) > 1e-12 {
				t.Fatalf("clip %v: row %d scored %v, the slow path %v", clip, i, s.Scores[i], want)
			}
		}
		if clip && longer == 0 {
			t.Fatalf("no test row is longer than B = %v: the test checks nothing", bound)
		}
	}
}
