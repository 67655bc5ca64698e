package dpsgdf

import (
	"math"
	"testing"
)

// TestAdaptiveBounds checks C^k = C0(1 + (m̃^k/b̃^k)/(m̃/b)) (Xu, Du and Wu 2021)
// and its division guards against values computed by hand.
func TestAdaptiveBounds(t *testing.T) {
	tests := []struct {
		name               string
		c0, b              float64
		clipped, unclipped []float64
		want               []float64
		allUnclipped       bool
	}{
		// m̃ = 40, m̃/b = 0.15625; group fractions 0.1 and 0.6:
		// 1 + 0.1/0.15625 = 1.64, 1 + 0.6/0.15625 = 4.84.
		{"formula", 1, 256, []float64{10, 30}, []float64{90, 20}, []float64{1.64, 4.84}, false},
		// The same with C0 = 0.5 halves every bound.
		{"formula C0=0.5", 0.5, 256, []float64{10, 30}, []float64{90, 20}, []float64{0.82, 2.42}, false},
		// Equal fractions everywhere (0.2, and m̃/b = 25/125 = 0.2): C^k = 2·C0.
		{"equal fractions", 1, 125, []float64{5, 20}, []float64{20, 80}, []float64{2, 2}, false},
		// Nothing clipped (exact counts): every bound is C0.
		{"no clipping", 1, 256, []float64{0, 0, 0}, []float64{100, 50, 6}, []float64{1, 1, 1}, true},
		// Noisy clipped total ≤ 0: all-unclipped guard.
		{"negative total", 0.5, 256, []float64{-3, 1}, []float64{50, 50}, []float64{0.5, 0.5}, true},
		// Empty batch, counts all zero.
		{"empty batch", 1, 256, []float64{0, 0}, []float64{0, 0}, []float64{1, 1}, true},
		// Group 1 is noisily empty (b̃ = 0.5 − 2 < 0): its fraction is 0, so
		// C^1 = C0; m̃ = 5.5, fraction 0.5 → 1 + 0.5·256/5.5.
		{"empty group", 1, 256, []float64{5, 0.5}, []float64{5, -2}, []float64{1 + 0.5*256/5.5, 1}, false},
		// Fraction 12/10 = 1.2 is clamped to 1; m̃/b = 32/256 = 0.125:
		// 1 + 1/0.125 = 9, 1 + 0.2/0.125 = 2.6.
		{"fraction above 1", 1, 256, []float64{12, 20}, []float64{-2, 80}, []float64{9, 2.6}, false},
		// Negative group fraction (m̃^0 < 0) is clamped to 0.
		{"negative fraction", 1, 256, []float64{-4, 36}, []float64{60, 60}, []float64{1, 1 + (36.0/96)/(32.0/256)}, false},
		// m̃/b = 20/10 = 2 is capped at 1: C = C0(1 + 1/1), C0.
		{"overall above 1", 1, 10, []float64{20, 0}, []float64{0, 5}, []float64{2, 1}, false},
		// b = 0 would divide by zero: C0.
		{"zero batch", 1, 0, []float64{3}, []float64{1}, []float64{1}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, all := AdaptiveBounds(tc.c0, tc.b, tc.clipped, tc.unclipped)
			if all != tc.allUnclipped {
				t.Errorf("allUnclipped = %v, want %v", all, tc.allUnclipped)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d bounds, want %d", len(got), len(tc.want))
			}
			for k := range got {
				if math.Abs(got[k]-tc.want[k]) > 1e-12*tc.want[k] || !(got[k] >= tc.c0) {
					t.Errorf("C^%d = %.15g, want %.15g", k, got[k], tc.want[k])
				}
			}
		})
	}
}

// TestAdaptiveBoundsFromNorms checks the counting and the formula together
// against a direct transcription of the paper's definitions on raw
// per-sample norms (exact counts): m^k = #{‖g‖ > C0}, o^k = #{‖g‖ ≤ C0}.
func TestAdaptiveBoundsFromNorms(t *testing.T) {
	c0, b := 1.0, 8.0
	norms := []float64{0.5, 2, 3, 1, 0.2, 5, 0.9, 1.5}
	groups := []int{0, 0, 1, 1, 1, 1, 0, 2}
	// By hand: group 0 {0.5, 2, 0.9}: 1 clipped of 3; group 1 {3, 1, 0.2, 5}:
	// 2 of 4 (1 is not > C0); group 2 {1.5}: 1 of 1. m = 4, m/b = 0.5.
	want := []float64{1 + (1.0/3)/0.5, 1 + (2.0/4)/0.5, 1 + 1/0.5}
	clipped, unclipped := make([]float64, 3), make([]float64, 3)
	for i, g := range norms {
		if g > c0 {
			clipped[groups[i]]++
		} else {
			unclipped[groups[i]]++
		}
	}
	got, _ := AdaptiveBounds(c0, b, clipped, unclipped)
	for k := range want {
		if math.Abs(got[k]-want[k]) > 1e-12 {
			t.Errorf("C^%d = %v, want %v", k, got[k], want[k])
		}
	}
}

// TestNaiveWeights checks θ^k = (b/K)/b̃^k (Xu, Du and Wu 2021) and its guard
// (noisy counts below 1 count as 1).
func TestNaiveWeights(t *testing.T) {
	tests := []struct {
		name   string
		b      float64
		counts []float64
		want   []float64
	}{
		{"balanced", 256, []float64{128, 128}, []float64{1, 1}},
		{"minority", 256, []float64{100, 28}, []float64{1.28, 128.0 / 28}},
		{"ten classes", 250, []float64{25, 25, 25, 25, 25, 25, 25, 25, 2.5, 25}, []float64{1, 1, 1, 1, 1, 1, 1, 1, 10, 1}},
		{"guard", 300, []float64{0.3, -5, 64}, []float64{100, 100, 100.0 / 64}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := NaiveWeights(tc.b, tc.counts)
			for k := range tc.want {
				if math.Abs(got[k]-tc.want[k]) > 1e-12*tc.want[k] {
					t.Errorf("θ^%d = %v, want %v", k, got[k], tc.want[k])
				}
			}
		})
	}
}

// TestNaiveGuardWeights checks each Naïve guard against hand-computed
// weights: b = 8, K = 2 (share 4), σ1 = 4 for smooth.
func TestNaiveGuardWeights(t *testing.T) {
	for _, tc := range []struct {
		g        NaiveGuard
		strength float64
		counts   []float64
		want     []float64
	}{
		{NaiveGuardOne, 4, []float64{2, 8}, []float64{2, 0.5}},
		{"", 4, []float64{-3, 0.5}, []float64{4, 4}}, // the default: raised to 1
		// (4 + 4)/(c⁺ + 4): 8/6, 8/12; a negative count reads as 0: 8/4.
		{NaiveGuardSmooth, 4, []float64{2, 8}, []float64{8.0 / 6, 8.0 / 12}},
		{NaiveGuardSmooth, 4, []float64{-3, 4}, []float64{2, 1}},
		// No strength: the paper's weights with the divisor raised to 1.
		{NaiveGuardSmooth, 0, []float64{2, 0.5}, []float64{2, 4}},
	} {
		got, err := tc.g.Weights(8, tc.strength, tc.counts)
		if err != nil {
			t.Fatal(err)
		}
		for k := range tc.want {
			if math.Abs(got[k]-tc.want[k]) > 1e-12 {
				t.Errorf("%q strength %v counts %v: weights %v, want %v", tc.g, tc.strength, tc.counts, got, tc.want)
				break
			}
		}
	}
	if _, err := NaiveGuard("zero").Weights(8, 1, []float64{1}); err == nil {
		t.Error("an unknown Naïve guard was accepted")
	}
}
