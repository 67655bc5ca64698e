package models

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInputNormBound: a model with Spec.InputNormBound scores a row longer
// than B exactly as the row scaled to norm B (and a shorter row as it is),
// the bound survives a checkpoint, and only the tabular zoo archs take it.
func TestInputNormBound(t *testing.T) {
	spec := Spec{Arch: "logistic", InShape: []int{3}, Classes: 2, InputNormBound: 2}
	m, err := New[float64](spec, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := New[float64](Spec{Arch: "logistic", InShape: []int{3}, Classes: 2}, rand.New(rand.NewPCG(1, 2)))
	x := []float64{3, 4, 0, 0.5, 0.5, 0.5} // norms 5 and ≈ .87
	got := append([]float64(nil), m.Forward(x, 2, false)...)
	want := plain.Forward([]float64{3 * 2 / 5.0, 4 * 2 / 5.0, 0, 0.5, 0.5, 0.5}, 2, false)
	for i := range got {
		if math.Abs(got[i]-want[i]) > 1e-15 {
			t.Errorf("logit %d: %v, the clipped row's %v", i, got[i], want[i])
		}
	}
	if x[0] != 3 || x[1] != 4 {
		t.Errorf("Forward changed the caller's rows: %v", x)
	}
	path := filepath.Join(t.TempDir(), "m.ckpt")
	if err := SaveFile(path, m, Meta{}); err != nil {
		t.Fatal(err)
	}
	back, meta, err := LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if meta.Spec.InputNormBound != 2 || back.(*Model[float64]).InputNormBound != 2 {
		t.Errorf("checkpoint's bound %v, model's %v; want 2", meta.Spec.InputNormBound, back.(*Model[float64]).InputNormBound)
	}
	// A model without a bound writes no key: its checkpoint is byte for
	// byte what it was before the field existed.
	plainPath := filepath.Join(t.TempDir(), "plain.ckpt")
	if err := SaveFile(plainPath, plain, Meta{}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(plainPath); err != nil || bytes.Contains(b, []byte("input_norm_bound")) {
		t.Errorf("a checkpoint without a bound names input_norm_bound (or cannot be read: %v)", err)
	}
	for _, bad := range []Spec{
		{Arch: "mlp", InShape: []int{3}, Classes: 2, Hidden: []int{4}, InputNormBound: 1},
		{Arch: "logistic", InShape: []int{3}, Classes: 2, InputNormBound: -1},
		{Arch: "logistic", InShape: []int{3}, Classes: 2, InputNormBound: math.Inf(1)},
	} {
		if bad.Validate() == nil {
			t.Errorf("spec %+v accepted", bad)
		}
	}
}

// TestInputNormBoundFormatVersion checks that a checkpoint whose model
// clips rows at prediction is written as format version 2, which builds
// that know only version 1 refuse (they would ignore the bound and score
// unclipped rows), that one without the bound stays version 1, and that a
// version-1 file claiming a bound is refused.
func TestInputNormBoundFormatVersion(t *testing.T) {
	version := func(spec Spec) (uint32, []byte) {
		t.Helper()
		m, err := New[float64](spec, rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := Save(&buf, m, Meta{}); err != nil {
			t.Fatal(err)
		}
		return binary.LittleEndian.Uint32(buf.Bytes()[len(magic):]), buf.Bytes()
	}
	if v, _ := version(Spec{Arch: "logistic", InShape: []int{3}, Classes: 2}); v != 1 {
		t.Errorf("a model without a bound is written as format version %d, want 1", v)
	}
	v, data := version(Spec{Arch: "logistic", InShape: []int{3}, Classes: 2, InputNormBound: 2})
	if v != 2 {
		t.Errorf("a model with a bound is written as format version %d, want 2", v)
	}
	if _, _, err := Load(bytes.NewReader(data)); err != nil {
		t.Errorf("version 2 does not load: %v", err)
	}
	relabelled := bytes.Clone(data)
	binary.LittleEndian.PutUint32(relabelled[len(magic):], 1)
	if _, _, err := Load(bytes.NewReader(relabelled)); err == nil || !strings.Contains(err.Error(), "needs format version 2") {
		t.Errorf("a version-1 file with a bound: error %v, want a refusal", err)
	}
}
