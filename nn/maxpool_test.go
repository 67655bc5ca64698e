package nn

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestPool2MatchesLoop checks the 2×2 max-pool's forward pass (assembly on
// amd64 for float32, four outputs at a time, and the Go loop for the
// columns left over) against a plain loop over each window, bit for bit:
// inputs drawn from a few values so that windows tie, hold +0 and −0
// together and hold NaNs, on widths and heights odd and even, output rows
// of 1–9 values (no, one and two groups of four, with and without a tail),
// in float32 and float64.
func TestPool2MatchesLoop(t *testing.T) {
	for _, h := range []int{2, 3, 6} {
		for w := 2; w <= 19; w++ {
			checkPool2[float32](t, 3, h, w)
			checkPool2[float64](t, 3, h, w)
		}
	}
}

func checkPool2[T Float](t *testing.T, c, h, w int) {
	t.Helper()
	vals := []float64{-1, 0, math.Copysign(0, -1), 1, 2, 2, math.NaN()}
	rng := rand.New(rand.NewPCG(uint64(h), uint64(w)))
	const batch = 2
	x := make([]T, batch*c*h*w)
	for i := range x {
		x[i] = T(vals[rng.IntN(len(vals))])
	}
	m := NewMaxPool2d[T](c, h, w, 2)
	y := m.Forward(x, batch, true)
	outH, outW := h/2, w/2
	for p := range batch * c {
		for oh := range outH {
			for ow := range outW {
				top := p*h*w + 2*oh*w + 2*ow
				win := []int{top, top + 1, top + w, top + w + 1}
				mx := max(max(x[win[0]], x[win[1]]), max(x[win[2]], x[win[3]]))
				best := win[0] - p*h*w
				for k := 3; k >= 0; k-- {
					if x[win[k]] == mx {
						best = win[k] - p*h*w
					}
				}
				o := p*outH*outW + oh*outW + ow
				if bits(y[o]) != bits(mx) || m.arg[o] != int32(best) {
					t.Errorf("%T %d×%d plane %d output (%d,%d): %v at %d, want %v at %d (window %v %v %v %v)",
						T(0), h, w, p, oh, ow, y[o], m.arg[o], mx, best, x[win[0]], x[win[1]], x[win[2]], x[win[3]])
				}
			}
		}
	}
}

// bits is a value's bit pattern, so that −0 ≠ +0 and NaN = NaN compare as
// the bits they are.
func bits[T Float](v T) uint64 {
	if elemSize[T]() == 4 {
		return uint64(math.Float32bits(float32(v)))
	}
	return math.Float64bits(float64(v))
}
