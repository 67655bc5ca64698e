package accounting

import (
	"fmt"
	"slices"
)

// Adjacencies a shuffled run's receipt states (ShuffleBound.Adjacency).
const (
	// AdjacencyZeroOut: neighbouring data sets have the same number of
	// records, one record's contribution replaced by nothing (its clipped
	// gradient and its group counts absent) — the "zero-out" relation of
	// Kairouz et al. 2021 (Sec. 2), under which one batch's clipped sum
	// moves by at most the clip norm C. It is what an add/remove receipt of
	// a shuffled run means: with fixed-size shuffled batches the number of
	// records fixes how the records are cut into batches, so the record
	// count is treated as public (as every receipt's not_covered says)
	// and the record's slot stays.
	AdjacencyZeroOut = "zero-out"
	// AdjacencyReplaceOne: one record's value replaced by another; the
	// sensitivity is 2C and a noise multiplier is relative to it
	// (RelationReplaceOne).
	AdjacencyReplaceOne = RelationReplaceOne
)

// ShuffleBound is how a shuffled run's ε was bounded: what a receipt of
// sampling "shuffle" carries beside its mechanisms.
type ShuffleBound struct {
	// Epochs is how many shuffled passes over the data started (a partial
	// last one, or one interrupted and charged, counts as a whole), each
	// charged as one Gaussian mechanism.
	Epochs int `json:"epochs"`
	// StepsPerEpoch is the number of batches a pass is cut into.
	StepsPerEpoch int `json:"steps_per_epoch"`
	// Steps is the number of training steps charged (all epochs).
	Steps int `json:"steps"`
	// Adjacency is the neighbouring relation ε holds for: AdjacencyZeroOut
	// or AdjacencyReplaceOne.
	Adjacency string `json:"adjacency"`
	// PoissonEquivalentEpsilon is, for comparison with papers that report
	// it, what Poisson sampling at the nominal rate batch/n would spend
	// over the same steps. It is NOT a guarantee of this run: shuffled
	// batches are not Poisson samples (Chua et al. 2024 show the gap can
	// be large).
	PoissonEquivalentEpsilon *float64 `json:"poisson_equivalent_epsilon,omitempty"`
}

// shuffleNote is the note of every shuffle-sampled receipt.
func shuffleNote(b ShuffleBound) string {
	return fmt.Sprintf("shuffled fixed-size batches: each record is in at most one batch per epoch (parallel composition), so "+
		"each of the %d epochs is charged as one Gaussian mechanism with the step's noise multiplier, without amplification by "+
		"sampling, under %s adjacency; epsilon is a proven upper bound. poisson_equivalent_epsilon (what Poisson sampling at "+
		"the same rate would spend) is NOT a guarantee and is given only for comparison with papers that report it",
		b.Epochs, b.Adjacency)
}

// ShuffledCharges is what a run with shuffled fixed-size batches, cut
// stepsPerEpoch to an epoch, is charged for its history (as an accountant's
// History reports it): every per-step release (kind subsampled-gaussian
// with a rate 0 < q < 1, the rate being only the nominal batch/n) is
// replaced by one plain Gaussian release (rate 1) per epoch; the other
// releases (one-off releases on the whole data, rate 1; Gaussian and
// Laplace kinds) are kept as they are.
//
// Why this bounds the run: a pass cuts a permutation of the records into
// disjoint batches, so a record is in at most one batch of the pass, and
// the other steps of the pass do not depend on it given what came before:
// the pass costs at most one Gaussian mechanism with the step's noise
// multiplier (parallel composition, McSherry 2009; as for the
// deterministic batches of Chua et al. 2024), and the epochs compose
// adaptively. A short last batch changes nothing, since the sum is
// divided by the fixed batch size, not by the records present. Nothing is
// claimed for the randomness of the shuffle: no amplification.
//
// epochs is ⌈steps/stepsPerEpoch⌉ over the per-step releases, which
// assumes what every fairdp algorithm does: each step charges exactly one
// per-step release (releases made on one batch are one joint mechanism),
// and epochs start every stepsPerEpoch steps (an interrupted epoch is
// charged whole). Where the history holds several per-step releases, every
// epoch is charged with the one of smallest noise multiplier, which
// dominates the others.
func ShuffledCharges(history []Mechanism, stepsPerEpoch int) (charged []Mechanism, epochs, steps int, err error) {
	if stepsPerEpoch < 1 {
		return nil, 0, 0, fmt.Errorf("accounting: shuffled batches need the number of steps per epoch (got %d)", stepsPerEpoch)
	}
	worst, at := -1, 0 // at: where the per-epoch release goes, in place of the first per-step one
	for i, m := range history {
		if !perStepRelease(m) {
			if worst < 0 {
				at++
			}
			continue
		}
		steps += m.Steps
		if worst < 0 || m.NoiseMultiplier < history[worst].NoiseMultiplier {
			worst = i
		}
	}
	epochs = (steps + stepsPerEpoch - 1) / stepsPerEpoch
	for _, m := range history {
		if perStepRelease(m) {
			continue
		}
		m.Parts = slices.Clone(m.Parts)
		charged = append(charged, m)
	}
	if worst >= 0 && epochs > 0 {
		m := history[worst]
		m.Parts = slices.Clone(m.Parts)
		m.SampleRate, m.Steps = 1, epochs
		m.Protects += " (shuffled batches: charged once per epoch)"
		charged = slices.Insert(charged, at, m)
	}
	return charged, epochs, steps, nil
}

// perStepRelease reports whether m is a training step's release: a
// subsampled Gaussian at a nominal rate below 1 (rate 1 is a release on
// the whole data, which shuffling does not change; rate 0 releases
// nothing).
func perStepRelease(m Mechanism) bool {
	return m.Kind == KindSubsampledGaussian && m.SampleRate > 0 && m.SampleRate < 1
}

// shuffledReceipt is the receipt of a shuffled run with the given history:
// issue states the receipt of the charged history (ShuffledCharges) and
// poisson is the Poisson-rate figure of the same steps (NaN where it
// cannot be computed), recorded only for comparison.
func shuffledReceipt(history []Mechanism, run RunInfo, adjacency string, issue func(charged []Mechanism) (Receipt, error),
	poisson func() float64) (Receipt, error) {
	charged, epochs, steps, err := ShuffledCharges(history, run.StepsPerEpoch)
	if err != nil {
		return Receipt{}, err
	}
	r, err := issue(charged)
	if err != nil {
		return r, err
	}
	b := ShuffleBound{Epochs: epochs, StepsPerEpoch: run.StepsPerEpoch, Steps: steps, Adjacency: adjacency,
		PoissonEquivalentEpsilon: finite(poisson())}
	r.Shuffle = &b
	r.addNote(shuffleNote(b))
	return r, nil
}

// shuffleAdjacency is the adjacency a shuffled receipt holds for under a
// PLD neighbouring relation (RDP's is add/remove).
func shuffleAdjacency(relation string) string {
	if relation == RelationReplaceOne {
		return AdjacencyReplaceOne
	}
	return AdjacencyZeroOut
}
