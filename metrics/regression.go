package metrics

import (
	"fmt"
	"math"
)

// MSPE is the mean squared prediction error (1/n) Σ (pred_i - y_i)², the
// accuracy measure of group-aware budget tailoring (Alabi and Wiggins 2023). It is
// NaN for n = 0 (no records, no error to average) and panics if the lengths
// differ.
func MSPE(pred, y []float64) float64 {
	mustSameLength(pred, y)
	if len(pred) == 0 {
		return math.NaN()
	}
	sum := 0.0
	for i, p := range pred {
		d := p - y[i]
		sum += d * d
	}
	return sum / float64(len(pred))
}

// GroupMSPE is MSPE over the records of each group 0..groups-1, the table
// the budget-tailoring paper reports; a group without records gets NaN.
// It panics if the lengths differ or a group is out of range.
func GroupMSPE(pred, y []float64, s []int, groups int) []float64 {
	mustSameLength(pred, y)
	if len(s) != len(pred) {
		panic(fmt.Errorf("metrics: %d groups for %d predictions, want one group per prediction", len(s), len(pred)))
	}
	must(checkRange("s", s, groups))
	sum := make([]float64, groups)
	count := make([]int, groups)
	for i, r := range s {
		d := pred[i] - y[i]
		sum[r] += d * d
		count[r]++
	}
	out := make([]float64, groups)
	for r := range out {
		out[r] = math.NaN()
		if count[r] > 0 {
			out[r] = sum[r] / float64(count[r])
		}
	}
	return out
}

func mustSameLength(pred, y []float64) {
	if len(pred) != len(y) {
		panic(fmt.Errorf("metrics: %d targets for %d predictions, want one target per prediction", len(y), len(pred)))
	}
}
