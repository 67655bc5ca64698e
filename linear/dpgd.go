package linear

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/dpops/accounting"
	"gonum.org/v1/gonum/mat"
)

// Examples is a design matrix and its targets with every row's L2 norm
// cached, so that per-example gradient clipping costs no extra pass over the
// data. It is read-only after NewExamples and safe for concurrent use (the
// Monte Carlo trials of budget tailoring share one).
type Examples struct {
	X     *mat.Dense
	Y     []float64
	norms []float64
}

// NewExamples validates X and y (finite, one target per row, at least one
// row) and caches the row norms.
func NewExamples(x *mat.Dense, y []float64) (*Examples, error) {
	n, _, err := checkXY(x, y)
	if err != nil {
		return nil, err
	}
	norms := make([]float64, n)
	for i := range n {
		norms[i] = mat.Norm(x.RowView(i), 2)
	}
	return &Examples{X: x, Y: y, norms: norms}, nil
}

// Len is the number of examples.
func (e *Examples) Len() int { return len(e.Y) }

// Dim is the number of columns of X (coefficients of the model).
func (e *Examples) Dim() int { _, d := e.X.Dims(); return d }

// ClippedSums is the data term of every private optimiser here. It writes
// Σ_i c_i ∇ℓ_i(β) into grad, with c_i = min(1, gradClip/‖∇ℓ_i(β)‖) (so each
// example moves the sum by at most gradClip in L2 norm), and returns
// Σ_i min(ℓ_i(β), lossClip) (each loss is ≥ 0, so each example moves it by at
// most lossClip; lossClip = 0 makes the sum 0 and skips the loss
// evaluations). ∇ℓ_i = loss.Derivative(x_iᵀβ, y_i)·x_i, whose norm is
// |derivative|·‖x_i‖. Pass +Inf to turn either clipping off. It panics if β
// or grad has the wrong length (a programming error).
func (e *Examples) ClippedSums(beta []float64, loss Loss, gradClip, lossClip float64, grad []float64) float64 {
	d := e.Dim()
	if len(beta) != d || len(grad) != d {
		panic(fmt.Sprintf("linear.ClippedSums: %d coefficients and %d gradient entries for %d columns", len(beta), len(grad), d))
	}
	clear(grad)
	lossSum := 0.0
	raw := e.X.RawMatrix()
	for i, y := range e.Y {
		row := raw.Data[i*raw.Stride : i*raw.Stride+d]
		m := 0.0
		for j, v := range row {
			m += v * beta[j]
		}
		if lossClip != 0 {
			if l := loss.Value(m, y); l < lossClip {
				lossSum += l
			} else {
				lossSum += lossClip
			}
		}
		g := loss.Derivative(m, y)
		if norm := math.Abs(g) * e.norms[i]; norm > gradClip {
			g *= gradClip / norm
		}
		if g == 0 {
			continue
		}
		for j, v := range row {
			grad[j] += g * v
		}
	}
	return lossSum
}

// ProjectBox clamps every coordinate of beta to [−bound, bound], the
// Euclidean projection onto the box; bound 0 or +Inf leaves beta as is.
func ProjectBox(beta []float64, bound float64) {
	if bound == 0 || math.IsInf(bound, 1) {
		return
	}
	for j, v := range beta {
		beta[j] = ClipValue(v, bound)
	}
}

// DPGDOptions configures DPGD.
type DPGDOptions struct {
	Loss Loss
	// Steps is the number T of full-batch iterations.
	Steps int
	// LR is the step size on the mean gradient.
	LR float64
	// Clip is the per-example gradient norm bound Δ, the L2 sensitivity of
	// each gradient sum.
	Clip float64
	// Box projects β onto [−Box, Box]^d after every step; 0 means none.
	Box float64
	// Rho is the total zCDP budget, spent as Rho/Steps per iteration.
	Rho float64
	// Init is the starting point (nil: zero).
	Init []float64
	// Label names the data in the receipt.
	Label string
}

func (o DPGDOptions) validate(d int) error {
	if err := o.Loss.valid(); err != nil {
		return err
	}
	switch {
	case o.Steps < 1:
		return fmt.Errorf("linear.DPGD: Steps = %d, want ≥ 1", o.Steps)
	case !(o.LR > 0) || math.IsInf(o.LR, 1):
		return fmt.Errorf("linear.DPGD: LR = %v, want a finite step size > 0", o.LR)
	case !(o.Clip > 0) || math.IsInf(o.Clip, 1):
		return fmt.Errorf("linear.DPGD: Clip = %v, want a finite gradient norm bound > 0", o.Clip)
	case !(o.Box >= 0):
		return fmt.Errorf("linear.DPGD: Box = %v, want ≥ 0 (0: no projection)", o.Box)
	case !(o.Rho > 0) || math.IsInf(o.Rho, 1):
		return fmt.Errorf("linear.DPGD: Rho = %v, want a finite zCDP budget > 0", o.Rho)
	case o.Init != nil && len(o.Init) != d:
		return fmt.Errorf("linear.DPGD: Init has %d entries for %d columns", len(o.Init), d)
	}
	return nil
}

// DPGD is full-batch differentially private gradient descent on the mean
// loss (1/n) Σ ℓ_i(β): every iteration releases the clipped gradient sum
// (ClippedSums) plus N(0, σ²I) noise with σ = Clip/√(2·Rho/Steps), divides
// it by n, steps and projects onto the box. Each release is charged to acct,
// so the run is Rho-zCDP for add/remove-one neighbours with n treated as
// public. It returns the last iterate.
func DPGD(r *rand.Rand, ex *Examples, opts DPGDOptions, acct *accounting.ZCDP) ([]float64, error) {
	if r == nil || acct == nil || ex == nil {
		return nil, errors.New("linear.DPGD: nil *rand.Rand, examples or accountant")
	}
	d := ex.Dim()
	if err := opts.validate(d); err != nil {
		return nil, err
	}
	std, err := accounting.GaussianStdForRho(opts.Clip, opts.Rho/float64(opts.Steps))
	if err != nil {
		return nil, fmt.Errorf("linear.DPGD: %w", err)
	}
	label := "gradient"
	if opts.Label != "" {
		label += " " + opts.Label
	}
	beta := make([]float64, d)
	copy(beta, opts.Init)
	grad := make([]float64, d)
	inv := 1 / float64(ex.Len())
	for range opts.Steps {
		if err := acct.SpendGaussian(opts.Clip, std, label); err != nil {
			return nil, err
		}
		ex.ClippedSums(beta, opts.Loss, opts.Clip, math.Inf(1), grad)
		// The float64 iterate is released as it is: hardened noise.
		if err := dpops.AddGaussianHardened(r, grad, std); err != nil {
			return nil, err
		}
		for j := range beta {
			beta[j] -= opts.LR * inv * grad[j]
		}
		ProjectBox(beta, opts.Box)
	}
	return beta, nil
}
