package metrics

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// EqualCostTau is DPSGD-F's threshold τ = 0.05 (Xu, Du and Wu 2021): privacy
// costs the groups equally when their accuracy drops differ by at most τ.
const EqualCostTau = 0.05

// CostGroup is one group's cost of privacy Δ = accuracy_private -
// accuracy_baseline (negative when privacy hurts the group).
type CostGroup struct {
	Group            string  `json:"group"`
	N                int     `json:"n"`
	AccuracyPrivate  float64 `json:"accuracy_private"`
	AccuracyBaseline float64 `json:"accuracy_baseline"`
	Delta            float64 `json:"delta"`
}

// CostReport answers DPSGD-F's question: does privacy cost every group about
// the same accuracy? MaxGap is max_i Δ^i - min_j Δ^j over the groups and
// Equal is MaxGap ≤ Tau.
type CostReport struct {
	Tau    float64     `json:"tau"`
	MaxGap float64     `json:"max_gap"`
	Equal  bool        `json:"equal"`
	Groups []CostGroup `json:"groups"`
}

// gapSlack absorbs rounding in MaxGap ≤ Tau: accuracies are ratios of
// counts, so a gap that is exactly τ on paper may land an ulp above it.
const gapSlack = 1e-12

// CostOfPrivacy compares per-group accuracies of a private model with those of
// a non-private baseline evaluated on the same records (DPSGD-F's cost of
// privacy, Xu, Du and Wu 2021). Groups are matched by name and reported in the
// order of private; N is the private row's. A group that is empty in either
// list is reported but left out of MaxGap, since its accuracy means nothing. It
// panics if a private group has no baseline row of the same name: both lists
// should come from Evaluate with the same group names.
func CostOfPrivacy(private, baseline []GroupMetrics, tau float64) CostReport {
	base := make(map[string]GroupMetrics, len(baseline))
	for _, g := range baseline {
		base[g.Group] = g
	}
	rep := CostReport{Tau: tau, Groups: make([]CostGroup, 0, len(private))}
	var deltas spread
	for _, p := range private {
		b, ok := base[p.Group]
		if !ok {
			panic(fmt.Sprintf("metrics: CostOfPrivacy: group %q has no baseline row", p.Group))
		}
		cg := CostGroup{
			Group:            p.Group,
			N:                p.N,
			AccuracyPrivate:  p.Accuracy,
			AccuracyBaseline: b.Accuracy,
			Delta:            p.Accuracy - b.Accuracy,
		}
		rep.Groups = append(rep.Groups, cg)
		if p.N > 0 && b.N > 0 {
			deltas.add(&cg.Delta)
		}
	}
	rep.MaxGap = deltas.width()
	rep.Equal = rep.MaxGap <= tau+gapSlack
	return rep
}

// WriteText prints the report for people: one row per group, then the
// largest gap against τ and the verdict.
func (c *CostReport) WriteText(w io.Writer) error {
	fmt.Fprintln(w, "\ncost of privacy (test accuracy, private − non-private baseline)")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "group\tn\tprivate\tbaseline\tdelta")
	for _, g := range c.Groups {
		fmt.Fprintf(tw, "%s\t%d\t%.4f\t%.4f\t%+.4f\n", g.Group, g.N, g.AccuracyPrivate, g.AccuracyBaseline, g.Delta)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	verdict := "unequal"
	if c.Equal {
		verdict = "equal"
	}
	_, err := fmt.Fprintf(w, "max gap %.4f (tau %.2f): %s\n", c.MaxGap, c.Tau, verdict)
	return err
}
