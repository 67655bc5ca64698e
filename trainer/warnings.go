package trainer

import (
	"fmt"

	"github.com/fairdp/fairdp/metrics"
)

// smallGroup is the test-split group size below which a group's metrics are
// too noisy to read: a warning says so.
const smallGroup = 30

// oneClassShare is the share of the test predictions in one class from
// which a model counts as predicting one class for everyone: its selection
// rates are then (nearly) equal in every group whatever the groups are, so
// DP and EO violations near 0 say nothing about fairness.
const oneClassShare = 0.99

// Warnings are the checks that catch meaningless results a report would
// otherwise present as normal: a classifier worse than always
// predicting the test split's most frequent class, a sensitive attribute
// with one group (so every fairness violation is 0 by construction), and
// groups too small for their rates to mean anything, and a model that
// predicts (almost) one class for every test record, whose DP and EO
// violations are near 0 by construction. They read the test
// split only, which the guarantee does not cover, so they release nothing
// about the training records.
func Warnings(test metrics.Split, labels []int, groupNames []string) []string {
	var out []string
	if len(labels) > 0 {
		counts := map[int]int{}
		top := 0
		for _, y := range labels {
			counts[y]++
			top = max(top, counts[y])
		}
		majority := 1 - float64(top)/float64(len(labels))
		if test.Error > majority+0.01 {
			out = append(out, fmt.Sprintf("the model's test error %.4f is worse than always predicting the most frequent class "+
				"(%.4f): treat it as failed (too little data for this ε, too large a λ or learning rate)", test.Error, majority))
		}
	}
	if w := oneClassWarning(test, labels); w != "" {
		out = append(out, w)
	}
	if len(test.Groups) == 1 || len(groupNames) == 1 {
		out = append(out, "the sensitive attribute has one group: the DP and EO violations are 0 by construction, not a finding")
	}
	for _, g := range test.Groups {
		if g.N < smallGroup {
			out = append(out, fmt.Sprintf("group %q has %d test records (< %d): its rates and the violations that involve it are unreliable",
				g.Group, g.N, smallGroup))
		}
	}
	return out
}

// oneClassWarning is the warning for a classifier whose test predictions
// are (almost) all one class, "" otherwise. The split's overall selection
// rate is P[ŷ = 1]: at least oneClassShare means class 1 for (almost)
// everyone with any number of classes; at most 1 - oneClassShare means
// class 0 for (almost) everyone only when the task is binary (labels 0 and
// 1), since with more classes the rest may be spread over classes 0, 2, ….
func oneClassWarning(test metrics.Split, labels []int) string {
	o := test.Overall
	if o == nil || o.N == 0 || test.MSPE != nil {
		return "" // no classifier predictions (regression, or an empty split)
	}
	binary := len(labels) > 0
	for _, y := range labels {
		binary = binary && (y == 0 || y == 1)
	}
	class, share := 1, o.SelectionRate
	if binary && 1-o.SelectionRate > share {
		class, share = 0, 1-o.SelectionRate
	}
	if share < oneClassShare {
		return ""
	}
	return fmt.Sprintf("the model predicts class %d for %.1f%% of the test records: its DP and EO violations (%.4f, %.4f) are near 0 "+
		"because its predictions hardly depend on the record, not because it is fair, so the fairness figures are vacuous "+
		"(too little data for this ε, too large a λ or learning rate)", class, 100*share, test.DPViolation, test.EOViolation)
}
