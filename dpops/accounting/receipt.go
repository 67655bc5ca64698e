package accounting

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// Accountant and conversion names written into receipts.
const (
	AccountantRDP  = "rdp"
	AccountantZCDP = "zcdp"
	AccountantPure = "pure"

	ConversionBalle2020  = "balle2020"   // RDP → (ε,δ), Balle et al. 2020
	ConversionClassic    = "classic"     // RDP → (ε,δ), Mironov 2017
	ConversionOptimal    = "optimal"     // zCDP → (ε,δ), Canonne–Kamath–Steinke 2020
	ConversionBunSteinke = "bun-steinke" // zCDP → (ε,δ), Bun–Steinke 2016
	ConversionBasic      = "basic"       // pure ε-DP, sum of the charges
	ConversionAdvanced   = "advanced"    // pure ε-DP, Dwork–Rothblum–Vadhan
)

// Scopes and samplings a run can declare (DESIGN "Privacy model").
const (
	ScopeAll        = "all"       // a record's whole contribution is protected
	ScopeSensitive  = "sensitive" // only what depends on the sensitive attribute
	SamplingPoisson = "poisson"
	SamplingShuffle = "shuffle"
	// SamplingNone: every release reads the whole data set, as the
	// mechanisms of objective perturbation, post-processing and budget
	// tailoring do (no subsampling, so no amplification is claimed).
	SamplingNone = "none"
)

// RunInfo is what a receipt needs to know about the run besides the
// accountant: the adjacency scope, the batch sampling and the noise seed.
type RunInfo struct {
	Scope    string  // ScopeAll (default when empty) or ScopeSensitive
	Sampling string  // SamplingPoisson (default when empty), SamplingShuffle or SamplingNone
	Seed     *uint64 // nil: the noise was seeded from crypto/rand
	// Records is the number of records the guarantee covers (0: not
	// stated); a δ ≥ 1/Records gets a note saying the guarantee is weak.
	Records int
	// StepsPerEpoch is the number of batches a shuffled pass is cut into:
	// required when Sampling is SamplingShuffle (see ShuffledCharges),
	// ignored otherwise.
	StepsPerEpoch int
}

func (r RunInfo) normalised() (RunInfo, error) {
	if r.Scope == "" {
		r.Scope = ScopeAll
	}
	if r.Sampling == "" {
		r.Sampling = SamplingPoisson
	}
	if r.Scope != ScopeAll && r.Scope != ScopeSensitive {
		return r, fmt.Errorf("accounting: scope must be %q or %q (got %q)", ScopeAll, ScopeSensitive, r.Scope)
	}
	if r.Sampling != SamplingPoisson && r.Sampling != SamplingShuffle && r.Sampling != SamplingNone {
		return r, fmt.Errorf("accounting: sampling must be %q, %q or %q (got %q)", SamplingPoisson, SamplingShuffle, SamplingNone, r.Sampling)
	}
	return r, nil
}

// Receipt is the privacy statement that travels with every checkpoint and
// results file: the guarantee, the analysis behind it, and the assumptions
// that analysis made. Epsilon is nil (JSON null) when the run is not private.
type Receipt struct {
	Epsilon        *float64    `json:"epsilon"`
	EpsilonClassic *float64    `json:"epsilon_classic,omitempty"` // RDP: the classic conversion; zCDP: Bun–Steinke
	Delta          float64     `json:"delta"`
	Accountant     string      `json:"accountant,omitempty"`
	Conversion     string      `json:"conversion,omitempty"`
	Order          *float64    `json:"order,omitempty"` // RDP order attaining Epsilon
	Rho            *float64    `json:"rho,omitempty"`   // zCDP total
	Mechanisms     []Mechanism `json:"mechanisms,omitempty"`
	Scope          string      `json:"scope,omitempty"`
	Sampling       string      `json:"sampling,omitempty"`
	// RDPValid is true on every RDP and PLD receipt this package issues:
	// their ε is a proven bound (a shuffled run's by ShuffledCharges).
	// Receipts written before shuffled runs were bounded so carry false:
	// their ε was the Poisson-rate figure, not a guarantee.
	RDPValid *bool `json:"rdp_valid,omitempty"`
	// Shuffle is, for sampling "shuffle", how ε was bounded (epochs,
	// adjacency) and the Poisson-rate figure for comparison; Mechanisms
	// are then the charged releases (one Gaussian per epoch).
	Shuffle *ShuffleBound `json:"shuffle,omitempty"`
	// PLDInterval and Relation are a PLD receipt's discretisation interval
	// h and neighbouring relation, which its ε depends on.
	PLDInterval *float64 `json:"pld_interval,omitempty"`
	Relation    string   `json:"relation,omitempty"`
	Note        string   `json:"note,omitempty"`
	Seeded      bool     `json:"seeded"`
	Seed        *uint64  `json:"seed,omitempty"`
	// NotCovered lists what the run released or assumed that the guarantee
	// above does not cover (exact test metrics, preprocessing fitted on the
	// training data, a non-private baseline, …), so no release goes
	// unmentioned. Private runs always state it.
	NotCovered []NotCovered `json:"not_covered,omitempty"`
}

// NotCovered is one release or assumption outside a receipt's guarantee.
type NotCovered struct {
	Item   string `json:"item"`   // a stable identifier, e.g. "test_evaluation"
	Detail string `json:"detail"` // what it is and why it is not covered
}

// Items of NotCovered that more than one algorithm declares.
const (
	NotCoveredTestEvaluation = "test_evaluation"
	NotCoveredRecordCount    = "record_count"
	NotCoveredPreprocessing  = "preprocessing"
	NotCoveredTrainStats     = "training_statistics"
	NotCoveredBaseline       = "baseline"
	NotCoveredHyperparams    = "hyperparameter_choice"
)

// AddNotCovered records a release or assumption the guarantee does not
// cover; an item already listed is not repeated.
func (r *Receipt) AddNotCovered(item, detail string) {
	for _, n := range r.NotCovered {
		if n.Item == item {
			return
		}
	}
	r.NotCovered = append(r.NotCovered, NotCovered{Item: item, Detail: detail})
}

// NotPrivate is the receipt of a run that added no noise (plain SGD).
func NotPrivate() Receipt {
	return Receipt{Note: "not private: no noise was added"}
}

// Private reports whether the receipt states a finite ε.
func (r Receipt) Private() bool { return r.Epsilon != nil }

// finite is &x for a finite x and nil otherwise (JSON cannot hold ±Inf or
// NaN, and an infinite ε means no guarantee).
func finite(x float64) *float64 {
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return nil
	}
	return &x
}

func (r *Receipt) setRun(run RunInfo) {
	r.Scope, r.Sampling = run.Scope, run.Sampling
	if run.Records > 0 && r.Delta >= 1/float64(run.Records) {
		r.addNote(largeDeltaNote(r.Delta, run.Records))
	}
	r.Seeded = run.Seed != nil
	if run.Seed != nil {
		s := *run.Seed
		r.Seed = &s
	}
}

// AddNote appends a sentence to the receipt's note: an assumption or an
// exception the analysis does not show by itself.
func (r *Receipt) AddNote(note string) { r.addNote(note) }

func (r *Receipt) addNote(note string) {
	if r.Note != "" {
		r.Note += "; "
	}
	r.Note += note
}

func (r *Receipt) noteIfInfinite(eps float64) {
	if r.Epsilon == nil {
		r.addNote(fmt.Sprintf("epsilon is %v: the run is not differentially private", eps))
	}
}

// Receipt states the accountant's guarantee at delta with the conversion of
// Balle et al. 2020 (and the classic one alongside). A shuffled run's
// receipt is that of its charged history (ShuffledCharges: one Gaussian,
// RDP α/(2σ²), per epoch) under zero-out adjacency, with the Poisson-rate
// figure kept in Shuffle for comparison only.
func (a *RDP) Receipt(delta float64, run RunInfo) (Receipt, error) {
	a.init()
	run, err := run.normalised()
	if err != nil {
		return Receipt{}, err
	}
	if run.Sampling != SamplingShuffle {
		return a.receipt(delta, run)
	}
	return shuffledReceipt(a.History(), run, AdjacencyZeroOut, func(charged []Mechanism) (Receipt, error) {
		c, err := NewRDP(a.orders)
		if err != nil {
			return Receipt{}, err
		}
		for _, m := range charged {
			if err := c.Step(m, m.Steps); err != nil {
				return Receipt{}, err
			}
		}
		return c.receipt(delta, run)
	}, func() float64 { eps, _ := a.Epsilon(delta); return eps })
}

// receipt is Receipt of the history as the accountant composed it (no
// account taken of the sampling).
func (a *RDP) receipt(delta float64, run RunInfo) (Receipt, error) {
	a.init()
	eps, order, err := EpsilonFromRDP(a.orders, a.total, delta)
	if err != nil {
		return Receipt{}, err
	}
	classic, _, _ := EpsilonFromRDPClassic(a.orders, a.total, delta)
	valid := true
	r := Receipt{Epsilon: finite(eps), EpsilonClassic: finite(classic), Delta: delta, Accountant: AccountantRDP,
		Conversion: ConversionBalle2020, Mechanisms: a.History(), RDPValid: &valid}
	if r.Epsilon != nil {
		r.Order = finite(order)
	}
	r.setRun(run)
	r.noteIfInfinite(eps)
	return r, nil
}

// Receipt states the accountant's guarantee at delta with the optimal zCDP
// conversion (and Bun–Steinke alongside, as epsilon_classic).
func (z *ZCDP) Receipt(delta float64, run RunInfo) (Receipt, error) {
	run, err := run.normalised()
	if err != nil {
		return Receipt{}, err
	}
	eps, err := ZCDPToEpsilon(z.rho, delta)
	if err != nil {
		return Receipt{}, err
	}
	bs, _ := ZCDPToEpsilonBunSteinke(z.rho, delta)
	r := Receipt{Epsilon: finite(eps), EpsilonClassic: finite(bs), Delta: delta, Accountant: AccountantZCDP,
		Conversion: ConversionOptimal, Rho: finite(z.rho), Mechanisms: z.Spends()}
	r.setRun(run)
	r.noteIfInfinite(eps)
	return r, nil
}

// Receipt states the accountant's guarantee: basic composition when
// deltaPrime is 0, otherwise the better of basic and advanced composition at
// deltaPrime (the conversion field says which one won).
func (p *Pure) Receipt(deltaPrime float64, run RunInfo) (Receipt, error) {
	run, err := run.normalised()
	if err != nil {
		return Receipt{}, err
	}
	r := Receipt{Epsilon: finite(p.eps), Accountant: AccountantPure, Conversion: ConversionBasic, Mechanisms: p.Spends()}
	if deltaPrime != 0 {
		if err := checkDelta(deltaPrime); err != nil {
			return Receipt{}, err
		}
		if adv := p.AdvancedEpsilon(deltaPrime); adv < p.eps {
			r.Epsilon, r.Delta, r.Conversion = finite(adv), deltaPrime, ConversionAdvanced
		}
	}
	r.setRun(run)
	return r, nil
}

// String is the one-line guarantee, e.g.
// "(ε = 7.329, δ = 1e-05)-DP [rdp accountant, balle2020 conversion, order 3.9]".
func (r Receipt) String() string {
	if r.Epsilon == nil {
		return "none (ε = ∞: not differentially private)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "(ε = %.4g, δ = %.3g)-DP [%s accountant, %s conversion", *r.Epsilon, r.Delta, r.Accountant, r.Conversion)
	if r.Order != nil {
		fmt.Fprintf(&b, ", order %g", *r.Order)
	}
	b.WriteString("]")
	if r.Seeded {
		// A seed the user typed is guessable: anyone who knows it can
		// regenerate and subtract the noise. Say so on the guarantee's own
		// line, where a reader cannot miss it.
		b.WriteString(" NOT secure (seeded): the noise is reproducible from the seed")
	}
	if r.RDPValid != nil && !*r.RDPValid {
		// Only receipts written before shuffled runs were bounded.
		b.WriteString(" NOT A GUARANTEE: shuffled batches are outside the RDP analysis")
	}
	return b.String()
}

// WriteText writes the human summary printed after training: the guarantee
// (String) on the first line, then the other conversion, the mechanisms and
// the assumptions.
func (r Receipt) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "privacy: %s\n", r.String())
	if r.EpsilonClassic != nil {
		name := ConversionClassic
		if r.Accountant == AccountantZCDP {
			name = ConversionBunSteinke
		}
		fmt.Fprintf(&b, "  %s conversion: ε = %.4g\n", name, *r.EpsilonClassic)
	}
	if r.Rho != nil {
		fmt.Fprintf(&b, "  zCDP: ρ = %.4g\n", *r.Rho)
	}
	for _, m := range r.Mechanisms {
		fmt.Fprintf(&b, "  %s\n", m.summary())
	}
	if s := r.Shuffle; s != nil {
		fmt.Fprintf(&b, "  shuffled batches: %d steps in %d epochs of %d, one Gaussian per epoch, %s adjacency", s.Steps, s.Epochs, s.StepsPerEpoch, s.Adjacency)
		if s.PoissonEquivalentEpsilon != nil {
			fmt.Fprintf(&b, "; Poisson sampling at the same rate would give ε = %.4g (NOT a guarantee of this run)", *s.PoissonEquivalentEpsilon)
		}
		b.WriteString("\n")
	}
	if r.Scope != "" || r.Sampling != "" {
		fmt.Fprintf(&b, "  scope: %s; sampling: %s; ", r.Scope, r.Sampling)
		if r.Seed != nil {
			fmt.Fprintf(&b, "noise seeded with %d (reproducible run)\n", *r.Seed)
		} else {
			b.WriteString("noise seeded from crypto/rand\n")
		}
	}
	if r.Note != "" {
		fmt.Fprintf(&b, "  note: %s\n", r.Note)
	}
	for _, n := range r.NotCovered {
		fmt.Fprintf(&b, "  not covered (%s): %s\n", n.Item, n.Detail)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// summary is one line describing m for WriteText.
func (m Mechanism) summary() string {
	var b strings.Builder
	b.WriteString(m.Kind)
	switch m.Kind {
	case KindSubsampledGaussian:
		fmt.Fprintf(&b, " q=%.4g σ=%.4g", m.SampleRate, m.NoiseMultiplier)
		if len(m.Parts) > 0 {
			sig := make([]string, len(m.Parts))
			for i, p := range m.Parts {
				sig[i] = fmt.Sprintf("%.4g", p.NoiseMultiplier)
			}
			fmt.Fprintf(&b, " (joint: parts σ = %s on one Poisson sample, charged once)", strings.Join(sig, ", "))
		}
	case KindGaussian:
		fmt.Fprintf(&b, " σ=%.4g ρ=%.4g", m.NoiseMultiplier, m.Rho)
	case KindZCDP:
		fmt.Fprintf(&b, " ρ=%.4g", m.Rho)
	case KindLaplace, KindPureDP:
		fmt.Fprintf(&b, " ε=%.4g", m.Epsilon)
	}
	if m.Sensitivity != 0 {
		fmt.Fprintf(&b, " sensitivity=%.4g", m.Sensitivity)
	}
	fmt.Fprintf(&b, " ×%d", m.Steps)
	if m.Protects != "" {
		fmt.Fprintf(&b, " (%s)", m.Protects)
	}
	return b.String()
}
