package accounting

import (
	"errors"
	"math"
	"testing"
)

// gaussianCalibration is a trial that is one Gaussian mechanism of
// sensitivity 1: its σ for a per-trial ε tau at δ found by bisection on
// the closed-form RDP α/(2σ²), independently of CalibrateSigma.
func gaussianCalibration(_ int, tau, delta float64, orders []float64) (float64, []float64, error) {
	curve := func(s float64) []float64 {
		c := make([]float64, len(orders))
		for j, a := range orders {
			c[j] = a / (2 * s * s)
		}
		return c
	}
	lo, hi := 1e-3, 1e4
	for hi/lo > 1+1e-9 {
		mid := math.Sqrt(lo * hi)
		if e, _, _ := EpsilonFromRDP(orders, curve(mid), delta); e <= tau {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, curve(hi), nil
}

// TestPlanTuning checks the plan against Theorem 2 recomputed from its
// parts: the search's ε is TunedEpsilon of the worst trial curve plus the
// score's ρα, it meets the target from below and closely (the bisection
// stops within 1e-4 of the largest τ), and the score's σ is 1/√(2ρ).
func TestPlanTuning(t *testing.T) {
	law, err := TNBWithMean(0, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range []float64{0.5, 1, 4} {
		const delta = 1e-6
		// Two kinds: the second's curve is twice the first's (a trial of
		// twice the cost), so the worst curve is the second's.
		calib := func(i int, tau, delta float64, orders []float64) (float64, []float64, error) {
			s, c, err := gaussianCalibration(i, tau, delta, orders)
			if i == 1 {
				for j := range c {
					c[j] *= 2
				}
			}
			return s, c, err
		}
		p, err := PlanTuning(2, calib, law, delta, target, 0.1)
		if err != nil {
			t.Fatal(err)
		}
		if !(p.Epsilon <= target && p.Epsilon > target*0.99) {
			t.Errorf("target %v: the search spends %v", target, p.Epsilon)
		}
		with := make([]float64, len(p.Orders))
		for j, a := range p.Orders {
			with[j] = 2*p.Curves[0][j] + a*p.ScoreRho
		}
		eps, _, err := TunedEpsilon(law, p.Orders, with, delta)
		if err != nil || math.Abs(eps-p.Epsilon) > 1e-12 {
			t.Errorf("target %v: recomputed ε %v (%v), plan %v", target, eps, err, p.Epsilon)
		}
		if math.Abs(p.ScoreSigma-1/math.Sqrt(2*p.ScoreRho)) > 1e-12 {
			t.Errorf("score σ %v, ρ %v", p.ScoreSigma, p.ScoreRho)
		}
		if p.TrialEpsilon >= p.Epsilon {
			t.Errorf("one trial (%v) costs as much as the search (%v)", p.TrialEpsilon, p.Epsilon)
		}
	}
	if _, err := PlanTuning(1, gaussianCalibration, law, 1e-6, 1e-4, 0.1); !errors.Is(err, ErrTuningBudget) {
		t.Errorf("a budget below the search's own cost: %v, want ErrTuningBudget", err)
	}
	for _, bad := range []struct {
		kinds         int
		target, share float64
	}{{0, 1, 0.1}, {1, 0, 0.1}, {1, math.Inf(1), 0.1}, {1, 1, 0}, {1, 1, 1}} {
		if _, err := PlanTuning(bad.kinds, gaussianCalibration, law, 1e-6, bad.target, bad.share); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}
