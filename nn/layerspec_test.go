package nn

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestLayerSpecRoundTrip: every layer describes itself so that NewLayer
// builds the same geometry (same name, same parameter shapes).
func TestLayerSpecRoundTrip(t *testing.T) {
	for _, l := range []Layer[float32]{
		NewLinear[float32](7, 3), NewLinearNoBias[float32](7, 3), NewConv2d[float32](3, 9, 8, 5, 3, 2, 1),
		NewConv2dWindow[float32](3, 9, 8, 5, ConvWindow{KH: 3, KW: 5, StrideH: 2, StrideW: 1, PadH: 1, PadW: 0}),
		NewConv2dWindow[float32](2, 6, 6, 2, ConvWindow{KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadH: 0, PadW: 1}),
		NewConv2dNoBias[float32](3, 9, 8, 5, SquareWindow(3, 1, 1)),
		NewResidual([]Layer[float32]{NewConv2dNoBias[float32](3, 6, 6, 3, SquareWindow(3, 1, 1)), NewReLU[float32]()}, nil),
		NewResidual([]Layer[float32]{NewLinear[float32](4, 3)}, []Layer[float32]{NewLinearNoBias[float32](4, 3)}),
		NewUnflatten[float32](2, 3, 4),
		NewMaxPool2d[float32](2, 6, 6, 2),
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
		{Kind: KindConv2d, C: 1, H: 8, W: 2, OutC: 1, K: 3, Stride: 1, KW: 5, StrideW: 1}, // KW larger than the width
		{Kind: KindConv2d, C: 1, H: 8, W: 8, OutC: 1, K: 3, Stride: 1, KW: 3},             // KW without StrideW
		{Kind: KindConv2d, C: 1, H: 8, W: 8, OutC: 1, K: 3, Stride: 1, PadW: 1},           // PadW without KW
		{Kind: KindConv2d, C: 1, H: 8, W: 8, OutC: 1, K: 3, Stride: 1, StrideW: 2},        // StrideW without KW
		{Kind: KindGroupNorm, Groups: 3, C: 4, H: 1, W: 1}, {Kind: KindMaxPool2d, C: 1, H: 1, W: 1, K: 2},
		{Kind: KindUnflatten, C: 2, H: 0, W: 1}, {Kind: KindResidual}, {Kind: KindResidual, Residual: &ResidualSpec{Body: []LayerSpec{{Kind: KindLinear}}}}} {
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

// TestLayerSpecJSON: a square Conv2d is written exactly as before the
// per-axis fields existed, so old files read back to the same layer; a
// per-axis window adds kw, stride_w and pad_w (pad_w omitted when 0 still
// means 0 once kw is present); a Linear or Conv2d without a bias says
// no_bias.
func TestLayerSpecJSON(t *testing.T) {
	for _, tc := range []struct {
		layer Layer[float64]
		json  string
	}{
		{NewConv2d[float64](3, 9, 8, 5, 3, 2, 1), `{"kind":"conv2d","c":3,"h":9,"w":8,"out_c":5,"k":3,"stride":2,"pad":1}`},
		{NewConv2dWindow[float64](2, 7, 9, 3, ConvWindow{KH: 3, KW: 5, StrideH: 2, StrideW: 1, PadH: 1, PadW: 2}),
			`{"kind":"conv2d","c":2,"h":7,"w":9,"out_c":3,"k":3,"stride":2,"pad":1,"kw":5,"stride_w":1,"pad_w":2}`},
		{NewConv2dWindow[float64](2, 7, 9, 3, ConvWindow{KH: 5, KW: 3, StrideH: 1, StrideW: 1, PadH: 1, PadW: 0}),
			`{"kind":"conv2d","c":2,"h":7,"w":9,"out_c":3,"k":5,"stride":1,"pad":1,"kw":3,"stride_w":1}`},
		{NewLinear[float64](4, 2), `{"kind":"linear","in":4,"out":2}`},
		{NewLinearNoBias[float64](4, 2), `{"kind":"linear","in":4,"out":2,"no_bias":true}`},
		{NewConv2dNoBias[float64](1, 28, 28, 32, SquareWindow(3, 1, 1)), `{"kind":"conv2d","no_bias":true,"c":1,"h":28,"w":28,"out_c":32,"k":3,"stride":1,"pad":1}`},
		{NewResidual([]Layer[float64]{NewLinear[float64](4, 4), NewReLU[float64]()}, nil),
			`{"kind":"residual","residual":{"body":[{"kind":"linear","in":4,"out":4},{"kind":"relu"}]}}`},
	} {
		got, err := json.Marshal(tc.layer.(Describer).Spec())
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tc.json {
			t.Errorf("%s is written as %s, want %s", tc.layer.Name(), got, tc.json)
		}
		var s LayerSpec
		if err := json.Unmarshal([]byte(tc.json), &s); err != nil {
			t.Fatal(err)
		}
		again, err := NewLayer[float64](s)
		if err != nil {
			t.Fatalf("%s: %v", tc.json, err)
		}
		if again.Name() != tc.layer.Name() || !reflect.DeepEqual(shapes(again.Params()), shapes(tc.layer.Params())) {
			t.Errorf("%s read back as %s, want %s", tc.json, again.Name(), tc.layer.Name())
		}
	}
}
