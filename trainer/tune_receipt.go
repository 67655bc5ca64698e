package trainer

import (
	"fmt"
	"slices"

	"github.com/fairdp/fairdp/dpops/accounting"
)

// TunedReceiptOptions describe a finished private search (Papernot and
// Steinke 2022) for TunedReceipt: the plan's guarantee, the law of K, the
// chosen trial's own receipt and the score's Gaussian.
type TunedReceiptOptions struct {
	// Epsilon is the whole search's ε at Delta, attained at Rényi order
	// Order (accounting.TuningPlan).
	Epsilon, Order, Delta float64
	Law                   accounting.TruncatedNegativeBinomial
	Trials                int
	MeanTrials            float64
	// TrialEpsilon is the costliest trial's ε, score included.
	TrialEpsilon float64
	// TrialNoise says how a trial's noise was set, e.g. "σ calibrated"
	// (completed by "so that the costliest alone spends ε = …").
	TrialNoise string
	// Chosen is the chosen trial's own receipt: its mechanisms and notes
	// are kept, its ε and accountant superseded by the search's.
	Chosen accounting.Receipt
	// Score is the score's release (a Gaussian), listed after the chosen
	// trial's mechanisms; ScoreName and Scored say what it is and on what
	// records, as the note names them.
	Score             accounting.Mechanism
	ScoreName, Scored string
	// Sampling and Relation are the receipt's (Relation "": the
	// accountant's default, add-remove).
	Sampling, Relation string
	Seeded             bool
	Seed               uint64
}

// TunedReceipt is the receipt of a private search: Theorem 2's bound on
// the whole search, converted by Balle et al. 2020, with the chosen
// trial's mechanisms and its score's, and the note that says so. The
// caller adds the not_covered items of its own outputs.
func TunedReceipt(o TunedReceiptOptions) accounting.Receipt {
	eps, order, valid := o.Epsilon, o.Order, true
	mechs := append(slices.Clone(o.Chosen.Mechanisms), o.Score)
	rc := accounting.Receipt{
		Epsilon: &eps, Delta: o.Delta, Accountant: accounting.AccountantRDP, Conversion: accounting.ConversionBalle2020,
		Order: &order, Mechanisms: mechs, Scope: accounting.ScopeAll, Sampling: o.Sampling, RDPValid: &valid,
		Relation: o.Relation, Seeded: o.Seeded,
	}
	if o.Seeded {
		s := o.Seed
		rc.Seed = &s
	}
	rc.AddNote(fmt.Sprintf("private hyperparameter tuning (Papernot and Steinke 2022, Theorem 2): %d trials, K drawn from a truncated negative "+
		"binomial law (η = %g, γ = %.4g, E[K] = %g) independently of the data; every trial (its own noise, %s so that "+
		"the costliest alone spends ε = %.4g) scored by its %s on %s; only the "+
		"best trial is published. The mechanisms listed are the chosen trial's; ε is the whole search's. RDP is used because "+
		"the tuning theorem is stated in Rényi DP: its bound on the search, at order λ = %g, converted to (ε, δ) by Balle et al. 2020",
		o.Trials, o.Law.Eta, o.Law.Gamma, o.MeanTrials, o.TrialNoise, o.TrialEpsilon, o.ScoreName, o.Scored, o.Order))
	if o.Chosen.Note != "" {
		// The trial's own note speaks of its own calibration and accountant;
		// the search's noise came from its plan, and its ε is the bound above.
		rc.AddNote("the chosen trial's own receipt said (its ε and accountant are superseded by the search's bound above): " + o.Chosen.Note)
	}
	return rc
}
