package federated

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"fairdp/dpops"
	"fairdp/dpops/accounting"
	"fairdp/fermi"
	"fairdp/loaders"
	"fairdp/models"
	"fairdp/nn"
	"fairdp/trainer"
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
	// Sigma and SampleRate are the silo's noise multiplier and Poisson
	// rate; Receipt is its receipt for all Spent rounds (across restarts).
	Sigma, SampleRate float64
	Receipt           accounting.Receipt
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
	Round   int
	Theta   []float64
	W       []float64
	LossSum float64
	Epsilon float64
}

// ErrBudget marks a round the silo refused because it would exceed its ε.
var ErrBudget = errors.New("privacy budget exhausted")

// ErrMalformed marks a request the silo rejected as malformed.
var ErrMalformed = errors.New("malformed request")

// Silo is one party of the federation: its records, its own sampler and
// noise streams, one DP-FERMI instance calibrated with its own record count
// ñ, and an accountant that refuses rounds past its ε budget.
type Silo[T nn.Float] struct {
	index  int
	data   *loaders.Dataset
	alg    *fermi.DPFERMI[T]
	model  *models.Model[T]
	sample dpops.Sampler
	info   Info
	budget float64 // ε the silo will not exceed (+Inf: not private)
	fixed  []float64
	spent  int
	batch  trainer.Batch[T]
	drawn  bool
	last   *Message // the last answer, returned again for a repeated round
	lastRq []float64
}

// SiloOptions configure NewSilo.
type SiloOptions struct {
	Index int
	// Records is the number of records the averaging weight states; 0 means
	// the silo's own count.
	Records int
	// Batch is the silo's expected batch size (0: cfg.Batch).
	Batch int
	// Budget is the ε the silo refuses to exceed (0: cfg.Privacy.Epsilon).
	Budget float64
	// Spent is the number of rounds already answered before a restart; the
	// accountant resumes from it and the noise streams are fresh.
	Spent int
	// Generation distinguishes the random streams of restarts (0: first start).
	Generation int
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
// (epochs, batch, privacy, fairness) and the randomness src.
func NewSilo[T nn.Float](cfg trainer.Config, data *loaders.Dataset, src dpops.Source, opts SiloOptions) (*Silo[T], error) {
	if data == nil || data.N() == 0 {
		return nil, fmt.Errorf("federated: silo %d has no records", opts.Index)
	}
	if opts.Batch > 0 {
		cfg.Batch = opts.Batch
	}
	cfg.Batch = min(cfg.Batch, data.N())
	job := &trainer.Job{Cfg: cfg, Train: data, Test: data, Source: src}
	alg, err := fermi.New[T](job)
	if err != nil {
		return nil, fmt.Errorf("silo %d: %w", opts.Index, err)
	}
	spec := trainer.ModelSpec(cfg, data)
	m, err := models.New[T](spec, src.Derive("init"))
	if err != nil {
		return nil, fmt.Errorf("silo %d: %w", opts.Index, err)
	}
	sampler, err := alg.Sampler(data.N(), src.Derive("sampler"))
	if err != nil {
		return nil, fmt.Errorf("silo %d: %w", opts.Index, err)
	}
	// The silo computes DP-FERMI's ascent direction only (read back with
	// WGrad); the server owns the step size and the projection, so the
	// silo's own ascent step is a no-op.
	alg.LRW, alg.Radius = 0, math.Inf(1)
	s := &Silo[T]{index: opts.Index, data: data, alg: alg, model: m, sample: sampler, spent: opts.Spent}
	s.budget = opts.Budget
	if s.budget == 0 {
		s.budget = cfg.Privacy.Epsilon
	}
	if !alg.Private {
		s.budget = math.Inf(1)
	}
	if alg.CountSigma > 0 {
		for _, order := range accounting.OpacusOrders() {
			s.fixed = append(s.fixed, accounting.SubsampledGaussianRDP(1, alg.CountSigma, order))
		}
	}
	records := opts.Records
	if records == 0 {
		records = data.N()
	}
	reg := alg.Reg
	s.info = Info{Index: opts.Index, Records: records, Spec: spec, NumParams: m.NumParams(), Groups: reg.Groups,
		Classes: reg.Classes, WLen: len(reg.W), Rounds: cfg.Epochs * sampler.StepsPerEpoch(), Epsilon: s.budget,
		Delta: alg.Delta, Private: alg.Private, Spent: opts.Spent}
	return s, nil
}

// Info describes the silo for the server.
func (s *Silo[T]) Info() Info {
	s.info.Spent = s.spent
	s.info.Sigma, s.info.SampleRate = s.alg.Sigma, s.alg.Q
	s.info.Receipt = s.FullReceipt()
	return s.info
}

// FullReceipt is the silo's receipt for every round it has answered,
// across restarts (Receipt covers the rounds of this start only): the
// group-count release, if any, and Spent subsampled Gaussian steps, with
// DP-FERMI's description of the noise.
func (s *Silo[T]) FullReceipt() accounting.Receipt {
	cur := s.alg.Receipt()
	if !s.alg.Private {
		return cur
	}
	acc, err := accounting.NewRDP(nil)
	if err != nil {
		return cur
	}
	grad := "each record's DP-FERMI gradient contribution (silo " + fmt.Sprint(s.index) + ")"
	for _, m := range cur.Mechanisms {
		if m.SampleRate == 1 && s.alg.CountSigma > 0 && m.NoiseMultiplier == s.alg.CountSigma {
			err = acc.Step(m, 1) // the group counts, released once
		} else {
			grad = m.Protects
		}
	}
	if err == nil && s.spent > 0 {
		err = acc.Step(accounting.SubsampledGaussian(s.alg.Q, s.alg.Sigma, s.alg.Sensitivity, grad), s.spent)
	}
	if err != nil {
		return cur
	}
	r, err := acc.Receipt(s.alg.Delta, accounting.RunInfo{Scope: s.alg.Scope, Sampling: s.alg.Sampling, Seed: s.alg.Seed})
	if err != nil {
		return cur
	}
	r.Note = cur.Note
	return r
}

// Spent is the number of rounds the silo has answered.
func (s *Silo[T]) Spent() int { return s.spent }

// Epsilon is the ε the silo has spent after rounds rounds (its accountant:
// the group-count release plus rounds subsampled Gaussian steps).
func (s *Silo[T]) Epsilon(rounds int) (float64, error) {
	if !s.alg.Private {
		return 0, nil
	}
	orders := accounting.OpacusOrders()
	rdp := make([]float64, len(orders))
	for i, a := range orders {
		rdp[i] = float64(rounds) * accounting.SubsampledGaussianRDP(s.alg.Q, s.alg.Sigma, a)
		if s.fixed != nil {
			rdp[i] += s.fixed[i]
		}
	}
	eps, _, err := accounting.EpsilonFromRDP(orders, rdp, s.alg.Delta)
	return eps, err
}

// Receipt is the silo's DP-FERMI receipt for the rounds of this start.
func (s *Silo[T]) Receipt() accounting.Receipt { return s.alg.Receipt() }

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

// Validate checks a request's shapes, round number and values.
func (s *Silo[T]) Validate(rq Request) error {
	switch {
	case len(rq.Theta) != s.info.NumParams:
		return fmt.Errorf("%w: silo %d got %d θ values, want %d", ErrMalformed, s.index, len(rq.Theta), s.info.NumParams)
	case len(rq.W) != s.info.WLen:
		return fmt.Errorf("%w: silo %d got %d W values, want %d", ErrMalformed, s.index, len(rq.W), s.info.WLen)
	case rq.Round < 1:
		return fmt.Errorf("%w: silo %d got round %d, want ≥ 1", ErrMalformed, s.index, rq.Round)
	case rq.Round != s.spent+1 && !(s.last != nil && rq.Round == s.last.Round):
		return fmt.Errorf("%w: silo %d got round %d but has answered %d rounds (want round %d)", ErrMalformed, s.index, rq.Round, s.spent, s.spent+1)
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

// Round answers one round: validate, check the budget, run DP-FERMI's
// step on the silo's batch at the server's θ and W, and return the
// message. A repeated request for the round just answered (the server
// retrying after a lost reply) gets the same message again, so no new
// noise is drawn and no budget spent.
func (s *Silo[T]) Round(rq Request) (Message, error) {
	if err := s.Validate(rq); err != nil {
		return Message{}, err
	}
	if s.last != nil && rq.Round == s.last.Round {
		if !equalFloats(rq.Theta, s.lastRq) {
			return Message{}, fmt.Errorf("%w: silo %d already answered round %d for a different θ", ErrMalformed, s.index, rq.Round)
		}
		return *s.last, nil
	}
	eps, err := s.Epsilon(s.spent + 1)
	if err != nil {
		return Message{}, err
	}
	if eps > s.budget*(1+1e-9) {
		return Message{}, fmt.Errorf("%w: silo %d refuses round %d: it would spend ε = %.4g, above its budget %.4g (%d rounds answered)",
			ErrBudget, s.index, rq.Round, eps, s.budget, s.spent)
	}
	theta := rq.Theta
	s.draw()
	for _, p := range s.model.Params() {
		for i := range p.Value {
			p.Value[i] = T(rq.Theta[0])
			rq.Theta = rq.Theta[1:]
		}
	}
	copy(s.alg.Reg.W, rq.W)
	loss, err := s.alg.Step(s.model, s.batch)
	s.drawn = false
	if err != nil {
		return Message{}, fmt.Errorf("silo %d round %d: %w", s.index, rq.Round, err)
	}
	s.spent++
	msg := Message{Round: rq.Round, Theta: make([]float64, 0, s.info.NumParams), W: s.alg.WGrad(), Epsilon: eps}
	for _, p := range s.model.Params() {
		for _, g := range p.Grad {
			msg.Theta = append(msg.Theta, float64(g))
		}
	}
	if !s.alg.Private || s.alg.Scope == accounting.ScopeSensitive {
		msg.LossSum = loss
	}
	s.last = &msg
	s.lastRq = append(s.lastRq[:0], theta...)
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
