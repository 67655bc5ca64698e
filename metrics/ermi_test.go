package metrics

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestERMIHand checks ERMI for demographic parity and for equalized odds
// (Lowy et al. 2022) on values worked by hand.
func TestERMIHand(t *testing.T) {
	// Joint masses per group: (1.4, 0.6) and (0.8, 1.2); class marginals
	// (2.2, 1.8); groups of 2: Σ J²/(M_j N_r) = 2.6/4.4 + 1.8/3.6 = 12/11.
	probs := []float64{0.8, 0.2, 0.6, 0.4, 0.3, 0.7, 0.5, 0.5}
	s := []int{0, 0, 1, 1}
	// Label 0 holds rows 0 and 2: 124/99 - 1 = 25/99; label 1 holds rows 1
	// and 3: 100/99 - 1 = 1/99; each label has weight 1/2.
	y := []int{0, 1, 0, 1}
	tests := []struct {
		name   string
		probs  []float64
		y, s   []int
		l, k   int
		dp, eo float64
	}{
		{"two groups", probs, y, s, 2, 2, 1.0 / 11, 13.0 / 99},
		// An empty group and a class without mass contribute nothing.
		{"padded", []float64{0.8, 0.2, 0, 0.6, 0.4, 0, 0.3, 0.7, 0, 0.5, 0.5, 0}, y, []int{0, 0, 2, 2}, 3, 3, 1.0 / 11, 13.0 / 99},
		// Hard predictions that reveal the group: ERMI = l - 1 = k - 1 = 1. The
		// label equals the group, so within a label there is one group: 0.
		{"deterministic", []float64{1, 0, 1, 0, 0, 1, 0, 1}, []int{0, 0, 1, 1}, s, 2, 2, 1, 0},
		{"identical rows", []float64{0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5}, y, []int{0, 1, 1, 1}, 2, 2, 0, 0},
		{"single group", probs, y, []int{0, 0, 0, 0}, 2, 1, 0, 0},
		{"no records", nil, nil, nil, 2, 2, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ERMIDemographicParity(tt.probs, tt.s, tt.l, tt.k); math.Abs(got-tt.dp) > 1e-15 {
				t.Errorf("ERMIDemographicParity = %.17g, want %.17g", got, tt.dp)
			}
			if got := ERMIEqualizedOdds(tt.probs, tt.y, tt.s, tt.l, tt.k); math.Abs(got-tt.eo) > 1e-15 {
				t.Errorf("ERMIEqualizedOdds = %.17g, want %.17g", got, tt.eo)
			}
		})
	}
}

// randomSoft draws n rows of l probabilities (normalised exponentials, some
// rows peaked) and groups 0..k-1 with unequal frequencies.
func randomSoft(rng *rand.Rand, n, l, k int) (probs []float64, y, s []int) {
	probs = make([]float64, n*l)
	y, s = make([]int, n), make([]int, n)
	for i := range n {
		s[i] = min(int(float64(k)*rng.Float64()*rng.Float64()*2), k-1)
		y[i] = rng.IntN(l)
		sum := 0.0
		for j := range l {
			v := math.Exp(3 * rng.NormFloat64())
			if j == y[i] && s[i]%2 == 0 {
				v *= 3
			}
			probs[i*l+j] = v
			sum += v
		}
		for j := range l {
			probs[i*l+j] /= sum
		}
	}
	return probs, y, s
}

// chiSquare is the independent χ² form of ERMI on the rows selected by keep:
// Σ_{j,r} (p̂(j,r) - p̂(j) p̂(r))² / (p̂(j) p̂(r)), which equals the ERMI sum
// minus 1 when the rows are probability vectors.
func chiSquare(probs []float64, s []int, l, k int, keep func(i int) bool) float64 {
	n := 0
	joint := make([][]float64, k)
	for r := range joint {
		joint[r] = make([]float64, l)
	}
	for i := range s {
		if keep(i) {
			n++
			for j := range l {
				joint[s[i]][j] += probs[i*l+j]
			}
		}
	}
	pr := make([]float64, k)
	pj := make([]float64, l)
	for i := range s {
		if keep(i) {
			pr[s[i]] += 1 / float64(n)
		}
	}
	for r := range k {
		for j := range l {
			joint[r][j] /= float64(n)
			pj[j] += joint[r][j]
		}
	}
	chi := 0.0
	for r := range k {
		for j := range l {
			if e := pj[j] * pr[r]; e > 0 {
				d := joint[r][j] - e
				chi += d * d / e
			}
		}
	}
	return chi
}

// TestERMIChiSquare compares both ERMIs with the χ² form on random data.
func TestERMIChiSquare(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := range 200 {
		l, k := 2+rng.IntN(4), 1+rng.IntN(4)
		n := 1 + rng.IntN(300)
		probs, y, s := randomSoft(rng, n, l, k)
		all := func(int) bool { return true }
		dp := ERMIDemographicParity(probs, s, l, k)
		if want := chiSquare(probs, s, l, k, all); math.Abs(dp-want) > 1e-12 {
			t.Fatalf("trial %d (n=%d l=%d k=%d): ERMIDemographicParity = %.17g, χ² form %.17g", trial, n, l, k, dp, want)
		}
		if dp < 0 {
			t.Fatalf("trial %d: ERMI = %g < 0", trial, dp)
		}
		want := 0.0
		for label := range l {
			ny := 0
			for _, v := range y {
				if v == label {
					ny++
				}
			}
			if ny > 0 {
				want += float64(ny) / float64(n) * chiSquare(probs, s, l, k, func(i int) bool { return y[i] == label })
			}
		}
		if got := ERMIEqualizedOdds(probs, y, s, l, k); math.Abs(got-want) > 1e-12 {
			t.Fatalf("trial %d: ERMIEqualizedOdds = %.17g, conditional χ² form %.17g", trial, got, want)
		}
	}
}

// TestERMIMaximiserIdentity checks Lowy et al. 2022's identity: at W*_{rj} = p̂(j,r) /
// (sqrt(p̂_S(r)) p̂(j)) the mean of ψ_i equals ERMI. This is the min-max form
// DP-FERMI optimises, so it is a third, independent path to the number.
func TestERMIMaximiserIdentity(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for trial := range 50 {
		l, k, n := 2+rng.IntN(3), 2+rng.IntN(3), 50+rng.IntN(200)
		probs, _, s := randomSoft(rng, n, l, k)
		pS := make([]float64, k)
		pj := make([]float64, l)
		pjr := make([][]float64, k)
		for r := range pjr {
			pjr[r] = make([]float64, l)
		}
		for i, r := range s {
			pS[r] += 1 / float64(n)
			for j := range l {
				pjr[r][j] += probs[i*l+j] / float64(n)
				pj[j] += probs[i*l+j] / float64(n)
			}
		}
		w := func(r, j int) float64 {
			if pS[r] == 0 {
				return 0
			}
			return pjr[r][j] / (math.Sqrt(pS[r]) * pj[j])
		}
		meanPsi := 0.0
		for i, si := range s {
			psi := -1.0
			for j := range l {
				f := probs[i*l+j]
				for r := range k {
					psi -= w(r, j) * w(r, j) * f
				}
				psi += 2 * w(si, j) * f / math.Sqrt(pS[si])
			}
			meanPsi += psi / float64(n)
		}
		if got := ERMIDemographicParity(probs, s, l, k); math.Abs(got-meanPsi) > 1e-12 {
			t.Fatalf("trial %d: ERMI = %.17g, mean ψ at W* = %.17g", trial, got, meanPsi)
		}
	}
}

// TestERMIZeroAtParity: ERMI is 0 exactly at demographic parity.
// Every group holds whole copies of the same base rows (a different number
// of copies per group), so the mean soft prediction is the same everywhere.
func TestERMIZeroAtParity(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for trial := range 50 {
		l, k := 2+rng.IntN(4), 2+rng.IntN(4)
		base, _, _ := randomSoft(rng, 1+rng.IntN(20), l, 1)
		var probs []float64
		var s, y []int
		for r := range k {
			for range 1 + rng.IntN(3) { // copies of the base rows in group r
				probs = append(probs, base...)
				for i := range len(base) / l {
					s = append(s, r)
					y = append(y, i%l)
				}
			}
		}
		if got := ERMIDemographicParity(probs, s, l, k); got > 1e-14 {
			t.Fatalf("trial %d: ERMI at parity = %g, want 0", trial, got)
		}
		// Equal odds too: within each label the groups hold the same rows.
		if got := ERMIEqualizedOdds(probs, y, s, l, k); got > 1e-14 {
			t.Fatalf("trial %d: conditional ERMI at equal odds = %g, want 0", trial, got)
		}
	}
}

func TestERMIPanicsOnBadInput(t *testing.T) {
	tests := []struct {
		name string
		call func()
		want string
	}{
		{"short probs", func() { ERMIDemographicParity([]float64{1, 0, 1}, []int{0, 0}, 2, 1) }, "metrics: 3 soft predictions for 2 records × 2 classes, want 4"},
		{"group", func() { ERMIDemographicParity([]float64{1, 0}, []int{1}, 2, 1) }, "metrics: s[0] = 1, want 0..0"},
		{"no labels", func() { ERMIEqualizedOdds([]float64{1, 0}, nil, []int{0}, 2, 1) }, "metrics: 0 labels for 1 records, want one label per record"},
		{"label", func() { ERMIEqualizedOdds([]float64{1, 0}, []int{2}, []int{0}, 2, 1) }, "metrics: y[0] = 2, want 0..1"},
		{"one class", func() { ERMIDemographicParity([]float64{1}, []int{0}, 1, 1) }, "metrics: l = 1 classes, want at least 2"},
		{"no groups", func() { ERMIDemographicParity(nil, nil, 2, 0) }, "metrics: k = 0 groups, want at least 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := panicMessage(tt.call); got != tt.want {
				t.Errorf("panic %q, want %q", got, tt.want)
			}
		})
	}
}
