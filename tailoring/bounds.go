package tailoring

import (
	"math"

	"github.com/fairdp/fairdp/linear"
)

// SyntheticBounds are the public bounds that the synthetic generator's own
// parameters imply, four standard deviations out: every feature x_j ~ N(0,1)
// is taken as |x_j| ≤ 4, so a row with the intercept has norm at most
// sqrt(16·P + 1) (√17 for the paper's one feature), and a group's y =
// intercept + xᵀβ + N(0, σ_e²) as |y| ≤ |intercept| + 4·sqrt(|β|² + σ_e²).
//
// They stand in for the domain knowledge a real user must supply: they are
// derived from the generator, not from the data, so they cost no privacy,
// but a receipt built on them says so (not_covered "public_bounds"). The
// command line and the reproductions use this one function.
func SyntheticBounds(groups []linear.SyntheticGroup) linear.Bounds {
	p := 0
	maxY := 0.0
	for _, g := range groups {
		p = max(p, len(g.Slope))
		var b2 float64
		for _, b := range g.Slope {
			b2 += b * b
		}
		maxY = max(maxY, math.Abs(g.Intercept)+4*math.Sqrt(b2+g.NoiseStd*g.NoiseStd))
	}
	return linear.Bounds{XNorm: math.Sqrt(16*float64(p) + 1), Y: maxY}
}
