package federated

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/dpops/accounting"
	"github.com/fairdp/fairdp/fermi"
	"github.com/fairdp/fairdp/models"
	"github.com/fairdp/fairdp/nn"
)

// Client is how the server reaches a silo: an in-process *Silo (Local) or
// a gRPC connection (Dial).
type Client interface {
	Info(ctx context.Context) (Info, error)
	Round(ctx context.Context, rq Request) (Message, error)
	// Name is the silo's address (or "in-process silo i") for errors.
	Name() string
}

// Unavailable marks an error after which the server retries (a silo that
// is down or did not answer in time); budget refusals and malformed
// requests are final.
type Unavailable struct{ Err error }

func (u Unavailable) Error() string { return "unavailable: " + u.Err.Error() }
func (u Unavailable) Unwrap() error { return u.Err }

// Local adapts an in-process silo to Client.
func Local[T nn.Float](s *Silo[T]) Client { return localClient[T]{s} }

type localClient[T nn.Float] struct{ s *Silo[T] }

func (c localClient[T]) Info(context.Context) (Info, error) { return c.s.Info() }
func (c localClient[T]) Round(_ context.Context, rq Request) (Message, error) {
	return c.s.Round(rq)
}
func (c localClient[T]) Name() string { return fmt.Sprintf("in-process silo %d", c.s.index) }

// ServerConfig is the server's side of the algorithm and of the run.
type ServerConfig struct {
	Rounds int     // 0: the smallest number of rounds any silo was calibrated for
	LR     float64 // η_θ (plain SGD, as DP-FERMI's reference code)
	// Decay, if set, decays η_θ in steps over the rounds (the SteFFLe
	// authors' code decays it per epoch).
	Decay       StepDecay
	WeightDecay float64
	Lambda      float64 // λ
	LRW         float64 // η_W
	Radius      float64 // D
	Seed        *uint64 // seeds the model initialisation (nil: crypto/rand)
	// Checkpoint is the file written after every round ("" = none); with
	// Resume the run continues from it when it exists.
	Checkpoint string
	Resume     bool
	Retries    int           // attempts per silo and round (0: 5)
	Backoff    time.Duration // first retry delay, doubled each time (0: 100 ms)
	Timeout    time.Duration // per call (0: 30 s)
	// Accountant, if set, is the accountant every silo must state its ε
	// with (accounting.AccountantPLD or AccountantRDP); "" accepts any,
	// as long as all silos agree.
	Accountant string
	Log        io.Writer
	// AfterRound, if set, runs after every completed round (after the
	// checkpoint), e.g. to log metrics; an error stops Run.
	AfterRound func() error
}

// Server runs the rounds: broadcast θ and W, collect every silo's message,
// average them weighted by the silos' record counts, take the θ descent
// step and the projected W ascent step, checkpoint.
type Server[T nn.Float] struct {
	Cfg     ServerConfig
	Silos   []Client
	Model   *models.Model[T]
	Reg     *fermi.Regularizer // holds W (its group frequencies are unused by the server)
	Infos   []Info
	Round   int       // rounds completed
	Epsilon []float64 // each silo's ε after its last message
	Loss    []float64 // summed silo losses per round (0 where not sent)
	weights []float64
	opt     *nn.SGD[T]
}

// checkpoint is the server's state after a completed round.
type checkpoint struct {
	Round   int       `json:"round"`
	Theta   []float64 `json:"theta"`
	W       []float64 `json:"w"`
	Epsilon []float64 `json:"epsilon"`
	Loss    []float64 `json:"loss"`
}

// NewServer asks every silo for its Info, checks that they agree on the
// model and W shapes, and initialises the model (from cfg.Seed, as the
// trainer does) and W = 0, or the checkpoint when resuming.
func NewServer[T nn.Float](ctx context.Context, cfg ServerConfig, silos []Client) (*Server[T], error) {
	if len(silos) == 0 {
		return nil, errors.New("federated: no silos")
	}
	if err := cfg.Decay.Validate(); err != nil {
		return nil, fmt.Errorf("federated: %w", err)
	}
	if cfg.Accountant != "" {
		if _, err := accounting.ResolveAccountant(cfg.Accountant); err != nil {
			return nil, fmt.Errorf("federated: %w", err)
		}
	}
	s := &Server[T]{Cfg: cfg, Silos: silos}
	if s.Cfg.Retries <= 0 {
		s.Cfg.Retries = 5
	}
	if s.Cfg.Backoff <= 0 {
		s.Cfg.Backoff = 100 * time.Millisecond
	}
	if s.Cfg.Timeout <= 0 {
		s.Cfg.Timeout = 30 * time.Second
	}
	total := 0.0
	for i, c := range silos {
		info, err := s.info(ctx, i, c)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			if err := sameShape(s.Infos[0], info); err != nil {
				return nil, fmt.Errorf("federated: silo %s does not match silo %s: %w", c.Name(), silos[0].Name(), err)
			}
		}
		if err := s.sameAccountant(c, info); err != nil {
			return nil, err
		}
		if info.Records < 1 {
			return nil, fmt.Errorf("federated: silo %s states %d records", c.Name(), info.Records)
		}
		s.Infos = append(s.Infos, info)
		total += float64(info.Records)
		if s.Cfg.Rounds == 0 || (cfg.Rounds == 0 && info.Rounds < s.Cfg.Rounds) {
			s.Cfg.Rounds = info.Rounds
		}
	}
	for _, info := range s.Infos {
		s.weights = append(s.weights, float64(info.Records)/total)
	}
	_, src := dpops.NewRand(cfg.Seed)
	m, err := models.New[T](s.Infos[0].Spec, src.Derive("init"))
	if err != nil {
		return nil, err
	}
	s.Model = m
	first := s.Infos[0]
	mats := first.WLen / (first.Groups * first.Classes)
	freq := make([]float64, mats*first.Groups)
	for i := range freq {
		freq[i] = 1 / float64(first.Groups)
	}
	if s.Reg, err = fermi.NewRegularizer(first.Groups, first.Classes, mats > 1, freq); err != nil {
		return nil, err
	}
	s.opt = nn.NewSGD[T](T(cfg.LR))
	s.opt.WeightDecay = T(cfg.WeightDecay)
	s.Epsilon = make([]float64, len(silos))
	if cfg.Resume && cfg.Checkpoint != "" {
		if err := s.load(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// sameAccountant refuses a silo whose accountant differs from the server's
// setting or from the silos' before it: their ε (the report's per-silo
// line, the federation's worst-case receipt) and the budgets they refuse
// rounds at would otherwise be stated under different analyses. A silo
// that does not say predates the field and kept an RDP ledger.
func (s *Server[T]) sameAccountant(c Client, info Info) error {
	got := cmp.Or(info.Accountant, accounting.AccountantRDP)
	if want := s.Cfg.Accountant; want != "" && got != want {
		return fmt.Errorf("federated: silo %s states ε with the %s accountant, the server uses %s: give every silo and the server the same accountant",
			c.Name(), got, want)
	}
	if len(s.Infos) > 0 {
		if first := cmp.Or(s.Infos[0].Accountant, accounting.AccountantRDP); got != first {
			return fmt.Errorf("federated: silo %s states ε with the %s accountant, silo %s with %s: give every silo the same accountant",
				c.Name(), got, s.Silos[0].Name(), first)
		}
	}
	return nil
}

func sameShape(a, b Info) error {
	switch {
	case a.NumParams != b.NumParams || a.Spec.Arch != b.Spec.Arch || fmt.Sprint(a.Spec.InShape) != fmt.Sprint(b.Spec.InShape):
		return fmt.Errorf("model %s %v with %d parameters vs %s %v with %d", a.Spec.Arch, a.Spec.InShape, a.NumParams, b.Spec.Arch, b.Spec.InShape, b.NumParams)
	case a.Groups != b.Groups || a.Classes != b.Classes || a.WLen != b.WLen:
		return fmt.Errorf("%d groups, %d classes, %d W values vs %d, %d, %d", a.Groups, a.Classes, a.WLen, b.Groups, b.Classes, b.WLen)
	}
	return nil
}

// Run trains until Cfg.Rounds rounds are done, checkpointing after each.
// On a silo that stays unreachable after the retries, a budget refusal or
// a rejected request it stops with an error naming the silo and the
// round; the checkpoint then holds the last completed round.
func (s *Server[T]) Run(ctx context.Context) error {
	for s.Round < s.Cfg.Rounds {
		if err := s.Step(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Step runs one round.
func (s *Server[T]) Step(ctx context.Context) error {
	loss, msgs, err := s.exchange(ctx)
	if err != nil {
		return err
	}
	s.opt.Step(s.Model.Params())
	s.finish(loss, msgs)
	if s.Cfg.Checkpoint != "" {
		if err := s.save(); err != nil {
			return err
		}
	}
	if s.Cfg.AfterRound != nil {
		return s.Cfg.AfterRound()
	}
	return nil
}

// Privacy asks every silo for its receipt (after its last answered round)
// and returns the federation's headline receipt, the one of the silo with
// the largest ε, and every silo's line. What any silo lists as not covered
// (e.g. exact group sizes it took as public) is listed in the headline
// too, with the silos it applies to: the headline is one silo's receipt,
// and another silo's uncovered release is no less released.
func (s *Server[T]) Privacy(ctx context.Context) (accounting.Receipt, []SiloPrivacy, error) {
	var lines []SiloPrivacy
	var worst accounting.Receipt
	top := math.Inf(-1)
	var uncovered []accounting.NotCovered
	silosOf := map[string][]string{}
	for i, c := range s.Silos {
		info, err := s.info(ctx, i, c)
		if err != nil {
			return accounting.Receipt{}, nil, err
		}
		line := SiloPrivacy{Silo: i, Address: c.Name(), Records: info.Records, FeatureRecords: info.Records, Rounds: info.Spent}
		if r := info.Receipt; r.Private() {
			line.Epsilon, line.Delta, line.Sigma, line.SampleRate = r.Epsilon, r.Delta, info.Sigma, info.SampleRate
			if *r.Epsilon > top {
				top, worst = *r.Epsilon, r
			}
		}
		for _, n := range info.Receipt.NotCovered {
			if silosOf[n.Item] == nil {
				uncovered = append(uncovered, n)
			}
			silosOf[n.Item] = append(silosOf[n.Item], fmt.Sprintf("%d (%s)", i, c.Name()))
		}
		lines = append(lines, line)
	}
	if math.IsInf(top, -1) {
		worst = accounting.NotPrivate()
	}
	r := FederationReceipt(worst, lines, "horizontal")
	r.NotCovered = nil
	for _, n := range uncovered {
		r.AddNotCovered(n.Item, fmt.Sprintf("silo %s: %s", strings.Join(silosOf[n.Item], ", silo "), n.Detail))
	}
	return r, lines, nil
}

// exchange broadcasts the current θ and W, collects every silo's message
// (in silo order) and aggregates them into the model's gradients and W.
func (s *Server[T]) exchange(ctx context.Context) (float64, []Message, error) {
	rq := Request{Round: s.Round + 1, Theta: s.theta(), W: append([]float64(nil), s.Reg.W...)}
	msgs := make([]Message, len(s.Silos))
	for i, c := range s.Silos {
		err := s.retry(ctx, i, func(ctx context.Context) error {
			var err error
			msgs[i], err = c.Round(ctx, rq)
			return err
		})
		if err != nil {
			return 0, nil, fmt.Errorf("round %d: %w", rq.Round, err)
		}
		if err := checkMessage(msgs[i], rq, s.Infos[i]); err != nil {
			return 0, nil, fmt.Errorf("round %d: silo %s: %w", rq.Round, c.Name(), err)
		}
	}
	loss, err := Aggregate(s.Model, s.Reg, msgs, s.weights, s.Cfg.LRW, s.Cfg.Radius)
	if err != nil {
		return 0, nil, fmt.Errorf("round %d: %w", rq.Round, err)
	}
	if f := s.Cfg.Decay.Scale(rq.Round); f != 1 {
		scaleStep(s.Model.Params(), f, s.Cfg.WeightDecay)
	}
	return loss, msgs, nil
}

// finish records a completed round.
func (s *Server[T]) finish(loss float64, msgs []Message) {
	for i, m := range msgs {
		s.Epsilon[i] = m.Epsilon
	}
	s.Loss = append(s.Loss, loss)
	s.Round++
}

// checkMessage rejects answers of the wrong round, shape or with
// non-finite values before they touch the model.
func checkMessage(m Message, rq Request, info Info) error {
	if m.Round != rq.Round || len(m.Theta) != info.NumParams || len(m.W) != info.WLen {
		return fmt.Errorf("answer for round %d with %d θ and %d W values, want round %d with %d and %d", m.Round, len(m.Theta), len(m.W), rq.Round, info.NumParams, info.WLen)
	}
	for _, v := range append(append([]float64{m.LossSum}, m.Theta...), m.W...) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("answer with a non-finite value %v", v)
		}
	}
	return nil
}

// Aggregate is the server's update from one round of messages: the
// weighted average of the θ directions goes into the model's gradients
// (for the optimizer), and W ← Π_D(W + η_W Σ_i w_i ĝ_W,i), where each ĝ_W,i
// is a silo's λ-scaled, noised W direction (fermi.DPFERMI.WGrad). Sums run in
// float64 in silo order, so the result does not depend on transport.
// It returns the summed loss the silos sent.
func Aggregate[T nn.Float](m *models.Model[T], reg *fermi.Regularizer, msgs []Message, weights []float64, lrW, radius float64) (float64, error) {
	params := m.Params()
	k := 0
	loss := 0.0
	for _, msg := range msgs {
		loss += msg.LossSum
	}
	for _, p := range params {
		for j := range p.Grad {
			g := 0.0
			for i, msg := range msgs {
				g += weights[i] * msg.Theta[k]
			}
			p.Grad[j] = T(g)
			k++
		}
	}
	for j := range reg.W {
		g := 0.0
		for i, msg := range msgs {
			g += weights[i] * msg.W[j]
		}
		reg.W[j] += lrW * g
	}
	reg.Project(radius)
	for _, v := range reg.W {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, fmt.Errorf("federated: W diverged (%v); lower the W learning rate (ServerConfig.LRW)", v)
		}
	}
	return loss, nil
}

func (s *Server[T]) theta() []float64 {
	var out []float64
	for _, p := range s.Model.Params() {
		for _, v := range p.Value {
			out = append(out, float64(v))
		}
	}
	return out
}

// info asks silo i for its Info, with the server's retries and back-off.
func (s *Server[T]) info(ctx context.Context, i int, c Client) (Info, error) {
	var info Info
	err := s.retry(ctx, i, func(ctx context.Context) error {
		var err error
		info, err = c.Info(ctx)
		return err
	})
	return info, err
}

// retry calls f until it succeeds, fails with a final error, or the
// attempts run out, doubling the delay between attempts.
func (s *Server[T]) retry(ctx context.Context, silo int, f func(context.Context) error) error {
	delay := s.Cfg.Backoff
	var err error
	for attempt := 1; attempt <= s.Cfg.Retries; attempt++ {
		cctx, cancel := context.WithTimeout(ctx, s.Cfg.Timeout)
		err = f(cctx)
		cancel()
		var u Unavailable
		if err == nil || !errors.As(err, &u) {
			break
		}
		if attempt == s.Cfg.Retries {
			return fmt.Errorf("silo %s unreachable after %d attempts (run again resuming from the checkpoint: ServerConfig.Resume, fairdp federate --resume): %w",
				s.Silos[silo].Name(), attempt, err)
		}
		if s.Cfg.Log != nil {
			fmt.Fprintf(s.Cfg.Log, "silo %s: %v; retrying in %v\n", s.Silos[silo].Name(), err, delay)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		delay *= 2
	}
	if err != nil {
		return fmt.Errorf("silo %s: %w", s.Silos[silo].Name(), err)
	}
	return nil
}

func (s *Server[T]) save() error {
	c := checkpoint{Round: s.Round, Theta: s.theta(), W: s.Reg.W, Epsilon: s.Epsilon, Loss: s.Loss}
	data, err := json.Marshal(c)
	if err != nil {
		return err
	}
	tmp := s.Cfg.Checkpoint + ".tmp"
	if err := os.MkdirAll(filepath.Dir(s.Cfg.Checkpoint), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("checkpoint %s: %w", s.Cfg.Checkpoint, err)
	}
	return os.Rename(tmp, s.Cfg.Checkpoint)
}

func (s *Server[T]) load() error {
	data, err := os.ReadFile(s.Cfg.Checkpoint)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var c checkpoint
	if err := json.Unmarshal(data, &c); err != nil {
		return fmt.Errorf("checkpoint %s: %w", s.Cfg.Checkpoint, err)
	}
	theta := c.Theta
	if len(theta) != s.Model.NumParams() || len(c.W) != len(s.Reg.W) || len(c.Epsilon) != len(s.Silos) {
		return fmt.Errorf("checkpoint %s: %d θ, %d W values and %d silos; this federation has %d, %d and %d",
			s.Cfg.Checkpoint, len(theta), len(c.W), len(c.Epsilon), s.Model.NumParams(), len(s.Reg.W), len(s.Silos))
	}
	for _, p := range s.Model.Params() {
		for i := range p.Value {
			p.Value[i] = T(theta[0])
			theta = theta[1:]
		}
	}
	copy(s.Reg.W, c.W)
	s.Round, s.Epsilon, s.Loss = c.Round, c.Epsilon, c.Loss
	return nil
}
