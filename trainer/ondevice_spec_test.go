package trainer

import (
	"strings"
	"testing"

	"fairdp/models"
	"fairdp/nn"
)

// TestDeviceNetSpecRefusesWhatTheDeviceLacks: cuda's convolution is square
// (one kernel size, stride and pad) and its linear and convolution layers
// have a bias, so a model with a per-axis convolution window or a Linear or
// Conv2d without a bias (whose missing bias block would otherwise be read
// out of range) or a residual join is refused by name before anything reaches a device, while
// the square twin is described.
func TestDeviceNetSpecRefusesWhatTheDeviceLacks(t *testing.T) {
	model := func(conv nn.Layer[float32], lin nn.Layer[float32]) *models.Model[float32] {
		return &models.Model[float32]{Arch: "custom", InShape: []int{1, 6, 6}, Classes: 2,
			Layers: []nn.Layer[float32]{conv, nn.NewReLU[float32](), nn.NewFlatten[float32](), lin}}
	}
	square := nn.NewConv2d[float32](1, 6, 6, 2, 3, 1, 1)
	if spec, err := deviceNetSpec(model(square, nn.NewLinear[float32](72, 1))); err != nil || len(spec) != 3 {
		t.Fatalf("square conv: %d layers, %v", len(spec), err)
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
		{model(nn.NewConv2dNoBias[float32](1, 6, 6, 2, nn.SquareWindow(3, 1, 1)), nn.NewLinear[float32](72, 1)),
			"layer 0 Conv2d(1→2, 3x3, stride 1, pad 1, in 6x6, no bias) has no bias"},
		{model(nn.NewResidual([]nn.Layer[float32]{nn.NewConv2d[float32](1, 6, 6, 1, 3, 1, 1)}, nil), nn.NewLinear[float32](36, 1)),
			"layer 0 is residual"},
	} {
		if _, err := deviceNetSpec(tc.m); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want one saying %q", err, tc.want)
		}
	}
}
