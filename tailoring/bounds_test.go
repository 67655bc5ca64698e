package tailoring

import (
	"math"
	"testing"

	"github.com/fairdp/fairdp/linear"
)

func TestSyntheticBounds(t *testing.T) {
	for _, tc := range []struct {
		groups []linear.SyntheticGroup
		want   linear.Bounds
	}{
		// The paper's setting: one feature, σ_e = 1: √17 and 4·hypot(β, 1).
		{[]linear.SyntheticGroup{{Slope: []float64{-10}, NoiseStd: 1}, {Slope: []float64{10}, NoiseStd: 1}},
			linear.Bounds{XNorm: math.Sqrt(17), Y: 4 * math.Hypot(10, 1)}},
		{[]linear.SyntheticGroup{{Slope: []float64{3, 4}, NoiseStd: 0, Intercept: -2}},
			linear.Bounds{XNorm: math.Sqrt(33), Y: 2 + 4*5}},
	} {
		got := SyntheticBounds(tc.groups)
		if math.Abs(got.XNorm-tc.want.XNorm) > 1e-12 || math.Abs(got.Y-tc.want.Y) > 1e-12 {
			t.Errorf("%+v: %+v, want %+v", tc.groups, got, tc.want)
		}
	}
}
