package accounting

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestTunedRDPGaussianClosedForm checks Theorem 2 of Papernot and Steinke
// 2022 against the closed form it takes for a Gaussian trial, ε(α) = αρ:
// (1+η)[(1−1/λ̂)λ̂ρ + ln(1/γ)/λ̂] = (1+η)[(λ̂−1)ρ + ln(1/γ)/λ̂] is smallest at
// λ̂* = sqrt(ln(1/γ)/ρ), where it is (1+η)(2 sqrt(ρ ln(1/γ)) − ρ), so
// ε'(λ) = λρ + (1+η)(2 sqrt(ρ ln(1/γ)) − ρ) + ln E[K]/(λ−1). The cases put
// λ̂* on an order so the finite minimum is the continuous one.
func TestTunedRDPGaussianClosedForm(t *testing.T) {
	orders := []float64{1.5, 2, 5, 8, 10, 12, 20, 64}
	cases := []struct {
		name           string
		eta, logInvGam float64 // η and ln(1/γ)
		rho            float64
		mean           float64 // E[K] by the paper's formula, by hand
		wantHat        float64
	}{
		// γ = 1/e, ρ = 0.01: λ̂* = 10; geometric E[K] = 1/γ = e.
		{"geometric", 1, 1, 0.01, math.E, 10},
		// logarithmic: E[K] = (1/γ − 1)/ln(1/γ) = e − 1.
		{"logarithmic", 0, 1, 0.01, math.E - 1, 10},
		// η = 2, γ = e^−4, ρ = 0.0625: λ̂* = 8; E[K] = η(1−γ)/(γ(1−γ²)) = 2/(γ(1+γ)).
		{"eta2", 2, 4, 0.0625, 2 / (math.Exp(-4) * (1 + math.Exp(-4))), 8},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := TruncatedNegativeBinomial{Eta: c.eta, Gamma: math.Exp(-c.logInvGam)}
			if got := d.Mean(); math.Abs(got-c.mean) > 1e-12*c.mean {
				t.Fatalf("E[K] = %v, want %v", got, c.mean)
			}
			curve := make([]float64, len(orders))
			for i, a := range orders {
				curve[i] = a * c.rho
			}
			tuned, hat, err := TunedRDP(d, orders, curve)
			if err != nil {
				t.Fatal(err)
			}
			for i, l := range orders {
				want := l*c.rho + (1+c.eta)*(2*math.Sqrt(c.rho*c.logInvGam)-c.rho) + math.Log(c.mean)/(l-1)
				if math.Abs(tuned[i]-want) > 1e-12*want {
					t.Errorf("ε'(%v) = %.15g, want %.15g", l, tuned[i], want)
				}
				if hat[i] != c.wantHat {
					t.Errorf("λ̂ at λ = %v is %v, want %v", l, hat[i], c.wantHat)
				}
				if !(tuned[i] > curve[i]) {
					t.Errorf("ε'(%v) = %v is not above one trial's %v", l, tuned[i], curve[i])
				}
			}
		})
	}
}

// TestTunedEpsilonExceedsOneTrial: the search costs more than one trial and
// less than K trials composed, for a DP-SGD trial.
func TestTunedEpsilonExceedsOneTrial(t *testing.T) {
	orders := TuningOrders()
	curve, err := ComposedRDP(0.01, 1.2, 2000, orders)
	if err != nil {
		t.Fatal(err)
	}
	one, _, err := EpsilonFromRDP(orders, curve, 1e-6)
	if err != nil {
		t.Fatal(err)
	}
	for _, eta := range []float64{0, 1} {
		d, err := TNBWithMean(eta, 10)
		if err != nil {
			t.Fatal(err)
		}
		tuned, _, err := TunedEpsilon(d, orders, curve, 1e-6)
		if err != nil {
			t.Fatal(err)
		}
		ten := make([]float64, len(curve))
		for i := range curve {
			ten[i] = 10 * curve[i]
		}
		composed, _, _ := EpsilonFromRDP(orders, ten, 1e-6)
		if !(tuned > one && tuned < composed) {
			t.Errorf("η = %v: tuned ε = %v, want between one trial's %v and ten composed %v", eta, tuned, one, composed)
		}
	}
}

// TestTNBLaw checks the law of K against its definition summed directly:
// P[K = k] = C(k+η−1, k)(1−γ)^k / (γ^−η − 1) (η ≠ 0) or
// (1−γ)^k/(k ln(1/γ)) (η = 0), its total 1 and its mean E[K].
func TestTNBLaw(t *testing.T) {
	for _, c := range []struct{ eta, gamma float64 }{{-0.5, 0.2}, {0, 0.1}, {0.5, 0.3}, {1, 0.1}, {2, 0.25}} {
		d := TruncatedNegativeBinomial{Eta: c.eta, Gamma: c.gamma}
		total, mean := 0.0, 0.0
		for k := 1; k < 2000; k++ {
			var want float64
			if c.eta == 0 {
				want = math.Pow(1-c.gamma, float64(k)) / (float64(k) * math.Log(1/c.gamma))
			} else {
				lg1, _ := math.Lgamma(float64(k) + c.eta)
				lg2, s2 := math.Lgamma(c.eta)
				lg3, _ := math.Lgamma(float64(k) + 1)
				// C(k+η−1, k) = Γ(k+η)/(Γ(η) k!), sign of Γ(η) for η < 0.
				want = float64(s2) * math.Exp(lg1-lg2-lg3) * math.Pow(1-c.gamma, float64(k)) / (math.Pow(c.gamma, -c.eta) - 1)
			}
			got := d.Prob(k)
			if math.Abs(got-want) > 1e-10*math.Max(want, 1e-300) && math.Abs(got-want) > 1e-300 {
				t.Fatalf("η=%v γ=%v: P[K=%d] = %v, want %v", c.eta, c.gamma, k, got, want)
			}
			total += got
			mean += float64(k) * got
		}
		if math.Abs(total-1) > 1e-9 || math.Abs(mean-d.Mean()) > 1e-8*d.Mean() {
			t.Errorf("η=%v γ=%v: ΣP = %v, Σ kP = %v, Mean() = %v", c.eta, c.gamma, total, mean, d.Mean())
		}
	}
}

// TestTNBSample: the sampler's mean and P[K = 1] agree with the law within
// 5 standard errors over 100,000 draws.
func TestTNBSample(t *testing.T) {
	for _, eta := range []float64{0, 1} {
		d, err := TNBWithMean(eta, 8)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(d.Mean()-8) > 1e-9 {
			t.Fatalf("TNBWithMean(%v, 8).Mean() = %v", eta, d.Mean())
		}
		r := rand.New(rand.NewPCG(1, 2))
		const n = 100_000
		sum, sumSq, ones := 0.0, 0.0, 0
		for range n {
			k, err := d.Sample(r)
			if err != nil {
				t.Fatal(err)
			}
			sum += float64(k)
			sumSq += float64(k) * float64(k)
			if k == 1 {
				ones++
			}
		}
		m := sum / n
		se := math.Sqrt((sumSq/n - m*m) / n)
		if math.Abs(m-d.Mean()) > 5*se {
			t.Errorf("η = %v: sample mean %v, want %v ± %v", eta, m, d.Mean(), 5*se)
		}
		p1 := d.Prob(1)
		if got := float64(ones) / n; math.Abs(got-p1) > 5*math.Sqrt(p1*(1-p1)/n) {
			t.Errorf("η = %v: P[K=1] sampled %v, want %v", eta, got, p1)
		}
	}
}

func TestTuningRefusesBadInput(t *testing.T) {
	orders := []float64{2, 4}
	cases := []struct {
		name string
		err  func() error
		want string
	}{
		{"eta", func() error { _, err := TNBWithMean(-1, 5); return err }, "η must be"},
		{"mean", func() error { _, err := TNBWithMean(1, 1); return err }, "expected number of trials"},
		{"gamma", func() error {
			_, _, err := TunedRDP(TruncatedNegativeBinomial{Eta: 1, Gamma: 1}, orders, []float64{1, 1})
			return err
		}, "γ must be"},
		{"length", func() error {
			_, _, err := TunedRDP(TruncatedNegativeBinomial{Eta: 1, Gamma: .5}, orders, []float64{1})
			return err
		}, "1 RDP values for 2 orders"},
		{"nan", func() error {
			_, _, err := TunedRDP(TruncatedNegativeBinomial{Eta: 1, Gamma: .5}, orders, []float64{1, math.NaN()})
			return err
		}, "≥ 0"},
	}
	for _, c := range cases {
		if err := c.err(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}
