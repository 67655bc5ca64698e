package metrics

// DemographicParity is the demographic-parity violation (Lowy et al. 2022, appendix F.1):
// the largest difference, over classes c and pairs of groups, of
// P[ŷ=c | s=s1] - P[ŷ=c | s=s2]. For a binary task it equals fairlearn's
// demographic_parity_difference. Groups without records are ignored; with
// fewer than two non-empty groups the violation is 0. It panics if the input
// fails Check.
func DemographicParity(pred, s []int, classes, groups int) float64 {
	must(check(pred, nil, s, classes, groups, false))
	// Labels play no part: count every record under label 0.
	return dpViolation(confusionByGroup(pred, make([]int, len(pred)), s, classes, groups), classes)
}

// dpViolation is DemographicParity from per-group confusion counts.
func dpViolation(cms [][]int, classes int) float64 {
	worst := 0.0
	for c := range classes {
		var selected spread
		for _, cm := range cms {
			labelled, other := oneVsRest(cm, classes, c)
			selected.add(labelled.plus(other).rate())
		}
		worst = max(worst, selected.width())
	}
	return worst
}

// EqualizedOdds is the equalized-odds violation (Lowy et al. 2022, appendix F.1): the
// largest difference, over classes c and pairs of groups, of P[ŷ=c | s, y=c]
// or of P[ŷ=c | s, y≠c]. For a binary task it equals fairlearn's
// equalized_odds_difference(agg="worst_case"), the larger of the TPR and FPR
// gaps. A group takes part in a comparison only if the conditioning event has
// records in it (so groups without positives are skipped for the TPR-like
// term, as in GroupMetrics); empty groups are ignored. It panics if the input
// fails Check (y is required).
func EqualizedOdds(pred, y, s []int, classes, groups int) float64 {
	must(check(pred, y, s, classes, groups, true))
	return eoViolation(confusionByGroup(pred, y, s, classes, groups), classes)
}

// eoViolation is EqualizedOdds from per-group confusion counts.
func eoViolation(cms [][]int, classes int) float64 {
	worst := 0.0
	for c := range classes {
		var truePositive, falsePositive spread
		for _, cm := range cms {
			labelled, other := oneVsRest(cm, classes, c)
			truePositive.add(labelled.rate())
			falsePositive.add(other.rate())
		}
		worst = max(worst, truePositive.width(), falsePositive.width())
	}
	return worst
}

// spread tracks the range of the defined values among per-group rates: the
// largest pairwise difference is max - min.
type spread struct {
	lo, hi float64
	seen   bool
}

func (sp *spread) add(v *float64) {
	switch {
	case v == nil:
	case !sp.seen:
		sp.lo, sp.hi, sp.seen = *v, *v, true
	default:
		sp.lo, sp.hi = min(sp.lo, *v), max(sp.hi, *v)
	}
}

// width is max - min, 0 when fewer than two values were defined.
func (sp spread) width() float64 { return sp.hi - sp.lo }
