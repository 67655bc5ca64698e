package federated

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/dpops/accounting"
	"github.com/fairdp/fairdp/fermi"
	"github.com/fairdp/fairdp/loaders"
	"github.com/fairdp/fairdp/models"
	"github.com/fairdp/fairdp/nn"
	"github.com/fairdp/fairdp/trainer"
)

// Info is what a silo tells the server before training: the shapes the
// server must send, the silo's averaging weight (its record count, which
// the protocol treats as public) and how many rounds its budget was
// calibrated for.
type Info struct {
	Index     int
	Records   int
	Spec      models.Spec
	NumParams int
	Groups    int // k sensitive groups
	Classes   int // l classes
	WLen      int // Mats·k·l values of W
	Rounds    int // rounds the silo's noise was calibrated for
	Epsilon   float64
	Delta     float64
	Private   bool
	Spent     int // rounds already answered (after a restart)
	// Sigma and SampleRate are the silo's noise multiplier and the sampling
	// rate its ledger charges a round with (the Poisson rate, or 1 under
	// --scope sensitive: fermi.DPFERMI.AccountedQ); Receipt is its receipt
	// for all Spent rounds (across restarts).
	Sigma, SampleRate float64
	Receipt           accounting.Receipt
	// Accountant is the accountant the silo's ledger states ε with
	// (accounting.AccountantPLD or AccountantRDP; "" from a silo that
	// predates the field, which kept RDP): the server refuses a federation
	// whose silos, or whose own setting, disagree, since the ε it reports
	// per silo and the budgets the silos refuse rounds at are only
	// comparable under one analysis.
	Accountant string
}

// Request is one round's broadcast: the current θ (flattened in
// Model.Params order) and W.
type Request struct {
	Round int
	Theta []float64
	W     []float64
}

// Message is a silo's answer: the θ descent direction and the W ascent
// direction of DP-FERMI's step on its batch, each already averaged over the
// silo's expected batch size and noised as the privacy scope requires.
// LossSum (the batch's summed loss) is sent only when the whole record is
// not protected (--scope sensitive, or not private); Epsilon is the silo's
// ε spent so far.
type Message struct {
	Round   int       `json:"round"`
	Theta   []float64 `json:"theta"`
	W       []float64 `json:"w"`
	LossSum float64   `json:"loss_sum"`
	Epsilon float64   `json:"epsilon"`
}

// faultBeforeSave, set only by tests, is called after a round's message is
// computed and charged in memory but before it is saved, and may fail the
// round there, as a crash at that moment would.
var faultBeforeSave func(silo, round int) error

// ErrMalformed marks a request the silo rejected as malformed.
var ErrMalformed = errors.New("federated: malformed request")

// Silo is one party of the federation: its records, its own sampler and
// noise streams, one DP-FERMI instance calibrated with its own record count
// ñ, and a ledger (the accountant of everything it has ever released,
// across restarts) that refuses rounds past its ε budget.
type Silo[T nn.Float] struct {
	index  int
	data   *loaders.Dataset
	alg    *fermi.DPFERMI[T]
	model  *models.Model[T]
	sample dpops.Sampler
	info   Info
	budget float64 // ε the silo will not exceed (+Inf: not private)
	delta  float64 // δ of its guarantee (the first start's)
	batch  trainer.Batch[T]
	drawn  bool

	// ledger composes every release: the group counts (once) and every
	// round's message, at the noise it was actually sent with.
	ledger *accounting.Ledger
	// state mirrors the ledger on disk (statePath, "" for none) and is
	// saved before any answer leaves the silo; saved says the last answer
	// is on disk.
	state     SiloState
	statePath string
	saved     bool
}

// SiloOptions configure NewSilo.
type SiloOptions struct {
	Index int
	// Records is the number of records the averaging weight states; 0 means
	// the silo's own count.
	Records int
	// Batch is the silo's expected batch size (0: the run's batch).
	Batch int
	// Budget is the ε the silo refuses to exceed (0: the run's ε).
	Budget float64
	// State is what the silo released before a restart (LoadSiloState); nil
	// for a first start. The silo continues its ledger, reuses its released
	// group counts and answers its last round again if asked.
	State *SiloState
	// StatePath, if set, is where the silo saves its state (atomically,
	// synced) after every release and before the answer is returned.
	StatePath string
}

// SiloSource returns silo index's randomness for restart generation gen.
// Silo 0's first start uses the run's own source, so a one-silo federation
// draws exactly the batches and noise of central DP-FERMI with the same
// seed; other silos and restarts get independent streams (derived from the
// seed when the run is seeded, from crypto/rand otherwise).
func SiloSource(run dpops.Source, index, gen int) dpops.Source {
	if index == 0 && gen == 0 {
		return run
	}
	if !run.Seeded {
		_, src := dpops.NewRand(nil)
		return src
	}
	var buf [8]byte
	binary.LittleEndian.PutUint64(buf[:], run.Derive(fmt.Sprintf("steffle/silo-%d/generation-%d", index, gen)).Uint64())
	seed := binary.LittleEndian.Uint64(buf[:])
	_, src := dpops.NewRand(&seed)
	return src
}

// NewSilo builds silo opts.Index over its records with cfg's settings
// (epochs, batch, privacy, fairness) and the randomness src (for a restart,
// SiloSource with the next generation). With opts.State it continues the
// earlier start's ledger; with opts.StatePath it writes its state before
// returning, so a silo that cannot record its spending never starts.
// cfg's privacy and fairness settings are read here once, as DP-FERMI's
// options (fermi.OptionsOf), and passed on as values.
func NewSilo[T nn.Float](cfg trainer.Config, data *loaders.Dataset, src dpops.Source, opts SiloOptions) (*Silo[T], error) {
	return newSilo[T](cfg, fermi.OptionsOf(cfg), data, src, opts)
}

// newSilo is NewSilo with DP-FERMI's settings o (ε, δ, clip, σ, the
// accountant and sampling, the fairness player's, epochs and batch) given
// as values. cfg still supplies the model (trainer.ModelSpec) and the job
// DP-FERMI is built on; its privacy section is not read.
func newSilo[T nn.Float](cfg trainer.Config, o fermi.Options, data *loaders.Dataset, src dpops.Source, opts SiloOptions) (*Silo[T], error) {
	if data == nil || data.N() == 0 {
		return nil, fmt.Errorf("federated: silo %d has no records", opts.Index)
	}
	if opts.Batch > 0 {
		o.Batch = opts.Batch
	}
	o.Batch = min(o.Batch, data.N())
	st := opts.State
	fingerprint := DataFingerprint(data)
	if st != nil {
		switch {
		case st.Silo != opts.Index:
			return nil, fmt.Errorf("silo %d: the state was written by silo %d", opts.Index, st.Silo)
		case st.Fingerprint != fingerprint || st.Records != data.N():
			return nil, fmt.Errorf("silo %d: the state was written for other data (%d records, fingerprint %.12s…; these %d records: %.12s…): "+
				"its spent budget belongs to those records", opts.Index, st.Records, st.Fingerprint, data.N(), fingerprint)
		}
	}
	private := o.Private()
	if st != nil && st.Private != private {
		return nil, fmt.Errorf("silo %d: the state was written by a silo that was %s; restart it with the same privacy setting",
			opts.Index, map[bool]string{true: "private", false: "not private"}[st.Private])
	}
	// A silo's ledger uses the run's accountant (PLD unless RDP is asked
	// for), the one its DP-FERMI calibrates σ with, or the ledger would
	// find the budget spent before the planned rounds end (or leave budget
	// unused). The kind is a release setting: a restart under another is
	// refused, since the stored budget was stated under the first.
	acc, err := accounting.ResolveAccountant(o.Accountant)
	if err != nil {
		return nil, fmt.Errorf("silo %d: %w", opts.Index, trainer.FieldErrors{{Field: "Privacy.Accountant", Msg: err.Error()}})
	}
	o.Accountant = acc
	spec := trainer.ModelSpec(cfg, data)
	release := ReleaseSettings{Accountant: o.Accountant, Scope: o.Scope, Fairness: o.Fairness, Clip: o.Clip, Lambda: o.Lambda,
		Calibration: o.Calibration, PublicGroupSizes: o.PublicGroupSizes, Sampling: o.Sampling, Model: spec.String()}
	if !private {
		release.Sampling = accounting.SamplingShuffle // non-private DP-FERMI shuffles whatever the flag says
	}
	if st != nil {
		// Refused before anything is built or saved: the state file stays
		// as it was (δ, which DP-FERMI resolves, is compared below).
		if errs := releaseDiff(st, SiloState{Release: release, Delta: st.Delta}); len(errs) > 0 {
			return nil, fmt.Errorf("silo %d: %w", opts.Index, errs)
		}
	}
	// DP-FERMI takes its settings from o; the job carries the records and
	// the randomness.
	job := &trainer.Job{Cfg: cfg, Train: data, Test: data, Source: src}
	var counts []float64
	if st != nil {
		counts = st.Counts
	}
	alg, err := fermi.NewWithReleasedCounts[T](job, o, counts)
	if err != nil {
		return nil, fmt.Errorf("silo %d: %w", opts.Index, err)
	}
	m, err := models.New[T](spec, src.Derive("init"))
	if err != nil {
		return nil, fmt.Errorf("silo %d: %w", opts.Index, err)
	}
	sampler, err := alg.Sampler(data.N(), src.Derive("sampler"))
	if err != nil {
		return nil, fmt.Errorf("silo %d: %w", opts.Index, err)
	}
	if st != nil {
		if errs := releaseDiff(st, SiloState{Release: release, Delta: alg.Delta}); len(errs) > 0 {
			return nil, fmt.Errorf("silo %d: %w", opts.Index, errs)
		}
	}
	// The silo computes DP-FERMI's ascent direction only (read back with
	// WGrad); the server owns the step size and the projection, so the
	// silo's own ascent step is a no-op.
	alg.LRW, alg.Radius = 0, math.Inf(1)
	s := &Silo[T]{index: opts.Index, data: data, alg: alg, model: m, sample: sampler, statePath: opts.StatePath, delta: alg.Delta}
	s.budget = opts.Budget
	if s.budget == 0 {
		s.budget = o.Epsilon
	}
	if !alg.Private {
		s.budget = math.Inf(1)
	}
	if s.ledger, err = accounting.NewLedger(acc, accounting.PLDOptions{}); err != nil {
		return nil, err
	}
	if st != nil {
		// A restart continues the stored ledger, never a fresh one, and may
		// lower the budget but not raise it.
		s.state = *st
		s.state.Generation++
		s.budget = min(s.budget, st.Budget)
		for _, mech := range st.Mechanisms {
			if err := s.ledger.Step(mech, mech.Steps); err != nil {
				return nil, fmt.Errorf("silo %d: state: %w", opts.Index, err)
			}
		}
		s.saved = true
	} else {
		s.state = SiloState{Version: SiloStateVersion, Silo: opts.Index, Fingerprint: fingerprint, Records: data.N(),
			Private: alg.Private, Budget: s.budget, Delta: alg.Delta, Release: release}
		if alg.Private {
			// The first start's count release, as DP-FERMI charged it.
			r, err := alg.Receipt()
			if err != nil {
				return nil, err
			}
			for _, mech := range r.Mechanisms {
				if fermi.IsCountRelease(mech) {
					if err := s.ledger.Step(mech, 1); err != nil {
						return nil, err
					}
				}
			}
			s.state.Counts = alg.ReleasedCounts()
		}
	}
	if math.IsInf(s.state.Budget, 1) {
		s.state.Budget = math.MaxFloat64 // JSON has no +Inf; a non-private silo has no budget to keep
	}
	if alg.Private {
		if _, err := s.ledger.Receipt(s.delta, s.runInfo()); err != nil {
			return nil, fmt.Errorf("silo %d: %w", opts.Index, err)
		}
	}
	if err := s.persist(); err != nil {
		return nil, fmt.Errorf("silo %d: %w", opts.Index, err)
	}
	records := opts.Records
	if records == 0 {
		records = data.N()
	}
	reg := alg.Reg
	s.info = Info{Index: opts.Index, Records: records, Spec: spec, NumParams: m.NumParams(), Groups: reg.Groups,
		Classes: reg.Classes, WLen: len(reg.W), Rounds: o.Epochs * sampler.StepsPerEpoch(), Epsilon: s.budget,
		Delta: s.delta, Private: alg.Private, Accountant: acc}
	return s, nil
}

// persist saves the state (when the silo has a state file) and marks the
// last answer as saved.
func (s *Silo[T]) persist() error {
	s.state.Mechanisms = s.ledger.History()
	if s.statePath != "" {
		if err := s.state.save(s.statePath); err != nil {
			return err
		}
	}
	s.saved = true
	return nil
}

func (s *Silo[T]) runInfo() accounting.RunInfo {
	return accounting.RunInfo{Scope: s.alg.Scope, Sampling: s.alg.Sampling, Seed: s.alg.Seed, Records: s.data.N(),
		StepsPerEpoch: s.alg.ShuffledStepsPerEpoch()}
}

// State is a copy of what the silo has released so far (what its state
// file holds).
func (s *Silo[T]) State() SiloState {
	st := s.state
	st.Mechanisms = s.ledger.History()
	return st
}

// Info describes the silo for the server. An error is the accountant's:
// the silo cannot state its receipt.
func (s *Silo[T]) Info() (Info, error) {
	s.info.Spent = s.state.Rounds
	s.info.Sigma, s.info.SampleRate = s.alg.Sigma, s.alg.AccountedQ()
	r, err := s.FullReceipt()
	if err != nil {
		return Info{}, err
	}
	s.info.Receipt = r
	return s.info, nil
}

// FullReceipt is the silo's receipt for everything it has released, across
// restarts: its ledger (the group-count release, and every round at the
// noise it was sent with), at its first δ, with the exact group sizes
// under not_covered when they were taken as public, so they reach the
// federation's receipt (the server never sees the silo's configuration).
func (s *Silo[T]) FullReceipt() (accounting.Receipt, error) {
	cur, err := s.alg.Receipt()
	if err != nil || !s.alg.Private {
		return cur, err
	}
	r, err := s.ledger.Receipt(s.delta, s.runInfo())
	if err != nil {
		return accounting.Receipt{}, fmt.Errorf("silo %d: %w", s.index, err)
	}
	if s.state.Release.PublicGroupSizes {
		r.AddNotCovered("group_sizes", "the silo's sensitive-group frequencies p̂_S are its exact record counts per group, "+
			"taken as public (public group sizes): no noise was added to them, and every message the silo sends is computed with them")
	}
	r.Note = cur.Note
	if s.state.Generation > 0 {
		r.Note = strings.TrimPrefix(r.Note+fmt.Sprintf("; silo %d restarted %d times: the receipt covers every start (its state file's ledger)",
			s.index, s.state.Generation), "; ")
	}
	return r, nil
}

// Spent is the number of rounds the silo has answered, across restarts.
func (s *Silo[T]) Spent() int { return s.state.Rounds }

// SpentEpsilon is the ε of everything the silo has released (its ledger)
// at its δ; 0 for a silo that is not private.
func (s *Silo[T]) SpentEpsilon() float64 {
	if !s.alg.Private {
		return 0
	}
	if s.alg.ShuffledStepsPerEpoch() > 0 {
		// Shuffled batches: the receipt's bound (accounting.ShuffledCharges).
		r, err := s.ledger.Receipt(s.delta, s.runInfo())
		if err != nil || r.Epsilon == nil {
			return math.Inf(1)
		}
		return *r.Epsilon
	}
	eps, _, err := s.ledger.Epsilon(s.delta)
	if err != nil {
		return math.Inf(1)
	}
	return eps
}

// Epsilon is the ε the silo would have spent after rounds rounds at its
// current noise from a first start (the group-count release plus rounds
// subsampled Gaussian steps): a plan. What it has actually spent, across
// restarts, is SpentEpsilon.
func (s *Silo[T]) Epsilon(rounds int) (float64, error) {
	if !s.alg.Private {
		return 0, nil
	}
	var plan []accounting.Mechanism
	for _, mech := range s.ledger.History() {
		if fermi.IsCountRelease(mech) {
			mech.Steps = 1
			plan = append(plan, mech)
		}
	}
	step := s.stepMechanism()
	step.Steps = rounds
	return accounting.PlanEpsilon(s.ledger.Kind(), accounting.PLDOptions{}, s.delta, append(plan, step)...)
}

// stepMechanism is what one round releases, as the ledger charges it.
func (s *Silo[T]) stepMechanism() accounting.Mechanism { return s.alg.StepMechanism() }

// epsilonWithNextRound is the ε of the ledger plus one more round, by the
// ledger's accountant. The RDP bound of the same charges is computed
// first: a PLD ledger states at most it (Ledger.Epsilon takes the smaller),
// so when it is within budget the round is allowed without the PLD
// composition (~0.1 s), which only runs near the budget.
func (s *Silo[T]) epsilonWithNextRound() (float64, error) {
	rdp := s.ledger.RDP()
	values, orders := rdp.Values(), rdp.Orders()
	for i, a := range orders {
		values[i] += accounting.SubsampledGaussianRDP(s.alg.AccountedQ(), s.alg.Sigma, a)
	}
	eps, _, err := accounting.EpsilonFromRDP(orders, values, s.delta)
	if s.ledger.Kind() == accounting.AccountantRDP || (err == nil && !s.overBudget(eps)) {
		return eps, err
	}
	mechs := s.ledger.History()
	step := s.stepMechanism()
	step.Steps = 1
	return accounting.PlanEpsilon(s.ledger.Kind(), accounting.PLDOptions{}, s.delta, append(mechs, step)...)
}

// Receipt is the silo's DP-FERMI receipt for the rounds of this start.
func (s *Silo[T]) Receipt() (accounting.Receipt, error) { return s.alg.Receipt() }

// draw samples the silo's next batch (once per round) and returns its
// record ids.
func (s *Silo[T]) draw() []int {
	if !s.drawn {
		s.batch.Idx = s.sample.Next()
		n, in := len(s.batch.Idx), s.model.InSize()
		s.batch.X = grow(s.batch.X, n*in)
		s.batch.Labels = grow(s.batch.Labels, n)
		s.batch.Groups = grow(s.batch.Groups, n)
		switch x := any(s.batch.X).(type) {
		case []float32:
			s.data.FillFloat32(s.batch.Idx, x)
		case []float64:
			s.data.FillFloat64(s.batch.Idx, x)
		}
		for i, j := range s.batch.Idx {
			s.batch.Labels[i], s.batch.Groups[i] = s.data.Labels[j], s.data.Groups[j]
		}
		s.drawn = true
	}
	return s.batch.Idx
}

// budgetSpent says whether one more round would take the silo past its
// budget, with the ε it has spent (never for a silo that is not private).
func (s *Silo[T]) budgetSpent() (float64, bool) {
	if !s.alg.Private {
		return 0, false
	}
	next, err := s.epsilonWithNextRound()
	return s.SpentEpsilon(), err == nil && s.overBudget(next)
}

// overBudget says whether a release that brings the silo's ε to eps is
// refused.
func (s *Silo[T]) overBudget(eps float64) bool { return s.alg.Private && eps > s.budget*(1+1e-9) }

// Validate checks a request's shapes, round number and values. A request
// for a round the silo cannot continue with is ErrMalformed, or wraps accounting.ErrBudgetExceeded
// when its budget is spent (no round would be answered anyway).
func (s *Silo[T]) Validate(rq Request) error {
	last := s.state.Last
	switch {
	case len(rq.Theta) != s.info.NumParams:
		return fmt.Errorf("%w: silo %d got %d θ values, want %d", ErrMalformed, s.index, len(rq.Theta), s.info.NumParams)
	case len(rq.W) != s.info.WLen:
		return fmt.Errorf("%w: silo %d got %d W values, want %d", ErrMalformed, s.index, len(rq.W), s.info.WLen)
	case rq.Round < 1:
		return fmt.Errorf("%w: silo %d got round %d, want ≥ 1", ErrMalformed, s.index, rq.Round)
	case rq.Round != s.state.Rounds+1 && !(last != nil && rq.Round == last.Round):
		if eps, spent := s.budgetSpent(); spent {
			// Whatever round a server asks for, the answer is the same: a
			// new federation or a lost checkpoint cannot get past it.
			return fmt.Errorf("%w: silo %d has spent its privacy budget (ε = %.6g of %.6g after %d rounds; one more round would exceed it) "+
				"and answers no further rounds, for this federation or a new one (asked for round %d)",
				accounting.ErrBudgetExceeded, s.index, eps, s.budget, s.state.Rounds, rq.Round)
		}
		why := fmt.Sprintf("a server asking for round %d is a new federation or lost its checkpoint: resume the server from its checkpoint of round %d",
			rq.Round, s.state.Rounds)
		if rq.Round > s.state.Rounds {
			why = "the server is ahead of this silo: its checkpoint is from another federation, or this silo was started on another state file"
		}
		return fmt.Errorf("%w: silo %d got round %d but has answered %d rounds: it continues only at round %d (or repeats round %d); %s",
			ErrMalformed, s.index, rq.Round, s.state.Rounds, s.state.Rounds+1, s.state.Rounds, why)
	}
	for i, v := range rq.Theta {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%w: silo %d got θ[%d] = %v, want a finite number", ErrMalformed, s.index, i, v)
		}
	}
	for i, v := range rq.W {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%w: silo %d got W[%d] = %v, want a finite number", ErrMalformed, s.index, i, v)
		}
	}
	return nil
}

// Round answers one round: validate, check the budget, run DP-FERMI's step
// on the silo's batch at the server's θ and W, charge the ledger, save the
// state, and only then return the message. A repeated request for the round
// last answered (the server retrying after a lost reply, or resuming after
// its own crash, even across a restart of the silo) gets the identical
// message again: no new noise is drawn and nothing is charged.
func (s *Silo[T]) Round(rq Request) (Message, error) {
	if err := s.Validate(rq); err != nil {
		return Message{}, err
	}
	if last := s.state.Last; last != nil && rq.Round == last.Round {
		if requestDigest(rq) != last.Request {
			return Message{}, fmt.Errorf("%w: silo %d already answered round %d for a different θ and W: it will not release a second answer for the same round",
				ErrMalformed, s.index, rq.Round)
		}
		if !s.saved { // the answer was computed but never recorded: record it before it leaves
			if err := s.persist(); err != nil {
				return Message{}, fmt.Errorf("silo %d round %d: %w", s.index, rq.Round, err)
			}
		}
		return last.Message, nil
	}
	eps, err := s.epsilonWithNextRound()
	if err != nil {
		return Message{}, err
	}
	if s.overBudget(eps) {
		return Message{}, fmt.Errorf("%w: silo %d refuses round %d: it would spend ε = %.6g, above its budget %.6g (%d rounds answered)",
			accounting.ErrBudgetExceeded, s.index, rq.Round, eps, s.budget, s.state.Rounds)
	}
	if !s.alg.Private {
		eps = 0
	}
	digest := requestDigest(rq)
	s.draw()
	theta := rq.Theta
	for _, p := range s.model.Params() {
		for i := range p.Value {
			p.Value[i] = T(theta[0])
			theta = theta[1:]
		}
	}
	copy(s.alg.Reg.W, rq.W)
	loss, err := s.alg.Step(s.model, s.batch)
	s.drawn = false
	if err != nil {
		return Message{}, fmt.Errorf("silo %d round %d: %w", s.index, rq.Round, err)
	}
	msg := Message{Round: rq.Round, Theta: make([]float64, 0, s.info.NumParams), W: s.alg.WGrad(), Epsilon: eps}
	for _, p := range s.model.Params() {
		for _, g := range p.Grad {
			msg.Theta = append(msg.Theta, float64(g))
		}
	}
	if !s.alg.Private || s.alg.Scope == accounting.ScopeSensitive {
		msg.LossSum = loss
	}
	if s.alg.Private {
		if err := s.ledger.Step(s.stepMechanism(), 1); err != nil {
			return Message{}, err
		}
	}
	if faultBeforeSave != nil {
		if err := faultBeforeSave(s.index, rq.Round); err != nil {
			return Message{}, err // a crash here: nothing was saved, nothing leaves
		}
	}
	s.state.Rounds++
	s.state.Last = &Answer{Round: rq.Round, Request: digest, Message: msg}
	s.saved = false
	if err := s.persist(); err != nil {
		// The answer stays unreleased; a retry of this round saves it and
		// returns this same message.
		return Message{}, fmt.Errorf("silo %d round %d: %w", s.index, rq.Round, err)
	}
	return msg, nil
}

func equalFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}

func grow[E any](s []E, n int) []E {
	if cap(s) < n {
		return make([]E, n)
	}
	return s[:n]
}

// silosRand is the stream Heterogeneous uses for a run.
func silosRand(src dpops.Source) *rand.Rand { return src.Derive("steffle/partition") }
