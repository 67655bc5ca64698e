package accounting

import (
	"errors"
	"math"
	"slices"
	"testing"
)

// closedFormShuffledRDP is ε of E epochs of the Gaussian mechanism with
// noise multiplier sigma at delta, from its RDP E·α/(2σ²) (Mironov 2017,
// Prop. 7) by the given conversion, minimised over the Opacus orders:
// classic ε = min_α E·α/(2σ²) + ln(1/δ)/(α−1) (Mironov 2017, Prop. 3);
// Balle et al. 2020 (Thm. 21) subtracts ln α/(α−1) and adds ln((α−1)/α).
// Written out here, apart from the package's RDP code.
func closedFormShuffledRDP(epochs int, sigma, delta float64, balle bool) float64 {
	best := math.Inf(1)
	for _, a := range OpacusOrders() {
		rdp := float64(epochs) * a / (2 * sigma * sigma)
		eps := rdp + math.Log(1/delta)/(a-1)
		if balle {
			if a <= 1.01 {
				continue
			}
			eps = rdp + math.Log((a-1)/a) - (math.Log(delta)+math.Log(a))/(a-1)
		}
		best = math.Min(best, eps)
	}
	return math.Max(0, best)
}

// analyticGaussianEpsilon is the exact ε of E compositions of the Gaussian
// mechanism with noise multiplier sigma at delta: a Gaussian with
// μ = √E/σ, δ(ε) = Φ(−ε/μ + μ/2) − e^ε·Φ(−ε/μ − μ/2) (Balle and Wang
// 2018, Thm. 8), solved for ε by bisection.
func analyticGaussianEpsilon(epochs int, sigma, delta float64) float64 {
	mu := math.Sqrt(float64(epochs)) / sigma
	phi := func(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }
	d := func(eps float64) float64 { return phi(-eps/mu+mu/2) - math.Exp(eps)*phi(-eps/mu-mu/2) }
	lo, hi := 0.0, 1.0
	for d(hi) > delta {
		hi *= 2
	}
	for range 200 {
		mid := (lo + hi) / 2
		if d(mid) > delta {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// TestShuffledReceiptClosedForm: the receipt of a shuffled run at fixed σ
// over E epochs is E Gaussian mechanisms — by RDP exactly the closed form,
// by PLD the analytic Gaussian's ε (from above, within the discretisation)
// — for DP-SGD's mechanism and for DPSGD-F's joint one (σ_eff), with a
// partial last epoch counting whole. Before the fix the receipt stated
// what Poisson sampling at the same rate gives (row 1: 7.33 where the
// bound is 48.8 by RDP, 46.2 by PLD).
func TestShuffledReceiptClosedForm(t *testing.T) {
	const delta = 1e-5
	for _, tc := range []struct {
		name          string
		m             Mechanism
		steps, perEp  int
		epochs        int
		sigma         float64
		pldOutOfRange bool // ε beyond what PLD bounds: the ledger states RDP's
	}{
		{"dpsgd row 1", SubsampledGaussian(0.04, 1.5, 1, "gradients"), 2250, 25, 90, 1.5, false},
		{"partial last epoch", SubsampledGaussian(0.04, 4, 1, "gradients"), 2260, 25, 91, 4, false},
		{"dpsgdf joint", JointSubsampledGaussian(256.0/54649, Part{NoiseMultiplier: 8, Sensitivity: 1, Protects: "counts"},
			Part{NoiseMultiplier: 0.8, Protects: "gradients"}), 12808, 214, 60, JointSigma(8, 0.8), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := RunInfo{Sampling: SamplingShuffle, StepsPerEpoch: tc.perEp}
			var rdp RDP
			if err := rdp.Step(tc.m, tc.steps); err != nil {
				t.Fatal(err)
			}
			r, err := rdp.Receipt(delta, run)
			if err != nil {
				t.Fatal(err)
			}
			want := closedFormShuffledRDP(tc.epochs, tc.sigma, delta, true)
			classic := closedFormShuffledRDP(tc.epochs, tc.sigma, delta, false)
			poisson, _ := rdp.Epsilon(delta)
			if r.Epsilon == nil || math.Abs(*r.Epsilon-want) > 1e-9*want || r.EpsilonClassic == nil ||
				math.Abs(*r.EpsilonClassic-classic) > 1e-9*classic {
				t.Errorf("RDP receipt ε = %v classic %v, want %v and %v", r.Epsilon, r.EpsilonClassic, want, classic)
			}
			if r.Shuffle == nil || r.Shuffle.Epochs != tc.epochs || r.Shuffle.Steps != tc.steps ||
				r.Shuffle.PoissonEquivalentEpsilon == nil || *r.Shuffle.PoissonEquivalentEpsilon != poisson || !(poisson < want) {
				t.Errorf("RDP shuffle bound %+v, Poisson figure %v", r.Shuffle, poisson)
			}
			if len(r.Mechanisms) != 1 || r.Mechanisms[0].SampleRate != 1 || r.Mechanisms[0].Steps != tc.epochs ||
				r.Mechanisms[0].NoiseMultiplier != tc.m.NoiseMultiplier || !slices.Equal(r.Mechanisms[0].Parts, tc.m.Parts) {
				t.Errorf("charged mechanisms %+v", r.Mechanisms)
			}

			var pld PLD
			if err := pld.Step(tc.m, tc.steps); err != nil {
				t.Fatal(err)
			}
			// The ledger states the smaller of PLD's and RDP's bounds (RDP's
			// alone where PLD cannot bound the run, as for DPSGD-F's ε ≈ 60).
			wantLedger := *r.Epsilon
			rp, err := pld.Receipt(delta, run)
			switch {
			case errors.Is(err, ErrPLDRange) && tc.pldOutOfRange:
			case err != nil || tc.pldOutOfRange:
				t.Fatalf("PLD receipt: err = %v", err)
			default:
				exact := analyticGaussianEpsilon(tc.epochs, tc.sigma, delta)
				if rp.Epsilon == nil || !(*rp.Epsilon >= exact) || *rp.Epsilon > exact*1.002+1e-3 {
					t.Errorf("PLD receipt ε = %v, want the analytic Gaussian's %v from above", rp.Epsilon, exact)
				}
				if rp.Shuffle == nil || rp.Shuffle.Adjacency != AdjacencyZeroOut || rp.Shuffle.Epochs != tc.epochs {
					t.Errorf("PLD shuffle bound %+v", rp.Shuffle)
				}
				wantLedger = math.Min(wantLedger, *rp.Epsilon)
			}

			// A PLD ledger states the smaller bound, RDP's where it wins.
			l, err := NewLedger(AccountantPLD, PLDOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Step(tc.m, tc.steps); err != nil {
				t.Fatal(err)
			}
			rl, err := l.Receipt(delta, run)
			if err != nil {
				t.Fatal(err)
			}
			if rl.Epsilon == nil || *rl.Epsilon != wantLedger || rl.Shuffle == nil {
				t.Errorf("ledger receipt ε = %v, want %v", rl.Epsilon, wantLedger)
			}
			le, _, err := l.ShuffledEpsilon(delta, tc.perEp)
			if err != nil || le != *rl.Epsilon {
				t.Errorf("ShuffledEpsilon = %v (err %v), want the receipt's %v", le, err, *rl.Epsilon)
			}
		})
	}
}

// TestShuffledChargesKeepsOneOffReleases: releases on the whole data (rate
// 1, e.g. DP-FERMI's group counts) and other kinds are charged as they
// are; several per-step releases are charged at the smallest σ once per
// epoch.
func TestShuffledChargesKeepsOneOffReleases(t *testing.T) {
	counts := SubsampledGaussian(1, 20, 1, "counts")
	counts.Steps = 1
	lap := Mechanism{Kind: KindLaplace, Epsilon: 0.3, Steps: 2}
	a, b := SubsampledGaussian(0.1, 2, 1, "a"), SubsampledGaussian(0.1, 1.5, 1, "b")
	a.Steps, b.Steps = 15, 6
	got, epochs, steps, err := ShuffledCharges([]Mechanism{counts, a, lap, b}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if epochs != 3 || steps != 21 || len(got) != 3 || !sameRelease(got[0], counts) || got[0].Steps != 1 || got[1].NoiseMultiplier != 1.5 ||
		got[1].SampleRate != 1 || got[1].Steps != 3 || got[2].Kind != KindLaplace {
		t.Errorf("charged %+v, %d epochs, %d steps", got, epochs, steps)
	}
	if _, _, _, err := ShuffledCharges(nil, 0); err == nil {
		t.Error("0 steps per epoch accepted")
	}
}

// TestCalibrateShuffled: σ calibrated for a shuffled run meets the target
// by the shuffled bound (the ε its receipt will state) and no less noise
// would: the calibration round-trips through the receipt.
func TestCalibrateShuffled(t *testing.T) {
	const target, delta, q, steps, perEp = 3.0, 1e-5, 0.04, 250, 25
	for _, kind := range []string{AccountantRDP, AccountantPLD} {
		sigma, _, err := CalibrateRunSigma(target, delta, q, steps, SigmaCalibration{Accountant: kind, StepsPerEpoch: perEp})
		if err != nil {
			t.Fatal(err)
		}
		eps := func(s float64) float64 {
			l, _ := NewLedger(kind, PLDOptions{})
			if err := l.Step(SubsampledGaussian(q, s, 1, ""), steps); err != nil {
				t.Fatal(err)
			}
			r, err := l.Receipt(delta, RunInfo{Sampling: SamplingShuffle, StepsPerEpoch: perEp})
			if err != nil {
				t.Fatal(err)
			}
			return *r.Epsilon
		}
		if e := eps(sigma); !(e <= target) || eps(sigma*0.99) <= target {
			t.Errorf("%s: σ = %v gives ε = %v (target %v); 0.99σ gives %v", kind, sigma, e, target, eps(sigma*0.99))
		}
		poisson, _, _ := CalibrateRunSigma(target, delta, q, steps, SigmaCalibration{Accountant: kind})
		if !(sigma > poisson) {
			t.Errorf("%s: shuffled σ = %v is not above the Poisson σ %v", kind, sigma, poisson)
		}
	}
}
