package accounting

import (
	"fmt"
	"math"
	"slices"
)

// AccountantPLD names the privacy-loss-distribution accountant in receipts
// and answers.
const AccountantPLD = "pld"

// Neighbouring relations the PLD accountant analyses.
const (
	// RelationAddRemove: neighbouring data sets differ by one record added
	// or removed (what the RDP accountant and Opacus assume); the
	// sensitivity of a Poisson-sampled sum is the clip norm C.
	RelationAddRemove = "add-remove"
	// RelationReplaceOne: neighbouring data sets differ by one record's
	// value (--scope sensitive); the sensitivity is 2C, and a noise
	// multiplier is relative to it.
	RelationReplaceOne = "replace-one"
)

// DefaultPLDInterval is the default discretisation interval h of the
// privacy loss. With the connect-the-dots discretisation it keeps ε within
// 0.2 % of Google dp_accounting's (which uses h = 1e-4 too) on the issue-32
// table, and calibrating σ for 60 MNIST epochs (14,040 steps) under a second.
const DefaultPLDInterval = 1e-4

// PLDOptions configures a PLD accountant. The zero value is the default:
// add/remove adjacency, h = DefaultPLDInterval.
type PLDOptions struct {
	// Interval is the discretisation interval h of the privacy loss (0:
	// DefaultPLDInterval). Smaller is tighter and slower: the FFT grows as
	// 1/h.
	Interval float64
	// Relation is RelationAddRemove ("" means it) or RelationReplaceOne.
	Relation string

	// singleGrid keeps every release on the grid Interval even where its
	// loss scale asks for a finer one: looser but faster, for the coarse
	// first pass of CalibrateSigmaPLD.
	singleGrid bool
}

func (o PLDOptions) normalised() (PLDOptions, error) {
	if o.Interval == 0 {
		o.Interval = DefaultPLDInterval
	}
	if !(o.Interval >= 1e-6 && o.Interval <= 0.1) {
		return o, fmt.Errorf("accounting: PLD interval must be in [1e-6, 0.1] (got %v)", o.Interval)
	}
	if o.Relation == "" {
		o.Relation = RelationAddRemove
	}
	if o.Relation != RelationAddRemove && o.Relation != RelationReplaceOne {
		return o, fmt.Errorf("accounting: PLD relation must be %q or %q (got %q)", RelationAddRemove, RelationReplaceOne, o.Relation)
	}
	return o, nil
}

// PLD is the privacy-loss-distribution accountant (Koskela et al. 2020,
// 2021; Doroshenko et al. 2022): it keeps the exact privacy loss of every
// release, discretised pessimistically on a grid of interval h, composes
// the releases by FFT and reads (ε, δ) off the composed distribution. For
// the subsampled Gaussian it is 5–12 % tighter than RDP, whose conversion
// to (ε, δ) is lossy; its ε is still a proven upper bound, never an
// estimate (see discretise and composePLD for why).
//
// It composes, in any mix: Poisson-subsampled Gaussians (kind
// subsampled-gaussian, including joint mechanisms with σ_eff), plain
// Gaussians (kind gaussian, NoiseMultiplier σ) and Laplace releases (kind
// laplace; Step takes Epsilon = sensitivity/scale of ONE release, while
// History, like the Pure accountant, reports the total over its steps). Under add/remove
// adjacency the composition is bounded for the record added and for the
// record removed separately, and ε is the larger (every release of one run
// sees the same neighbouring pair, so the two directions do not mix).
//
// The zero value is ready to use with the default options. Not safe for
// concurrent use.
type PLD struct {
	opts    PLDOptions
	history []Mechanism
	// memo is the last ε computed, keyed by everything it depends on
	// (δ, the options and the history), so a ledger asked again for the
	// same state (an epoch's log line, then its checkpoint, then the
	// report) does not compose it again: the value is the one a fresh
	// composition gives, bit for bit.
	memo *pldMemo
}

// pldMemo is one remembered PLD.directionEpsilon result.
type pldMemo struct {
	key string
	eps []float64
}

// memoKey identifies a directionEpsilon computation exactly: %v writes
// every float in its shortest form that reads back as the same float.
func (a *PLD) memoKey(delta float64, only int) string {
	return fmt.Sprintf("%v|%d|%+v|%+v", delta, only, a.opts, a.history)
}

// NewPLD returns an empty PLD accountant.
func NewPLD(opts PLDOptions) (*PLD, error) {
	o, err := opts.normalised()
	if err != nil {
		return nil, err
	}
	return &PLD{opts: o}, nil
}

// init gives the zero value the default options.
func (a *PLD) init() {
	if a.opts.Interval == 0 {
		a.opts = PLDOptions{Interval: DefaultPLDInterval, Relation: RelationAddRemove}
	}
}

// Options returns the accountant's (normalised) options.
func (a *PLD) Options() PLDOptions {
	a.init()
	return a.opts
}

// Step composes steps more applications of m (m.Steps is ignored).
func (a *PLD) Step(m Mechanism, steps int) error {
	a.init()
	if steps < 0 {
		return fmt.Errorf("accounting: steps must be ≥ 0 (got %d)", steps)
	}
	switch m.Kind {
	case KindSubsampledGaussian:
		if err := checkMechanismParams(m.SampleRate, m.NoiseMultiplier, steps); err != nil {
			return err
		}
	case KindGaussian:
		if !(m.NoiseMultiplier >= 0) {
			return fmt.Errorf("accounting: Gaussian noise multiplier must be ≥ 0 (got %v)", m.NoiseMultiplier)
		}
	case KindLaplace:
		if !(m.Epsilon >= 0) {
			return fmt.Errorf("accounting: Laplace epsilon (sensitivity/scale of one release) must be ≥ 0 (got %v)", m.Epsilon)
		}
	default:
		return fmt.Errorf("accounting: the PLD accountant composes %q, %q and %q mechanisms, not %q",
			KindSubsampledGaussian, KindGaussian, KindLaplace, m.Kind)
	}
	if steps == 0 {
		return nil
	}
	m.Steps = 0
	// Laplace releases of different scales are different releases even
	// under one label (sameRelease, made for totals, ignores Epsilon).
	i := slices.IndexFunc(a.history, func(h Mechanism) bool { return sameRelease(h, m) && h.Epsilon == m.Epsilon })
	if i < 0 {
		a.history = append(a.history, m)
		i = len(a.history) - 1
	}
	a.history[i].Steps += steps
	return nil
}

// History returns every distinct mechanism composed so far with its total
// number of steps, in the order first seen, with the totals a receipt
// reports filled in: a Laplace release's Epsilon is the sum over its
// steps (as the Pure accountant reports it) and a Gaussian's Rho is its
// zCDP cost steps/(2σ²).
func (a *PLD) History() []Mechanism {
	out := slices.Clone(a.history)
	for i, m := range out {
		switch m.Kind {
		case KindLaplace:
			out[i].Epsilon = m.Epsilon * float64(m.Steps)
		case KindGaussian:
			out[i].Rho = float64(m.Steps) / (2 * m.NoiseMultiplier * m.NoiseMultiplier)
		}
	}
	return out
}

// add composes m as History reports it (m.Steps releases; a Laplace
// release's Epsilon is the total over them).
func (a *PLD) add(m Mechanism) error {
	if m.Kind == KindLaplace && m.Steps > 0 {
		m.Epsilon /= float64(m.Steps)
	}
	return a.Step(m, m.Steps)
}

// pldModels returns the loss models of one release in each direction that
// must be bounded (one when the pair is symmetric), or nil and ok=false
// when the release adds no noise (ε = ∞), or nil and ok=true when it
// releases nothing private (σ = ∞, q = 0, ε0 = 0).
func pldModels(m Mechanism, relation string) (models []lossModel, ok bool) {
	switch m.Kind {
	case KindLaplace:
		switch {
		case m.Epsilon == 0:
			return nil, true
		case math.IsInf(m.Epsilon, 1):
			return nil, false
		}
		return []lossModel{laplaceLoss{eps0: m.Epsilon}}, true
	case KindGaussian:
		m.SampleRate = 1
	}
	q, s := m.SampleRate, m.NoiseMultiplier
	switch {
	case q == 0 || math.IsInf(s, 1):
		return nil, true
	case s == 0:
		return nil, false
	case relation == RelationReplaceOne:
		return []lossModel{newReplaceOneLoss(q, s)}, true
	case q == 1:
		return []lossModel{subsampledGaussianLoss{q: 1, sigma: s, remove: true}}, true
	}
	return []lossModel{subsampledGaussianLoss{q: q, sigma: s, remove: true},
		subsampledGaussianLoss{q: q, sigma: s, remove: false}}, true
}

// pldGridPerScale bounds a release's discretisation interval by its loss
// scale: h ≤ 0.02·scale. Connect the dots adds at most h²/4 to the
// variance of each release's loss, so at this interval the composed
// variance grows by at most 1e-4 of itself. Releases with a tiny loss
// (large σ, small q: scale 3e-5 at σ = 30, q = 0.001) need an interval far
// below the default, or their ε over 10⁵ steps comes out above RDP's.
const pldGridPerScale = 0.02

// pldMaxFineAtoms caps the atoms of one release on its finer grid.
const pldMaxFineAtoms = 1 << 17

// pldDirections discretises every mechanism in mechs and groups the pmfs
// by direction: directions[d] is the composition to bound for direction d
// (remove, add); only one of them unless only is allDirections.
// Symmetric releases appear in both. infinite reports a release without
// noise.
//
// A release whose loss scale needs a finer interval than h (see
// pldGridPerScale) is discretised on that finer grid, composed over its
// steps there, and the composition is moved onto the grid h by
// regridding, which adds the h²/4 only once instead of once per step.
func pldDirections(mechs []Mechanism, opts PLDOptions, only int) (directions [2][]pldPart, infinite bool, err error) {
	h := opts.Interval
	for _, m := range mechs {
		models, ok := pldModels(m, opts.Relation)
		if !ok {
			return directions, true, nil
		}
		for d := range 2 {
			if len(models) == 0 || only != allDirections && d != only {
				continue
			}
			model := models[min(d, len(models)-1)]
			// The upper tail beyond the grid goes to +∞ and is charged to δ
			// once per step: keep it below pldTailMass in total.
			tail := pldTailMass / float64(m.Steps)
			fine := pldGridPerScale * model.lossScale()
			// A heavy upper tail (small σ and q) spans many fine intervals:
			// cap the atoms, trading tightness for time.
			lo, hi := model.lossRange(tail)
			fine = math.Max(fine, (hi-lo)/pldMaxFineAtoms)
			if atoms := (hi - lo) / math.Min(h, fine); !(atoms <= pldMaxFFT) {
				// A release with almost no noise (σ = 1e-300 is accepted
				// input) has a loss range no grid can hold: refuse it
				// before allocating, as a composition too wide for the FFT
				// is refused.
				return directions, false, fmt.Errorf("accounting: one release's privacy loss spans [%.4g, %.4g], %.3g grid intervals (limit %d; noise multiplier %v): %w",
					lo, hi, atoms, pldMaxFFT, m.NoiseMultiplier, ErrPLDRange)
			}
			if opts.singleGrid || fine >= h {
				directions[d] = append(directions[d], pldPart{pmf: discretise(model, h, tail, true), steps: m.Steps})
				continue
			}
			c, err := composePLD([]pldPart{{pmf: discretise(model, fine, tail, true), steps: m.Steps}}, fine)
			if err != nil {
				return directions, false, err
			}
			directions[d] = append(directions[d], pldPart{pmf: c.regrid(h), steps: 1})
		}
	}
	return directions, false, nil
}

// allDirections selects both directions in composedDirections.
const allDirections = -1

// composedDirections composes mechs in each direction (remove, add), or
// only in direction only (0 or 1) unless it is allDirections; a direction
// without releases is left out.
//
// The two directions are independent computations on the same inputs, so
// they run on two goroutines: the result is the same, bit for bit, as
// running them one after the other (each is deterministic and shares
// nothing), in about half the time where a second core is free.
func composedDirections(mechs []Mechanism, opts PLDOptions, only int) (out []composedPLD, infinite bool, err error) {
	if only != allDirections {
		return composedDirection(mechs, opts, only)
	}
	var add []composedPLD
	var addInf bool
	var addErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		add, addInf, addErr = composedDirection(mechs, opts, 1)
	}()
	out, infinite, err = composedDirection(mechs, opts, 0)
	<-done
	switch {
	case err != nil || infinite: // the remove direction's answer, as a sequential loop gives it first
		return nil, infinite, err
	case addErr != nil || addInf:
		return nil, addInf, addErr
	}
	return append(out, add...), false, nil
}

// composedDirection is composedDirections for the one direction d: nil
// when d has no releases.
func composedDirection(mechs []Mechanism, opts PLDOptions, d int) (out []composedPLD, infinite bool, err error) {
	dirs, infinite, err := pldDirections(mechs, opts, d)
	if err != nil || infinite {
		return nil, infinite, err
	}
	if len(dirs[d]) == 0 {
		return nil, false, nil
	}
	c, err := composePLD(dirs[d], opts.Interval)
	if err != nil {
		return nil, false, err
	}
	return []composedPLD{c}, false, nil
}

// checkPLDDelta accepts δ in [1e-12, 1): below 1e-12 the window's
// truncated tails (≤ 2e-16 each) and the FFT's round-off are no longer
// negligible next to δ.
func checkPLDDelta(delta float64) error {
	if !(delta >= 1e-12 && delta < 1) {
		return fmt.Errorf("accounting: the PLD accountant needs δ in [1e-12, 1) (got %v): %w", delta, ErrPLDRange)
	}
	return nil
}

// PLDEpsilon is the ε for which the composition of mechs (each run
// m.Steps times, given as History and receipts report them: a Laplace
// release's Epsilon is the total over its steps) is (ε, δ)-DP, by the PLD
// accountant. An error wrapping ErrPLDRange means the PLD accountant cannot
// bound this composition (use RDP); +Inf with no error means a release
// without noise.
func PLDEpsilon(mechs []Mechanism, delta float64, opts PLDOptions) (float64, error) {
	a, err := NewPLD(opts)
	if err != nil {
		return 0, err
	}
	for _, m := range mechs {
		if err := a.add(m); err != nil {
			return 0, err
		}
	}
	return a.Epsilon(delta)
}

// Epsilon is the smallest ε ≥ 0 for which everything composed so far is
// (ε, δ)-DP, up to the discretisation (which only makes it larger). An
// error wrapping ErrPLDRange means the PLD accountant cannot bound this
// composition; the caller falls back to RDP and says so.
func (a *PLD) Epsilon(delta float64) (float64, error) {
	eps, err := a.directionEpsilon(delta, allDirections)
	if err != nil {
		return math.NaN(), err
	}
	return slices.Max(eps), nil
}

// directionEpsilon is ε in each direction composed (see
// composedDirections); one value per direction with releases, or [0] when
// nothing was composed.
func (a *PLD) directionEpsilon(delta float64, only int) ([]float64, error) {
	a.init()
	if err := checkPLDDelta(delta); err != nil {
		return nil, err
	}
	key := a.memoKey(delta, only)
	if a.memo != nil && a.memo.key == key {
		return slices.Clone(a.memo.eps), nil
	}
	eps, err := a.composedEpsilon(delta, only)
	if err == nil {
		a.memo = &pldMemo{key: key, eps: slices.Clone(eps)}
	}
	return eps, err
}

// composedEpsilon is directionEpsilon without the memo.
func (a *PLD) composedEpsilon(delta float64, only int) ([]float64, error) {
	comps, infinite, err := composedDirections(a.history, a.opts, only)
	if err != nil {
		return nil, err
	}
	if infinite {
		return []float64{math.Inf(1)}, nil
	}
	eps := []float64{0}
	if len(comps) > 0 {
		eps = eps[:0]
	}
	for _, c := range comps {
		e, err := c.epsilon(delta)
		if err != nil {
			return nil, err
		}
		eps = append(eps, e)
	}
	return eps, nil
}

// Delta is the δ of everything composed so far at the given ε ≥ 0: an
// upper bound on the largest hockey-stick divergence over both directions.
func (a *PLD) Delta(eps float64) (float64, error) {
	if !(eps >= 0) {
		return math.NaN(), fmt.Errorf("accounting: epsilon must be ≥ 0 (got %v)", eps)
	}
	a.init()
	comps, infinite, err := composedDirections(a.history, a.opts, allDirections)
	if err != nil {
		return math.NaN(), err
	}
	if infinite {
		return 1, nil
	}
	var d float64
	for _, c := range comps {
		d = math.Max(d, c.delta(eps))
	}
	return d, nil
}
