package metrics

import (
	"bytes"
	"fmt"
	"io"
	"text/tabwriter"
)

// Split is how a model did on one data split: the `train` and `test` objects
// of fairdp's results contract (report.json). Classification fills N, Error,
// Accuracy, the two violations, Groups and Overall; regression fills N,
// Groups, Overall and MSPE (see EvaluateRegression) and leaves the
// classification numbers 0, which its JSON leaves out (MarshalJSON).
type Split struct {
	N           int            `json:"n"`
	Error       float64        `json:"error"`
	Accuracy    float64        `json:"accuracy"`
	DPViolation float64        `json:"dp_violation"`
	EOViolation float64        `json:"eo_violation"`
	Groups      []GroupMetrics `json:"groups"`
	// Overall is the all-records row of the table (TPR, FPR and selection
	// rate need it); it is an addition to the original contract.
	Overall *GroupMetrics `json:"overall,omitempty"`
	MSPE    *float64      `json:"mspe,omitempty"`
}

// Evaluate scores classifier predictions on one split: per-group metrics,
// the overall row, and the demographic-parity and equalized-odds
// violations. Group r is named groupNames[r]; with groupNames nil the groups
// are 0..max(s), named by number. It panics if the input fails Check (labels
// and predictions in 0..classes-1, groups in 0..len(groupNames)-1).
func Evaluate(pred, y, s []int, classes int, groupNames []string) Split {
	names := groupLabels(s, groupNames)
	must(check(pred, y, s, classes, len(names), true))
	cms := confusionByGroup(pred, y, s, classes, len(names))
	all := make([]int, classes*classes)
	sp := Split{N: len(pred), Groups: make([]GroupMetrics, len(names))}
	for r, cm := range cms {
		sp.Groups[r] = fromConfusion(names[r], cm, classes)
		for i, c := range cm {
			all[i] += c
		}
	}
	overall := fromConfusion(OverallName, all, classes)
	sp.Overall = &overall
	sp.Accuracy = overall.Accuracy
	sp.Error = overall.ErrorRate()
	sp.DPViolation = dpViolation(cms, classes)
	sp.EOViolation = eoViolation(cms, classes)
	return sp
}

// EvaluateRegression scores real-valued predictions on one split: overall
// and per-group MSPE (nil for a group without records, and overall for an
// empty split). Groups are named as in Evaluate. It panics if the lengths
// differ or a group is out of range.
func EvaluateRegression(pred, y []float64, s []int, groupNames []string) Split {
	names := groupLabels(s, groupNames)
	perGroup := GroupMSPE(pred, y, s, len(names))
	count := make([]int, len(names))
	for _, r := range s {
		count[r]++
	}
	sp := Split{N: len(pred), Groups: make([]GroupMetrics, len(names))}
	for r, name := range names {
		sp.Groups[r] = GroupMetrics{Group: name, N: count[r]}
		if count[r] > 0 {
			sp.Groups[r].MSPE = ptr(perGroup[r])
		}
	}
	overall := GroupMetrics{Group: OverallName, N: len(pred)}
	if len(pred) > 0 {
		overall.MSPE = ptr(MSPE(pred, y))
		sp.MSPE = overall.MSPE
	}
	sp.Overall = &overall
	return sp
}

// WriteTable prints a split for people: a title line, one aligned row per
// group and an overall row, then the error and both violations (or, for a
// regression split, n and MSPE per group). Undefined rates print as "-".
func WriteTable(w io.Writer, title string, sp Split) error { return sp.WriteTable(w, title) }

// WriteTable is the package's WriteTable of sp, so that a caller holding a
// report's split prints it without naming this package.
func (sp Split) WriteTable(w io.Writer, title string) error {
	var buf bytes.Buffer
	fmt.Fprintln(&buf, title)
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	overall := GroupMetrics{Group: OverallName, N: sp.N, Accuracy: sp.Accuracy, MSPE: sp.MSPE}
	if sp.Overall != nil {
		overall = *sp.Overall
	}
	rows := append(append([]GroupMetrics(nil), sp.Groups...), overall)
	if sp.MSPE != nil {
		fmt.Fprintln(tw, "group\tn\tMSPE")
		for _, g := range rows {
			fmt.Fprintf(tw, "%s\t%d\t%s\n", g.Group, g.N, optional(g.MSPE))
		}
		tw.Flush()
	} else {
		fmt.Fprintln(tw, "group\tn\taccuracy\tTPR\tFPR\tselection rate")
		for _, g := range rows {
			fmt.Fprintf(tw, "%s\t%d\t%.4f\t%s\t%s\t%.4f\n",
				g.Group, g.N, g.Accuracy, optional(g.TPR), optional(g.FPR), g.SelectionRate)
		}
		tw.Flush()
		fmt.Fprintf(&buf, "error %.4f  DP violation %.4f  EO violation %.4f\n", sp.Error, sp.DPViolation, sp.EOViolation)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// optional formats a rate that may be undefined.
func optional(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.4f", *v)
}
