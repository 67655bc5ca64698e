package linear

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// handCells is a two-group, two-bin table whose equalized-odds optimum is
// worked out by hand. Group 0: Q(0,0) = 0.2, Q(0,1) = 0.3, base FPR 0.1 and
// TPR 0.8; group 1: Q(1,0) = 0.2, Q(1,1) = 0.3, base FPR 0.3 and TPR 0.6.
// Each group can reach the parallelogram spanned by (FPR, TPR) and
// (1−FPR, 1−TPR); at γ = 0 the error 0.4·F + 0.6·(1−T) is minimised over the
// intersection at group 1's base point (0.3, 0.6) (its parallelogram's best
// vertex, inside group 0's), so group 1 keeps its predictions (p = 0, 1) and
// group 0 solves 0.9p₀ + 0.1p₁ = 0.3, 0.2p₀ + 0.8p₁ = 0.6: p₀ = 9/35,
// p₁ = 24/35. Error 0.6 − (0.6·0.6 − 0.4·0.3) = 0.36 (the base error is 0.26).
func handCells() Cells {
	q := make([]float64, 8)
	set := func(b, a, y int, v float64) { q[(b*2+a)*2+y] = v }
	set(0, 0, 0, 0.18)
	set(1, 0, 0, 0.02)
	set(0, 0, 1, 0.06)
	set(1, 0, 1, 0.24)
	set(0, 1, 0, 0.14)
	set(1, 1, 0, 0.06)
	set(0, 1, 1, 0.12)
	set(1, 1, 1, 0.18)
	return Cells{Bins: 2, Groups: 2, Q: q}
}

func TestSolveHardtLPHandExample(t *testing.T) {
	for _, tc := range []struct {
		name     string
		bound    float64
		fairness Fairness
		p        []float64 // index b*Groups + a
		err      float64
	}{
		// γ = 0: the worked example above.
		{"eo γ=0", 0, EqualizedOdds, []float64{9.0 / 35, 0, 24.0 / 35, 1}, 0.36},
		// A bound above every base gap leaves the base classifier, which is
		// better than any constant, untouched.
		{"eo γ=0.3", 0.3, EqualizedOdds, []float64{0, 0, 1, 1}, 0.26},
		// FPR only, γ = 0: on the upper ROC hulls T₀(F) (slopes 8 then 2/9)
		// and T₁(F) (slopes 2 then 4/7) the error 0.6 + 0.4F − 0.3(T₀ + T₁)
		// falls until F = 0.3 and rises after, so group 0 moves along its
		// hull to (0.3, 38/45) with p = (2/9, 1) and group 1 keeps its
		// predictions: error 0.72 − 0.3(38/45 + 0.6) = 43/150.
		{"fpr γ=0", 0, EqualFPR, []float64{2.0 / 9, 0, 1, 1}, 43.0 / 150},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sol, err := SolveHardtLP(handCells(), tc.bound, tc.fairness, false)
			if err != nil {
				t.Fatal(err)
			}
			want, wantErr := tc.p, tc.err
			for j := range want {
				if math.Abs(sol.P[j]-want[j]) > 1e-9 {
					t.Errorf("p[%d] = %.12f, want %.12f (all %v)", j, sol.P[j], want[j], sol.P)
				}
			}
			if math.Abs(sol.Error-wantErr) > 1e-12 {
				t.Errorf("error %.15f, want %v", sol.Error, wantErr)
			}
		})
	}
}

// lpRates returns rate(a, y) of the post-processed classifier p on cells c.
func lpRates(c Cells, p []float64) [][2]float64 {
	out := make([][2]float64, c.Groups)
	for a := range c.Groups {
		for y := range 2 {
			s := 0.0
			for b := range c.Bins {
				s += p[b*c.Groups+a] * c.At(b, a, y)
			}
			out[a][y] = s / c.GroupLabel(a, y)
		}
	}
	return out
}

// lpError is the expected error of p on cells c, computed record-free from
// its definition Σ q(b,a,0)·p + q(b,a,1)·(1−p).
func lpError(c Cells, p []float64) float64 {
	e := 0.0
	for b := range c.Bins {
		for a := range c.Groups {
			pp := p[b*c.Groups+a]
			e += c.At(b, a, 0)*pp + c.At(b, a, 1)*(1-pp)
		}
	}
	return e
}

// randomCells draws a table with every cell positive.
func randomCells(r *rand.Rand, bins, groups int) Cells {
	q := make([]float64, bins*groups*2)
	s := 0.0
	for i := range q {
		q[i] = 0.05 + r.Float64()
		s += q[i]
	}
	for i := range q {
		q[i] /= s
	}
	return Cells{Bins: bins, Groups: groups, Q: q}
}

// vertexOptimum solves the LP by brute force: it enumerates every choice of
// n active constraints among the bounds 0 ≤ p ≤ 1 and both signs of every
// rate difference, solves each n×n system (mat.Dense.Solve, an LU
// factorisation: independent of the simplex), keeps the feasible solutions
// and returns the smallest error. An LP's optimum over a bounded polytope is
// attained at such a vertex.
func vertexOptimum(t *testing.T, c Cells, bound float64, f Fairness, allPairs bool) float64 {
	t.Helper()
	comps, err := comparisons(c.Groups, f, allPairs)
	if err != nil {
		t.Fatal(err)
	}
	n := c.Bins * c.Groups
	var rows [][]float64
	var rhs []float64
	for j := range n {
		up, low := make([]float64, n), make([]float64, n)
		up[j], low[j] = 1, -1
		rows, rhs = append(rows, up, low), append(rhs, 1, 0)
	}
	for _, cmp := range comps {
		row := make([]float64, n)
		for b := range c.Bins {
			row[b*c.Groups+cmp.u] += c.At(b, cmp.u, cmp.y) / c.GroupLabel(cmp.u, cmp.y)
			row[b*c.Groups+cmp.v] -= c.At(b, cmp.v, cmp.y) / c.GroupLabel(cmp.v, cmp.y)
		}
		neg := make([]float64, n)
		for j := range row {
			neg[j] = -row[j]
		}
		rows, rhs = append(rows, row, neg), append(rhs, bound, bound)
	}
	return bestVertex(c, rows, rhs)
}

// bestVertex is the smallest LP error (lpError) over the feasible points
// where n = bins·groups of the constraints rows·p ≤ rhs are active.
func bestVertex(c Cells, rows [][]float64, rhs []float64) float64 {
	n := c.Bins * c.Groups
	best := math.Inf(1)
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	a := mat.NewDense(n, n, nil)
	b := mat.NewVecDense(n, nil)
	var x mat.VecDense
	for {
		for i, r := range idx {
			a.SetRow(i, rows[r])
			b.SetVec(i, rhs[r])
		}
		if err := x.SolveVec(a, b); err == nil {
			feasible := true
			for r, row := range rows {
				s := 0.0
				for j, v := range row {
					s += v * x.AtVec(j)
				}
				if s > rhs[r]+1e-9 {
					feasible = false
					break
				}
			}
			if feasible {
				best = min(best, lpError(c, x.RawVector().Data))
			}
		}
		// Next combination of n rows out of len(rows).
		i := n - 1
		for i >= 0 && idx[i] == len(rows)-n+i {
			i--
		}
		if i < 0 {
			return best
		}
		idx[i]++
		for j := i + 1; j < n; j++ {
			idx[j] = idx[j-1] + 1
		}
	}
}

// TestSolveHardtLPMatchesVertexEnumeration checks the simplex against the
// brute-force vertex enumeration on random tables: 2 and 3 groups, 2 and 3
// bins, both fairness notions, group-0 and all-pairs comparisons.
func TestSolveHardtLPMatchesVertexEnumeration(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 1))
	for _, shape := range [][2]int{{2, 2}, {3, 2}, {2, 3}} {
		bins, groups := shape[0], shape[1]
		for _, f := range []Fairness{EqualizedOdds, EqualFPR} {
			for _, allPairs := range []bool{false, true} {
				for _, bound := range []float64{0, 0.05} {
					c := randomCells(r, bins, groups)
					sol, err := SolveHardtLP(c, bound, f, allPairs)
					if err != nil {
						t.Fatal(err)
					}
					want := vertexOptimum(t, c, bound, f, allPairs)
					if math.Abs(sol.Error-want) > 1e-9 {
						t.Errorf("%d bins, %d groups, %v, allPairs %v, bound %v: LP error %.12f, vertex enumeration %.12f",
							bins, groups, f, allPairs, bound, sol.Error, want)
					}
					if got := lpError(c, sol.P); math.Abs(got-sol.Error) > 1e-12 {
						t.Errorf("reported error %v but p gives %v", sol.Error, got)
					}
					checkLPFeasible(t, c, sol.P, bound, f, allPairs)
				}
			}
		}
	}
}

// checkLPFeasible asserts 0 ≤ p ≤ 1 and the rate constraints within 1e-9.
func checkLPFeasible(t *testing.T, c Cells, p []float64, bound float64, f Fairness, allPairs bool) {
	t.Helper()
	for j, v := range p {
		if v < 0 || v > 1 {
			t.Errorf("p[%d] = %v outside [0, 1]", j, v)
		}
	}
	rates := lpRates(c, p)
	comps, _ := comparisons(c.Groups, f, allPairs)
	for _, cmp := range comps {
		if d := math.Abs(rates[cmp.u][cmp.y] - rates[cmp.v][cmp.y]); d > bound+1e-9 {
			t.Errorf("groups %d, %d label %d: rate gap %v > bound %v", cmp.u, cmp.v, cmp.y, d, bound)
		}
	}
}

// TestSolveHardtLPMatchesGridSearch is the check: for binary groups
// and the paper's two bins, the LP optimum equals the best point of a grid
// of step 0.01 over the four probabilities p_{ŷa}, up to the grid's
// resolution (every grid point is a classifier, so the LP can never be
// worse than the grid; the grid approaches the LP from above).
func TestSolveHardtLPMatchesGridSearch(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 2))
	const steps = 100
	for _, bound := range []float64{0.02, 0.05, 0.2} {
		c := randomCells(r, 2, 2)
		sol, err := SolveHardtLP(c, bound, EqualizedOdds, false)
		if err != nil {
			t.Fatal(err)
		}
		best := GridOptimum(c, bound, steps)
		t.Logf("bound %v: LP %.6f, grid %.6f", bound, sol.Error, best)
		if sol.Error > best+1e-12 {
			t.Errorf("bound %v: LP error %.6f is worse than the grid's %.6f", bound, sol.Error, best)
		}
		if best-sol.Error > 2e-3 {
			t.Errorf("bound %v: grid best %.6f is %.2g above the LP's %.6f, more than a 0.01 grid explains",
				bound, best, best-sol.Error, sol.Error)
		}
	}
}

func TestSolveHardtLPErrors(t *testing.T) {
	noPositives := handCells()
	noPositives.Q[(0*2+1)*2+1], noPositives.Q[(1*2+1)*2+1] = 0, 0 // group 1 has no y = 1
	_, err := SolveHardtLP(noPositives, 0.1, EqualizedOdds, false)
	if !errors.Is(err, ErrUndefinedRate) {
		t.Errorf("group without positives: err = %v, want ErrUndefinedRate", err)
	}
	// Equal FPR does not need the positives.
	if _, err := SolveHardtLP(noPositives, 0.1, EqualFPR, false); err != nil {
		t.Errorf("equal FPR without group-1 positives: %v", err)
	}
	for _, tc := range []struct {
		name  string
		c     Cells
		bound float64
	}{
		{"negative bound", handCells(), -0.1},
		{"NaN bound", handCells(), math.NaN()},
		{"short table", Cells{Bins: 2, Groups: 2, Q: make([]float64, 7)}, 0.1},
		{"NaN cell", Cells{Bins: 1, Groups: 1, Q: []float64{math.NaN(), 1}}, 0.1},
		{"no bins", Cells{Groups: 2}, 0.1},
	} {
		if _, err := SolveHardtLP(tc.c, tc.bound, EqualizedOdds, false); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
	if _, err := SolveHardtLP(handCells(), 0.1, Fairness(7), false); err == nil {
		t.Error("unknown fairness: no error")
	}
}

func TestParseFairness(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Fairness
		ok   bool
	}{
		{"eo", EqualizedOdds, true}, {" EO ", EqualizedOdds, true}, {"fpr", EqualFPR, true}, {"dp", DemographicParity, true}, {"parity", 0, false},
	} {
		got, err := ParseFairness(tc.in)
		if (err == nil) != tc.ok || (tc.ok && got != tc.want) {
			t.Errorf("ParseFairness(%q) = %v, %v", tc.in, got, err)
		}
		if tc.ok && got.String() != tc.want.String() {
			t.Errorf("round trip %q → %v", tc.in, got)
		}
	}
}

func TestComparisons(t *testing.T) {
	for _, tc := range []struct {
		groups   int
		f        Fairness
		allPairs bool
		want     int
	}{
		// The oracle learner's λ has twice as many entries: 4(|A|−1) for EO.
		{2, EqualizedOdds, false, 2}, {3, EqualizedOdds, false, 4}, {4, EqualizedOdds, false, 6},
		{4, EqualizedOdds, true, 12}, {3, EqualFPR, false, 2}, {3, EqualFPR, true, 3},
	} {
		got, err := comparisons(tc.groups, tc.f, tc.allPairs)
		if err != nil || len(got) != tc.want {
			t.Errorf("%d groups %v allPairs %v: %d comparisons (%v), want %d", tc.groups, tc.f, tc.allPairs, len(got), err, tc.want)
		}
	}
}
