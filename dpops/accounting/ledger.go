package accounting

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
)

// DefaultAccountant is the accountant a training run is calibrated and
// receipted with unless it asks for another: PLD, because its ε is a
// proven upper bound like RDP's but 5–12 % smaller for the subsampled
// Gaussian (RDP's conversion to (ε, δ) is lossy), so the same ε buys less
// noise. RDP stays selectable, and is what a run falls back to, saying
// so, where PLD cannot bound it (ErrPLDRange).
const DefaultAccountant = AccountantPLD

// ResolveAccountant is kind with "" meaning DefaultAccountant; anything but
// AccountantPLD and AccountantRDP is an error naming the choices.
func ResolveAccountant(kind string) (string, error) {
	switch kind {
	case "":
		return DefaultAccountant, nil
	case AccountantPLD, AccountantRDP:
		return kind, nil
	}
	return "", fmt.Errorf("accounting: accountant must be %q or %q (got %q)", AccountantPLD, AccountantRDP, kind)
}

// Ledger is a training run's accountant: it charges every release to an
// RDP accountant and, when its kind is AccountantPLD, to a PLD accountant
// too, and states ε and receipts with its kind. The RDP side is always
// kept because a PLD receipt that cannot be computed (ErrPLDRange) falls
// back to it (with a note, never silently), and because the classic
// conversion some callers report alongside is an RDP quantity.
//
// Not safe for concurrent use.
type Ledger struct {
	kind string
	rdp  *RDP
	pld  *PLD // nil for AccountantRDP
}

// NewLedger returns an empty ledger of the given kind ("" is
// DefaultAccountant); opts configures the PLD side (ignored for RDP).
func NewLedger(kind string, opts PLDOptions) (*Ledger, error) {
	kind, err := ResolveAccountant(kind)
	if err != nil {
		return nil, err
	}
	rdp, err := NewRDP(nil)
	if err != nil {
		return nil, err
	}
	l := &Ledger{kind: kind, rdp: rdp}
	if kind == AccountantPLD {
		if l.pld, err = NewPLD(opts); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// Kind is the accountant the ledger states ε with: AccountantPLD or
// AccountantRDP.
func (l *Ledger) Kind() string { return l.kind }

// RDP is the ledger's RDP side (the same charges).
func (l *Ledger) RDP() *RDP { return l.rdp }

// Step charges steps more applications of m to every side.
func (l *Ledger) Step(m Mechanism, steps int) error {
	if l.pld != nil {
		// PLD first: it checks more kinds, and a refused step must leave
		// both sides unchanged.
		probe := *l.pld
		probe.history = slices.Clone(l.pld.history)
		if err := probe.Step(m, steps); err != nil {
			return err
		}
		if err := l.rdp.Step(m, steps); err != nil {
			return err
		}
		*l.pld = probe
		return nil
	}
	return l.rdp.Step(m, steps)
}

// History is every distinct mechanism charged, with its total steps.
func (l *Ledger) History() []Mechanism { return l.rdp.History() }

// Epsilon is ε at delta by the ledger's accountant. A PLD ledger states
// the smaller of PLD's and RDP's ε (both are proven upper bounds; RDP's is
// smaller only far from PLD's range, e.g. ε in the tens), and RDP's where
// PLD cannot bound the composition (ErrPLDRange); fellBack says that RDP's
// was stated.
func (l *Ledger) Epsilon(delta float64) (eps float64, fellBack bool, err error) {
	rdp, _, rerr := EpsilonFromRDP(l.rdp.Orders(), l.rdp.Values(), delta)
	if l.pld == nil {
		return rdp, false, rerr
	}
	eps, err = l.pld.Epsilon(delta)
	switch {
	case errors.Is(err, ErrPLDRange):
		return rdp, true, rerr
	case err != nil:
		return eps, false, err
	case rerr == nil && rdp < eps:
		return rdp, true, nil
	}
	return eps, false, nil
}

// Receipt states the ledger's guarantee at delta: the PLD receipt, or the
// RDP receipt where the ledger is RDP, where PLD cannot bound the run, or
// where RDP's ε is the smaller (see Epsilon). Stating RDP's on a PLD
// ledger says why in the note. A shuffled run's receipt is the ledger's
// receipt of its charged history (ShuffledCharges), with the Poisson-rate
// figure (Epsilon) kept in Shuffle for comparison only.
func (l *Ledger) Receipt(delta float64, run RunInfo) (Receipt, error) {
	run, err := run.normalised()
	if err != nil {
		return Receipt{}, err
	}
	if run.Sampling != SamplingShuffle {
		return l.receipt(delta, run)
	}
	adjacency := AdjacencyZeroOut
	if l.pld != nil {
		adjacency = shuffleAdjacency(l.pld.Options().Relation)
	}
	return shuffledReceipt(l.History(), run, adjacency, func(charged []Mechanism) (Receipt, error) {
		c, err := l.charged(charged)
		if err != nil {
			return Receipt{}, err
		}
		return c.receipt(delta, run)
	}, func() float64 {
		eps, _, err := l.Epsilon(delta)
		if err != nil {
			return math.NaN()
		}
		return eps
	})
}

// charged is an empty ledger of l's kind and options charged with mechs
// (each m.Steps times).
func (l *Ledger) charged(mechs []Mechanism) (*Ledger, error) {
	var opts PLDOptions
	if l.pld != nil {
		opts = l.pld.Options()
	}
	c, err := NewLedger(l.kind, opts)
	if err != nil {
		return nil, err
	}
	for _, m := range mechs {
		if err := c.Step(m, m.Steps); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// ShuffledEpsilon is Epsilon for a run with shuffled batches of
// stepsPerEpoch steps to an epoch: the ε of its charged history
// (ShuffledCharges), a proven bound where Epsilon of the same history is
// only what Poisson sampling would spend.
func (l *Ledger) ShuffledEpsilon(delta float64, stepsPerEpoch int) (eps float64, fellBack bool, err error) {
	charged, _, _, err := ShuffledCharges(l.History(), stepsPerEpoch)
	if err != nil {
		return math.NaN(), false, err
	}
	c, err := l.charged(charged)
	if err != nil {
		return math.NaN(), false, err
	}
	return c.Epsilon(delta)
}

// receipt is Receipt of the history as the ledger composed it (no account
// taken of the sampling).
func (l *Ledger) receipt(delta float64, run RunInfo) (Receipt, error) {
	if l.pld == nil {
		return l.rdp.receipt(delta, run)
	}
	r, err := l.pld.receipt(delta, run)
	var why string
	switch {
	case errors.Is(err, ErrPLDRange):
		why = fmt.Sprintf("the PLD accountant (the default) cannot bound this run, so this is the RDP accountant's receipt: %v", err)
	case err != nil:
		return r, err
	default:
		rdp, _, rerr := EpsilonFromRDP(l.rdp.Orders(), l.rdp.Values(), delta)
		if rerr != nil || r.Epsilon == nil || !(rdp < *r.Epsilon) {
			return r, nil
		}
		why = fmt.Sprintf("the RDP accountant's epsilon (%.6g) is below the PLD accountant's (%.6g, the default) for this run, so this is RDP's receipt; both are upper bounds",
			rdp, *r.Epsilon)
	}
	r, err = l.rdp.receipt(delta, run)
	if err != nil {
		return r, err
	}
	r.AddNote(why)
	return r, nil
}

// LedgerState is a ledger's exact state, what a checkpoint or a silo's
// state file saves: its kind and each side's state.
type LedgerState struct {
	Accountant string
	RDP        RDPState
	PLD        *PLDState // nil for AccountantRDP
}

// State returns a copy of the ledger's state.
func (l *Ledger) State() LedgerState {
	s := LedgerState{Accountant: l.kind, RDP: l.rdp.State()}
	if l.pld != nil {
		p := l.pld.State()
		s.PLD = &p
	}
	return s
}

// Restore replaces the ledger's state by s (from State). A state of
// another accountant is refused, naming both: a run resumed under another
// accountant would state its ε by another analysis than it was calibrated
// with. So is a state whose two sides disagree (an edited file must not
// lower the ε spent).
func (l *Ledger) Restore(s LedgerState) error {
	kind, err := ResolveAccountant(s.Accountant)
	if err != nil {
		return err
	}
	if kind != l.kind {
		return fmt.Errorf("accounting: the saved ledger was kept by the %s accountant, this run uses %s: resume with accountant %s",
			kind, l.kind, kind)
	}
	rdp := &RDP{}
	if err := rdp.Restore(s.RDP); err != nil {
		return err
	}
	var pld *PLD
	if kind == AccountantPLD {
		if s.PLD == nil {
			return errors.New("accounting: the saved PLD ledger has no PLD state")
		}
		pld = &PLD{}
		if err := pld.Restore(*s.PLD); err != nil {
			return err
		}
		if err := sameCharges(rdp.History(), pld.History()); err != nil {
			return err
		}
	}
	l.rdp, l.pld = rdp, pld
	return nil
}

// sameCharges refuses two histories that do not charge the same
// mechanisms the same number of steps.
func sameCharges(rdp, pld []Mechanism) error {
	if len(rdp) != len(pld) {
		return fmt.Errorf("accounting: the saved ledger's RDP side has %d mechanisms, its PLD side %d", len(rdp), len(pld))
	}
	for i := range rdp {
		if !sameRelease(rdp[i], pld[i]) || rdp[i].Steps != pld[i].Steps {
			return fmt.Errorf("accounting: the saved ledger's RDP and PLD sides disagree on mechanism %d (%d and %d steps)", i, rdp[i].Steps, pld[i].Steps)
		}
	}
	return nil
}

// SigmaCalibration is what CalibrateRunSigma calibrates σ with, besides
// the target and the run's shape.
type SigmaCalibration struct {
	// Accountant is AccountantPLD ("" means DefaultAccountant) or
	// AccountantRDP.
	Accountant string
	// PLD configures the PLD accountant (interval, neighbouring relation).
	PLD PLDOptions
	// Companions are the noise-multiplier ratios of releases made every step
	// on the same Poisson sample (see WithCompanion).
	Companions []float64
	// Spent are releases the calibrated steps compose with, each with its
	// Steps (e.g. DP-FERMI's one-off noisy group counts).
	Spent []Mechanism
	// StepsPerEpoch, when not 0, says the batches are shuffled, cut this
	// many to an epoch: σ is calibrated against the shuffled run's bound
	// (ShuffledCharges: one Gaussian per epoch), not against Poisson
	// sampling at rate q.
	StepsPerEpoch int
}

// CalibrateRunSigma is the noise multiplier a run calibrates to targetEps
// with c's accountant: CalibrateSigma for RDP; for PLD the smaller of
// CalibrateSigmaPLD's and CalibrateSigma's (a PLD ledger states the
// smaller ε, see Ledger.Epsilon), RDP's also where PLD cannot bound the
// run (ErrPLDRange). used is the accountant whose σ it is, so the caller
// can say when a PLD run was calibrated by RDP.
//
// PLD results are cached (keyed by every input, so a hit is the value a
// fresh calibration gives, not an approximation): a test suite or a sweep
// builds the same run many times, and each PLD calibration costs a few
// tenths of a second.
func CalibrateRunSigma(targetEps, delta, q float64, steps int, c SigmaCalibration) (sigma float64, used string, err error) {
	kind, err := ResolveAccountant(c.Accountant)
	if err != nil {
		return 0, "", err
	}
	if c.StepsPerEpoch != 0 && q < 1 {
		// ShuffledCharges of steps steps at rate q: ⌈steps/k⌉ Gaussians,
		// i.e. the same calibration at rate 1 over the epochs. (At q = 1
		// every step is already a Gaussian on the whole data.)
		step := SubsampledGaussian(q, 1, 0, "")
		step.Steps = steps
		_, epochs, _, err := ShuffledCharges([]Mechanism{step}, c.StepsPerEpoch)
		if err != nil {
			return 0, "", err
		}
		c.StepsPerEpoch = 0
		return CalibrateRunSigma(targetEps, delta, 1, epochs, c)
	}
	if kind == AccountantPLD {
		key := calibrationKey(targetEps, delta, q, steps, c)
		if s, ok := pldSigmaCache.Load(key); ok {
			c := s.(cachedSigma)
			return c.sigma, c.used, nil
		}
		s, err := CalibrateSigmaPLD(targetEps, delta, q, steps, PLDCalibration{PLDOptions: c.PLD, Companions: c.Companions, Spent: c.Spent})
		if err == nil {
			// Far from PLD's range (ε in the tens, σ well below 1) its
			// search stops at the smallest σ it can bound, and RDP may need
			// less noise: take the smaller σ (the ledger then states the
			// smaller ε, which meets the target).
			if r, _, rerr := CalibrateRunSigma(targetEps, delta, q, steps, SigmaCalibration{Accountant: AccountantRDP, Companions: c.Companions, Spent: c.Spent}); rerr == nil && r < s {
				pldSigmaCache.Store(key, cachedSigma{r, AccountantRDP})
				return r, AccountantRDP, nil
			}
			pldSigmaCache.Store(key, cachedSigma{s, AccountantPLD})
			return s, AccountantPLD, nil
		}
		if !errors.Is(err, ErrPLDRange) {
			return 0, "", err
		}
	}
	opts := make([]CalibrateOption, 0, len(c.Companions)+1)
	for _, r := range c.Companions {
		opts = append(opts, WithCompanion(r))
	}
	if len(c.Spent) > 0 {
		spent := &RDP{}
		for _, m := range c.Spent {
			if err := spent.Step(m, m.Steps); err != nil {
				return 0, "", err
			}
		}
		opts = append(opts, WithSpent(spent.Values()))
	}
	s, err := CalibrateSigma(targetEps, delta, q, steps, opts...)
	return s, AccountantRDP, err
}

// pldSigmaCache holds CalibrateRunSigma's PLD-ledger results (a
// cachedSigma) by calibrationKey.
var pldSigmaCache sync.Map

type cachedSigma struct {
	sigma float64
	used  string
}

// calibrationKey identifies a PLD calibration exactly: %v writes every
// float in its shortest form that reads back as the same float.
func calibrationKey(targetEps, delta, q float64, steps int, c SigmaCalibration) string {
	return fmt.Sprintf("%v|%v|%v|%d|%+v|%v|%+v", targetEps, delta, q, steps, c.PLD, c.Companions, c.Spent)
}

// PlanEpsilon is the ε at delta, by accountant kind ("" is
// DefaultAccountant, falling back to RDP where PLD cannot bound it), of the
// given subsampled-Gaussian releases, each run m.Steps times: what a run will spend, stated
// before it starts with the analysis its receipt will use.
func PlanEpsilon(kind string, opts PLDOptions, delta float64, mechs ...Mechanism) (float64, error) {
	l, err := NewLedger(kind, opts)
	if err != nil {
		return math.NaN(), err
	}
	for _, m := range mechs {
		if err := l.Step(m, m.Steps); err != nil {
			return math.NaN(), err
		}
	}
	eps, _, err := l.Epsilon(delta)
	return eps, err
}
