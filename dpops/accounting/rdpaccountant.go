package accounting

import (
	"fmt"
	"math"
	"slices"
)

// RDP is the Rényi-DP accountant of the DPSGD family: it adds, order by
// order, the RDP of every Poisson-subsampled Gaussian mechanism a run
// applies (different mechanisms in the same step simply add), and converts
// the total to (ε, δ) on request. The zero value is ready to use with
// OpacusOrders(); NewRDP chooses other orders. Not safe for concurrent use.
type RDP struct {
	orders  []float64
	total   []float64 // RDP at each order, summed over everything composed
	history []rdpCharge
}

// rdpCharge is one distinct mechanism in the history, with its per-step RDP
// cached so that a trainer calling Step every step pays for it only once.
type rdpCharge struct {
	mech    Mechanism
	perStep []float64
}

// NewRDP returns an accountant that tracks the given Rényi orders (each a
// finite number > 1); nil means OpacusOrders().
func NewRDP(orders []float64) (*RDP, error) {
	if orders == nil {
		orders = OpacusOrders()
	}
	if err := checkOrders(orders); err != nil {
		return nil, err
	}
	return &RDP{orders: slices.Clone(orders), total: make([]float64, len(orders))}, nil
}

func (a *RDP) init() {
	if a.orders == nil {
		a.orders = OpacusOrders()
		a.total = make([]float64, len(a.orders))
	}
}

// Orders returns the Rényi orders the accountant tracks.
func (a *RDP) Orders() []float64 {
	a.init()
	return slices.Clone(a.orders)
}

// Values returns the composed RDP at each of Orders().
func (a *RDP) Values() []float64 {
	a.init()
	return slices.Clone(a.total)
}

// Step composes steps more applications of m, which must be of kind
// subsampled-gaussian (the SampleRate and NoiseMultiplier fields are used;
// m.Steps is ignored: steps counts). Call it once per mechanism per step, or
// once with the total number of steps; the result is the same.
func (a *RDP) Step(m Mechanism, steps int) error {
	a.init()
	if m.Kind != KindSubsampledGaussian {
		return fmt.Errorf("accounting: the RDP accountant composes %q mechanisms, not %q", KindSubsampledGaussian, m.Kind)
	}
	if err := checkMechanismParams(m.SampleRate, m.NoiseMultiplier, steps); err != nil {
		return err
	}
	if steps == 0 {
		return nil
	}
	m.Steps = 0
	idx := slices.IndexFunc(a.history, func(c rdpCharge) bool { return sameRelease(c.mech, m) })
	if idx < 0 {
		perStep := make([]float64, len(a.orders))
		for i, alpha := range a.orders {
			perStep[i] = SubsampledGaussianRDP(m.SampleRate, m.NoiseMultiplier, alpha)
		}
		a.history = append(a.history, rdpCharge{mech: m, perStep: perStep})
		idx = len(a.history) - 1
	}
	c := &a.history[idx]
	c.mech.Steps += steps
	for i, r := range c.perStep {
		a.total[i] += scaleRDP(r, steps)
	}
	return nil
}

// History returns every distinct mechanism composed so far with its total
// number of steps, in the order first seen.
func (a *RDP) History() []Mechanism {
	out := make([]Mechanism, len(a.history))
	for i, c := range a.history {
		out[i] = c.mech
	}
	return out
}

// Epsilon is the ε of the composition at the given δ with the conversion of
// Balle et al. 2020 (see EpsilonFromRDP), and the order that attains it.
// A δ outside (0,1) gives NaN; EpsilonFromRDP reports it as an error.
func (a *RDP) Epsilon(delta float64) (eps, order float64) {
	a.init()
	eps, order, err := EpsilonFromRDP(a.orders, a.total, delta)
	if err != nil {
		return math.NaN(), math.NaN()
	}
	return eps, order
}

// EpsilonClassic is Epsilon with the classic conversion of Mironov 2017
// (see EpsilonFromRDPClassic).
func (a *RDP) EpsilonClassic(delta float64) (eps, order float64) {
	a.init()
	eps, order, err := EpsilonFromRDPClassic(a.orders, a.total, delta)
	if err != nil {
		return math.NaN(), math.NaN()
	}
	return eps, order
}

// RDPState is an RDP accountant's exact state: what a training checkpoint
// saves so that a resumed run continues the same composition. Total is
// kept as summed (not re-summed from History on restore), so the resumed
// run's ε is bit-identical to an uninterrupted run's.
type RDPState struct {
	Orders  []float64
	Total   []float64   // composed RDP at each order
	History []Mechanism // every distinct mechanism with its total Steps
}

// State returns a copy of the accountant's state.
func (a *RDP) State() RDPState {
	a.init()
	return RDPState{Orders: slices.Clone(a.orders), Total: slices.Clone(a.total), History: a.History()}
}

// Restore replaces the accountant's state by s (from State). It refuses a
// state whose totals disagree with its history beyond rounding (a corrupt
// or edited checkpoint must not lower the ε spent).
func (a *RDP) Restore(s RDPState) error {
	if err := checkOrders(s.Orders); err != nil {
		return err
	}
	if len(s.Total) != len(s.Orders) {
		return fmt.Errorf("accounting: RDP state has %d totals for %d orders", len(s.Total), len(s.Orders))
	}
	r := &RDP{orders: slices.Clone(s.Orders), total: make([]float64, len(s.Orders))}
	for _, m := range s.History {
		if err := r.Step(m, m.Steps); err != nil {
			return fmt.Errorf("accounting: RDP state: %w", err)
		}
	}
	for i, t := range r.total {
		if got := s.Total[i]; !(math.Abs(got-t) <= 1e-9*math.Abs(t)) && !(math.IsInf(t, 1) && math.IsInf(got, 1)) {
			return fmt.Errorf("accounting: RDP state's total %v at order %v disagrees with its history (%v)", got, s.Orders[i], t)
		}
	}
	copy(r.total, s.Total)
	*a = *r
	return nil
}
