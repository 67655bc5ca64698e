package accounting

import (
	"fmt"
	"math"
	"slices"
)

// ConversionPLD names, in receipts, how the PLD accountant reads (ε, δ)
// off the composed privacy-loss distribution: exactly, from its
// pessimistic (connect-the-dots) discretisation.
const ConversionPLD = "pld-connect-the-dots"

// PLDState is a PLD accountant's exact state, what a training checkpoint
// saves: its options and its history (as History reports it). The
// composition is recomputed from the history, so there is no total to
// disagree with it.
type PLDState struct {
	Interval float64     `json:"interval"`
	Relation string      `json:"relation"`
	History  []Mechanism `json:"history"`
}

// State returns a copy of the accountant's state.
func (a *PLD) State() PLDState {
	a.init()
	return PLDState{Interval: a.opts.Interval, Relation: a.opts.Relation, History: a.History()}
}

// Restore replaces the accountant's state by s (from State); a state it
// cannot compose (bad options or mechanisms) is refused and leaves the
// accountant unchanged.
func (a *PLD) Restore(s PLDState) error {
	r, err := NewPLD(PLDOptions{Interval: s.Interval, Relation: s.Relation})
	if err != nil {
		return fmt.Errorf("accounting: PLD state: %w", err)
	}
	for _, m := range s.History {
		if err := r.add(m); err != nil {
			return fmt.Errorf("accounting: PLD state: %w", err)
		}
	}
	*a = *r
	return nil
}

// Receipt states the accountant's guarantee at delta. An error wrapping
// ErrPLDRange means PLD cannot bound the run: the caller issues the RDP
// accountant's receipt instead and records why (AddNote), never silently.
// The note states the discretisation interval and the neighbouring
// relation, which the ε depends on. A shuffled run's receipt is that of
// its charged history (ShuffledCharges: one Gaussian per epoch) under
// zero-out adjacency (replace-one under RelationReplaceOne), with the
// Poisson-rate figure kept in Shuffle for comparison only.
func (a *PLD) Receipt(delta float64, run RunInfo) (Receipt, error) {
	run, err := run.normalised()
	if err != nil {
		return Receipt{}, err
	}
	if run.Sampling != SamplingShuffle {
		return a.receipt(delta, run)
	}
	opts := a.Options()
	return shuffledReceipt(a.History(), run, shuffleAdjacency(opts.Relation), func(charged []Mechanism) (Receipt, error) {
		c, err := NewPLD(opts)
		if err != nil {
			return Receipt{}, err
		}
		for _, m := range charged {
			if err := c.add(m); err != nil {
				return Receipt{}, err
			}
		}
		return c.receipt(delta, run)
	}, func() float64 {
		eps, err := a.Epsilon(delta)
		if err != nil {
			return math.NaN()
		}
		return eps
	})
}

// receipt is Receipt of the history as the accountant composed it (no
// account taken of the sampling).
func (a *PLD) receipt(delta float64, run RunInfo) (Receipt, error) {
	eps, err := a.Epsilon(delta)
	if err != nil {
		return Receipt{}, err
	}
	// rdp_valid keeps its meaning for tools that read it (trainer's sweep
	// totals): ε is a proven bound.
	valid := true
	h := a.Options().Interval
	r := Receipt{Epsilon: finite(eps), Delta: delta, Accountant: AccountantPLD, Conversion: ConversionPLD,
		Mechanisms: slices.Clone(a.History()), RDPValid: &valid, PLDInterval: &h, Relation: a.Options().Relation}
	r.setRun(run)
	r.addNote(fmt.Sprintf("PLD accountant: %s neighbouring data sets, privacy loss discretised pessimistically at interval %g; "+
		"epsilon is an upper bound", a.Options().Relation, a.Options().Interval))
	r.noteIfInfinite(eps)
	return r, nil
}
