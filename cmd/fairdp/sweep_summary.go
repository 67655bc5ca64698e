package main

// The summary of a finished sweep: per-cell means over seeds, the printed
// table and the Pareto plots.

import (
	"fmt"
	"io"
	"math"

	"github.com/fairdp/fairdp/trainer"
)

func printSweepSummary(w io.Writer, cells []trainer.SweepCellSummary, fairness string, federated bool) {
	fmt.Fprintf(w, "\nsummary (mean ± sd over seeds; violation = %s)\n", violationName(fairness))
	axes := []string{"ε", "λ"}
	if federated {
		axes = append([]string{"N", "h"}, axes...)
	}
	trainer.WriteSweepTable(w, cells, axes, []string{"test error", "violation"})
	fmt.Fprintln(w, "not covered (hyperparameter_choice): the test metrics above are exact; choosing λ or ε by looking at them "+
		"spends privacy that no run's receipt counts")
}

// federatedBasicOnly is why a SteFFLe sweep's runs are added by basic
// composition.
const federatedBasicOnly = "a SteFFLe run's receipt is its worst silo's, whose RDP curve need not bound " +
	"every silo's at every order, and silos change between runs"

// printSweepTotal prints the total under the summary.
func printSweepTotal(w io.Writer, t trainer.SweepTotal) {
	fmt.Fprintf(w, "privacy total (publishing every run): %s\n", t.String())
	if t.BasicEpsilon != nil && t.Method != trainer.SweepTotalBasic {
		fmt.Fprintf(w, "  basic composition: ε = %.4g, δ = %.3g\n", *t.BasicEpsilon, t.BasicDelta)
	}
	if t.Note != "" {
		fmt.Fprintf(w, "  note: %s\n", t.Note)
	}
}

func violationName(fairness string) string {
	if fairness == "eo" {
		return "equalized-odds violation"
	}
	return "demographic-parity violation"
}

// plotSweep draws test error against the violation (mean over seeds,
// error bars one sd, one point per λ) and returns the files it wrote. With
// one (N, h) (always, for algorithms other than steffle) DIR/pareto.png
// has one curve per ε. With several (N, h) one plot per ε would need
// (N, h) × ε curves, too many to read, so each ε E gets its own
// DIR/pareto-eps-E.png with one curve per (N, h), and pareto.png is the
// plot of the first --epsilon value (SweepPlotOptions.SplitValues).
func plotSweep(plan *trainer.SweepPlan, base trainer.Config, ax sweepAxes, cells []trainer.SweepCellSummary) ([]string, error) {
	f := trainer.FormatSweepValue
	epsName := func(e float64) string {
		if math.IsInf(e, 1) {
			return "ε = ∞"
		}
		return "ε = " + f(e)
	}
	// The cell's values end with ε, λ; a SteFFLe cell starts with N, h.
	o := trainer.SweepPlotOptions{XLabel: "test error", YLabel: "test " + violationName(base.Fair.Fairness), X: 0, Y: 1}
	if len(ax.silos)*len(ax.hets) == 1 {
		o.Title = fmt.Sprintf("%s on %s: λ sweep", base.Algo, base.Dataset)
		if ax.federated {
			o.Title += fmt.Sprintf(" (N = %d, h = %s)", ax.silos[0], f(ax.hets[0]))
		}
		o.Curve = func(c trainer.SweepCellSummary) string { return epsName(c.Cell[len(c.Cell)-2]) }
		return plan.Plot(cells, o)
	}
	o.SplitValues, o.SplitName = ax.epsilons, "eps"
	o.SplitAxis = 2 // a SteFFLe cell: N, h, ε, λ
	o.SplitTitle = func(e float64) string {
		return fmt.Sprintf("%s on %s, %s: λ sweep per (N, h)", base.Algo, base.Dataset, epsName(e))
	}
	o.Curve = func(c trainer.SweepCellSummary) string {
		return fmt.Sprintf("N = %s, h = %s", f(c.Cell[0]), f(c.Cell[1]))
	}
	return plan.Plot(cells, o)
}

func unitInterval(x float64) error {
	if !(x >= 0 && x <= 1) {
		return fmt.Errorf("want numbers in [0, 1]")
	}
	return nil
}
