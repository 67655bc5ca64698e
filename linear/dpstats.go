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

// Bounds are the public a-priori data bounds a private regression needs:
// with them the sensitivity of every released statistic is known without
// looking at the data. They must come from domain knowledge, not from the
// data itself (bounds read off the data leak it). Records are clipped to
// them, never dropped, so the clipping is the same for neighbouring data
// sets.
type Bounds struct {
	// XNorm bounds the L2 norm of a feature row (the intercept column
	// included); longer rows are scaled down to it.
	XNorm float64
	// Y bounds |y|; targets are clipped to [−Y, Y].
	Y float64
}

// Validate checks that both bounds are finite and positive.
func (b Bounds) Validate() error {
	if !(b.XNorm > 0) || math.IsInf(b.XNorm, 1) {
		return fmt.Errorf("linear: Bounds.XNorm = %v, want a finite bound > 0 on the L2 norm of a feature row", b.XNorm)
	}
	if !(b.Y > 0) || math.IsInf(b.Y, 1) {
		return fmt.Errorf("linear: Bounds.Y = %v, want a finite bound > 0 on |y|", b.Y)
	}
	return nil
}

// XtXSensitivity is the L2 sensitivity XNorm² of XᵀX (upper triangle and
// diagonal) when one clipped record is added or removed: ‖xxᵀ‖_F = ‖x‖².
func (b Bounds) XtXSensitivity() float64 { return b.XNorm * b.XNorm }

// XtYSensitivity is the L2 sensitivity XNorm·Y of Xᵀy: ‖x·y‖ ≤ ‖x‖·|y|.
func (b Bounds) XtYSensitivity() float64 { return b.XNorm * b.Y }

// ClipRow scales row in place so that its L2 norm is at most bound.
func ClipRow(row []float64, bound float64) {
	ss := 0.0
	for _, v := range row {
		ss += v * v
	}
	if ss > bound*bound {
		f := bound / math.Sqrt(ss)
		for i := range row {
			row[i] *= f
		}
	}
}

// ClipValue clips v to [−bound, bound].
func ClipValue(v, bound float64) float64 { return math.Max(-bound, math.Min(bound, v)) }

// Clip returns copies of X and y clipped to the bounds: rows scaled to
// norm ≤ XNorm, targets clipped to [−Y, Y].
func (b Bounds) Clip(x *mat.Dense, y []float64) (*mat.Dense, []float64) {
	xc := mat.DenseCopyOf(x)
	n, _ := xc.Dims()
	for i := range n {
		ClipRow(xc.RawRowView(i), b.XNorm)
	}
	yc := make([]float64, len(y))
	for i, v := range y {
		yc[i] = ClipValue(v, b.Y)
	}
	return xc, yc
}

// SufficientStats are XᵀX and Xᵀy, everything least squares needs.
type SufficientStats struct {
	XtX *mat.SymDense
	XtY []float64
}

// ClippedStats returns the sufficient statistics of the data clipped to b,
// the input of the noisy release.
func ClippedStats(x *mat.Dense, y []float64, b Bounds) (SufficientStats, error) {
	if err := b.Validate(); err != nil {
		return SufficientStats{}, err
	}
	if _, _, err := checkXY(x, y); err != nil {
		return SufficientStats{}, err
	}
	xc, yc := b.Clip(x, y)
	xtx, xty := gram(xc, yc)
	return SufficientStats{XtX: xtx, XtY: xty}, nil
}

// Solve solves the normal equations of the statistics with a public ridge
// λ ≥ 0 added to the diagonal (see SolveNormal).
func (s SufficientStats) Solve(ridge float64) ([]float64, error) {
	if !(ridge >= 0) || math.IsInf(ridge, 1) {
		return nil, fmt.Errorf("linear: ridge λ = %v, want a finite number ≥ 0", ridge)
	}
	return SolveNormal(addDiagonal(s.XtX, ridge), s.XtY)
}

// NoisyStats releases clipped sufficient statistics under zCDP: XᵀX with
// Analyze-Gauss noise (Dwork, Talwar, Thakurta, Zhang 2014: one Gaussian draw
// per entry of the upper triangle and diagonal, mirrored, so the noisy matrix
// stays symmetric) with std XNorm²/√(2·rhoXtX), and Xᵀy with Gaussian noise
// of std XNorm·Y/√(2·rhoXtY). Both releases are charged to acct (which
// refuses them, before any noise is drawn, if they exceed its budget), so
// the release is (rhoXtX + rhoXtY)-zCDP for add/remove-one neighbours
// (Bun and Steinke 2016). label names the data in the receipt, e.g. "group 2".
// Each noisy entry is drawn with dpops.ScalarGaussian, the sampler that
// resists floating-point attacks.
func NoisyStats(r *rand.Rand, st SufficientStats, b Bounds, rhoXtX, rhoXtY float64, acct *accounting.ZCDP, label string) (SufficientStats, error) {
	if err := b.Validate(); err != nil {
		return SufficientStats{}, err
	}
	if r == nil || acct == nil {
		return SufficientStats{}, errors.New("linear.NoisyStats: nil *rand.Rand or accountant")
	}
	if st.XtX == nil || len(st.XtY) != st.XtX.SymmetricDim() {
		return SufficientStats{}, errors.New("linear.NoisyStats: statistics with missing XᵀX or mismatched XᵀY")
	}
	stdXtX, err := accounting.GaussianStdForRho(b.XtXSensitivity(), rhoXtX)
	if err != nil {
		return SufficientStats{}, fmt.Errorf("linear.NoisyStats: XᵀX: %w", err)
	}
	stdXtY, err := accounting.GaussianStdForRho(b.XtYSensitivity(), rhoXtY)
	if err != nil {
		return SufficientStats{}, fmt.Errorf("linear.NoisyStats: XᵀY: %w", err)
	}
	if label != "" {
		label = " " + label
	}
	if err := acct.SpendGaussian(b.XtXSensitivity(), stdXtX, "XᵀX"+label); err != nil {
		return SufficientStats{}, err
	}
	if err := acct.SpendGaussian(b.XtYSensitivity(), stdXtY, "XᵀY"+label); err != nil {
		return SufficientStats{}, err
	}
	d := st.XtX.SymmetricDim()
	out := SufficientStats{XtX: mat.NewSymDense(d, nil), XtY: make([]float64, d)}
	for i := range d {
		for j := i; j < d; j++ {
			v, err := dpops.ScalarGaussian(r, st.XtX.At(i, j), b.XtXSensitivity(), stdXtX/b.XtXSensitivity())
			if err != nil {
				return SufficientStats{}, fmt.Errorf("linear.NoisyStats: XᵀX[%d][%d]: %w", i, j, err)
			}
			out.XtX.SetSym(i, j, v)
		}
		v, err := dpops.ScalarGaussian(r, st.XtY[i], b.XtYSensitivity(), stdXtY/b.XtYSensitivity())
		if err != nil {
			return SufficientStats{}, fmt.Errorf("linear.NoisyStats: XᵀY[%d]: %w", i, err)
		}
		out.XtY[i] = v
	}
	return out, nil
}

// DPOLSOptions configures DPOLS.
type DPOLSOptions struct {
	Bounds Bounds
	// Rho is the total zCDP budget; XtXShare of it (default 0.5) goes to XᵀX
	// and the rest to XᵀY.
	Rho      float64
	XtXShare float64
	// Ridge is a public λ ≥ 0 added to the noisy XᵀX before solving, which
	// makes a positive-definite result more likely at small Rho.
	Ridge float64
	// Label names the data in the receipt.
	Label string
}

// DPOLS is differentially private least squares by noisy sufficient
// statistics: NoisyStats on the clipped data, then the normal equations.
// It spends opts.Rho from acct. When the noisy XᵀX (plus Ridge) is not
// positive definite the budget is spent and the error wraps
// ErrNotPositiveDefinite; retrying would spend it again.
func DPOLS(r *rand.Rand, x *mat.Dense, y []float64, opts DPOLSOptions, acct *accounting.ZCDP) ([]float64, error) {
	share := opts.XtXShare
	if share == 0 {
		share = 0.5
	}
	if !(share > 0 && share < 1) {
		return nil, fmt.Errorf("linear.DPOLS: XtXShare = %v, want a fraction in (0, 1)", opts.XtXShare)
	}
	if !(opts.Rho > 0) || math.IsInf(opts.Rho, 1) {
		return nil, fmt.Errorf("linear.DPOLS: Rho = %v, want a finite zCDP budget > 0", opts.Rho)
	}
	st, err := ClippedStats(x, y, opts.Bounds)
	if err != nil {
		return nil, err
	}
	noisy, err := NoisyStats(r, st, opts.Bounds, share*opts.Rho, (1-share)*opts.Rho, acct, opts.Label)
	if err != nil {
		return nil, err
	}
	return noisy.Solve(opts.Ridge)
}
