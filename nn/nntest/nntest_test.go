package nntest_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/nn"
	"github.com/fairdp/fairdp/nn/nntest"
)

// recorder is a testing.TB that collects failures instead of failing, so
// the checker itself can be tested on layers known to be wrong.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, a ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, a...))
}

// Each wrapper breaks one method of a correct Linear layer.
type wrongNorms struct{ *nn.Linear[float64] }

func (w wrongNorms) SqNorms(out []float64) {
	w.Linear.SqNorms(out)
	if len(out) > 0 {
		out[0] *= 1.001
	}
}

type wrongScale struct{ *nn.Linear[float64] }

func (w wrongScale) ParamGrads(scale []float64) { w.Linear.ParamGrads(nil) }

type wrongInputGrad struct{ *nn.Linear[float64] }

func (w wrongInputGrad) Backward(dy []float64, need bool) []float64 {
	dx := w.Linear.Backward(dy, need)
	if len(dx) > 0 {
		dx[len(dx)-1] += 1e-3
	}
	return dx
}

type overwritesNorms struct{ *nn.Linear[float64] }

func (w overwritesNorms) SqNorms(out []float64) {
	clear(out)
	w.Linear.SqNorms(out)
}

func TestCheckLayerCatchesBrokenLayers(t *testing.T) {
	cases := []struct {
		layer nn.Layer[float64]
		want  string
	}{
		{wrongNorms{nn.NewLinear[float64](4, 3)}, "SqNorms[0]"},
		{wrongScale{nn.NewLinear[float64](4, 3)}, "ParamGrads(scale)"},
		{wrongInputGrad{nn.NewLinear[float64](4, 3)}, "input gradient differs from finite differences"},
		{overwritesNorms{nn.NewLinear[float64](4, 3)}, "SqNorms[0]"},
	}
	for _, c := range cases {
		rec := &recorder{TB: t}
		nntest.CheckLayer(rec, c.layer, []int{4}, 3, rand.New(rand.NewPCG(1, 1)), nntest.Options{})
		if !strings.Contains(strings.Join(rec.errs, "\n"), c.want) {
			t.Errorf("%T: checker reported %q, want a %q failure", c.layer, rec.errs, c.want)
		}
	}
	rec := &recorder{TB: t}
	nntest.CheckLayer(rec, nn.Layer[float64](nn.NewLinear[float64](4, 3)), []int{4}, 3, rand.New(rand.NewPCG(1, 1)), nntest.Options{})
	if len(rec.errs) != 0 {
		t.Errorf("correct Linear reported %q", rec.errs)
	}
}

func TestRelErr(t *testing.T) {
	cases := []struct {
		got  []float64
		want []float64
		err  float64
	}{
		{[]float64{1, 2}, []float64{1, 2}, 0},
		{[]float64{1, 2.5}, []float64{1, 2}, 0.25},
		{[]float64{0, 0}, []float64{0, 0}, 0},
		{[]float64{1}, []float64{1, 2}, -1}, // length mismatch: +Inf
	}
	for _, c := range cases {
		e := nntest.RelErr(c.got, c.want)
		if c.err < 0 {
			if e < 1e300 {
				t.Errorf("RelErr(%v, %v) = %v, want +Inf", c.got, c.want, e)
			}
			continue
		}
		if e != c.err {
			t.Errorf("RelErr(%v, %v) = %v, want %v", c.got, c.want, e, c.err)
		}
	}
}
