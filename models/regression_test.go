package models

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/nn"
)

// TestRegressionArch: the zoo's regression model is one Linear layer with
// one output per record, which Forward returns as the prediction
// ŷ = w·x + b (checked by hand), and it survives a checkpoint round trip
// with its arch, so eval knows to score it by MSPE. Classes is 1 for it
// and for nothing else.
func TestRegressionArch(t *testing.T) {
	spec := Spec{Arch: RegressionArch, InShape: []int{3}, Classes: 1}
	if n, err := spec.NumParams(); err != nil || n != 4 {
		t.Fatalf("NumParams() = %d, %v; want 4", n, err)
	}
	m, err := New[float64](spec, rand.New(rand.NewPCG(3, 4)))
	if err != nil {
		t.Fatal(err)
	}
	if !m.Regression() || m.OutDim() != 1 || !m.Spec().Regression() {
		t.Fatalf("regression %v, OutDim %d", m.Regression(), m.OutDim())
	}
	x := []float64{1, -2, 0.5, 0, 3, -1}
	ps := m.Params()
	w, b := ps[0].Value, ps[1].Value[0]
	out := m.Forward(x, 2, false)
	for i := range 2 {
		want := b + w[0]*x[3*i] + w[1]*x[3*i+1] + w[2]*x[3*i+2]
		if math.Abs(out[i]-want) > 1e-12 {
			t.Errorf("record %d: Forward %v, w·x+b %v", i, out[i], want)
		}
	}
	var buf bytes.Buffer
	if err := Save(&buf, m, Meta{}); err != nil {
		t.Fatal(err)
	}
	loaded, meta, err := Load(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	lm, ok := loaded.(*Model[float64])
	if !ok || !lm.Regression() || !meta.Spec.Regression() || meta.Spec.Classes != 1 {
		t.Fatalf("loaded %T, spec %+v", loaded, meta.Spec)
	}
	for _, bad := range []struct {
		spec Spec
		msg  string
	}{
		{Spec{Arch: RegressionArch, InShape: []int{3}, Classes: 2}, "want 1"},
		{Spec{Arch: "logistic", InShape: []int{3}, Classes: 1}, "only for arch \"linear-regression\""},
	} {
		if err := bad.spec.Validate(); err == nil || !strings.Contains(err.Error(), bad.msg) {
			t.Errorf("%+v: Validate() = %v, want an error with %q", bad.spec, err, bad.msg)
		}
	}
}

// TestCustomRegression: a network of one's own (Layers) with Classes 1 and
// one output is a regression, as a lowered Gorgonia regression graph is;
// it survives a checkpoint round trip as one. Classes 1 with another
// output count, or on a zoo classifier, is refused.
func TestCustomRegression(t *testing.T) {
	layers := []nn.LayerSpec{{Kind: nn.KindLinear, In: 3, Out: 4}, {Kind: nn.KindReLU}, {Kind: nn.KindLinear, In: 4, Out: 1, NoBias: true}}
	spec := Spec{Arch: "my-net", InShape: []int{3}, Classes: 1, Layers: layers}
	m, err := New[float32](spec, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	if !spec.Regression() || !m.Regression() || m.OutDim() != 1 || !m.Spec().Regression() {
		t.Fatalf("spec regression %v, model %v, OutDim %d", spec.Regression(), m.Regression(), m.OutDim())
	}
	if s := (Spec{Arch: "my-net", InShape: []int{3}, Classes: 2, Layers: layers}); s.Regression() {
		t.Errorf("%+v: a one-logit classifier read as a regression", s)
	}
	var buf bytes.Buffer
	if err := Save(&buf, m, Meta{}); err != nil {
		t.Fatal(err)
	}
	loaded, _, err := Load(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if lm, ok := loaded.(*Model[float32]); !ok || !lm.Regression() {
		t.Fatalf("loaded %T, not a regression", loaded)
	}
	wide := Spec{Arch: "my-net", InShape: []int{3}, Classes: 1, Layers: layers[:2]}
	if err := wide.Validate(); err == nil || !strings.Contains(err.Error(), "gives 4 values, want 1") {
		t.Errorf("Classes 1 with 4 outputs: Validate() = %v", err)
	}
}
