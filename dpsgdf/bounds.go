package dpsgdf

import (
	"fmt"
	"math"
)

// CountGuard is DPSGD-F's rule for a group whose noisy counts leave no
// usable clipped fraction m̃^k/b̃^k: b̃^k ≤ 0 (the group is noisily absent),
// or a negative count. Xu, Du and Wu 2021 do not say how they guard; at a
// realistic σ1 the choice decides a rare group's bound. On the unbalanced
// MNIST profile (σ1 = 8, class 8 ≈ 2.3 records per batch, so the counts'
// signal-to-noise ratio is ≈ 0.2) class 8 hits the guard in ≈ 42 % of
// steps. Every rule reads only the released noisy counts and public
// constants (C0, the expected batch size b, σ1): it is post-processing of
// the counts the accountant already charged and spends no privacy.
type CountGuard string

// The count guards DPSGD-F offers (Config.CountGuard).
const (
	// GuardC0 takes a noisily empty group's clipped fraction as 0, so its
	// bound is C0, and clamps any other fraction to [0, 1]. fairdp's rule
	// before the guard was an option: a rare group lands at C0 whenever
	// noise pushes its size below 0.
	GuardC0 CountGuard = "c0"
	// GuardFloor floors every noisy count at 0 (a count cannot be
	// negative) and reads a group's fraction 0/0 as 1: a group with no
	// evidence is treated as wholly clipped and gets the largest bound,
	// C0·(1 + 1/(m/b)). Another public reimplementation of DPSGD-F does
	// this; it raises rare groups, and with them max_k C^k and the
	// gradient noise σ2·max_k C^k of the whole batch.
	GuardFloor CountGuard = "floor"
	// GuardSmooth floors the counts at 0 and shrinks each group's fraction
	// towards the pooled one, r = m/b: the posterior mean of a Beta prior
	// with mean r and strength a = σ1 pseudo-counts, (m^k + a·r)/(b^k + a)
	// (additive smoothing; Laplace's rule of succession is r = 1/2, a = 2).
	// A group whose noisy size is well above σ1 keeps its own fraction; a
	// group lost in the noise gets the pooled one, r, and so the bound of a
	// typical group, 2·C0. a = σ1 is a scale choice (one count-noise
	// standard deviation), not an estimate.
	GuardSmooth CountGuard = "smooth"
)

// DefaultCountGuard is the guard of a Config that names none: the one
// that served the rare group best at equal ε. On unbalanced MNIST (class 8
// cut to 500 images, Bagdasaryan et al.'s regime, 59 epochs, ε 5.93, seeds
// 1 and 2) class 8 reached .583 / .662 under GuardSmooth against .504 /
// .340 under GuardC0 (whose seed 2 broke on one step with a bound of
// ≈ 3,500·C0) and .403 / .731 under GuardFloor, with the smallest noise
// bound of the three and no spikes; on Adult the three agree within .001
// (bench/results/dpsgdf_count_guard.md). Results recorded before
// 2026-11-28 ran GuardC0 (`--count-guard c0` repeats them).
const DefaultCountGuard = GuardSmooth

// CountGuards lists the guards in the order the documentation gives them.
func CountGuards() []CountGuard { return []CountGuard{GuardC0, GuardFloor, GuardSmooth} }

func (g CountGuard) check() error {
	switch g {
	case GuardC0, GuardFloor, GuardSmooth:
		return nil
	}
	return fmt.Errorf("%q, want %q, %q or %q", g, GuardC0, GuardFloor, GuardSmooth)
}

// orDefault is g, or DefaultCountGuard for "".
func (g CountGuard) orDefault() CountGuard {
	if g == "" {
		return DefaultCountGuard
	}
	return g
}

// AdaptiveBounds returns DPSGD-F's per-group clip bounds (Xu, Du and Wu 2021)
//
//	C^k = C0 · (1 + (m̃^k / b̃^k) / (m̃ / b)),  b̃^k = m̃^k + õ^k,  m̃ = Σ_k m̃^k,
//
// from the noisy counts of clipped (m̃^k, clipped[k]) and unclipped (õ^k,
// unclipped[k]) gradients of each group and the expected batch size b,
// under GuardC0; CountGuard.Bounds takes the guard as a choice. The counts
// are noisy, so they can be negative or make a "fraction" leave [0, 1];
// every guard below is post-processing of the released counts and costs no
// privacy:
//
//   - all-unclipped batch: when m̃ ≤ 0 (noisily, nothing was clipped; this
//     includes an empty batch with non-positive noise) there is nothing to
//     adapt and every bound is C0 (allUnclipped is then true). The overall
//     fraction m̃/b is capped at 1.
//   - empty group: when b̃^k ≤ 0 the group is (noisily) absent from the
//     batch; its clipped fraction is taken as 0, so C^k = C0.
//   - the group fraction m̃^k/b̃^k is clamped to [0, 1], the range of a
//     fraction (noise can push it below 0 or above 1).
//
// clipped and unclipped must have the same length (the number of groups).
func AdaptiveBounds(c0, b float64, clipped, unclipped []float64) (bounds []float64, allUnclipped bool) {
	bounds, allUnclipped, _ = GuardC0.Bounds(c0, b, 0, clipped, unclipped)
	return bounds, allUnclipped
}

// Bounds returns DPSGD-F's per-group clip bounds
// C^k = C0·(1 + f^k/r), r = min(1, m̃/b), with the group fraction f^k and
// the clipped total m̃ as the guard g reads the noisy counts (clipped[k] =
// m̃^k, unclipped[k] = õ^k; "" is DefaultCountGuard):
//
//   - GuardC0: m̃ = Σ m̃^k; f^k = m̃^k/b̃^k clamped to [0, 1], and 0 when
//     b̃^k ≤ 0 (AdaptiveBounds).
//   - GuardFloor: every count floored at 0 first (m^k, o^k); m̃ = Σ m^k;
//     f^k = m^k/(m^k + o^k), and 1 when both are 0.
//   - GuardSmooth: the floored counts; f^k = (m^k + a·r)/(m^k + o^k + a)
//     with a = strength (σ1 in a run), and r when that denominator is 0.
//
// Under every guard a batch whose clipped total m̃ is ≤ 0, or b ≤ 0, gets
// C^k = C0 for all k and allUnclipped true. All three fractions lie in
// [0, 1], so C0 ≤ C^k ≤ C0·(1 + 1/r). An unknown guard is an error.
func (g CountGuard) Bounds(c0, b, strength float64, clipped, unclipped []float64) (bounds []float64, allUnclipped bool, err error) {
	g = g.orDefault()
	if err := g.check(); err != nil {
		return nil, false, fmt.Errorf("dpsgdf: count guard %w", err)
	}
	floor := g != GuardC0
	bounds = make([]float64, len(clipped))
	var total float64
	for _, m := range clipped {
		if floor {
			m = math.Max(0, m)
		}
		total += m
	}
	if !(total > 0) || !(b > 0) {
		for k := range bounds {
			bounds[k] = c0
		}
		return bounds, true, nil
	}
	overall := math.Min(1, total/b)
	for k, m := range clipped {
		var f float64
		switch g {
		case GuardC0:
			f = groupFraction(m, m+unclipped[k])
		case GuardFloor:
			m, o := math.Max(0, m), math.Max(0, unclipped[k])
			f = 1 // 0/0: no evidence reads as wholly clipped
			if m+o > 0 {
				f = m / (m + o)
			}
		case GuardSmooth:
			m, o := math.Max(0, m), math.Max(0, unclipped[k])
			f = overall // no evidence and no prior strength: the pooled fraction
			if d := m + o + strength; d > 0 {
				f = (m + strength*overall) / d
			}
		}
		bounds[k] = c0 * (1 + f/overall)
	}
	return bounds, false, nil
}

// groupFraction is m/size clamped to [0, 1], and 0 for a non-positive size.
func groupFraction(m, size float64) float64 {
	if !(size > 0) {
		return 0
	}
	return math.Max(0, math.Min(1, m/size))
}

// NaiveGuard is Naïve's rule for turning a group's noisy batch count b̃^k
// into its weight θ^k. The paper's θ^k = (b/K)/b̃^k needs a divisor
// guard (a noisy count can be ≤ 0), and with it the weight of a group
// whose count the noise pushed near 0 jumps to b/K for one step, and the
// noise σ2·C0·max_k θ^k of the whole batch with it. Every rule reads only
// the released counts and public constants (b, K, σ1): it is
// post-processing of the charged counts and spends no privacy.
type NaiveGuard string

// The Naïve guards (Config.NaiveGuard).
const (
	// NaiveGuardOne raises a count below 1 to 1 (NaiveWeights): a group
	// that contributes a sample has at least one member, so no weight
	// exceeds b/K. fairdp's rule before the guard was an option.
	NaiveGuardOne NaiveGuard = "one"
	// NaiveGuardSmooth adds a = σ1 pseudo-records at the even share b/K to
	// every group: θ^k = (b/K + a)/(max(0, b̃^k) + a). A group whose noisy
	// count is well above σ1 keeps the paper's weight (b/K)/b̃^k; a group
	// lost in the noise gets at most 1 + (b/K)/σ1 instead of b/K, and
	// weights shrink towards 1 (DP-SGD's) as the counts' noise grows. a =
	// σ1 is a scale choice (one count-noise standard deviation), as in
	// GuardSmooth, not an estimate.
	NaiveGuardSmooth NaiveGuard = "smooth"
)

// DefaultNaiveGuard is the guard of a Config that names none. The
// trainer's data-aware defaults name NaiveGuardSmooth on tabular data
// (trainer.AdaptToData); image data keep this one.
const DefaultNaiveGuard = NaiveGuardOne

// NaiveGuards lists the Naïve guards in the order the documentation gives them.
func NaiveGuards() []NaiveGuard { return []NaiveGuard{NaiveGuardOne, NaiveGuardSmooth} }

func (g NaiveGuard) check() error {
	switch g {
	case NaiveGuardOne, NaiveGuardSmooth:
		return nil
	}
	return fmt.Errorf("%q, want %q or %q", g, NaiveGuardOne, NaiveGuardSmooth)
}

// orDefault is g, or DefaultNaiveGuard for "".
func (g NaiveGuard) orDefault() NaiveGuard {
	if g == "" {
		return DefaultNaiveGuard
	}
	return g
}

// Weights returns Naïve's per-group weights θ^k under the guard g ("" is
// DefaultNaiveGuard) from the noisy group counts of the batch, the
// expected batch size b and the smoothing strength (σ1 in a run; unused by
// NaiveGuardOne). Under NaiveGuardSmooth with strength 0 a count below 1
// is raised to 1, as under NaiveGuardOne. An unknown guard is an error.
func (g NaiveGuard) Weights(b, strength float64, counts []float64) ([]float64, error) {
	g = g.orDefault()
	if err := g.check(); err != nil {
		return nil, fmt.Errorf("dpsgdf: naive guard %w", err)
	}
	if g == NaiveGuardOne {
		return NaiveWeights(b, counts), nil
	}
	w := make([]float64, len(counts))
	share := b / float64(len(counts))
	for k, c := range counts {
		w[k] = (share + strength) / math.Max(1, math.Max(0, c)+strength)
	}
	return w, nil
}

// NaiveWeights returns Naïve's per-group weights θ^k = (b/K) / b̃^k from the
// noisy group counts b̃^k of the batch and the expected batch size b
// (Xu, Du and Wu 2021): each group then contributes as if it held b/K samples.
//
// Division guard: a noisy count below 1 is raised to 1 before dividing. A
// group that contributes a sample to the batch has at least one member, so
// the weight of any sample that is actually in the batch is at most b/K; a
// count of 0 or less would give an infinite or negative weight. This is
// post-processing of the released counts.
func NaiveWeights(b float64, counts []float64) []float64 {
	w := make([]float64, len(counts))
	share := b / float64(len(counts))
	for k, c := range counts {
		w[k] = share / math.Max(1, c)
	}
	return w
}
