package linear

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"
)

// Hardt et al.'s equalized-odds linear program (as Jagielski et al. 2019 use
// it), shared by the non-private post-processing (ε = ∞) and Jagielski et al.'s
// private one, which only feeds it noisy cells and a looser bound.
//
// The base classifier's output is a bin b ∈ {0..K-1}: its 0/1 prediction Ŷ
// (K = 2, the paper's setting) or a bin of its score. The post-processed
// classifier predicts Ỹ = 1 with probability p_{b,a} = P[Ỹ=1 | bin b, group a].
// Given the cell fractions q(b, a, y) = P̂[bin b, A=a, Y=y], every quantity
// the LP needs is linear in p:
//
//	error        = Σ_{b,a} q(b,a,1) + Σ_{b,a} p_{b,a} (q(b,a,0) − q(b,a,1))
//	rate(a, y)   = Σ_b p_{b,a} q(b,a,y) / Q(a,y),  Q(a,y) = Σ_b q(b,a,y)
//
// (rate(a,0) is group a's false-positive rate, rate(a,1) its true-positive
// rate), and the LP minimises the error subject to |rate(u,y) − rate(v,y)| ≤
// bound for every compared pair of groups (u, v) and constrained label y, and
// 0 ≤ p ≤ 1. Demographic parity (Hardt, Price and Srebro 2016's derived predictor
// under the parity constraint) is the same LP with one rate per group, the positive rate
// Σ_b p_{b,a} (q(b,a,0) + q(b,a,1)) / (Q(a,0) + Q(a,1)), written with the
// label anyLabel.

// Fairness says which error rates are equalised across groups.
type Fairness int

const (
	// EqualizedOdds equalises false-positive and true-positive rates
	// (--fairness eo).
	EqualizedOdds Fairness = iota
	// EqualFPR equalises false-positive rates only (--fairness fpr).
	EqualFPR
	// DemographicParity equalises positive rates, over both labels
	// (--fairness dp): Hardt et al. 2016's LP with the parity constraint
	// in place of the two error-rate constraints. Post-processing only:
	// the oracle learner's auditor is written for error rates.
	DemographicParity
)

// String is the name ParseFairness accepts.
func (f Fairness) String() string {
	switch f {
	case EqualizedOdds:
		return "eo"
	case EqualFPR:
		return "fpr"
	case DemographicParity:
		return "dp"
	}
	return fmt.Sprintf("Fairness(%d)", int(f))
}

// ParseFairness reads "eo" (equalized odds), "fpr" (equal false-positive
// rates) or "dp" (demographic parity), as the --fairness flag.
func ParseFairness(s string) (Fairness, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "eo":
		return EqualizedOdds, nil
	case "fpr":
		return EqualFPR, nil
	case "dp":
		return DemographicParity, nil
	}
	return 0, fmt.Errorf("fairness %q: want eo (equalized odds), fpr (equal false-positive rates) or dp (demographic parity)", s)
}

// anyLabel is the "label" of a demographic-parity rate: the positive rate
// over the records of both labels.
const anyLabel = -1

// labels are the values of y whose rates are constrained: y = 0 is the
// false-positive rate, y = 1 the true-positive rate, anyLabel the
// positive rate.
func (f Fairness) labels() ([]int, error) {
	switch f {
	case EqualizedOdds:
		return []int{0, 1}, nil
	case EqualFPR:
		return []int{0}, nil
	case DemographicParity:
		return []int{anyLabel}, nil
	}
	return nil, fmt.Errorf("linear: unknown fairness %d, want EqualizedOdds, EqualFPR or DemographicParity", int(f))
}

// comparison is one constrained difference rate(u, y) − rate(v, y).
type comparison struct{ u, v, y int }

// comparisons lists the constrained differences. The paper compares every
// group with group 0 (so the oracle learner's λ has 4(|A|−1) entries);
// allPairs compares every pair, which bounds the pairwise violation that
// metrics.EqualizedOdds reports (with group 0 as reference, two other groups
// can differ by up to twice the bound). For two groups both are the same.
func comparisons(groups int, f Fairness, allPairs bool) ([]comparison, error) {
	ys, err := f.labels()
	if err != nil {
		return nil, err
	}
	var out []comparison
	for _, y := range ys {
		for u := 1; u < groups; u++ {
			if !allPairs {
				out = append(out, comparison{u, 0, y})
				continue
			}
			for v := range u {
				out = append(out, comparison{u, v, y})
			}
		}
	}
	return out, nil
}

// Cells holds the fractions q(b, a, y) of records in base-classifier bin b,
// group a and label y (y ∈ {0, 1}). Private post-processing fills it with
// noisy counts divided by the number of records, so entries need not sum to
// one.
type Cells struct {
	Bins, Groups int
	Q            []float64 // Q[(b*Groups+a)*2+y]
}

// At is q(b, a, y).
func (c Cells) At(b, a, y int) float64 { return c.Q[(b*c.Groups+a)*2+y] }

// GroupLabel is Q(a, y) = Σ_b q(b, a, y), the fraction of records in group a
// with label y.
func (c Cells) GroupLabel(a, y int) float64 {
	s := 0.0
	for b := range c.Bins {
		s += c.At(b, a, y)
	}
	return s
}

// rateCell is what bin b of group a adds to the rates of label y: q(b, a, y),
// or for anyLabel q(b, a, 0) + q(b, a, 1).
func (c Cells) rateCell(b, a, y int) float64 {
	if y == anyLabel {
		return c.At(b, a, 0) + c.At(b, a, 1)
	}
	return c.At(b, a, y)
}

// rateTotal is Σ_b rateCell(b, a, y): Q(a, y), or for anyLabel the
// fraction of records in group a.
func (c Cells) rateTotal(a, y int) float64 {
	if y == anyLabel {
		return c.GroupLabel(a, 0) + c.GroupLabel(a, 1)
	}
	return c.GroupLabel(a, y)
}

func (c Cells) validate() error {
	if c.Bins < 1 || c.Groups < 1 {
		return fmt.Errorf("linear: cells have %d bins and %d groups, want at least 1 of each", c.Bins, c.Groups)
	}
	if len(c.Q) != c.Bins*c.Groups*2 {
		return fmt.Errorf("linear: cells hold %d values, want bins·groups·2 = %d", len(c.Q), c.Bins*c.Groups*2)
	}
	for i, q := range c.Q {
		if math.IsNaN(q) || math.IsInf(q, 0) {
			return fmt.Errorf("linear: cell %d is %v, want a finite number", i, q)
		}
	}
	return nil
}

// ErrUndefinedRate is returned (wrapped) when a constrained rate has no
// records to be computed from: Q(a, y) ≤ 0 for some group and label. With
// noisy cells this is how noise makes the LP meaningless.
var ErrUndefinedRate = errors.New("linear: a constrained rate is undefined: a group has no records (or a non-positive noisy count) for its label")

// LPSolution is an optimum of Hardt's LP.
type LPSolution struct {
	// P[b*Groups+a] = P[Ỹ=1 | bin b, group a], in [0, 1].
	P []float64
	// Error is the LP's objective at P: the post-processed classifier's
	// expected error under the cells it was solved on.
	Error float64
}

// lpTolerance is the simplex's optimality tolerance on reduced costs.
const lpTolerance = 1e-10

// SolveHardtLP minimises the expected error over p subject to
// |rate(u,y) − rate(v,y)| ≤ bound for the compared groups and labels, and
// 0 ≤ p ≤ 1 (Jagielski et al. 2019). Private post-processing passes bound = γ +
// slack. It fails with ErrUndefinedRate when a constrained Q(a, y) ≤ 0. The
// LP itself is always feasible otherwise (a constant p gives every group the
// same rates), so the simplex starts from the feasible basis p = 0.
func SolveHardtLP(c Cells, bound float64, f Fairness, allPairs bool) (LPSolution, error) {
	if err := c.validate(); err != nil {
		return LPSolution{}, err
	}
	if !(bound >= 0) || math.IsInf(bound, 1) {
		return LPSolution{}, fmt.Errorf("linear: LP bound γ+slack = %v, want a finite number ≥ 0", bound)
	}
	comps, err := comparisons(c.Groups, f, allPairs)
	if err != nil {
		return LPSolution{}, err
	}
	for _, cmp := range comps {
		for _, a := range []int{cmp.u, cmp.v} {
			if q := c.rateTotal(a, cmp.y); !(q > 0) {
				return LPSolution{}, fmt.Errorf("%w: Q(group %d, label %d) = %g", ErrUndefinedRate, a, cmp.y, q)
			}
		}
	}

	// General form: minimise objᵀp s.t. G p ≤ h, p ≥ 0; rows of G are the
	// upper bounds p ≤ 1 and both signs of every compared difference.
	nP := c.Bins * c.Groups
	obj := make([]float64, nP)
	base := 0.0
	for b := range c.Bins {
		for a := range c.Groups {
			obj[b*c.Groups+a] = c.At(b, a, 0) - c.At(b, a, 1)
			base += c.At(b, a, 1)
		}
	}
	nRows := nP + 2*len(comps)
	g := mat.NewDense(nRows, nP, nil)
	h := make([]float64, nRows)
	for j := range nP {
		g.Set(j, j, 1)
		h[j] = 1
	}
	for k, cmp := range comps {
		row := nP + 2*k
		qu, qv := c.rateTotal(cmp.u, cmp.y), c.rateTotal(cmp.v, cmp.y)
		for b := range c.Bins {
			cu := c.rateCell(b, cmp.u, cmp.y) / qu
			cv := c.rateCell(b, cmp.v, cmp.y) / qv
			ju, jv := b*c.Groups+cmp.u, b*c.Groups+cmp.v
			g.Set(row, ju, g.At(row, ju)+cu)
			g.Set(row, jv, g.At(row, jv)-cv)
			g.Set(row+1, ju, g.At(row+1, ju)-cu)
			g.Set(row+1, jv, g.At(row+1, jv)+cv)
		}
		h[row], h[row+1] = bound, bound
	}

	// Standard form [G | I] x = h, x = (p, slacks) ≥ 0. Since h ≥ 0 the
	// slacks alone are a feasible basis (p = 0), so there is no phase I.
	nCols := nP + nRows
	a := mat.NewDense(nRows, nCols, nil)
	a.Slice(0, nRows, 0, nP).(*mat.Dense).Copy(g)
	cost := make([]float64, nCols)
	copy(cost, obj)
	basic := make([]int, nRows)
	for i := range nRows {
		a.Set(i, nP+i, 1)
		basic[i] = nP + i
	}
	_, x, err := lp.Simplex(cost, a, h, lpTolerance, basic)
	if err != nil {
		return LPSolution{}, fmt.Errorf("linear: Hardt LP (%d groups, %d bins, bound %g): %w", c.Groups, c.Bins, bound, err)
	}
	sol := LPSolution{P: make([]float64, nP), Error: base}
	for j := range nP {
		p := min(1, max(0, x[j])) // remove round-off outside [0, 1]
		sol.P[j] = p
		sol.Error += p * obj[j]
	}
	return sol, nil
}

// MostAccurate is the post-processed classifier with the least error on c
// and no fairness constraint: every (bin, group) cell predicts its more
// frequent label (p = 1 when q(b, a, 1) > q(b, a, 0)), in SolveHardtLP's
// layout P[b*Groups+a].
func MostAccurate(c Cells) []float64 {
	p := make([]float64, c.Bins*c.Groups)
	for b := range c.Bins {
		for a := range c.Groups {
			if c.At(b, a, 1) > c.At(b, a, 0) {
				p[b*c.Groups+a] = 1
			}
		}
	}
	return p
}

// CellsViolation is the largest |rate(u, y) − rate(v, y)| over the
// differences SolveHardtLP constrains for f (every group against group 0,
// or every pair with allPairs) of the classifier p on the cells c: the
// violation the LP's bound is compared with. A group whose Q(a, y) ≤ 0 has
// no rate; it fails with ErrUndefinedRate, as the LP does.
func CellsViolation(c Cells, p []float64, f Fairness, allPairs bool) (float64, error) {
	if err := c.validate(); err != nil {
		return 0, err
	}
	if len(p) != c.Bins*c.Groups {
		return 0, fmt.Errorf("linear: %d probabilities for %d bins × %d groups", len(p), c.Bins, c.Groups)
	}
	comps, err := comparisons(c.Groups, f, allPairs)
	if err != nil {
		return 0, err
	}
	rate := func(a, y int) (float64, error) {
		q := c.rateTotal(a, y)
		if !(q > 0) {
			return 0, fmt.Errorf("%w: Q(group %d, label %d) = %g", ErrUndefinedRate, a, y, q)
		}
		s := 0.0
		for b := range c.Bins {
			s += p[b*c.Groups+a] * c.rateCell(b, a, y)
		}
		return s / q, nil
	}
	v := 0.0
	for _, cmp := range comps {
		ru, err := rate(cmp.u, cmp.y)
		if err != nil {
			return 0, err
		}
		rv, err := rate(cmp.v, cmp.y)
		if err != nil {
			return 0, err
		}
		v = max(v, math.Abs(ru-rv))
	}
	return v, nil
}
