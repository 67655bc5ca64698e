package linear

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/dpops"
)

// positiveRates is every group's positive rate under p on cells c, from
// the definition: the mass predicted positive over the group's mass, both
// labels summed cell by cell here (independent of Cells.rateCell).
func positiveRates(c Cells, p []float64) []float64 {
	out := make([]float64, c.Groups)
	for a := range c.Groups {
		pos, all := 0.0, 0.0
		for b := range c.Bins {
			for y := range 2 {
				pos += p[b*c.Groups+a] * c.At(b, a, y)
				all += c.At(b, a, y)
			}
		}
		out[a] = pos / all
	}
	return out
}

// dpVertexOptimum is the slow path of the demographic-parity LP: every
// vertex of {0 ≤ p ≤ 1, |rate(u) − rate(v)| ≤ bound} enumerated
// (bestVertex, LU solves), the constraint rows written from the parity
// definition rather than from comparisons and Cells.rateCell.
func dpVertexOptimum(c Cells, bound float64, allPairs bool) float64 {
	n := c.Bins * c.Groups
	var rows [][]float64
	var rhs []float64
	for j := range n {
		up, low := make([]float64, n), make([]float64, n)
		up[j], low[j] = 1, -1
		rows, rhs = append(rows, up, low), append(rhs, 1, 0)
	}
	mass := func(b, a int) float64 { return c.Q[(b*c.Groups+a)*2] + c.Q[(b*c.Groups+a)*2+1] }
	group := func(a int) float64 {
		s := 0.0
		for b := range c.Bins {
			s += mass(b, a)
		}
		return s
	}
	for u := 1; u < c.Groups; u++ {
		for v := range u {
			if !allPairs && v != 0 {
				continue
			}
			row, neg := make([]float64, n), make([]float64, n)
			for b := range c.Bins {
				row[b*c.Groups+u] += mass(b, u) / group(u)
				row[b*c.Groups+v] -= mass(b, v) / group(v)
			}
			for j := range row {
				neg[j] = -row[j]
			}
			rows, rhs = append(rows, row, neg), append(rhs, bound, bound)
		}
	}
	return bestVertex(c, rows, rhs)
}

// TestSolveHardtLPDemographicParity checks the parity LP against vertex
// enumeration on random tables (2 and 3 groups, 2 and 3 bins, group-0 and
// all-pairs comparisons), and that its solution meets the parity bound.
func TestSolveHardtLPDemographicParity(t *testing.T) {
	r := rand.New(rand.NewPCG(28, 1))
	for _, shape := range [][2]int{{2, 2}, {3, 2}, {2, 3}} {
		bins, groups := shape[0], shape[1]
		for _, allPairs := range []bool{false, true} {
			for _, bound := range []float64{0, 0.03, 0.2} {
				c := randomCells(r, bins, groups)
				sol, err := SolveHardtLP(c, bound, DemographicParity, allPairs)
				if err != nil {
					t.Fatal(err)
				}
				want := dpVertexOptimum(c, bound, allPairs)
				if math.Abs(sol.Error-want) > 1e-9 {
					t.Errorf("%d bins, %d groups, allPairs %v, bound %v: LP error %.12f, vertex enumeration %.12f",
						bins, groups, allPairs, bound, sol.Error, want)
				}
				if got := lpError(c, sol.P); math.Abs(got-sol.Error) > 1e-12 {
					t.Errorf("reported error %v but p gives %v", sol.Error, got)
				}
				rates := positiveRates(c, sol.P)
				for u := range groups {
					for v := range u {
						if !allPairs && v != 0 {
							continue
						}
						if d := math.Abs(rates[u] - rates[v]); d > bound+1e-9 {
							t.Errorf("groups %d, %d: positive-rate gap %v > bound %v", u, v, d, bound)
						}
					}
				}
			}
		}
	}
}

// TestSolveHardtLPDemographicParityGrid: on two groups and two bins the
// parity LP is never worse than the best point of a 0.01 grid over the
// four probabilities that meets the bound, and the grid comes within its
// resolution of it.
func TestSolveHardtLPDemographicParityGrid(t *testing.T) {
	r := rand.New(rand.NewPCG(28, 2))
	const steps = 100
	for _, bound := range []float64{0.02, 0.05, 0.2} {
		c := randomCells(r, 2, 2)
		sol, err := SolveHardtLP(c, bound, DemographicParity, false)
		if err != nil {
			t.Fatal(err)
		}
		// Each group's grid points (positive rate, error mass), then every
		// pair of them within the bound.
		type point struct{ rate, err float64 }
		var grid [2][]point
		for a := range 2 {
			for i := 0; i <= steps; i++ {
				for j := 0; j <= steps; j++ {
					p0, p1 := float64(i)/steps, float64(j)/steps // bins 0 and 1
					m0, m1 := c.At(0, a, 0)+c.At(0, a, 1), c.At(1, a, 0)+c.At(1, a, 1)
					grid[a] = append(grid[a], point{rate: (p0*m0 + p1*m1) / (m0 + m1),
						err: p0*c.At(0, a, 0) + (1-p0)*c.At(0, a, 1) + p1*c.At(1, a, 0) + (1-p1)*c.At(1, a, 1)})
				}
			}
		}
		best := math.Inf(1)
		for _, g0 := range grid[0] {
			for _, g1 := range grid[1] {
				if math.Abs(g0.rate-g1.rate) <= bound {
					best = min(best, g0.err+g1.err)
				}
			}
		}
		if sol.Error > best+1e-12 || best-sol.Error > 2e-3 {
			t.Errorf("bound %v: LP error %.6f, grid best %.6f", bound, sol.Error, best)
		}
	}
}

// TestPostProcessDemographicParity checks --fairness dp end to end: at
// ε = ∞ the expected positive rates of the records (computed from the
// records by ExpectedMetrics, not from the cells) are within γ and the
// expected error is the LP optimum; at a private ε the LP is solved on the
// noisy cells with twice the slack at the smallest noisy group fraction,
// and a huge ε approaches the non-private solution.
func TestPostProcessDemographicParity(t *testing.T) {
	scores, group, label := syntheticScores(rand.New(rand.NewPCG(28, 3)), 20000, 3)
	bin, _ := ThresholdBins(0.5).Assign(scores)
	base, err := ExpectedMetrics(func() []float64 {
		p := make([]float64, len(bin))
		for i, b := range bin {
			p[i] = float64(b)
		}
		return p
	}(), label, group, 3)
	if err != nil {
		t.Fatal(err)
	}
	if base.DPViolation < 0.05 {
		t.Fatalf("the synthetic base is nearly fair already (DP violation %v): the test would prove nothing", base.DPViolation)
	}
	exact := func(gamma float64) (*PostProcessResult, ExpectedRates) {
		res, err := PostProcess(nil, bin, group, label, 2, 3,
			PostProcessConfig{Gamma: gamma, Epsilon: math.Inf(1), Fairness: DemographicParity, AllPairs: true})
		if err != nil || res.Failed {
			t.Fatalf("γ %v: %v %s", gamma, err, res.Reason)
		}
		prob, _ := res.Model.ProbPositive(bin, group)
		got, err := ExpectedMetrics(prob, label, group, 3)
		if err != nil {
			t.Fatal(err)
		}
		return res, got
	}
	for _, gamma := range []float64{0, 0.02} {
		res, got := exact(gamma)
		if got.DPViolation > gamma+1e-9 || math.Abs(got.Error-res.Objective) > 1e-9 {
			t.Errorf("ε = ∞, γ %v: DP violation %v, error %v (LP %v)", gamma, got.DPViolation, got.Error, res.Objective)
		}
		if got.Error < base.Error-1e-9 {
			t.Errorf("ε = ∞, γ %v: error %v below the unconstrained base's %v", gamma, got.Error, base.Error)
		}
	}
	_, inf := exact(0)

	seed := uint64(3)
	r, _ := dpops.NewRand(&seed)
	const eps = 1.0
	res, err := PostProcess(r, bin, group, label, 2, 3, PostProcessConfig{Epsilon: eps, Fairness: DemographicParity, AllPairs: true})
	if err != nil || res.Failed {
		t.Fatalf("private: %v %s", err, res.Reason)
	}
	minS := math.Inf(1)
	for a := range 3 {
		s := 0.0
		for i := range 2 * 2 {
			s += res.Cells.Q[((i/2)*3+a)*2+i%2]
		}
		minS = min(minS, s)
	}
	if want := 2 * PostProcessSlack(minS, len(bin), eps, DefaultBeta, 2, 3); math.Abs(res.Slack-want) > 1e-15 || want <= 0 {
		t.Errorf("slack %v, want twice the EO form at the smallest noisy group fraction: %v", res.Slack, want)
	}
	prob, _ := res.Model.ProbPositive(bin, group)
	got, _ := ExpectedMetrics(prob, label, group, 3)
	if got.DPViolation > res.Slack+0.02 {
		t.Errorf("private: DP violation %v beyond γ 0 + slack %v + 0.02", got.DPViolation, res.Slack)
	}
	seed = 4
	r, _ = dpops.NewRand(&seed)
	big, err := PostProcess(r, bin, group, label, 2, 3, PostProcessConfig{Epsilon: 1e7, Fairness: DemographicParity, AllPairs: true})
	if err != nil || big.Failed {
		t.Fatal(err)
	}
	prob, _ = big.Model.ProbPositive(bin, group)
	got, _ = ExpectedMetrics(prob, label, group, 3)
	if math.Abs(got.Error-inf.Error) > 1e-4 || got.DPViolation > 1e-4 {
		t.Errorf("ε = 1e7: error %v DP violation %v, want the non-private %v and ≈ 0", got.Error, got.DPViolation, inf.Error)
	}
}

// TestOracleRefusesDemographicParity: the oracle learner's auditor is
// written for (group, label) error rates; asked for parity it refuses
// rather than index a label that does not exist.
func TestOracleRefusesDemographicParity(t *testing.T) {
	x := []float64{0, 1, 1, 0, 1, 1, 0, 0}
	_, err := TrainOracle(nil, x, 4, 2, []int{0, 1, 1, 0}, []int{0, 0, 1, 1}, 2,
		OracleConfig{Gamma: 0.1, Epsilon: math.Inf(1), Rounds: 2, Bound: 1, LearningRate: 1, CountShare: 0.1, Fairness: DemographicParity})
	if err == nil || !strings.Contains(err.Error(), "dp") {
		t.Errorf("oracle with demographic parity: err = %v, want a refusal naming dp", err)
	}
}
