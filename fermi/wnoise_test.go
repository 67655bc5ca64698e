package fermi

import (
	"math"
	"strings"
	"testing"
)

// TestWNoiseIsHardened: W's noise V_t was drawn with the
// textbook float64 sampler and W is released at full float64 precision
// (report.json extra.fermi.w), where no rounding to float32 weights covers
// the sampler's low-order bits. V_t now comes from the floating-point-safe
// sampler, whose every output is a multiple of its lattice spacing
// g = ceilPowerOfTwo(2·std/2⁵⁷) = 2⁻⁵⁷ for std 1/3. A textbook draw
// std·z, rounded to float64, below 1/32 (about 7 % of them) has float64
// spacing below 2⁻⁵⁷ and is then rarely such a multiple (std is not a
// power of two, so its low bits are arbitrary), so the thousands of draws
// here tell the two samplers apart. The receipt names the sampler.
func TestWNoiseIsHardened(t *testing.T) {
	a, err := New[float32](syntheticJob(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	a.WNoise = 1.0 / 3
	const g = 0x1p-57
	tiny := 0
	for range 2000 {
		clear(a.w.Grad)
		if err := a.wDirection(); err != nil {
			t.Fatal(err)
		}
		for _, v := range a.w.Grad {
			if math.Abs(v) < 1.0/32 {
				tiny++
			}
			if s := v / g; s != math.Trunc(s) {
				t.Fatalf("V_t value %v is not a multiple of the hardened sampler's spacing 2⁻⁵⁷: a textbook draw", v)
			}
		}
	}
	if tiny < 100 {
		t.Fatalf("setup: only %d draws below 1/32, too few to tell the samplers apart", tiny)
	}
	r, err := a.Receipt()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.Note, "(V_t, floating-point-safe sampler)") {
		t.Errorf("receipt note does not name W's sampler: %s", r.Note)
	}
}
