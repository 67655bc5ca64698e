package fermi

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/fairdp/fairdp/metrics"
	"github.com/fairdp/fairdp/models"
)

// randomProbs returns n rows of l class probabilities with groups in
// 0..k-1 and labels in 0..l-1, every group and label present.
func randomProbs(r *rand.Rand, n, l, k int) (probs []float64, s, y []int) {
	probs = make([]float64, n*l)
	s, y = make([]int, n), make([]int, n)
	for i := range n {
		total := 0.0
		for j := range l {
			v := 0.05 + r.Float64()
			probs[i*l+j] = v
			total += v
		}
		for j := range l {
			probs[i*l+j] /= total
		}
		s[i], y[i] = i%k, (i/k)%l
		if i >= k*l {
			s[i], y[i] = r.IntN(k), r.IntN(l)
		}
	}
	return probs, s, y
}

// empiricalFreq is p̂_S (demographic parity) or p̂(s | y) (equalized odds)
// of the samples.
func empiricalFreq(s, y []int, k, l int, eo bool) []float64 {
	mats := 1
	if eo {
		mats = l
	}
	count := make([]float64, mats*k)
	total := make([]float64, mats)
	for i, g := range s {
		t := 0
		if eo {
			t = y[i]
		}
		count[t*k+g]++
		total[t]++
	}
	for t := range mats {
		for g := range k {
			count[t*k+g] /= total[t]
		}
	}
	return count
}

func meanPsi(reg *Regularizer, probs []float64, s, y []int) float64 {
	l := reg.Classes
	total := 0.0
	for i := range s {
		total += reg.Psi(probs[i*l:(i+1)*l], s[i], y[i])
	}
	return total / float64(len(s))
}

// TestPsiTable checks ψ_i and ∂ψ_i/∂W against values computed by hand from
// the formulas of Lowy et al. 2022 (Theorem C.1) for k = l = 2, W = [[1, 0], [0.5, -1]],
// p̂_S = (0.25, 0.75).
func TestPsiTable(t *testing.T) {
	reg, err := NewRegularizer(2, 2, false, []float64{0.25, 0.75})
	if err != nil {
		t.Fatal(err)
	}
	copy(reg.W, []float64{1, 0, 0.5, -1})
	for _, tc := range []struct {
		probs []float64
		s     int
		psi   float64
		gradW []float64
	}{
		// -(1.25·0.3 + 1·0.7) + 2(0.5·0.3 − 1·0.7)/√0.75 − 1
		{[]float64{0.3, 0.7}, 1, -3.345170592217177, []float64{-0.6, 0, 0.39282032302755093, 3.016580753730952}},
		// -(1.075) + 2(1·0.3)/√0.25 − 1
		{[]float64{0.3, 0.7}, 0, -0.875, []float64{0.6, 2.8, -0.3, 1.4}},
		{[]float64{0.9, 0.1}, 0, 1.375, []float64{1.8, 0.4, -0.9, 0.2}},
	} {
		if got := reg.Psi(tc.probs, tc.s, 0); math.Abs(got-tc.psi) > 1e-12 {
			t.Errorf("ψ(F=%v, s=%d) = %.15g, want %.15g", tc.probs, tc.s, got, tc.psi)
		}
		g := make([]float64, 4)
		reg.GradW(tc.probs, tc.s, 0, Full, 1, g)
		for i := range g {
			if math.Abs(g[i]-tc.gradW[i]) > 1e-12 {
				t.Errorf("∂ψ/∂W (F=%v, s=%d) = %v, want %v", tc.probs, tc.s, g, tc.gradW)
				break
			}
		}
	}
}

// TestPsiAtOptimumIsERMI: at the closed-form maximiser W*, the mean of ψ_i
// equals ERMI computed directly by metrics (the identity and the ERMI
// definitions of Lowy et al. 2022), for demographic parity and for equalized
// odds (one W per label, p̂(s | y)), with several class and group counts.
func TestPsiAtOptimumIsERMI(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct{ n, l, k int }{{40, 2, 2}, {200, 3, 4}, {500, 9, 5}} {
		probs, s, y := randomProbs(r, tc.n, tc.l, tc.k)
		for _, eo := range []bool{false, true} {
			reg, err := NewRegularizer(tc.k, tc.l, eo, empiricalFreq(s, y, tc.k, tc.l, eo))
			if err != nil {
				t.Fatal(err)
			}
			copy(reg.W, reg.OptimalW(probs, s, y))
			got := meanPsi(reg, probs, s, y)
			want := metrics.ERMIDemographicParity(probs, s, tc.l, tc.k)
			if eo {
				want = metrics.ERMIEqualizedOdds(probs, y, s, tc.l, tc.k)
			}
			if want <= 1e-4 || math.Abs(got-want) > 1e-12*math.Max(1, want) {
				t.Errorf("n=%d l=%d k=%d eo=%v: mean ψ at W* = %.15g, ERMI = %.15g", tc.n, tc.l, tc.k, eo, got, want)
			}
			// W* maximises the (concave) mean of ψ: the mean gradient is 0
			// there and any perturbation lowers the mean.
			grad := make([]float64, len(reg.W))
			size := tc.k * tc.l
			for i := range s {
				m := reg.MatOf(y[i])
				reg.GradW(probs[i*tc.l:(i+1)*tc.l], s[i], y[i], Full, 1/float64(tc.n), grad[m*size:(m+1)*size])
			}
			for _, g := range grad {
				if math.Abs(g) > 1e-12 {
					t.Fatalf("n=%d l=%d k=%d eo=%v: mean ∂ψ/∂W at W* = %v, want 0", tc.n, tc.l, tc.k, eo, grad)
				}
			}
			for i := range reg.W {
				reg.W[i] += 0.01 * (r.Float64() - 0.5)
			}
			if p := meanPsi(reg, probs, s, y); p >= got {
				t.Errorf("n=%d l=%d k=%d eo=%v: perturbed W gives mean ψ %v ≥ %v at W*", tc.n, tc.l, tc.k, eo, p, got)
			}
		}
	}
}

// TestGradWFiniteDifference checks ∂ψ_i/∂W (and its split into the
// s-dependent and s-independent parts) against central differences of ψ.
func TestGradWFiniteDifference(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, eo := range []bool{false, true} {
		k, l := 3, 4
		probs, s, y := randomProbs(r, 30, l, k)
		reg, err := NewRegularizer(k, l, eo, empiricalFreq(s, y, k, l, eo))
		if err != nil {
			t.Fatal(err)
		}
		for i := range reg.W {
			reg.W[i] = r.NormFloat64()
		}
		size := k * l
		for i := range 5 {
			row := probs[i*l : (i+1)*l]
			full, sens, rest := make([]float64, size), make([]float64, size), make([]float64, size)
			reg.GradW(row, s[i], y[i], Full, 1, full)
			reg.GradW(row, s[i], y[i], Sensitive, 1, sens)
			reg.GradW(row, s[i], y[i], NonSensitive, 1, rest)
			off := reg.MatOf(y[i]) * size
			const h = 1e-6
			for j := range size {
				w0 := reg.W[off+j]
				reg.W[off+j] = w0 + h
				up := reg.Psi(row, s[i], y[i])
				reg.W[off+j] = w0 - h
				down := reg.Psi(row, s[i], y[i])
				reg.W[off+j] = w0
				fd := (up - down) / (2 * h)
				if math.Abs(fd-full[j]) > 1e-7 {
					t.Errorf("eo=%v sample %d: ∂ψ/∂W[%d] = %v, finite difference %v", eo, i, j, full[j], fd)
				}
				if math.Abs(sens[j]+rest[j]-full[j]) > 1e-12 {
					t.Errorf("eo=%v sample %d: sensitive + non-sensitive parts %v + %v ≠ full %v", eo, i, sens[j], rest[j], full[j])
				}
				if g := j / l; g != s[i] && sens[j] != 0 {
					t.Errorf("eo=%v sample %d: the s-dependent gradient touches row %d ≠ s = %d", eo, i, g, s[i])
				}
			}
		}
	}
}

// TestThetaGradientFiniteDifference checks ∇_θ of λ Σ_i ψ_i, formed as
// ∂ψ_i/∂logits (LogitGrad, through sigmoid or softmax) back-propagated by
// the model, against central differences of ψ over every parameter: a
// one-logit logistic model, a 3-class softmax model and an MLP.
func TestThetaGradientFiniteDifference(t *testing.T) {
	const lambda = 1.7
	for _, spec := range []models.Spec{
		{Arch: "logistic", InShape: []int{5}, Classes: 2},
		{Arch: "logistic", InShape: []int{5}, Classes: 3},
		{Arch: "mlp", InShape: []int{5}, Classes: 3, Hidden: []int{4}},
	} {
		for _, eo := range []bool{false, true} {
			r := rand.New(rand.NewPCG(5, 6))
			m, err := models.New[float64](spec, r)
			if err != nil {
				t.Fatal(err)
			}
			n, k, l := 12, 3, spec.Classes
			x := make([]float64, n*5)
			for i := range x {
				x[i] = r.NormFloat64()
			}
			_, s, y := randomProbs(r, n, l, k)
			reg, err := NewRegularizer(k, l, eo, empiricalFreq(s, y, k, l, eo))
			if err != nil {
				t.Fatal(err)
			}
			for i := range reg.W {
				reg.W[i] = r.NormFloat64()
			}
			objective := func() float64 {
				logits := m.Forward(x, n, false)
				probs := make([]float64, n*l)
				m.Probabilities(logits, n, probs)
				return lambda * meanPsi(reg, probs, s, y) * float64(n)
			}
			// Analytic: Σ_i λ ∂ψ_i/∂logits, back-propagated.
			logits := m.Forward(x, n, true)
			probs := make([]float64, n*l)
			m.Probabilities(logits, n, probs)
			out := m.OutDim()
			dl := make([]float64, n*out)
			coef := make([]float64, l)
			for i := range n {
				reg.Coefficients(s[i], y[i], Full, coef)
				LogitGrad(probs[i*l:(i+1)*l], coef, out, lambda, dl[i*out:(i+1)*out])
			}
			m.Backward(dl)
			m.ZeroGrads()
			m.ParamGrads(nil)
			checked := 0
			for _, p := range m.Params() {
				for j := range p.Value {
					v0 := p.Value[j]
					const h = 1e-6
					p.Value[j] = v0 + h
					up := objective()
					p.Value[j] = v0 - h
					down := objective()
					p.Value[j] = v0
					fd := (up - down) / (2 * h)
					if math.Abs(fd-p.Grad[j]) > 1e-6*math.Max(1, math.Abs(fd)) {
						t.Errorf("%s eo=%v: %s[%d]: analytic %v, finite difference %v", spec, eo, p.Name, j, p.Grad[j], fd)
					}
					checked++
				}
			}
			if checked < 6 {
				t.Fatalf("%s: only %d parameters checked", spec, checked)
			}
		}
	}
}

// TestCoefficientsSplit: the s-dependent and s-independent coefficient
// parts add up to the full ∂ψ/∂F, and only the s-dependent part changes
// with s.
func TestCoefficientsSplit(t *testing.T) {
	reg, err := NewRegularizer(3, 2, false, []float64{0.5, 0.3, 0.2})
	if err != nil {
		t.Fatal(err)
	}
	copy(reg.W, []float64{0.1, -0.2, 0.3, 0.4, -0.5, 0.6})
	full, sens, rest, rest2 := make([]float64, 2), make([]float64, 2), make([]float64, 2), make([]float64, 2)
	reg.Coefficients(1, 0, Full, full)
	reg.Coefficients(1, 0, Sensitive, sens)
	reg.Coefficients(1, 0, NonSensitive, rest)
	reg.Coefficients(2, 0, NonSensitive, rest2)
	// NonSensitive: -Σ_r W_rj² = -(0.01+0.09+0.25), -(0.04+0.16+0.36);
	// Sensitive (s=1): 2·W_1j/√0.3.
	want := []float64{-0.35, -0.56}
	for j := range 2 {
		if math.Abs(rest[j]-want[j]) > 1e-12 || rest[j] != rest2[j] {
			t.Errorf("non-sensitive coefficient %d = %v (s=2: %v), want %v for every s", j, rest[j], rest2[j], want[j])
		}
		if ws := 2 * reg.W[2+j] / math.Sqrt(0.3); math.Abs(sens[j]-ws) > 1e-12 {
			t.Errorf("sensitive coefficient %d = %v, want %v", j, sens[j], ws)
		}
		if math.Abs(full[j]-sens[j]-rest[j]) > 1e-12 {
			t.Errorf("full coefficient %d = %v ≠ %v + %v", j, full[j], sens[j], rest[j])
		}
	}
}

func TestProjectAndErrors(t *testing.T) {
	reg, err := NewRegularizer(2, 2, true, []float64{0.5, 0.5, 0.25, 0.75})
	if err != nil {
		t.Fatal(err)
	}
	copy(reg.W, []float64{3, 4, 0, 0, 0.1, 0, 0, 0})
	reg.Project(2)
	if got := []float64{reg.W[0], reg.W[1], reg.W[4]}; math.Abs(got[0]-1.2) > 1e-12 || math.Abs(got[1]-1.6) > 1e-12 || got[2] != 0.1 {
		t.Errorf("projection on radius 2: %v, want each matrix projected separately: (1.2, 1.6, …), (0.1, …)", reg.W)
	}
	if reg.MinFreq() != 0.25 {
		t.Errorf("MinFreq = %v, want 0.25", reg.MinFreq())
	}
	for _, tc := range []struct {
		k, l int
		eo   bool
		freq []float64
	}{
		{0, 2, false, nil},
		{2, 1, false, []float64{0.5, 0.5}},
		{2, 2, false, []float64{0.5}},
		{2, 2, false, []float64{0.7, 0.7}},
		{2, 2, false, []float64{-0.5, 1.5}},
		{2, 2, true, []float64{0.5, 0.5}},
	} {
		if _, err := NewRegularizer(tc.k, tc.l, tc.eo, tc.freq); err == nil {
			t.Errorf("NewRegularizer(%d, %d, %v, %v) accepted", tc.k, tc.l, tc.eo, tc.freq)
		}
	}
}
