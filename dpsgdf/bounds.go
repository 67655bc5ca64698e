package dpsgdf

import "math"

// AdaptiveBounds returns DPSGD-F's per-group clip bounds (Xu, Du and Wu 2021)
//
//	C^k = C0 · (1 + (m̃^k / b̃^k) / (m̃ / b)),  b̃^k = m̃^k + õ^k,  m̃ = Σ_k m̃^k,
//
// from the noisy counts of clipped (m̃^k, clipped[k]) and unclipped (õ^k,
// unclipped[k]) gradients of each group and the expected batch size b. The
// counts are noisy, so they can be negative or make a "fraction" leave
// [0, 1]; every guard below is post-processing of the released counts and
// costs no privacy:
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
	bounds = make([]float64, len(clipped))
	var total float64
	for _, m := range clipped {
		total += m
	}
	if !(total > 0) || !(b > 0) {
		for k := range bounds {
			bounds[k] = c0
		}
		return bounds, true
	}
	overall := math.Min(1, total/b)
	for k, m := range clipped {
		bounds[k] = c0 * (1 + groupFraction(m, m+unclipped[k])/overall)
	}
	return bounds, false
}

// groupFraction is m/size clamped to [0, 1], and 0 for a non-positive size.
func groupFraction(m, size float64) float64 {
	if !(size > 0) {
		return 0
	}
	return math.Max(0, math.Min(1, m/size))
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
