package federated

import (
	"fmt"
	"strings"

	"github.com/fairdp/fairdp/dpops/accounting"
)

// SiloPrivacy is one silo's line of a federation's privacy receipt, in
// report.json (extra.steffle.per_silo) and in the receipt's note.
type SiloPrivacy struct {
	Silo    int    `json:"silo"`
	Address string `json:"address,omitempty"`
	// Records counts the records whose sensitive attributes the silo holds
	// (what its ε protects); FeatureRecords those whose features it holds.
	Records        int `json:"records"`
	FeatureRecords int `json:"feature_records"`
	// Epsilon is the ε the silo has spent (nil: it released nothing private,
	// e.g. a silo that holds no sensitive attribute under --scope sensitive,
	// or a run that is not private); Delta is the largest δ of its lanes;
	// Sigma, SampleRate and Rounds describe the lane with the largest ε.
	Epsilon    *float64 `json:"epsilon"`
	Delta      float64  `json:"delta,omitempty"`
	Sigma      float64  `json:"sigma,omitempty"`
	SampleRate float64  `json:"sample_rate,omitempty"`
	Rounds     int      `json:"rounds"`
	Lanes      []int    `json:"lanes,omitempty"`
}

// FederationReceipt is a federation's headline receipt: worst, the receipt
// of the silo that spent the most ε (every message is DP with respect to
// the records of the silo that sent it, so the largest ε is the run's
// record-level guarantee), with every silo's line appended to its note.
func FederationReceipt(worst accounting.Receipt, silos []SiloPrivacy, mode string) accounting.Receipt {
	if mode == "" {
		mode = "horizontal"
	}
	var lines []string
	top, topEps, maxDelta := -1, -1.0, 0.0
	for _, s := range silos {
		if s.Epsilon != nil {
			maxDelta = max(maxDelta, s.Delta)
		}
		name := fmt.Sprintf("silo %d", s.Silo)
		if s.Address != "" {
			name += " (" + s.Address + ")"
		}
		if s.Epsilon == nil {
			lines = append(lines, fmt.Sprintf("%s: %d feature records, no sensitive release (ε 0)", name, s.FeatureRecords))
			continue
		}
		if *s.Epsilon > topEps {
			top, topEps = s.Silo, *s.Epsilon
		}
		lines = append(lines, fmt.Sprintf("%s: ε = %.4g, δ = %.3g, σ = %.4g, q = %.4g, %d rounds, %d records", name, *s.Epsilon, s.Delta, s.Sigma, s.SampleRate, s.Rounds, s.Records))
	}
	head := fmt.Sprintf("SteFFLe (%s): %d silos, each message DP on its own (ISRL-DP)", mode, len(silos))
	if top >= 0 {
		head += fmt.Sprintf("; headline is silo %d's receipt (the largest ε)", top)
	}
	r := worst
	if maxDelta > r.Delta {
		// ε falls as δ grows, so (largest ε, largest δ) holds for every silo.
		r.Delta = maxDelta
		head += fmt.Sprintf("; δ is the largest silo δ (silo %d's own is %.3g)", top, worst.Delta)
	}
	r.Note = head + "; per silo: " + strings.Join(lines, "; ") + ". " + worst.Note
	return r
}
