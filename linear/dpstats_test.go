package linear

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/fairdp/fairdp/dpops/accounting"
	"gonum.org/v1/gonum/mat"
)

func TestClip(t *testing.T) {
	for _, tc := range []struct {
		row, want []float64
		bound     float64
	}{
		{[]float64{3, 4}, []float64{0.6, 0.8}, 1},
		{[]float64{0.3, 0.4}, []float64{0.3, 0.4}, 1},
		{[]float64{-6, 8}, []float64{-3, 4}, 5},
		{[]float64{0, 0}, []float64{0, 0}, 1},
	} {
		row := append([]float64(nil), tc.row...)
		ClipRow(row, tc.bound)
		closeSlices(t, fmt.Sprintf("ClipRow(%v, %g)", tc.row, tc.bound), row, tc.want, 1e-15)
	}
	for _, tc := range []struct{ v, bound, want float64 }{{5, 2, 2}, {-5, 2, -2}, {1.5, 2, 1.5}} {
		if got := ClipValue(tc.v, tc.bound); got != tc.want {
			t.Errorf("ClipValue(%g, %g) = %g, want %g", tc.v, tc.bound, got, tc.want)
		}
	}
	if err := (Bounds{XNorm: 0, Y: 1}).Validate(); err == nil {
		t.Error("XNorm = 0 accepted")
	}
	if err := (Bounds{XNorm: 1, Y: math.Inf(1)}).Validate(); err == nil {
		t.Error("Y = +Inf accepted")
	}
}

func TestClippedStatsBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	x, y, _ := randomRegression(r, 30, 3, 2)
	b := Bounds{XNorm: 1.5, Y: 2}
	st, err := ClippedStats(x, y, b)
	if err != nil {
		t.Fatal(err)
	}
	// Clip by hand, then sum outer products.
	wantXtX := make([]float64, 9)
	wantXtY := make([]float64, 3)
	for i := range 30 {
		row := []float64{x.At(i, 0), x.At(i, 1), x.At(i, 2)}
		norm := math.Sqrt(row[0]*row[0] + row[1]*row[1] + row[2]*row[2])
		if norm > b.XNorm {
			for j := range row {
				row[j] *= b.XNorm / norm
			}
		}
		yi := math.Max(-b.Y, math.Min(b.Y, y[i]))
		for a := range 3 {
			for c := range 3 {
				wantXtX[a*3+c] += row[a] * row[c]
			}
			wantXtY[a] += row[a] * yi
		}
	}
	got := make([]float64, 9)
	for a := range 3 {
		for c := range 3 {
			got[a*3+c] = st.XtX.At(a, c)
		}
	}
	closeSlices(t, "XᵀX", got, wantXtX, 1e-12)
	closeSlices(t, "XᵀY", st.XtY, wantXtY, 1e-12)
}

// TestNoisyStatsSpendsExactly: the release costs exactly ρ_XtX + ρ_XtY with
// ρ = Δ²/(2σ²) (Bun and Steinke 2016), Δ = XNorm² for XᵀX and XNorm·Y for XᵀY.
func TestNoisyStatsSpendsExactly(t *testing.T) {
	acct, _ := accounting.NewZCDP(1)
	st := SufficientStats{XtX: mat.NewSymDense(2, []float64{4, 1, 1, 3}), XtY: []float64{1, 2}}
	b := Bounds{XNorm: 2, Y: 3}
	if _, err := NoisyStats(rand.New(rand.NewPCG(1, 1)), st, b, 0.3, 0.2, acct, "all"); err != nil {
		t.Fatal(err)
	}
	if got := acct.Rho(); math.Abs(got-0.5) > 1e-15 {
		t.Fatalf("ρ spent = %.17g, want 0.5", got)
	}
	spends := acct.Spends()
	if len(spends) != 2 {
		t.Fatalf("spends = %+v, want two Gaussian releases", spends)
	}
	for i, want := range []struct {
		label       string
		sens, sigma float64
	}{{"XᵀX all", 4, 1 / math.Sqrt(0.6)}, {"XᵀY all", 6, 1 / math.Sqrt(0.4)}} {
		m := spends[i]
		if m.Protects != want.label || m.Sensitivity != want.sens || math.Abs(m.NoiseMultiplier-want.sigma) > 1e-12 {
			t.Errorf("spend %d = %+v, want %s with sensitivity %g and noise multiplier %.6g", i, m, want.label, want.sens, want.sigma)
		}
	}
}

func TestNoisyStatsRefusesOverBudget(t *testing.T) {
	acct, _ := accounting.NewZCDP(0.1)
	st := SufficientStats{XtX: mat.NewSymDense(1, []float64{1}), XtY: []float64{1}}
	r := rand.New(rand.NewPCG(9, 9))
	_, err := NoisyStats(r, st, Bounds{XNorm: 1, Y: 1}, 0.3, 0.3, acct, "")
	if !errors.Is(err, accounting.ErrBudgetExceeded) {
		t.Fatalf("err = %v, want ErrBudgetExceeded", err)
	}
	if acct.Rho() != 0 {
		t.Errorf("ρ = %v charged for a refused release", acct.Rho())
	}
	if r.Uint64() != rand.New(rand.NewPCG(9, 9)).Uint64() {
		t.Error("noise was drawn for a refused release")
	}
}

// TestNoisyStatsNoiseScale checks the Analyze-Gauss noise statistically:
// every upper-triangle entry of XᵀX has std XNorm²/√(2ρ) = 4, every entry of
// XᵀY has std XNorm·Y/√(2ρ) = 6 (ρ = 0.5), the noisy matrix is symmetric and
// distinct entries get distinct draws. With 4000 draws the sample variance
// has relative sd √(2/3999) ≈ 0.022; the tolerance is 5 of those.
func TestNoisyStatsNoiseScale(t *testing.T) {
	const draws = 4000
	r := rand.New(rand.NewPCG(11, 12))
	b := Bounds{XNorm: 2, Y: 3}
	zero := SufficientStats{XtX: mat.NewSymDense(3, nil), XtY: make([]float64, 3)}
	var sumSq [3][3]float64
	var sumSqY [3]float64
	equal := 0
	for range draws {
		acct, _ := accounting.NewZCDP(math.Inf(1))
		st, err := NoisyStats(r, zero, b, 0.5, 0.5, acct, "")
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			for j := range 3 {
				if st.XtX.At(i, j) != st.XtX.At(j, i) {
					t.Fatalf("noisy XᵀX is not symmetric at (%d,%d)", i, j)
				}
				sumSq[i][j] += st.XtX.At(i, j) * st.XtX.At(i, j)
			}
			sumSqY[i] += st.XtY[i] * st.XtY[i]
		}
		if st.XtX.At(0, 1) == st.XtX.At(0, 2) {
			equal++
		}
	}
	tol := 5 * math.Sqrt(2.0/(draws-1))
	for i := range 3 {
		for j := i; j < 3; j++ {
			if v := sumSq[i][j] / draws; math.Abs(v/16-1) > tol {
				t.Errorf("Var XᵀX[%d][%d] noise = %.4g, want 16", i, j, v)
			}
		}
		if v := sumSqY[i] / draws; math.Abs(v/36-1) > tol {
			t.Errorf("Var XᵀY[%d] noise = %.4g, want 36", i, v)
		}
	}
	if equal > 0 {
		t.Errorf("entries (0,1) and (0,2) got the same noise %d times", equal)
	}
}

// TestDPOLSConvergesToOLS: as ρ → ∞ DP OLS tends to OLS on the clipped data
// (bounds wide enough that nothing is clipped here), and its error shrinks
// with ρ.
func TestDPOLSConvergesToOLS(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	x, y, _ := randomRegression(r, 500, 3, 1)
	want, err := OLS(x, y)
	if err != nil {
		t.Fatal(err)
	}
	b := Bounds{XNorm: 100, Y: 1000}
	meanErr := func(rho float64) float64 {
		total := 0.0
		for seed := range 20 {
			acct, _ := accounting.NewZCDP(rho)
			got, err := DPOLS(rand.New(rand.NewPCG(uint64(seed), 1)), x, y, DPOLSOptions{Bounds: b, Rho: rho}, acct)
			if err != nil {
				if errors.Is(err, ErrNotPositiveDefinite) {
					total += 1e6
					continue
				}
				t.Fatal(err)
			}
			if math.Abs(acct.Rho()-rho) > 1e-12*rho {
				t.Fatalf("ρ spent = %v, want %v", acct.Rho(), rho)
			}
			for j := range got {
				total += math.Abs(got[j] - want[j])
			}
		}
		return total / 20
	}
	prev := math.Inf(1)
	for _, rho := range []float64{1e4, 1e8, 1e12, 1e16, 1e20} {
		e := meanErr(rho)
		if e >= prev {
			t.Errorf("mean |β − β_OLS| = %.3g at ρ = %g, not below %.3g at the smaller ρ", e, rho, prev)
		}
		prev = e
	}
	if prev > 1e-6 { // β is O(3): 1e-6 relative
		t.Errorf("at ρ = 1e20 mean |β − β_OLS| = %.3g, want < 1e-6", prev)
	}
}

func TestDPOLSErrors(t *testing.T) {
	x := mat.NewDense(2, 1, []float64{1, 2})
	acct, _ := accounting.NewZCDP(1)
	r := rand.New(rand.NewPCG(1, 1))
	for name, opts := range map[string]DPOLSOptions{
		"no bounds": {Rho: 1},
		"rho 0":     {Bounds: Bounds{1, 1}},
		"share 1":   {Bounds: Bounds{1, 1}, Rho: 1, XtXShare: 1},
	} {
		if _, err := DPOLS(r, x, []float64{1, 2}, opts, acct); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if acct.Rho() != 0 {
		t.Errorf("rejected calls spent ρ = %v", acct.Rho())
	}
}

// DP least squares on data with a known line: with a large budget the
// estimate is close to the OLS one (y = 1 + 2x).
func ExampleDPOLS() {
	x := AddIntercept(mat.NewDense(6, 1, []float64{-1, -0.5, 0, 0.5, 1, 1.5}))
	y := []float64{-1, 0, 1, 2, 3, 4}
	acct, _ := accounting.NewZCDP(1e6)
	r := rand.New(rand.NewPCG(1, 2)) // in a real run: dpops.NewRand(nil)
	beta, err := DPOLS(r, x, y, DPOLSOptions{Bounds: Bounds{XNorm: 2, Y: 5}, Rho: 1e6}, acct)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("β ≈ (%.1f, %.1f), ρ spent %g\n", beta[0], beta[1], acct.Rho())
	// Output: β ≈ (1.0, 2.0), ρ spent 1e+06
}
