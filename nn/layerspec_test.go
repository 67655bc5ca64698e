package nn

import (
	"reflect"
	"testing"
)

// TestLayerSpecRoundTrip: every layer describes itself so that NewLayer
// builds the same geometry (same name, same parameter shapes).
func TestLayerSpecRoundTrip(t *testing.T) {
	for _, l := range []Layer[float32]{
		NewLinear[float32](7, 3), NewConv2d[float32](3, 9, 8, 5, 3, 2, 1), NewMaxPool2d[float32](2, 6, 6, 2),
		NewReLU[float32](), NewTanh[float32](), NewLeakyReLU[float32](0.25), NewFlatten[float32](), NewGroupNorm[float32](2, 4, 3, 3),
	} {
		s := l.(Describer).Spec()
		again, err := NewLayer[float32](s)
		if err != nil {
			t.Fatalf("%s: %v", l.Name(), err)
		}
		if again.Name() != l.Name() || !reflect.DeepEqual(shapes(again.Params()), shapes(l.Params())) {
			t.Errorf("%s rebuilt as %s", l.Name(), again.Name())
		}
	}
	for _, s := range []LayerSpec{{Kind: "attention"}, {Kind: KindLinear}, {Kind: KindConv2d, C: 1, H: 2, W: 2, OutC: 1, K: 5, Stride: 1},
		{Kind: KindGroupNorm, Groups: 3, C: 4, H: 1, W: 1}, {Kind: KindMaxPool2d, C: 1, H: 1, W: 1, K: 2}} {
		if _, err := NewLayer[float64](s); err == nil {
			t.Errorf("%+v: built", s)
		}
	}
}

func shapes[T Float](ps []*Param[T]) [][]int {
	var out [][]int
	for _, p := range ps {
		out = append(out, p.Shape)
	}
	return out
}
