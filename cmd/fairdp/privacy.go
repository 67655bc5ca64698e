package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"

	"github.com/fairdp/fairdp/dpops/accounting"
)

const privacyUsage = `usage:
  fairdp privacy epsilon --sigma S (--sample-rate Q | --scope sensitive) --steps T --delta D [--sampling poisson|shuffle --steps-per-epoch K] [--accountant pld|rdp] [--relation add-remove|replace-one] [--classic] [--orders opacus|tf] [--json]
      ε spent by T steps of the Poisson-subsampled Gaussian mechanism with noise multiplier S
  fairdp privacy sigma --epsilon E (--sample-rate Q | --scope sensitive) --steps T --delta D [--sampling poisson|shuffle --steps-per-epoch K] [--accountant pld|rdp] [--relation add-remove|replace-one] [--classic] [--tolerance TOL] [--orders opacus|tf] [--json]
      the smallest noise multiplier whose ε is at most E

Both use the privacy-loss-distribution accountant (pessimistic discretisation, a proven upper bound
5-12 % below RDP), as training does by default; where it cannot bound the run it says why and falls
back to RDP. --accountant rdp uses the RDP accountant (Mironov et al. 2019) with Balle et al. 2020's
conversion to (ε, δ), or the classic one with --classic (--classic, --orders and --tolerance are RDP's).
They assume Poisson sampling with rate Q. With --sampling shuffle (fixed-size batches from a shuffled
pass, K to an epoch) each record is in one batch per epoch, so each of the ⌈T/K⌉ epochs is charged as
one Gaussian mechanism with noise multiplier S (no amplification by sampling): a proven bound, as
training's receipts state it. --scope sensitive is DP-FERMI's and SteFFLe's sensitive scope: its steps
add the sampled records' s-independent terms exactly, which shows which records were sampled, so they are
charged as plain Gaussian mechanisms (q = 1, S relative to the sensitivity 2C), as training charges them.
Run 'fairdp privacy epsilon -h' or 'fairdp privacy sigma -h' for the flags.
`

// runPrivacy is `fairdp privacy ...`: the accountant on its own, to check a
// noise level or pick one before training, in text or (--json) for tools.
func runPrivacy(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, privacyUsage)
		return errors.New("privacy: missing subcommand (epsilon or sigma)")
	}
	switch args[0] {
	case "epsilon":
		return runPrivacyEpsilon(args[1:], stdout, stderr)
	case "sigma":
		return runPrivacySigma(args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, privacyUsage)
		return nil
	}
	fmt.Fprint(stderr, privacyUsage)
	return fmt.Errorf("privacy: unknown subcommand %q (want epsilon or sigma)", args[0])
}

// privacyQuery holds the flags both subcommands share.
type privacyQuery struct {
	sampleRate float64
	steps      int
	delta      float64
	accountant string
	classic    bool
	orders     string
	relation   string
	// sampling is poisson or shuffle; stepsPerEpoch is K for shuffle.
	sampling      string
	stepsPerEpoch int
	scope         string
	json          bool
	// stderr receives the note when PLD falls back to RDP.
	stderr io.Writer
}

func (p *privacyQuery) register(fs *flag.FlagSet) {
	fs.Float64Var(&p.sampleRate, "sample-rate", 0, "Poisson sampling rate q = expected batch size / training-set size, in (0,1] (required)")
	fs.IntVar(&p.steps, "steps", 0, "number of training steps T ≥ 1 (epochs / q) (required)")
	fs.Float64Var(&p.delta, "delta", 0, "target δ in (0,1) (required)")
	fs.BoolVar(&p.classic, "classic", false, "use the classic RDP conversion (Mironov 2017; pre-2020 papers) instead of Balle et al. 2020")
	fs.StringVar(&p.orders, "orders", "opacus", "Rényi orders to optimise over: opacus (1.1…10.9, 12…63) or tf (TF-Privacy's list)")
	fs.StringVar(&p.accountant, "accountant", accounting.DefaultAccountant, "pld: the privacy-loss-distribution accountant (tighter; falls back to rdp, saying why, where it cannot bound the run), or rdp")
	fs.StringVar(&p.relation, "relation", accounting.RelationAddRemove, "pld only: neighbouring data sets differ by a record added or removed (add-remove), or by one record's value (replace-one; sigma is then relative to the sensitivity 2C). Not what --scope sensitive training is charged with: use --scope sensitive")
	fs.StringVar(&p.scope, "scope", accounting.ScopeAll, "all: steps on a hidden sample with rate --sample-rate; sensitive: DP-FERMI's and SteFFLe's sensitive scope, whose exact s-independent terms show the sample, so steps are charged without sampling amplification (q = 1; no --sample-rate)")
	fs.StringVar(&p.sampling, "sampling", accounting.SamplingPoisson, "poisson, or shuffle: fixed-size batches from a shuffled pass, charged one Gaussian per epoch (needs --steps-per-epoch)")
	fs.IntVar(&p.stepsPerEpoch, "steps-per-epoch", 0, "with --sampling shuffle: batches per epoch, ⌈n/batch⌉ (required there)")
	fs.BoolVar(&p.json, "json", false, "print one JSON object instead of text")
}

// charged is the rate and number of releases the accountant composes: the
// query's own under Poisson sampling; under shuffled batches one Gaussian
// (rate 1) per epoch (accounting.ShuffledCharges).
func (p *privacyQuery) charged() (q float64, steps int) {
	if p.sampling != accounting.SamplingShuffle {
		return p.sampleRate, p.steps
	}
	m := accounting.SubsampledGaussian(p.sampleRate, 1, 0, "")
	m.Steps = p.steps
	c, _, _, err := accounting.ShuffledCharges([]accounting.Mechanism{m}, p.stepsPerEpoch)
	if err != nil || len(c) != 1 { // unreachable: check refused K < 1
		return p.sampleRate, p.steps
	}
	return c[0].SampleRate, c[0].Steps
}

// samplingText names the sampling for the text output.
func (p *privacyQuery) samplingText() string {
	if p.sampling == accounting.SamplingShuffle {
		q, e := p.charged()
		if q == 1 && e != p.steps {
			return fmt.Sprintf("shuffled batches, %d steps per epoch: %d epochs, one Gaussian each", p.stepsPerEpoch, e)
		}
		return "shuffled batches"
	}
	return "Poisson sampling"
}

// check validates the shared flags; required lists the flags that must have
// been given on the command line.
func (p *privacyQuery) check(fs *flag.FlagSet, required ...string) ([]float64, error) {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	switch p.scope {
	case accounting.ScopeAll:
		required = append(required, "sample-rate")
	case accounting.ScopeSensitive:
		if given["sample-rate"] {
			return nil, fmt.Errorf("privacy %s: --sample-rate does not apply to --scope sensitive, whose steps are charged without sampling amplification (q = 1): leave it out", fs.Name())
		}
		p.sampleRate = 1
	default:
		return nil, fmt.Errorf("privacy %s: --scope must be all or sensitive (got %q)", fs.Name(), p.scope)
	}
	for _, name := range append(required, "steps", "delta") {
		if !given[name] {
			return nil, fmt.Errorf("privacy %s: missing --%s (see 'fairdp privacy %s -h')", fs.Name(), name, fs.Name())
		}
	}
	if !(p.sampleRate > 0 && p.sampleRate <= 1) {
		return nil, fmt.Errorf("privacy %s: --sample-rate must be in (0,1] (got %v)", fs.Name(), p.sampleRate)
	}
	if p.steps < 1 {
		return nil, fmt.Errorf("privacy %s: --steps must be ≥ 1 (got %d)", fs.Name(), p.steps)
	}
	if !(p.delta > 0 && p.delta < 1) {
		return nil, fmt.Errorf("privacy %s: --delta must be in (0,1) (got %v)", fs.Name(), p.delta)
	}
	switch p.sampling {
	case accounting.SamplingPoisson:
		if given["steps-per-epoch"] {
			return nil, fmt.Errorf("privacy %s: --steps-per-epoch applies to --sampling shuffle only", fs.Name())
		}
	case accounting.SamplingShuffle:
		if p.stepsPerEpoch < 1 {
			return nil, fmt.Errorf("privacy %s: --sampling shuffle needs --steps-per-epoch ≥ 1, the batches per epoch ⌈n/batch⌉ (got %d)", fs.Name(), p.stepsPerEpoch)
		}
	default:
		return nil, fmt.Errorf("privacy %s: --sampling must be poisson or shuffle (got %q)", fs.Name(), p.sampling)
	}
	switch p.accountant {
	case accounting.AccountantRDP:
		if given["relation"] {
			return nil, fmt.Errorf("privacy %s: --relation applies to --accountant pld only", fs.Name())
		}
	case accounting.AccountantPLD:
		for _, name := range []string{"classic", "orders", "tolerance"} {
			if given[name] && !given["accountant"] {
				return nil, fmt.Errorf("privacy %s: --%s applies to the RDP accountant only, and the default is pld: add --accountant rdp", fs.Name(), name)
			}
			if given[name] {
				return nil, fmt.Errorf("privacy %s: --%s applies to --accountant rdp only", fs.Name(), name)
			}
		}
		if p.relation != accounting.RelationAddRemove && p.relation != accounting.RelationReplaceOne {
			return nil, fmt.Errorf("privacy %s: --relation must be add-remove or replace-one (got %q)", fs.Name(), p.relation)
		}
	default:
		return nil, fmt.Errorf("privacy %s: --accountant must be rdp or pld (got %q)", fs.Name(), p.accountant)
	}
	switch p.orders {
	case "opacus":
		return accounting.OpacusOrders(), nil
	case "tf":
		return accounting.TFOrders(), nil
	}
	return nil, fmt.Errorf("privacy %s: --orders must be opacus or tf (got %q)", fs.Name(), p.orders)
}

func (p *privacyQuery) conversion() string {
	if p.classic {
		return accounting.ConversionClassic
	}
	return accounting.ConversionBalle2020
}

// epsilon is ε and its order for noise multiplier sigma, with the chosen
// conversion.
func (p *privacyQuery) epsilon(orders []float64, sigma float64) (eps, order float64, err error) {
	acct, err := accounting.NewRDP(orders)
	if err != nil {
		return 0, 0, err
	}
	q, steps := p.charged()
	if err := acct.Step(accounting.SubsampledGaussian(q, sigma, 0, ""), steps); err != nil {
		return 0, 0, err
	}
	if p.classic {
		eps, order = acct.EpsilonClassic(p.delta)
	} else {
		eps, order = acct.Epsilon(p.delta)
	}
	return eps, order, nil
}

func runPrivacyEpsilon(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("epsilon", "privacy epsilon --sigma S --sample-rate Q --steps T --delta D [flags]", stderr)
	var q privacyQuery
	var sigma float64
	fs.Float64Var(&sigma, "sigma", 0, "noise multiplier σ = noise std / clip norm, > 0 (required)")
	q.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	orders, err := q.check(fs, "sigma")
	if err != nil {
		return err
	}
	if !(sigma > 0) || math.IsInf(sigma, 1) {
		return fmt.Errorf("privacy epsilon: --sigma must be a positive number (got %v; σ = 0 adds no noise and is not private)", sigma)
	}
	q.stderr = stderr
	a, err := q.solve(orders, sigma)
	if err != nil {
		return err
	}
	if q.json {
		return writeJSON(stdout, a)
	}
	if a.Accountant == accounting.AccountantPLD {
		_, err = fmt.Fprintf(stdout, "ε = %.4f %s (δ = %g, σ = %g, q = %g, %d steps)\n",
			a.Epsilon, q.how(a), q.delta, sigma, q.sampleRate, q.steps)
		return err
	}
	_, err = fmt.Fprintf(stdout, "ε = %.4f at RDP order %g (δ = %g, σ = %g, q = %g, %d steps, %s conversion, %s)\n",
		a.Epsilon, a.Order, q.delta, sigma, q.sampleRate, q.steps, q.conversion(), q.samplingText())
	return err
}

func runPrivacySigma(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("sigma", "privacy sigma --epsilon E --sample-rate Q --steps T --delta D [flags]", stderr)
	var q privacyQuery
	var target, tolerance float64
	fs.Float64Var(&target, "epsilon", 0, "target ε > 0 (required)")
	fs.Float64Var(&tolerance, "tolerance", 0, "stop when ε is within this of the target, as Opacus's get_noise_multiplier does (0.01 there); 0: the smallest σ to 1e-10")
	q.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	orders, err := q.check(fs, "epsilon")
	if err != nil {
		return err
	}
	if !(target > 0) || math.IsInf(target, 1) {
		return fmt.Errorf("privacy sigma: --epsilon must be a positive number (got %v)", target)
	}
	if !(tolerance >= 0) || math.IsInf(tolerance, 1) {
		return fmt.Errorf("privacy sigma: --tolerance must be ≥ 0 (got %v)", tolerance)
	}
	q.stderr = stderr
	sigma, fallback, err := q.calibrate(orders, target, tolerance)
	if err != nil {
		return fmt.Errorf("privacy sigma: %w", err)
	}
	if fallback != nil { // solve must not try PLD again at this σ
		q.accountant = accounting.AccountantRDP
	}
	if q.json {
		a, err := q.solve(orders, sigma)
		if err != nil {
			return err
		}
		if fallback != nil {
			q.fallBack(&a, fallback)
		}
		return writeJSON(stdout, a)
	}
	// Print σ rounded up, so that pasting the printed value never exceeds
	// the target, and report ε at exactly that value.
	shown := roundUp(sigma, 6)
	a, err := q.solve(orders, shown)
	if err != nil {
		return err
	}
	if fallback != nil {
		q.fallBack(&a, fallback)
	}
	if a.Epsilon > target { // PLD calibrated σ, then could not bound it rounded up
		return fmt.Errorf("privacy sigma: σ = %g gives ε = %.6g > %g by %s; rerun with --accountant rdp", shown, a.Epsilon, target, a.Accountant)
	}
	if a.Accountant == accounting.AccountantPLD {
		_, err = fmt.Fprintf(stdout, "σ = %g gives ε = %.4f ≤ %g %s (δ = %g, q = %g, %d steps)\n",
			shown, a.Epsilon, target, q.how(a), q.delta, q.sampleRate, q.steps)
		return err
	}
	_, err = fmt.Fprintf(stdout, "σ = %g gives ε = %.4f ≤ %g at RDP order %g (δ = %g, q = %g, %d steps, %s conversion, %s)\n",
		shown, a.Epsilon, target, a.Order, q.delta, q.sampleRate, q.steps, q.conversion(), q.samplingText())
	return err
}
