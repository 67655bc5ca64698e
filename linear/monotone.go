package linear

// Monotone cells: the noisy (bin, group, label) table smoothed so that
// within every group the positive label's share does not fall as the
// base's score rises.
//
// Why: with few records per cell (m·ε₂ of a few hundred) Laplace noise
// reorders the label shares of neighbouring score bins, and the LP, which
// decides every (bin, group) cell on its own, then predicts positive in a
// bin and negative in the bin above it — a classifier no threshold on the
// score gives, and worse than one. Where the base's score ranks records
// (what a logistic model's probability does), the true shares rise with
// the bin, so projecting the noisy shares onto rising sequences (weighted
// isotonic regression, the consistency step of Hay et al. 2010 for noisy
// ordered counts) removes noise and keeps the truth. It reads only the
// released noisy table: post-processing, no privacy cost.

import "math"

// isotonic returns the weighted least-squares fit to v among
// non-decreasing sequences (pool adjacent violators, Ayer et al. 1955): it
// minimises Σ w_i (f_i − v_i)² subject to f_1 ≤ f_2 ≤ … . Entries of zero
// weight take their pooled neighbours' value (and alone, their own).
func isotonic(v, w []float64) []float64 {
	type block struct {
		sum, weight float64 // Σ w·v and Σ w over the pooled entries
		n           int
		val         float64 // the pooled value (its own when weight is 0)
	}
	var st []block
	for i := range v {
		b := block{sum: w[i] * v[i], weight: w[i], n: 1, val: v[i]}
		for len(st) > 0 && st[len(st)-1].val > b.val {
			top := st[len(st)-1]
			st = st[:len(st)-1]
			b = block{sum: top.sum + b.sum, weight: top.weight + b.weight, n: top.n + b.n}
			if b.weight > 0 {
				b.val = b.sum / b.weight
			} else {
				b.val = (top.val + v[i]) / 2
			}
		}
		st = append(st, b)
	}
	out := make([]float64, 0, len(v))
	for _, b := range st {
		for range b.n {
			out = append(out, b.val)
		}
	}
	return out
}

// monotoneCells smooths the (bin, group, label) counts in place (layout
// of CountCells, clamped at 0): within each group, the positive share
// n₁/(n₀ + n₁) of the bins becomes its isotonic fit weighted by the bins'
// totals, and every bin keeps its total n₀ + n₁. So the group's and bin's
// sizes (what parity constrains) are unchanged and only the split between
// the labels moves.
func monotoneCells(counts []float64, bins, groups int) {
	share, total := make([]float64, bins), make([]float64, bins)
	for a := range groups {
		for b := range bins {
			n0, n1 := counts[(b*groups+a)*2], counts[(b*groups+a)*2+1]
			total[b] = n0 + n1
			share[b] = 0.5
			if total[b] > 0 {
				share[b] = n1 / total[b]
			}
		}
		fit := isotonic(share, total)
		for b := range bins {
			s := math.Min(1, math.Max(0, fit[b]))
			counts[(b*groups+a)*2] = (1 - s) * total[b]
			counts[(b*groups+a)*2+1] = s * total[b]
		}
	}
}
