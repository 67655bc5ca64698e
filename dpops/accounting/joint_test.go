package accounting

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// directJointRDP computes, by numerical integration in two dimensions, the
// Rényi divergence of order alpha between the outputs of one step that
// releases two Gaussian-noised quantities computed on the same Poisson
// sample (rate q): one record shifts release 1 by 1/sigma1 and release 2 by
// 1/sigma2 noise standard deviations, and is in the sample with probability
// q. P = (1-q)·N(0, I) + q·N(μ, I), Q = N(0, I), μ = (1/σ1, 1/σ2), and
// D_α(P‖Q) = log E_Q[(P/Q)^α] / (α-1). It assumes nothing about σ_eff: it is
// the definition, evaluated on a grid.
func directJointRDP(q, sigma1, sigma2, alpha float64) float64 {
	mu := [2]float64{1 / sigma1, 1 / sigma2}
	const h = 0.02
	lo := -9.0
	hi := func(m float64) float64 { return 9 + (alpha+1)*m }
	logPhi := func(x float64) float64 { return -x*x/2 - 0.5*math.Log(2*math.Pi) }
	var terms []float64
	for x1 := lo; x1 <= hi(mu[0]); x1 += h {
		for x2 := lo; x2 <= hi(mu[1]); x2 += h {
			shift := mu[0]*x1 + mu[1]*x2 - (mu[0]*mu[0]+mu[1]*mu[1])/2
			// log(P/Q) = log((1-q) + q·e^shift), computed stably.
			var logRatio float64
			if shift > 0 {
				logRatio = shift + math.Log(q+(1-q)*math.Exp(-shift))
			} else {
				logRatio = math.Log1p(q * math.Expm1(shift))
			}
			terms = append(terms, logPhi(x1)+logPhi(x2)+alpha*logRatio)
		}
	}
	m := math.Inf(-1)
	for _, v := range terms {
		m = math.Max(m, v)
	}
	var sum float64
	for _, v := range terms {
		sum += math.Exp(v - m)
	}
	return (m + math.Log(sum*h*h)) / (alpha - 1)
}

// TestJointSubsampledGaussianDirect checks the accountant's charge of two
// releases on one Poisson sample (DPSGD-F's counts and gradient sum) against
// the direct computation of the joint mechanism, and shows that the former
// additive charge (two independently subsampled mechanisms) understates it.
func TestJointSubsampledGaussianDirect(t *testing.T) {
	const q, sigma1, sigma2 = 0.05, 3.0, 0.9
	orders := []float64{2, 3, 4, 6, 8}
	joint := JointSubsampledGaussian(q, Part{NoiseMultiplier: sigma1, Sensitivity: 1, Protects: "counts"},
		Part{NoiseMultiplier: sigma2, Sensitivity: 1, Protects: "gradients"})
	for _, alpha := range orders {
		direct := directJointRDP(q, sigma1, sigma2, alpha)
		got := SubsampledGaussianRDP(q, joint.NoiseMultiplier, alpha)
		if math.Abs(got-direct) > 1e-6*math.Max(1, direct) {
			t.Errorf("α = %v: joint charge %.10g, direct integration %.10g", alpha, got, direct)
		}
		additive := SubsampledGaussianRDP(q, sigma1, alpha) + SubsampledGaussianRDP(q, sigma2, alpha)
		if !(additive < direct*(1-1e-4)) {
			t.Errorf("α = %v: additive charge %.10g should understate the direct %.10g", alpha, additive, direct)
		}
	}
	// At α = 2 the gap has a closed form: with a = e^{1/σ1²}-1,
	// b = e^{1/σ2²}-1 the joint A-1 = q²(a+b+ab), the additive
	// (1+q²a)(1+q²b)-1 = q²(a+b)+q⁴ab.
	a, b := math.Expm1(1/(sigma1*sigma1)), math.Expm1(1/(sigma2*sigma2))
	if got, want := SubsampledGaussianRDP(q, joint.NoiseMultiplier, 2), math.Log1p(q*q*(a+b+a*b)); math.Abs(got-want) > 1e-12 {
		t.Errorf("α = 2: joint RDP %.15g, closed form %.15g", got, want)
	}
}

// TestJointReferenceRow10 reproduces the DPSGD-F settings of Xu, Du and
// Wu 2021 with the joint charge: MNIST-unbalanced (σ2 = 0.8, σ1 = 8, q = 256/54,649, 12,808 steps,
// δ = 1e-6) ε = 5.987 and Adult (σ2 = 1, σ1 = 10, q = 256/36,177, 2,820
// steps) ε = 2.688, where the additive charge gave 5.921 and 2.666.
func TestJointReferenceRow10(t *testing.T) {
	for _, tc := range []struct {
		name               string
		sigma2, sigma1, q  float64
		steps              int
		want, wantAdditive float64
	}{
		{"MNIST-unbalanced", 0.8, 8, 256.0 / 54649, 12808, 5.987, 5.921},
		{"Adult", 1, 10, 256.0 / 36177, 2820, 2.688, 2.666},
	} {
		var joint, additive RDP
		m := JointSubsampledGaussian(tc.q, Part{NoiseMultiplier: tc.sigma1, Sensitivity: 1, Protects: "counts"},
			Part{NoiseMultiplier: tc.sigma2, Protects: "gradients"})
		if err := joint.Step(m, tc.steps); err != nil {
			t.Fatal(err)
		}
		for _, s := range []float64{tc.sigma1, tc.sigma2} {
			if err := additive.Step(SubsampledGaussian(tc.q, s, 1, ""), tc.steps); err != nil {
				t.Fatal(err)
			}
		}
		eps, _ := joint.Epsilon(1e-6)
		epsAdd, _ := additive.Epsilon(1e-6)
		if math.Abs(eps-tc.want) > 5e-4 || math.Abs(epsAdd-tc.wantAdditive) > 5e-4 {
			t.Errorf("%s: joint ε %.4f (want %.3f), additive %.4f (want %.3f)", tc.name, eps, tc.want, epsAdd, tc.wantAdditive)
		}
		r, err := joint.Receipt(1e-6, RunInfo{})
		if err != nil {
			t.Fatal(err)
		}
		js, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(js), `"composition":"joint`) || !strings.Contains(string(js), `"parts":[{"sigma":`) {
			t.Errorf("%s: receipt does not say the releases were composed jointly: %s", tc.name, js)
		}
		var back Receipt
		if err := json.Unmarshal(js, &back); err != nil || len(back.Mechanisms) != 1 || len(back.Mechanisms[0].Parts) != 2 {
			t.Errorf("%s: receipt does not round-trip its parts: %v %+v", tc.name, err, back.Mechanisms)
		}
		var text strings.Builder
		r.WriteText(&text)
		if !strings.Contains(text.String(), "joint: parts σ = ") {
			t.Errorf("%s: printed receipt does not name the joint composition:\n%s", tc.name, text.String())
		}
	}
}

func TestJointSigma(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{[]float64{0.8, 8}, 1 / math.Sqrt(1/0.64+1/64.0)},
		{[]float64{2}, 2},
		{[]float64{3, 3}, 3 / math.Sqrt2},
		{[]float64{2, math.Inf(1)}, 2},
		{nil, math.Inf(1)},
		{[]float64{1, 0}, 0},
	} {
		if got := JointSigma(tc.in...); math.Abs(got-tc.want) > 1e-15*math.Max(1, tc.want) && got != tc.want {
			t.Errorf("JointSigma(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
