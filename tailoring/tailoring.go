package tailoring

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/dpops/accounting"
	"github.com/fairdp/fairdp/linear"
	"github.com/fairdp/fairdp/loaders"
	"gonum.org/v1/gonum/mat"
)

// Method says how stage 2's budget is split across groups.
type Method int

const (
	// DPSE (the paper's method) runs stage 1 and gives group k the share
	// s_k² of stage 2's budget, s_k being its DP standard error.
	DPSE Method = iota
	// DPNoSE is the baseline: no stage 1, the whole budget goes to stage 2
	// and every group gets the same share 1/K.
	DPNoSE
)

// String is the name used by the CLI and in reports.
func (m Method) String() string {
	switch m {
	case DPSE:
		return "dpse"
	case DPNoSE:
		return "dpnose"
	}
	return fmt.Sprintf("Method(%d)", int(m))
}

// Model says which coefficients stage 2 fits.
type Model int

const (
	// Pooled fits one coefficient vector β for every group (the paper's
	// setting, where the bounded-group-loss constraint trades groups off).
	Pooled Model = iota
	// PerGroup fits one coefficient block β_k per group (β holds K blocks of
	// P coefficients, group k's records use block k): a group's predictions
	// then depend only on its own noisy releases, so its budget share
	// decides its accuracy directly.
	PerGroup
)

// String is the name used by the CLI and in reports.
func (m Model) String() string {
	switch m {
	case Pooled:
		return "pooled"
	case PerGroup:
		return "per-group"
	}
	return fmt.Sprintf("Model(%d)", int(m))
}

// Objective says what a group loss ℓ_k is in stage 2's Lagrangian. The
// paper gives two readings, and they weigh groups differently.
type Objective int

const (
	// GroupMeans follows the paper's Algorithm 2 (line 10): ℓ_k =
	// (1/n_k) Σ_{i ≤ n_k} loss_i, group k's mean loss, so f = Σ_k ℓ_k gives
	// every group the same weight whatever its size (a 500-record group
	// counts as much as a 10,000-record one) and η is in the units of a
	// group's mean loss. The noisy sums are divided by the public n_k.
	GroupMeans Objective = iota
	// GroupSums follows the paper's synthetic study (its definition
	// ℓ_k(c, Z) = Σ_{i ≤ n_k} (Y_i − ⟨X_ki, c⟩)², f(ℓ) = Σ_k ℓ_k and
	// g(ℓ) = max_k ℓ_k): ℓ_k is group k's loss sum, so f weights every record
	// equally (ordinary, record-weighted regression when the constraint is
	// off) and η is in the units of a group's loss sum (the paper's g has
	// η = 0). The step is LR·∇h/N with N = Σ_k n_k (public): scaling h by
	// 1/N moves no minimiser, and it keeps LR the step size of a
	// record-mean loss, comparable with GroupMeans.
	GroupSums
)

// String is the name used by the CLI and in reports.
func (o Objective) String() string {
	switch o {
	case GroupMeans:
		return "means"
	case GroupSums:
		return "sums"
	}
	return fmt.Sprintf("Objective(%d)", int(o))
}

// BoundedGroupLoss is the constraint max_k ℓ_k ≤ Eta, enforced through the
// Lagrangian h = Σ_k ℓ_k + G·[g ≥ 0]·g with g = max_k ℓ_k − Eta (ℓ_k as
// Options.Objective defines it). G = 0 turns it off.
type BoundedGroupLoss struct {
	Eta float64
	G   float64
}

// On reports whether the constraint is active (G > 0).
func (c BoundedGroupLoss) On() bool { return c.G > 0 }

// Options configures Train. The zero value is not usable: set Rho and
// Bounds; everything else has the defaults of DefaultOptions.
type Options struct {
	// Rho is the total zCDP budget ρ of the run.
	Rho float64
	// StageOneShare is τ/ρ, the share of stage 1 (default 0.2: τ = 0.2ρ,
	// μ = 0.8ρ). DPNoSE has no stage 1 and spends all of ρ in stage 2.
	StageOneShare float64
	Method        Method
	Model         Model
	// Loss is linear.Squared (regression) or linear.Logistic
	// (classification with targets in {0, 1}).
	Loss linear.Loss
	// Intercept prepends a constant column to the features.
	Intercept bool

	// Bounds are stage 1's public data bounds (feature row norm, |y|),
	// intercept column included.
	Bounds linear.Bounds
	// ResidualClip bounds each squared residual in the stage-1 sums S_k,
	// their sensitivity (0: Bounds.Y²).
	ResidualClip float64
	// Ridge is a public λ added to every noisy XᵀX before solving (stage 1
	// and the OLS variant; 0: none).
	Ridge float64
	// NoiseRidge adds NoiseRidge·σ·√P more, σ being the std of that XᵀX's
	// Analyze-Gauss noise (public: it depends on Bounds and ρ only). The
	// spectral norm of P×P symmetric Gaussian noise is about 2σ√P, so with
	// NoiseRidge ≈ 2 the noisy XᵀX plus the ridge dominates XᵀX with high
	// probability: the solve neither fails nor explodes, at the price of
	// shrinking β where the noise is comparable to the data (0: none).
	NoiseRidge float64

	// Steps is stage 2's number of iterations T (default 200).
	Steps int
	// LR is stage 2's step size on the gradient of h (default 0.1).
	LR float64
	// GradClip is the per-example gradient norm bound Δ (default 2, the
	// paper's two-group setting).
	GradClip float64
	// LossClip bounds each example's loss in the released group losses, their
	// sensitivity (default Bounds.Y² for squared loss, 10 for logistic).
	LossClip float64
	// Box is the projection bound: β ∈ [−Box, Box]^P (default 5).
	Box float64
	// Constraint is the bounded-group-loss constraint (off by default).
	Constraint BoundedGroupLoss
	// Objective is the reading of the group losses ℓ_k in stage 2 (default
	// GroupMeans, Algorithm 2's; GroupSums is the synthetic study's).
	// TrainOLS has no objective to read: its pooled fit solves the summed
	// statistics, i.e. the record-weighted (GroupSums) least squares.
	Objective Objective
	// WarmStart starts stage 2 at stage 1's private OLS fit β̃ (projected
	// onto the box; copied into every block of a per-group model) instead
	// of β = 0. The paper leaves θ₁ arbitrary. β̃ is already released, so
	// the start costs nothing; DPNoSE has no stage 1 and still starts at 0,
	// as does a run whose stage 1 found no β̃ (XᵀX not positive definite).
	// TrainOLS refuses it (it has no iterations).
	WarmStart bool
	// Average returns the mean of the last half of the iterates instead of
	// the last one.
	Average bool
	// BaselineStageTwoOnly makes DPNoSE spend only μ = (1 − StageOneShare)ρ,
	// the budget DPSE leaves to stage 2, instead of all of ρ: a comparison
	// at equal stage-2 budget rather than equal total budget.
	BaselineStageTwoOnly bool
}

// DefaultOptions returns the paper's defaults: τ = 0.2ρ, DPSE, pooled
// squared-loss model with intercept, T = 200, step 0.1, Δ = 2, β ∈ [−5, 5]^P.
func DefaultOptions(rho float64, bounds linear.Bounds) Options {
	return Options{Rho: rho, StageOneShare: 0.2, Method: DPSE, Model: Pooled, Loss: linear.Squared,
		Intercept: true, Bounds: bounds, Steps: 200, LR: 0.1, GradClip: 2, Box: 5}
}

// withDefaults fills unset fields and validates.
func (o Options) withDefaults() (Options, error) {
	if err := o.Bounds.Validate(); err != nil {
		return o, fmt.Errorf("tailoring: %w", err)
	}
	if o.StageOneShare == 0 {
		o.StageOneShare = 0.2
	}
	if o.Steps == 0 {
		o.Steps = 200
	}
	if o.LR == 0 {
		o.LR = 0.1
	}
	if o.GradClip == 0 {
		o.GradClip = 2
	}
	if o.Box == 0 {
		o.Box = 5
	}
	if o.ResidualClip == 0 {
		o.ResidualClip = o.Bounds.Y * o.Bounds.Y
	}
	if o.LossClip == 0 {
		o.LossClip = o.Bounds.Y * o.Bounds.Y
		if o.Loss == linear.Logistic {
			o.LossClip = 10
		}
	}
	bad := func(format string, a ...any) (Options, error) {
		return o, fmt.Errorf("tailoring: "+format, a...)
	}
	switch {
	case !(o.Rho > 0) || math.IsInf(o.Rho, 1):
		return bad("Rho = %v, want a finite zCDP budget > 0", o.Rho)
	case !(o.StageOneShare > 0 && o.StageOneShare < 1):
		return bad("StageOneShare = %v, want τ/ρ in (0, 1)", o.StageOneShare)
	case o.Method != DPSE && o.Method != DPNoSE:
		return bad("unknown Method %d", int(o.Method))
	case o.Model != Pooled && o.Model != PerGroup:
		return bad("unknown Model %d", int(o.Model))
	case o.Objective != GroupMeans && o.Objective != GroupSums:
		return bad("unknown Objective %d", int(o.Objective))
	case o.Loss != linear.Squared && o.Loss != linear.Logistic:
		return bad("unknown Loss %d", int(o.Loss))
	case o.Steps < 1:
		return bad("Steps = %d, want ≥ 1", o.Steps)
	case !(o.LR > 0) || math.IsInf(o.LR, 1):
		return bad("LR = %v, want a finite step size > 0", o.LR)
	case !(o.GradClip > 0) || math.IsInf(o.GradClip, 1):
		return bad("GradClip = %v, want a finite bound > 0", o.GradClip)
	case !(o.LossClip > 0) || math.IsInf(o.LossClip, 1):
		return bad("LossClip = %v, want a finite bound > 0", o.LossClip)
	case !(o.ResidualClip > 0) || math.IsInf(o.ResidualClip, 1):
		return bad("ResidualClip = %v, want a finite bound > 0", o.ResidualClip)
	case !(o.Box > 0):
		return bad("Box = %v, want > 0 (+Inf: no projection)", o.Box)
	case !(o.Ridge >= 0) || math.IsInf(o.Ridge, 1):
		return bad("Ridge = %v, want a finite number ≥ 0", o.Ridge)
	case !(o.NoiseRidge >= 0) || math.IsInf(o.NoiseRidge, 1):
		return bad("NoiseRidge = %v, want a finite number ≥ 0", o.NoiseRidge)
	case !(o.Constraint.G >= 0) || math.IsInf(o.Constraint.G, 1):
		return bad("Constraint.G = %v, want a finite multiplier ≥ 0", o.Constraint.G)
	case math.IsNaN(o.Constraint.Eta) || math.IsInf(o.Constraint.Eta, 0):
		return bad("Constraint.Eta = %v, want a finite loss bound", o.Constraint.Eta)
	}
	return o, nil
}

// ridge is the λ added to a noisy XᵀX whose noise has standard deviation
// std: Ridge + NoiseRidge·std·√P.
func (o Options) ridge(std float64, p int) float64 {
	return o.Ridge + o.NoiseRidge*std*math.Sqrt(float64(p))
}

// xtxNoiseStd is the Analyze-Gauss noise std of an XᵀX released at budget
// rho: XNorm²/√(2ρ).
func (o Options) xtxNoiseStd(rho float64) float64 {
	return o.Bounds.XtXSensitivity() / math.Sqrt(2*rho)
}

// Tau is stage 1's budget τ = StageOneShare·ρ (0 for DPNoSE, which has no
// stage 1).
func (o Options) Tau() float64 {
	if o.Method == DPNoSE {
		return 0
	}
	return o.StageOneShare * o.Rho
}

// Mu is stage 2's budget: μ = ρ − τ for DPSE; ρ for DPNoSE, or μ with
// BaselineStageTwoOnly.
func (o Options) Mu() float64 {
	if o.Method == DPNoSE && o.BaselineStageTwoOnly {
		return (1 - o.StageOneShare) * o.Rho
	}
	return o.Rho - o.Tau()
}

// FitBudget is the zCDP budget one fit may spend, τ + μ: ρ, or μ for
// DPNoSE with BaselineStageTwoOnly. A fit whose stage 1 falls back spends
// less, but whether it does depends on the data, so a release of fits is
// charged this.
func (o Options) FitBudget() float64 { return o.Tau() + o.Mu() }

// Data is a regression (or binary classification) data set split by group,
// in the form both stages use: X with the intercept column if requested,
// targets, and the rows of each group. Build it once with NewData and share
// it between trials (it is read-only).
type Data struct {
	X      *mat.Dense
	Y      []float64
	Groups []int
	Names  []string
	// Sizes are the group sizes n_k, treated as public.
	Sizes []int
	// byGroup[k] holds group k's examples.
	byGroup []*linear.Examples
}

// NewData checks a loaders.Dataset for use here and splits it by group.
// Regression needs Targets; classification (logistic loss) uses Labels,
// which must be 0/1. Every group must have at least one record.
func NewData(d *loaders.Dataset, loss linear.Loss, intercept bool) (*Data, error) {
	if d == nil {
		return nil, errors.New("tailoring: nil data set")
	}
	if err := d.Validate(); err != nil {
		return nil, fmt.Errorf("tailoring: %w", err)
	}
	if d.IsImage() {
		return nil, fmt.Errorf("tailoring: data set %q holds images; budget tailoring fits linear models on tabular features", d.Name)
	}
	n := d.N()
	y := make([]float64, n)
	switch loss {
	case linear.Squared:
		if d.Targets == nil {
			return nil, fmt.Errorf("tailoring: data set %q has no regression targets (set the schema's \"target\" column)", d.Name)
		}
		copy(y, d.Targets)
	case linear.Logistic:
		if d.Labels == nil || len(d.LabelNames) != 2 {
			return nil, fmt.Errorf("tailoring: data set %q needs binary labels for logistic loss (has %d label names)", d.Name, len(d.LabelNames))
		}
		for i, l := range d.Labels {
			y[i] = float64(l)
		}
	default:
		return nil, fmt.Errorf("tailoring: unknown loss %d", int(loss))
	}
	for i, v := range y {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("tailoring: data set %q record %d has target %v, want a finite number", d.Name, i, v)
		}
	}
	x := mat.NewDense(n, d.Dim, append([]float64(nil), d.X...))
	if intercept {
		x = linear.AddIntercept(x)
	}
	k := len(d.GroupNames)
	data := &Data{X: x, Y: y, Groups: append([]int(nil), d.Groups...), Names: append([]string(nil), d.GroupNames...),
		Sizes: d.GroupCounts()}
	for g, size := range data.Sizes {
		if size == 0 {
			return nil, fmt.Errorf("tailoring: data set %q has no records in group %q; every group needs records (drop it from the schema's groups)", d.Name, data.Names[g])
		}
	}
	_, p := x.Dims()
	data.byGroup = make([]*linear.Examples, k)
	for g := range k {
		rows := groupRows(data.Groups, g)
		xg := mat.NewDense(len(rows), p, nil)
		yg := make([]float64, len(rows))
		for i, row := range rows {
			xg.SetRow(i, x.RawRowView(row))
			yg[i] = y[row]
		}
		var err error
		if data.byGroup[g], err = linear.NewExamples(xg, yg); err != nil {
			return nil, fmt.Errorf("tailoring: group %q: %w", data.Names[g], err)
		}
	}
	return data, nil
}

func groupRows(groups []int, g int) []int {
	var rows []int
	for i, s := range groups {
		if s == g {
			rows = append(rows, i)
		}
	}
	return rows
}

// K is the number of groups.
func (d *Data) K() int { return len(d.Sizes) }

// Features is the number of columns of X (intercept included).
func (d *Data) Features() int { _, p := d.X.Dims(); return p }

// StandardErrors is stage 1's result.
type StandardErrors struct {
	// S are the normalised DP standard errors s_k (Σ s_k² = 1).
	S []float64
	// Residuals are the noisy clipped squared-residual sums S_k (nil when
	// the OLS fit failed).
	Residuals []float64
	// Beta is the DP OLS fit β̃ (nil when XᵀX was not positive definite).
	Beta []float64
	// Fallback says why S is uniform (1/√K each), "" when it is not.
	Fallback string
}

// Uniform is the fallback split s_k = 1/√K.
func Uniform(k int) []float64 {
	s := make([]float64, k)
	for i := range s {
		s[i] = 1 / math.Sqrt(float64(k))
	}
	return s
}

// Normalise returns s_k = sqrt(S_k/n_k) / sqrt(Σ_j S_j/n_j), so that
// Σ s_k² = 1 (Alabi and Wiggins 2023). It reports false (and returns nil) when some
// S_k ≤ 0, where the standard error is undefined.
func Normalise(residuals []float64, sizes []int) ([]float64, bool) {
	if len(residuals) != len(sizes) {
		panic("tailoring.Normalise: residuals and sizes differ in length")
	}
	total := 0.0
	for k, v := range residuals {
		if !(v > 0) || sizes[k] <= 0 {
			return nil, false
		}
		total += v / float64(sizes[k])
	}
	s := make([]float64, len(residuals))
	for k, v := range residuals {
		s[k] = math.Sqrt(v / float64(sizes[k]) / total)
	}
	return s, true
}

// EstimateStandardErrors is stage 1 (the paper's Algorithm 1), τ-zCDP: τ is cut into
// K+1 equal parts; the first buys the pooled DP OLS fit β̃ (half for XᵀX with
// Analyze-Gauss noise, half for XᵀY, data clipped to Bounds), part k+1 buys
// the noisy sum S_k of group k's squared residuals (y − xᵀβ̃)², each clipped
// to ResidualClip. Then s_k = sqrt(S_k/n_k), normalised so that Σ s_k² = 1.
// When the noisy XᵀX is not positive definite (the S_k are then not
// released and their parts stay unspent) or some S_k ≤ 0, every group gets
// s_k = 1/√K. Charges go to acct, which should have budget τ.
func EstimateStandardErrors(r *rand.Rand, d *Data, o Options, tau float64, acct *accounting.ZCDP) (StandardErrors, error) {
	if r == nil || d == nil || acct == nil {
		return StandardErrors{}, errors.New("tailoring.EstimateStandardErrors: nil *rand.Rand, data or accountant")
	}
	if !(tau > 0) || math.IsInf(tau, 1) {
		return StandardErrors{}, fmt.Errorf("tailoring: stage-1 budget τ = %v, want a finite number > 0", tau)
	}
	o, err := o.withDefaults()
	if err != nil {
		return StandardErrors{}, err
	}
	part := tau / float64(d.K()+1)
	st, err := linear.ClippedStats(d.X, d.Y, o.Bounds)
	if err != nil {
		return StandardErrors{}, err
	}
	noisy, err := linear.NoisyStats(r, st, o.Bounds, part/2, part/2, acct, "stage 1")
	if err != nil {
		return StandardErrors{}, err
	}
	release := func(sums []float64) ([]float64, error) {
		std, err := accounting.GaussianStdForRho(o.ResidualClip, part)
		if err != nil {
			return nil, err
		}
		out := make([]float64, len(sums))
		for g, v := range sums {
			if err := acct.SpendGaussian(o.ResidualClip, std, "stage 1 residuals "+d.Names[g]); err != nil {
				return nil, err
			}
			if out[g], err = dpops.ScalarGaussian(r, v, o.ResidualClip, std/o.ResidualClip); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return standardErrors(d, o, noisy, o.ridge(o.xtxNoiseStd(part/2), d.Features()), release)
}

// standardErrors is stage 1 after the release of the noisy statistics: the
// fit (with the given ridge), the residual sums (released through release,
// which adds the noise and charges it) and the fallbacks. It is separate from the noise so that
// the fallbacks can be tested on chosen noisy values.
func standardErrors(d *Data, o Options, noisy linear.SufficientStats, ridge float64, release func(sums []float64) ([]float64, error)) (StandardErrors, error) {
	k := d.K()
	beta, err := noisy.Solve(ridge)
	if errors.Is(err, linear.ErrNotPositiveDefinite) {
		return StandardErrors{S: Uniform(k), Fallback: "the noisy XᵀX is not positive definite"}, nil
	}
	if err != nil {
		return StandardErrors{}, err
	}
	xc, yc := o.Bounds.Clip(d.X, d.Y)
	fit := linear.Predict(xc, beta)
	sums := make([]float64, k)
	for i, g := range d.Groups {
		res := yc[i] - fit[i]
		sums[g] += math.Min(res*res, o.ResidualClip)
	}
	se := StandardErrors{Beta: beta}
	if se.Residuals, err = release(sums); err != nil {
		return StandardErrors{}, err
	}
	s, ok := Normalise(se.Residuals, d.Sizes)
	if !ok {
		var bad []string
		for g, v := range se.Residuals {
			if !(v > 0) {
				bad = append(bad, fmt.Sprintf("S(%s) = %.4g", d.Names[g], v))
			}
		}
		se.S, se.Fallback = Uniform(k), "a noisy residual sum is ≤ 0 ("+strings.Join(bad, ", ")+")"
		return se, nil
	}
	se.S = s
	return se, nil
}

// GroupBudgets is stage 2's per-iteration zCDP budget of each group's
// release: μ s_k² / (2T) (the paper's Algorithm 2) when the gradient and the loss are
// both released (constraint on), μ s_k² / T for the gradient alone.
func GroupBudgets(s []float64, mu float64, steps int, releasesPerStep int) []float64 {
	out := make([]float64, len(s))
	for k, v := range s {
		out[k] = mu * v * v / float64(releasesPerStep*steps)
	}
	return out
}
