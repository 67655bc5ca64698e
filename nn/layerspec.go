package nn

import (
	"fmt"
	"math"
)

// Layer kinds of a LayerSpec.
const (
	KindLinear    = "linear"
	KindConv2d    = "conv2d"
	KindMaxPool2d = "maxpool2d"
	KindReLU      = "relu"
	KindTanh      = "tanh"
	KindLeakyReLU = "leaky_relu"
	KindFlatten   = "flatten"
	KindGroupNorm = "groupnorm"
	KindSigmoid   = "sigmoid"
	KindDropout   = "dropout"
	KindResidual  = "residual"
	KindUnflatten = "unflatten"
)

// LayerSpec describes a layer completely enough to build it again: its kind
// and geometry (the parameters' values are stored separately). It is how a
// model a user assembles from these layers, outside fairdp's zoo, is saved
// in a checkpoint and read back (models.Spec.Layers), and how a network is
// described in a JSON file.
type LayerSpec struct {
	Kind string `json:"kind"`
	// Linear: In → Out. NoBias, for Linear and Conv2d: a layer without a
	// bias (NewLinearNoBias, NewConv2dNoBias).
	In     int  `json:"in,omitempty"`
	Out    int  `json:"out,omitempty"`
	NoBias bool `json:"no_bias,omitempty"`
	// Conv2d, MaxPool2d, GroupNorm: the per-sample input C×H×W;
	// Unflatten: its output C×H×W.
	C int `json:"c,omitempty"`
	H int `json:"h,omitempty"`
	W int `json:"w,omitempty"`
	// Conv2d: OutC output channels, K×K kernel, Stride, Pad on both axes;
	// MaxPool2d: K window (= stride).
	OutC   int `json:"out_c,omitempty"`
	K      int `json:"k,omitempty"`
	Stride int `json:"stride,omitempty"`
	Pad    int `json:"pad,omitempty"`
	// Conv2d with a window that differs between the axes (ConvWindow): KW
	// is set (≥ 1), K, Stride and Pad are then the height axis's and KW,
	// StrideW, PadW the width axis's. Without KW the window is square, as
	// in every file written before these fields existed, and StrideW and
	// PadW must be absent.
	KW      int `json:"kw,omitempty"`
	StrideW int `json:"stride_w,omitempty"`
	PadW    int `json:"pad_w,omitempty"`
	// GroupNorm: Groups dividing C.
	Groups int `json:"groups,omitempty"`
	// LeakyReLU: the negative slope.
	Slope float64 `json:"slope,omitempty"`
	// Dropout: the drop probability P and the Seed of its masks.
	P    float64 `json:"p,omitempty"`
	Seed uint64  `json:"seed,omitempty"`
	// Residual: its two branches (a pointer, so LayerSpec stays
	// comparable with ==).
	Residual *ResidualSpec `json:"residual,omitempty"`
}

// ResidualSpec is a Residual layer's branches: the layers of Body and of
// Shortcut (none: the identity), joined by a sum (NewResidual).
type ResidualSpec struct {
	Body     []LayerSpec `json:"body"`
	Shortcut []LayerSpec `json:"shortcut,omitempty"`
}

// Spec implements Describer.
func (l *Linear[T]) Spec() LayerSpec {
	return LayerSpec{Kind: KindLinear, In: l.in, Out: l.out, NoBias: l.bias == nil}
}

// Spec implements Describer.
func (c *Conv2d[T]) Spec() LayerSpec {
	s := ConvSpec(c.inC, c.inH, c.inW, c.outC, c.win)
	s.NoBias = c.bias == nil
	return s
}

// ConvSpec describes a Conv2d with outC filters over c×h×w inputs and the
// window win. A square window is written as before the per-axis fields
// existed (K, Stride, Pad), so its files do not change.
func ConvSpec(c, h, w, outC int, win ConvWindow) LayerSpec {
	s := LayerSpec{Kind: KindConv2d, C: c, H: h, W: w, OutC: outC, K: win.KH, Stride: win.StrideH, Pad: win.PadH}
	if !win.IsSquare() {
		s.KW, s.StrideW, s.PadW = win.KW, win.StrideW, win.PadW
	}
	return s
}

// ConvWindow is the window a Conv2d spec describes: K, Stride and Pad on
// both axes, or per axis when KW is set. ok is false for a spec that sets
// StrideW or PadW without KW (neither square nor complete).
func (s LayerSpec) ConvWindow() (w ConvWindow, ok bool) {
	if s.KW == 0 {
		return SquareWindow(s.K, s.Stride, s.Pad), s.StrideW == 0 && s.PadW == 0
	}
	return ConvWindow{KH: s.K, KW: s.KW, StrideH: s.Stride, StrideW: s.StrideW, PadH: s.Pad, PadW: s.PadW}, true
}

// Spec implements Describer.
func (m *MaxPool2d[T]) Spec() LayerSpec {
	return LayerSpec{Kind: KindMaxPool2d, C: m.c, H: m.h, W: m.w, K: m.k}
}

// Spec implements Describer.
func (a *activation[T]) Spec() LayerSpec {
	switch a.kind {
	case actReLU:
		return LayerSpec{Kind: KindReLU}
	case actTanh:
		return LayerSpec{Kind: KindTanh}
	}
	return LayerSpec{Kind: KindLeakyReLU, Slope: float64(a.slope)}
}

// Spec implements Describer.
func (f *Flatten[T]) Spec() LayerSpec { return LayerSpec{Kind: KindFlatten} }

// Spec implements Describer.
func (g *GroupNorm[T]) Spec() LayerSpec {
	return LayerSpec{Kind: KindGroupNorm, C: g.c, H: g.h, W: g.w, Groups: g.groups}
}

// Describer is a layer that can describe itself (every layer of this
// package is one).
type Describer interface{ Spec() LayerSpec }

// NewLayer builds the layer s describes, with its parameters at their
// construction values (zero, or GroupNorm's γ = 1); call Init on Linear and
// Conv2d layers to draw them. Bad geometry is an error, not a panic.
func NewLayer[T Float](s LayerSpec) (Layer[T], error) {
	bad := func() error { return fmt.Errorf("nn: layer %+v: impossible geometry", s) }
	pos := func(v ...int) bool {
		for _, x := range v {
			if x < 1 {
				return false
			}
		}
		return true
	}
	switch s.Kind {
	case KindLinear:
		if !pos(s.In, s.Out) {
			return nil, bad()
		}
		if s.NoBias {
			return NewLinearNoBias[T](s.In, s.Out), nil
		}
		return NewLinear[T](s.In, s.Out), nil
	case KindConv2d:
		win, ok := s.ConvWindow()
		if !ok || !pos(s.C, s.H, s.W, s.OutC) || !win.valid(s.H, s.W) {
			return nil, bad()
		}
		if s.NoBias {
			return NewConv2dNoBias[T](s.C, s.H, s.W, s.OutC, win), nil
		}
		return NewConv2dWindow[T](s.C, s.H, s.W, s.OutC, win), nil
	case KindMaxPool2d:
		if !pos(s.C, s.K) || s.H < s.K || s.W < s.K {
			return nil, bad()
		}
		return NewMaxPool2d[T](s.C, s.H, s.W, s.K), nil
	case KindReLU:
		return NewReLU[T](), nil
	case KindTanh:
		return NewTanh[T](), nil
	case KindLeakyReLU:
		if math.IsNaN(s.Slope) || math.IsInf(s.Slope, 0) {
			return nil, bad()
		}
		return NewLeakyReLU[T](T(s.Slope)), nil
	case KindFlatten:
		return NewFlatten[T](), nil
	case KindGroupNorm:
		if !pos(s.Groups, s.C, s.H, s.W) || s.C%s.Groups != 0 {
			return nil, bad()
		}
		return NewGroupNorm[T](s.Groups, s.C, s.H, s.W), nil
	case KindSigmoid:
		return NewSigmoid[T](), nil
	case KindDropout:
		if !(s.P >= 0 && s.P < 1) {
			return nil, bad()
		}
		return NewDropout[T](s.P, s.Seed), nil
	case KindUnflatten:
		if !pos(s.C, s.H, s.W) {
			return nil, bad()
		}
		return NewUnflatten[T](s.C, s.H, s.W), nil
	case KindResidual:
		if s.Residual == nil || len(s.Residual.Body) == 0 {
			return nil, fmt.Errorf("nn: layer kind %s needs residual.body, at least one layer", KindResidual)
		}
		var branches [2][]Layer[T]
		for b, specs := range [][]LayerSpec{s.Residual.Body, s.Residual.Shortcut} {
			for i, ls := range specs {
				l, err := NewLayer[T](ls)
				if err != nil {
					return nil, fmt.Errorf("nn: residual branch %d layer %d: %w", b, i, err)
				}
				branches[b] = append(branches[b], l)
			}
		}
		return NewResidual(branches[0], branches[1]), nil
	}
	return nil, fmt.Errorf("nn: unknown layer kind %q (known: %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)", s.Kind,
		KindLinear, KindConv2d, KindMaxPool2d, KindReLU, KindTanh, KindLeakyReLU, KindFlatten, KindGroupNorm,
		KindSigmoid, KindDropout, KindResidual, KindUnflatten)
}
