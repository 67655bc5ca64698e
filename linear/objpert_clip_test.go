package linear

import (
	"context"
	"io"
	"math"
	"path/filepath"
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
			t.Fatalf("clip %v: checkpoint's input_norm_bound %v, want %v", clip, meta.Spec.InputNormBound, want)
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
