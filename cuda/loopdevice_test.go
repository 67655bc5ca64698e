package cuda

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/models"
	"github.com/fairdp/fairdp/nn"
)

// netSpec maps a model's layers to NetLayers one to one (flatten
// is free), a group norm with its geometry, ε and parameters, and refuses a
// layer the device has no kernel for, naming it.
func TestDeviceNetSpecLayers(t *testing.T) {
	spec := models.Spec{Arch: "gn", InShape: []int{2, 4, 4}, Classes: 3, Layers: []nn.LayerSpec{
		{Kind: nn.KindGroupNorm, C: 2, H: 4, W: 4, Groups: 2},
		{Kind: nn.KindConv2d, C: 2, H: 4, W: 4, OutC: 4, K: 3, Stride: 1, Pad: 1},
		{Kind: nn.KindReLU}, {Kind: nn.KindMaxPool2d, C: 4, H: 4, W: 4, K: 2}, {Kind: nn.KindFlatten},
		{Kind: nn.KindLinear, In: 16, Out: 3},
	}}
	m, err := models.New[float32](spec, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	gn := m.Layers[0].Params()
	gn[0].Value[1], gn[1].Value[0] = 1.5, -0.25
	layers, err := netSpec(m.Layers, m.InSize())
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, l := range layers {
		kinds = append(kinds, l.Kind)
	}
	if want := []string{"groupnorm", "conv", "relu", "maxpool", "linear"}; !slices.Equal(kinds, want) {
		t.Fatalf("device layers %v, want %v", kinds, want)
	}
	if g := layers[0].Norm; g != (GroupGeom{C: 2, H: 4, W: 4, Groups: 2, Eps: 1e-5}) ||
		!slices.Equal(layers[0].Weight, []float32{1, 1.5}) || !slices.Equal(layers[0].Bias, []float32{-0.25, 0}) {
		t.Errorf("group norm layer %+v, γ %v, β %v", g, layers[0].Weight, layers[0].Bias)
	}
	if layers[2].Size != 64 {
		t.Errorf("ReLU after the convolution: Size %d, want 4·4·4", layers[2].Size)
	}
	spec.Layers[2].Kind = nn.KindTanh
	if m, err = models.New[float32](spec, rand.New(rand.NewPCG(1, 2))); err != nil {
		t.Fatal(err)
	}
	if _, err := netSpec(m.Layers, m.InSize()); err == nil || !strings.Contains(err.Error(), "groupnorm") || !strings.Contains(err.Error(), "layer 2 is tanh") {
		t.Errorf("a tanh layer on the device: %v, want a refusal naming it and the layers the device runs", err)
	}
}

// TestDeviceNetSpecRefusesWhatTheDeviceLacks: the convolution is square
// (one kernel size, stride and pad) and its linear layers have a bias, so a
// model with a per-axis convolution window or a Linear without a bias
// (whose missing bias block would otherwise be read out of range) or a
// residual join is refused by name before anything reaches a device, while
// the square twin, with or without a bias, is described (a Conv2d without
// a bias was refused here until the device ran one: W alone, no bias
// column).
func TestDeviceNetSpecRefusesWhatTheDeviceLacks(t *testing.T) {
	model := func(conv nn.Layer[float32], lin nn.Layer[float32]) *models.Model[float32] {
		return &models.Model[float32]{Arch: "custom", InShape: []int{1, 6, 6}, Classes: 2,
			Layers: []nn.Layer[float32]{conv, nn.NewReLU[float32](), nn.NewFlatten[float32](), lin}}
	}
	square := nn.NewConv2d[float32](1, 6, 6, 2, 3, 1, 1)
	if spec, err := netSpec(model(square, nn.NewLinear[float32](72, 1)).Layers, 36); err != nil || len(spec) != 3 {
		t.Fatalf("square conv: %d layers, %v", len(spec), err)
	}
	noBias := nn.NewConv2dNoBias[float32](1, 6, 6, 2, nn.SquareWindow(3, 1, 1))
	if spec, err := netSpec(model(noBias, nn.NewLinear[float32](72, 1)).Layers, 36); err != nil || len(spec) != 3 || spec[0].Bias != nil {
		t.Fatalf("square conv without a bias: %d layers, %v", len(spec), err)
	}
	for _, tc := range []struct {
		m    *models.Model[float32]
		want string
	}{
		{model(nn.NewConv2dWindow[float32](1, 6, 6, 2, nn.ConvWindow{KH: 3, KW: 5, StrideH: 1, StrideW: 1, PadH: 1, PadW: 2}), nn.NewLinear[float32](72, 1)),
			"layer 0 Conv2d(1→2, 3x5, stride 1, pad (1,2), in 6x6) has a per-axis window"},
		{model(nn.NewConv2dWindow[float32](1, 6, 6, 2, nn.ConvWindow{KH: 3, KW: 3, StrideH: 2, StrideW: 1, PadH: 1, PadW: 1}), nn.NewLinear[float32](36, 1)),
			"layer 0 Conv2d(1→2, 3x3, stride (2,1), pad 1, in 6x6) has a per-axis window"},
		{model(square, nn.NewLinearNoBias[float32](72, 1)), "layer 3 Linear(72→1, no bias) has no bias"},
		{model(nn.NewResidual([]nn.Layer[float32]{nn.NewConv2d[float32](1, 6, 6, 1, 3, 1, 1)}, nil), nn.NewLinear[float32](36, 1)),
			"layer 0 is residual"},
	} {
		if _, err := netSpec(tc.m.Layers, tc.m.InSize()); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want one saying %q", err, tc.want)
		}
	}
}
