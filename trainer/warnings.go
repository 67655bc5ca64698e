package trainer

import (
	"fmt"

	"fairdp/metrics"
)

// smallGroup is the test-split group size below which a group's metrics are
// too noisy to read: a warning says so.
const smallGroup = 30

// Warnings are the checks that catch meaningless results a report would
// otherwise present as normal (issue 13): a classifier worse than always
// predicting the test split's most frequent class, a sensitive attribute
// with one group (so every fairness violation is 0 by construction), and
// groups too small for their rates to mean anything. They read the test
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
