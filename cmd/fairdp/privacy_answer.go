package main

// The answers of `fairdp privacy`: ε or σ from the PLD accountant, falling
// back to RDP where PLD cannot bound the query, and how each was computed.

import (
	"errors"
	"fmt"

	"github.com/fairdp/fairdp/dpops/accounting"
)

// privacyAnswer is the --json output of both subcommands. Order,
// Conversion and Orders belong to the RDP accountant, Relation and
// Interval to PLD; Fallback says why PLD was asked for and RDP answered.
type privacyAnswer struct {
	Epsilon    float64 `json:"epsilon"`
	Order      float64 `json:"order,omitempty"`
	Sigma      float64 `json:"sigma"`
	SampleRate float64 `json:"sample_rate"`
	Steps      int     `json:"steps"`
	Delta      float64 `json:"delta"`
	Accountant string  `json:"accountant"`
	Conversion string  `json:"conversion,omitempty"`
	Orders     string  `json:"orders,omitempty"`
	Relation   string  `json:"relation,omitempty"`
	Interval   float64 `json:"interval,omitempty"`
	Fallback   string  `json:"fallback,omitempty"`
	Sampling   string  `json:"sampling"`
	// Epochs, for --sampling shuffle, is the number of Gaussians charged.
	Epochs int `json:"epochs,omitempty"`
	// Scope is "sensitive" under --scope sensitive (SampleRate is then 1),
	// left out for the default scope all.
	Scope string `json:"scope,omitempty"`
}

func (p *privacyQuery) answer(eps, order, sigma float64) privacyAnswer {
	return p.sampled(privacyAnswer{Epsilon: eps, Order: order, Sigma: sigma, SampleRate: p.sampleRate, Steps: p.steps,
		Delta: p.delta, Accountant: accounting.AccountantRDP, Conversion: p.conversion(), Orders: p.orders})
}

// sampled fills in a's sampling (and the epochs charged under shuffle).
func (p *privacyQuery) sampled(a privacyAnswer) privacyAnswer {
	a.Sampling = p.sampling
	if p.scope == accounting.ScopeSensitive {
		a.Scope = p.scope
	}
	if p.sampling == accounting.SamplingShuffle {
		_, a.Epochs = p.charged()
	}
	return a
}

// pldOptions are the PLD accountant's options for this query.
func (p *privacyQuery) pldOptions() accounting.PLDOptions {
	return accounting.PLDOptions{Relation: p.relation}
}

// fallBack records that PLD could not answer and RDP does, on stderr and
// in the answer, so the switch is never silent.
func (p *privacyQuery) fallBack(a *privacyAnswer, why error) {
	a.Fallback = why.Error()
	fmt.Fprintf(p.stderr, "note: the PLD accountant cannot bound this run (%v); falling back to RDP\n", why)
}

// solve is the answer for noise multiplier sigma with the chosen
// accountant: PLD where it can bound the run, else RDP with the reason.
func (p *privacyQuery) solve(orders []float64, sigma float64) (privacyAnswer, error) {
	var pldErr error
	if p.accountant == accounting.AccountantPLD {
		q, steps := p.charged()
		m := accounting.SubsampledGaussian(q, sigma, 0, "")
		m.Steps = steps
		eps, err := accounting.PLDEpsilon([]accounting.Mechanism{m}, p.delta, p.pldOptions())
		if err == nil {
			return p.sampled(privacyAnswer{Epsilon: eps, Sigma: sigma, SampleRate: p.sampleRate, Steps: p.steps, Delta: p.delta,
				Accountant: accounting.AccountantPLD, Relation: p.relation, Interval: accounting.DefaultPLDInterval}), nil
		}
		if !errors.Is(err, accounting.ErrPLDRange) {
			return privacyAnswer{}, err
		}
		pldErr = err
	}
	eps, order, err := p.epsilon(orders, sigma)
	if err != nil {
		return privacyAnswer{}, err
	}
	a := p.answer(eps, order, sigma)
	if pldErr != nil {
		p.fallBack(&a, pldErr)
	}
	return a, nil
}

// how describes the analysis behind an answer, for the text output.
func (p *privacyQuery) how(a privacyAnswer) string {
	how := fmt.Sprintf("at RDP order %g", a.Order)
	if a.Accountant == accounting.AccountantPLD {
		how = fmt.Sprintf("by PLD, %s, interval %g, %s", a.Relation, a.Interval, p.samplingText())
	}
	if a.Scope == accounting.ScopeSensitive {
		how += ", scope sensitive: no amplification by sampling (q = 1)"
	}
	return how
}

// calibrate is the smallest σ meeting target with the chosen accountant;
// fallback is PLD's reason when it could not and RDP answered.
func (q *privacyQuery) calibrate(orders []float64, target, tolerance float64) (sigma float64, fallback error, err error) {
	rate, steps := q.charged()
	if q.accountant == accounting.AccountantPLD {
		sigma, err := accounting.CalibrateSigmaPLD(target, q.delta, rate, steps,
			accounting.PLDCalibration{PLDOptions: q.pldOptions()})
		if !errors.Is(err, accounting.ErrPLDRange) {
			return sigma, nil, err
		}
		fallback = err
	}
	opts := []accounting.CalibrateOption{accounting.WithOrders(orders)}
	if q.classic {
		opts = append(opts, accounting.WithClassic())
	}
	if tolerance > 0 {
		opts = append(opts, accounting.WithEpsilonTolerance(tolerance))
	}
	sigma, err = accounting.CalibrateSigma(target, q.delta, rate, steps, opts...)
	return sigma, fallback, err
}
