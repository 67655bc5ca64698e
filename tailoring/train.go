package tailoring

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/dpops/accounting"
	"github.com/fairdp/fairdp/linear"
	"gonum.org/v1/gonum/mat"
)

// Result is a trained model with what it cost and how the budget was split.
type Result struct {
	Method Method
	Model  Model
	// Beta holds the coefficients: Features() entries for a pooled model,
	// K·Features() (group k's block at k·Features()) for a per-group one.
	Beta []float64
	// StageOne is stage 1's output (zero for DPNoSE).
	StageOne StandardErrors
	// Shares are the stage-2 budget shares s_k² (Σ = 1).
	Shares []float64
	// Tau and Mu are the planned budgets of the two stages; StageOneRho and
	// StageTwoRho what their accountants actually spent.
	Tau, Mu                  float64
	StageOneRho, StageTwoRho float64
	// Losses are the released noisy group losses ℓ̂_k of every stage-2
	// iteration, means or sums as Options.Objective reads them (nil when
	// the constraint is off and no loss is released).
	Losses [][]float64
	// Accountant holds every charge of the run (both stages); ask it for
	// the receipt.
	Accountant *accounting.ZCDP
	features   int
}

// Receipt states the run's guarantee at delta.
func (r *Result) Receipt(delta float64, run accounting.RunInfo) (accounting.Receipt, error) {
	rec, err := r.Accountant.Receipt(delta, run)
	if err != nil {
		return rec, err
	}
	note := "group sizes n_k are treated as public; stage-1 and stage-2 charges add up by sequential composition (the groups are disjoint, so this is conservative)"
	if rec.Note != "" {
		note = rec.Note + "; " + note
	}
	rec.Note = note
	return rec, nil
}

// Predict returns the model's predictions (log-odds for logistic loss) on
// d, which must have the features of the training data (same schema, same
// intercept setting).
func (r *Result) Predict(d *Data) ([]float64, error) {
	p := d.Features()
	if p != r.features {
		return nil, fmt.Errorf("tailoring: data has %d features (intercept included), the model was trained on %d", p, r.features)
	}
	if r.Model == Pooled {
		return linear.Predict(d.X, r.Beta), nil
	}
	if len(r.Beta) != d.K()*p {
		return nil, fmt.Errorf("tailoring: data has %d groups, the per-group model was trained on %d", d.K(), len(r.Beta)/p)
	}
	out := make([]float64, len(d.Y))
	for i, g := range d.Groups {
		out[i] = mat.Dot(d.X.RowView(i), mat.NewVecDense(p, r.Beta[g*p:(g+1)*p]))
	}
	return out, nil
}

// stages sets up a run: the total accountant and the stage-1 result (run
// for DPSE, uniform for DPNoSE).
func stages(r *rand.Rand, d *Data, o Options) (*Result, *accounting.ZCDP, error) {
	if r == nil || d == nil {
		return nil, nil, errors.New("tailoring: nil *rand.Rand or data")
	}
	total, err := accounting.NewZCDP(o.Rho)
	if err != nil {
		return nil, nil, err
	}
	res := &Result{Method: o.Method, Model: o.Model, Tau: o.Tau(), Mu: o.Mu(), Accountant: total, features: d.Features()}
	if o.Method == DPNoSE {
		res.StageOne = StandardErrors{S: Uniform(d.K()), Fallback: "DPNoSE: no group-aware split"}
	} else {
		stage1, err := accounting.NewZCDP(res.Tau)
		if err != nil {
			return nil, nil, err
		}
		if res.StageOne, err = EstimateStandardErrors(r, d, o, res.Tau, stage1); err != nil {
			return nil, nil, err
		}
		if err := replay(total, stage1); err != nil {
			return nil, nil, err
		}
		res.StageOneRho = stage1.Rho()
	}
	res.Shares = make([]float64, d.K())
	for k, s := range res.StageOne.S {
		res.Shares[k] = s * s
	}
	stage2, err := accounting.NewZCDP(res.Mu)
	if err != nil {
		return nil, nil, err
	}
	return res, stage2, nil
}

// finish books stage 2's charges into the run's accountant.
func finish(res *Result, stage2 *accounting.ZCDP) error {
	res.StageTwoRho = stage2.Rho()
	return replay(res.Accountant, stage2)
}

// replay charges every release recorded by stage to total, so one receipt
// lists both stages.
func replay(total, stage *accounting.ZCDP) error {
	for _, m := range stage.Spends() {
		for range m.Steps {
			var err error
			if m.Kind == accounting.KindGaussian {
				err = total.SpendGaussian(m.Sensitivity, m.NoiseMultiplier*m.Sensitivity, m.Protects)
			} else {
				err = total.Spend(m.Rho/float64(m.Steps), m.Protects)
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// Train runs stage 1 (DPSE only) and stage 2 (Alabi and Wiggins 2023,
// Algorithm 2): T iterations of projected gradient descent on the Lagrangian
//
//	h(β) = Σ_k ℓ_k(β) + G·[g ≥ 0]·g,  g = max_k ℓ_k(β) − η,
//
// where ℓ_k is group k's (clipped) loss as Options.Objective reads it: its
// mean (GroupMeans, Algorithm 2) or its sum (GroupSums, the synthetic
// study). Every iteration each group releases its clipped gradient sum
// and, when the constraint is on, its clipped loss sum, each with Gaussian
// noise at zCDP budget μ s_k²/(2T) (μ s_k²/T for the gradient alone when
// the constraint is off); for GroupMeans dividing by the public n_k gives
// the noisy ∇ℓ_k and ℓ_k. The step is LR·(Σ_k ∇ℓ̂_k + G·[ℓ̂_max ≥ η]·∇ℓ̂_{argmax}),
// divided by the public N = Σ_k n_k for GroupSums, and β is projected onto
// [−Box, Box]^P. β starts at 0, or at stage 1's β̃ with WarmStart. The
// objective and the start are post-processing: the releases, and so the
// privacy cost, are the same for every reading.
// The run spends exactly ρ (τ + μ) unless stage 1 fell back before its
// residual sums.
func Train(r *rand.Rand, d *Data, o Options) (*Result, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	res, stage2, err := stages(r, d, o)
	if err != nil {
		return nil, err
	}
	if err := gradientDescent(r, d, o, res, stage2); err != nil {
		return nil, err
	}
	return res, finish(res, stage2)
}

func gradientDescent(r *rand.Rand, d *Data, o Options, res *Result, acct *accounting.ZCDP) error {
	// A per-group model's β holds K blocks of P coefficients; group k's
	// examples only touch (and release a noisy gradient for) block k, the
	// other blocks of its gradient being zero whatever the data.
	k, p := d.K(), d.Features()
	dim, block := p, func(int) int { return 0 }
	if o.Model == PerGroup {
		dim, block = k*p, func(g int) int { return g * p }
	}
	releases := 1
	if o.Constraint.On() {
		releases = 2
	}
	budgets := GroupBudgets(res.StageOne.S, res.Mu, o.Steps, releases)
	gradStd := make([]float64, k)
	lossStd := make([]float64, k)
	for g, rho := range budgets {
		var err error
		if gradStd[g], err = accounting.GaussianStdForRho(o.GradClip, rho); err != nil {
			return fmt.Errorf("tailoring: group %q: stage-2 budget μ·s_k²/(%dT) = %v: %w", d.Names[g], releases, rho, err)
		}
		if lossStd[g], err = accounting.GaussianStdForRho(o.LossClip, rho); err != nil {
			return fmt.Errorf("tailoring: group %q: %w", d.Names[g], err)
		}
	}
	beta := make([]float64, dim)
	if o.WarmStart && res.StageOne.Beta != nil {
		for g := range dim / p {
			copy(beta[g*p:(g+1)*p], res.StageOne.Beta)
		}
		linear.ProjectBox(beta, o.Box)
	}
	// gradScale turns a group's noisy gradient sum into its term of ∇h, and
	// lossScale its noisy loss sum into ℓ̂_k: 1/n_k each for GroupMeans; for
	// GroupSums ℓ̂_k is the sum itself and every gradient is divided by N,
	// the step's 1/N.
	gradScale, lossScale := make([]float64, k), make([]float64, k)
	total := 0
	for _, n := range d.Sizes {
		total += n
	}
	for g, n := range d.Sizes {
		gradScale[g], lossScale[g] = 1/float64(n), 1/float64(n)
		if o.Objective == GroupSums {
			gradScale[g], lossScale[g] = 1/float64(total), 1
		}
	}
	avg := make([]float64, dim)
	averaged := 0
	step := make([]float64, dim)
	grads := make([][]float64, k)
	for g := range grads {
		grads[g] = make([]float64, p)
	}
	losses := make([]float64, k)
	lossClip := 0.0 // no loss is released without the constraint
	if o.Constraint.On() {
		lossClip = o.LossClip
	}
	for t := range o.Steps {
		clear(step)
		for g, ex := range d.byGroup {
			off := block(g)
			lossSum := ex.ClippedSums(beta[off:off+p], o.Loss, o.GradClip, lossClip, grads[g])
			if err := acct.SpendGaussian(o.GradClip, gradStd[g], "stage 2 gradient "+d.Names[g]); err != nil {
				return err
			}
			// The float64 iterate is released as it is: hardened noise.
			if err := dpops.AddGaussianHardened(r, grads[g], gradStd[g]); err != nil {
				return err
			}
			inv := gradScale[g]
			for j, v := range grads[g] {
				grads[g][j] = v * inv
				step[off+j] += grads[g][j]
			}
			if o.Constraint.On() {
				if err := acct.SpendGaussian(o.LossClip, lossStd[g], "stage 2 loss "+d.Names[g]); err != nil {
					return err
				}
				noisy, err := dpops.ScalarGaussian(r, lossSum, o.LossClip, lossStd[g]/o.LossClip)
				if err != nil {
					return err
				}
				losses[g] = noisy * lossScale[g]
			}
		}
		if o.Constraint.On() {
			worst := 0
			for g, l := range losses {
				if l > losses[worst] {
					worst = g
				}
			}
			if losses[worst]-o.Constraint.Eta >= 0 {
				off := block(worst)
				for j, v := range grads[worst] {
					step[off+j] += o.Constraint.G * v
				}
			}
			res.Losses = append(res.Losses, append([]float64(nil), losses...))
		}
		for j := range beta {
			beta[j] -= o.LR * step[j]
		}
		linear.ProjectBox(beta, o.Box)
		if t >= o.Steps/2 {
			for j, v := range beta {
				avg[j] += v
			}
			averaged++
		}
	}
	if o.Average {
		for j := range avg {
			beta[j] = avg[j] / float64(averaged)
		}
	}
	res.Beta = beta
	return nil
}

// TrainOLS is the unconstrained OLS variant (the paper's Algorithm 3):
// stage 1 as in Train, then each group releases its own sufficient
// statistics X_kᵀX_k and X_kᵀY_k (clipped to Bounds, Analyze-Gauss) with
// budget μ s_k², half for each. A pooled model solves the sum of the noisy
// statistics; a per-group model solves each group's own (both with Ridge
// and NoiseRidge). It returns an error wrapping
// linear.ErrNotPositiveDefinite (budget spent) when a noisy XᵀX plus the
// ridge cannot be factorised.
func TrainOLS(r *rand.Rand, d *Data, o Options) (*Result, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	if o.Loss != linear.Squared {
		return nil, errors.New("tailoring: the OLS variant needs squared loss")
	}
	if o.WarmStart {
		return nil, errors.New("tailoring: WarmStart is for stage 2 by gradient descent (Train); the OLS variant has no iterations to start")
	}
	res, stage2, err := stages(r, d, o)
	if err != nil {
		return nil, err
	}
	k, p := d.K(), d.Features()
	sum := linear.SufficientStats{XtX: mat.NewSymDense(p, nil), XtY: make([]float64, p)}
	sumVar := 0.0 // variance of the summed XᵀX noise
	if o.Model == PerGroup {
		res.Beta = make([]float64, k*p)
	}
	for g, ex := range d.byGroup {
		st, err := linear.ClippedStats(ex.X, ex.Y, o.Bounds)
		if err != nil {
			return nil, err
		}
		rho := res.Mu * res.Shares[g]
		noisy, err := linear.NoisyStats(r, st, o.Bounds, rho/2, rho/2, stage2, "group "+d.Names[g])
		if err != nil {
			return nil, err
		}
		std := o.xtxNoiseStd(rho / 2)
		if o.Model == PerGroup {
			beta, err := noisy.Solve(o.ridge(std, p))
			if err != nil {
				return nil, fmt.Errorf("tailoring: group %q: %w", d.Names[g], err)
			}
			copy(res.Beta[g*p:], beta)
			continue
		}
		sumVar += std * std
		sum.XtX.AddSym(sum.XtX, noisy.XtX)
		for j, v := range noisy.XtY {
			sum.XtY[j] += v
		}
	}
	if o.Model == Pooled {
		if res.Beta, err = sum.Solve(o.ridge(math.Sqrt(sumVar), p)); err != nil {
			return nil, err
		}
	}
	return res, finish(res, stage2)
}
