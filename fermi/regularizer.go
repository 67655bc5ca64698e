package fermi

import (
	"fmt"
	"math"

	"github.com/fairdp/fairdp/nn"
)

// Part selects which terms of ψ_i a gradient covers. The privacy scope
// "sensitive" clips and noises only the terms that depend on the sensitive
// attribute s_i (only the second term of ψ_i does; Lowy et al. 2022, Theorem C.1).
type Part int

const (
	// Full is the whole gradient of ψ_i.
	Full Part = iota
	// NonSensitive is the part that does not depend on s_i:
	// -Σ_{r,j} W_rj² F_j.
	NonSensitive
	// Sensitive is the part that depends on s_i:
	// 2 Σ_j W_{s_i j} F_j / sqrt(p̂_S(s_i)).
	Sensitive
)

// Regularizer is the fairness player of DP-FERMI's min-max game: the
// matrices W (one k×l matrix for demographic parity, one per label for
// equalized odds) and the group frequencies ψ_i needs (Lowy et al. 2022, Theorem C.1):
//
//	ψ_i(θ, W) = -Σ_{r,j} W_rj² F_j(x_i) + 2 Σ_j W_{s_i j} F_j(x_i) / sqrt(p̂_S(s_i)) - 1
//
// For equalized odds ψ_i uses W_{y_i} and p̂(s | y_i) in place of p̂_S, so
// the mean of ψ at the maximisers is the conditional ERMI.
type Regularizer struct {
	Groups, Classes int  // k sensitive groups, l classes
	EqualizedOdds   bool // one W per label instead of one W
	// W holds Mats() matrices of Groups×Classes values, row-major:
	// W_t[r][j] is W[t*Groups*Classes + r*Classes + j].
	W []float64
	// freq[t*Groups+r] is p̂_S(r) (demographic parity, t = 0) or p̂(r | y=t).
	freq    []float64
	invSqrt []float64 // 1/sqrt(freq), 0 for an empty group
}

// NewRegularizer returns the regularizer with W = 0 for k groups and l
// classes. freq holds the group frequencies: k values p̂_S(r) for
// demographic parity, or l rows of k values p̂(r | y) for equalized odds;
// each row must be non-negative and sum to 1 (within 1e-6).
func NewRegularizer(groups, classes int, equalizedOdds bool, freq []float64) (*Regularizer, error) {
	if groups < 1 || classes < 2 {
		return nil, fmt.Errorf("fermi: %d groups and %d classes; want at least 1 group and 2 classes", groups, classes)
	}
	r := &Regularizer{Groups: groups, Classes: classes, EqualizedOdds: equalizedOdds}
	if len(freq) != r.Mats()*groups {
		return nil, fmt.Errorf("fermi: %d group frequencies, want %d (%d matrices × %d groups)", len(freq), r.Mats()*groups, r.Mats(), groups)
	}
	r.W = make([]float64, r.Mats()*groups*classes)
	if err := r.SetFreq(freq); err != nil {
		return nil, err
	}
	return r, nil
}

// Mats is the number of W matrices: 1 for demographic parity, Classes for
// equalized odds.
func (r *Regularizer) Mats() int {
	if r.EqualizedOdds {
		return r.Classes
	}
	return 1
}

// MatOf is the index of the W matrix a sample with label y uses (always 0
// for demographic parity).
func (r *Regularizer) MatOf(y int) int {
	if r.EqualizedOdds {
		return y
	}
	return 0
}

// Freq returns a copy of the group frequencies in use.
func (r *Regularizer) Freq() []float64 { return append([]float64(nil), r.freq...) }

// SetFreq replaces the group frequencies (same layout as NewRegularizer's).
func (r *Regularizer) SetFreq(freq []float64) error {
	k := r.Groups
	if len(freq) != r.Mats()*k {
		return fmt.Errorf("fermi: %d group frequencies, want %d", len(freq), r.Mats()*k)
	}
	for t := range r.Mats() {
		row := freq[t*k : (t+1)*k]
		sum := 0.0
		for g, p := range row {
			if !(p >= 0) || math.IsInf(p, 0) {
				return fmt.Errorf("fermi: group frequency %d of matrix %d is %v; want a finite number ≥ 0", g, t, p)
			}
			sum += p
		}
		if math.Abs(sum-1) > 1e-6 {
			return fmt.Errorf("fermi: group frequencies of matrix %d sum to %v; want 1", t, sum)
		}
	}
	r.freq = append(r.freq[:0], freq...)
	r.invSqrt = make([]float64, len(freq))
	for i, p := range freq {
		if p > 0 {
			r.invSqrt[i] = 1 / math.Sqrt(p)
		}
	}
	return nil
}

// MinFreq is ρ = min_r p̂_S(r) over the non-empty groups (over all labels
// for equalized odds), the quantity Theorem 3.3's noise depends on.
func (r *Regularizer) MinFreq() float64 {
	rho := math.Inf(1)
	for _, p := range r.freq {
		if p > 0 {
			rho = min(rho, p)
		}
	}
	return rho
}

// Coefficients writes c_j = ∂ψ_i/∂F_j for a sample of group s and label y
// into dst (length Classes), restricted to part:
//
//	NonSensitive: -Σ_r W_rj²      Sensitive: 2 W_{s j}/sqrt(p̂(s))
//
// (Full is their sum). ψ_i is linear in F, so ψ_i = Σ_j c_j F_j - 1.
func (r *Regularizer) Coefficients(s, y int, part Part, dst []float64) {
	r.matCoefficients(r.MatOf(y), s, part, dst)
}

// matCoefficients is Coefficients for the samples of group s that use the
// W matrix t.
func (r *Regularizer) matCoefficients(t, s int, part Part, dst []float64) {
	k, l := r.Groups, r.Classes
	w := r.W[t*k*l : (t+1)*k*l]
	clear(dst[:l])
	if part != Sensitive {
		for g := range k {
			for j, v := range w[g*l : (g+1)*l] {
				dst[j] -= v * v
			}
		}
	}
	if part != NonSensitive {
		inv := r.invSqrt[t*k+s]
		for j, v := range w[s*l : (s+1)*l] {
			dst[j] += 2 * v * inv
		}
	}
}

// Psi is ψ_i for one sample's class probabilities F (length Classes).
func (r *Regularizer) Psi(probs []float64, s, y int) float64 {
	c := make([]float64, r.Classes)
	r.Coefficients(s, y, Full, c)
	psi := -1.0
	for j, f := range probs[:r.Classes] {
		psi += c[j] * f
	}
	return psi
}

// GradW adds scale·∂ψ_i/∂W_t (restricted to part) into dst, the
// Groups×Classes block of the matrix t = MatOf(y) the sample uses:
//
//	∂ψ_i/∂W_rj = -2 W_rj F_j  +  2·[r = s]·F_j / sqrt(p̂(r))
//
// (the first term is NonSensitive, the second Sensitive).
func (r *Regularizer) GradW(probs []float64, s, y int, part Part, scale float64, dst []float64) {
	k, l := r.Groups, r.Classes
	t := r.MatOf(y)
	if part != Sensitive {
		w := r.W[t*k*l : (t+1)*k*l]
		for g := range k {
			for j := range l {
				dst[g*l+j] -= scale * 2 * w[g*l+j] * probs[j]
			}
		}
	}
	if part != NonSensitive {
		inv := r.invSqrt[t*k+s]
		for j := range l {
			dst[s*l+j] += scale * 2 * probs[j] * inv
		}
	}
}

// OptimalW returns the maximiser of the mean of ψ_i over the given samples
// for fixed θ (Lowy et al. 2022), all matrices in W's layout:
//
//	W*_rj = p̂(j, r) / (sqrt(p̂_S(r)) p̂(j))
//
// with the soft joint p̂(j, r) = (1/n) Σ_{i: s_i=r} F_j(x_i) and p̂(j) its
// class marginal (per label for equalized odds). probs holds one row of
// Classes probabilities per sample. Cells with p̂(j) = 0 or an empty group
// are 0. At W* the mean of ψ equals ERMI when the regularizer's frequencies
// are the samples' own group frequencies.
func (r *Regularizer) OptimalW(probs []float64, s, y []int) []float64 {
	k, l := r.Groups, r.Classes
	joint := make([]float64, r.Mats()*k*l)
	for i, g := range s {
		t := 0
		if r.EqualizedOdds {
			t = y[i]
		}
		for j, f := range probs[i*l : (i+1)*l] {
			joint[t*k*l+g*l+j] += f
		}
	}
	w := make([]float64, len(joint))
	for t := range r.Mats() {
		for j := range l {
			marginal := 0.0
			for g := range k {
				marginal += joint[t*k*l+g*l+j]
			}
			if marginal == 0 {
				continue
			}
			for g := range k {
				w[t*k*l+g*l+j] = joint[t*k*l+g*l+j] * r.invSqrt[t*k+g] / marginal
			}
		}
	}
	return w
}

// Project puts every W matrix back on the Frobenius ball of the given
// radius (Algorithm 1's Π_W), each matrix separately.
func (r *Regularizer) Project(radius float64) {
	size := r.Groups * r.Classes
	for t := range r.Mats() {
		w := r.W[t*size : (t+1)*size]
		norm := 0.0
		for _, v := range w {
			norm += v * v
		}
		norm = math.Sqrt(norm)
		if norm > radius {
			for i := range w {
				w[i] *= radius / norm
			}
		}
	}
}

// Norm is the Frobenius norm of all of W.
func (r *Regularizer) Norm() float64 {
	s := 0.0
	for _, v := range r.W {
		s += v * v
	}
	return math.Sqrt(s)
}

// LogitGrad adds scale·∂(Σ_j c_j F_j)/∂z for one sample into dlogits, the
// chain rule from class probabilities F to the model's logits z:
// for softmax (outDim = l) ∂/∂z_m = F_m (c_m - Σ_j c_j F_j); for a one-logit
// sigmoid model (outDim = 1, F = (1-p, p)) ∂/∂z = (c_1 - c_0) p (1-p).
// probs holds the sample's l probabilities, dlogits its outDim logit
// gradients.
func LogitGrad[T nn.Float](probs []T, coef []float64, outDim int, scale float64, dlogits []T) {
	if outDim == 1 {
		p0, p1 := float64(probs[0]), float64(probs[1])
		dlogits[0] += T(scale * (coef[1] - coef[0]) * p0 * p1)
		return
	}
	mean := 0.0
	for j, f := range probs[:outDim] {
		mean += coef[j] * float64(f)
	}
	for j, f := range probs[:outDim] {
		dlogits[j] += T(scale * float64(f) * (coef[j] - mean))
	}
}
