package main

// The summary of a finished sweep: per-cell means over seeds, the printed
// table and the Pareto plots.

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"text/tabwriter"

	"fairdp/dpops/accounting"
	"fairdp/metrics"
	"fairdp/trainer"
)

// sweepCell is the mean and spread over seeds of one (N, h, ε, λ) (N and h
// only for --algo steffle).
type sweepCell struct {
	gridCell
	runs                     int
	err, errSD, viol, violSD float64
	spent                    string // largest spent ε over the seeds
}

// summarizeSweep averages sweep.csv rows per cell of the grid, in grid
// order; cells without rows are left out.
func summarizeSweep(rows [][]string, ax sweepAxes) []sweepCell {
	k := ax.keyCells() // metrics start here: error, violation, spent ε
	var cells []sweepCell
	for _, g := range ax.cells() {
		key := ax.key(g)
		c := sweepCell{gridCell: g}
		var errs, viols []float64
		maxSpent := -1.0
		for _, r := range rows {
			if !slices.Equal(r[:len(key)], key) {
				continue
			}
			ev, _ := strconv.ParseFloat(r[k], 64)
			vv, _ := strconv.ParseFloat(r[k+1], 64)
			errs, viols = append(errs, ev), append(viols, vv)
			if s, err := strconv.ParseFloat(r[k+2], 64); err == nil && !math.IsInf(s, 0) {
				maxSpent = max(maxSpent, s)
			}
		}
		if len(errs) == 0 {
			continue
		}
		c.runs = len(errs)
		c.err, c.errSD = meanSD(errs)
		c.viol, c.violSD = meanSD(viols)
		c.spent = "inf"
		if maxSpent >= 0 {
			c.spent = strconv.FormatFloat(maxSpent, 'f', 4, 64)
		}
		cells = append(cells, c)
	}
	return cells
}

func meanSD(v []float64) (mean, sd float64) {
	for _, x := range v {
		mean += x
	}
	mean /= float64(len(v))
	if len(v) < 2 {
		return mean, 0
	}
	for _, x := range v {
		sd += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(sd / float64(len(v)-1))
}

func printSweepSummary(w io.Writer, cells []sweepCell, fairness string, federated bool) {
	fmt.Fprintf(w, "\nsummary (mean ± sd over seeds; violation = %s)\n", violationName(fairness))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fed := func(c sweepCell) string {
		if !federated {
			return ""
		}
		return fmt.Sprintf("%d\t%s\t", c.silos, formatGridValue(c.het))
	}
	if federated {
		fmt.Fprint(tw, "N\th\t")
	}
	fmt.Fprintln(tw, "ε\tλ\truns\ttest error\tviolation\tspent ε")
	for _, c := range cells {
		fmt.Fprintf(tw, "%s%s\t%s\t%d\t%.4f ± %.4f\t%.4f ± %.4f\t%s\n", fed(c), formatGridValue(c.epsilon), formatGridValue(c.lambda),
			c.runs, c.err, c.errSD, c.viol, c.violSD, c.spent)
	}
	tw.Flush()
	fmt.Fprintln(w, "not covered (hyperparameter_choice): the test metrics above are exact; choosing λ or ε by looking at them "+
		"spends privacy that no run's receipt counts")
}

// sweepLedger keeps a sweep's privacy: every published run's receipt in
// DIR/receipts.jsonl and their composition in sweep.json's privacy_total.
type sweepLedger struct {
	dir      string
	receipts *trainer.SweepReceipts
	privacy  *trainer.SweepPrivacy
}

// federatedBasicOnly is why a SteFFLe sweep's runs are added by basic
// composition.
const federatedBasicOnly = "a SteFFLe run's receipt is its worst silo's, whose RDP curve need not bound " +
	"every silo's at every order, and silos change between runs"

// openSweepLedger opens DIR/receipts.jsonl, counts every run that already
// has a row in log (legacy builds a receipt for a row from before receipts
// were kept) and writes the total to sweep.json, so a resumed sweep states
// the total of everything it has published, each run once.
func openSweepLedger(dir string, log *trainer.SweepLog, federated bool, legacy func([]string) (accounting.Receipt, bool)) (*sweepLedger, error) {
	recs, err := trainer.OpenSweepReceipts(filepath.Join(dir, "receipts.jsonl"))
	if err != nil {
		return nil, err
	}
	var opts trainer.SweepTotalOptions
	if federated {
		opts.BasicOnly = federatedBasicOnly
	}
	l := &sweepLedger{dir: dir, receipts: recs, privacy: trainer.PublishedPrivacy(log, recs, opts, legacy)}
	if l.privacy.Len() > 0 {
		if err := trainer.WriteSweepTotal(dir, l.privacy.Total()); err != nil {
			recs.Close()
			return nil, err
		}
	}
	return l, nil
}

// publish counts a finished run: its receipt and the new total reach the
// disk before the caller appends the run's row (the release).
func (l *sweepLedger) publish(key string, rec accounting.Receipt) error {
	if err := l.receipts.Append(key, rec); err != nil {
		return err
	}
	l.privacy.Add(key, rec)
	return trainer.WriteSweepTotal(l.dir, l.privacy.Total())
}

func (l *sweepLedger) total() trainer.SweepTotal { return l.privacy.Total() }

func (l *sweepLedger) Close() error { return l.receipts.Close() }

// legacyReceipt is the receipt of a row written before receipts were kept:
// its spent ε and δ cells, composed by basic composition only (it lists no
// mechanisms). The cells are rounded to 6 or more significant digits, so
// both are raised by legacyRoundUp: the receipt is never smaller than the
// run's. ok is false when the cells do not state a guarantee.
func legacyReceipt(epsCell, deltaCell string) (accounting.Receipt, bool) {
	eps, err1 := strconv.ParseFloat(epsCell, 64)
	delta, err2 := strconv.ParseFloat(deltaCell, 64)
	if err1 != nil || err2 != nil || math.IsInf(eps, 0) || !(eps >= 0) || !(delta >= 0 && delta < 1) {
		return accounting.Receipt{}, false
	}
	eps, delta = eps*legacyRoundUp, delta*legacyRoundUp
	return accounting.Receipt{Epsilon: &eps, Delta: delta, Note: "from sweep.csv (published before receipts were kept)"}, true
}

// legacyRoundUp bounds a value printed with 6 significant digits ('g', 6:
// relative rounding error at most 5e-6) from above.
const legacyRoundUp = 1 + 1e-5

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
// plot of the first --epsilon value.
func plotSweep(dir string, base trainer.Config, ax sweepAxes, cells []sweepCell) ([]string, error) {
	epsName := func(e float64) string {
		if math.IsInf(e, 1) {
			return "ε = ∞"
		}
		return "ε = " + formatGridValue(e)
	}
	yLabel := "test " + violationName(base.Fair.Fairness)
	if len(ax.silos)*len(ax.hets) == 1 {
		var curves []metrics.Curve
		for _, c := range cells {
			curves = addPoint(curves, epsName(c.epsilon), c)
		}
		title := fmt.Sprintf("%s on %s: λ sweep", base.Algo, base.Dataset)
		if ax.federated {
			title += fmt.Sprintf(" (N = %d, h = %s)", ax.silos[0], formatGridValue(ax.hets[0]))
		}
		path := filepath.Join(dir, "pareto.png")
		return []string{path}, metrics.ParetoPlot(path, title, "test error", yLabel, curves)
	}
	var files []string
	for i, e := range ax.epsilons {
		var curves []metrics.Curve
		for _, c := range cells {
			if c.epsilon == e {
				curves = addPoint(curves, fmt.Sprintf("N = %d, h = %s", c.silos, formatGridValue(c.het)), c)
			}
		}
		title := fmt.Sprintf("%s on %s, %s: λ sweep per (N, h)", base.Algo, base.Dataset, epsName(e))
		names := []string{"pareto-eps-" + formatGridValue(e) + ".png"}
		if i == 0 {
			names = append(names, "pareto.png")
		}
		for _, name := range names {
			path := filepath.Join(dir, name)
			if err := metrics.ParetoPlot(path, title, "test error", yLabel, curves); err != nil {
				return nil, err
			}
			files = append(files, path)
		}
	}
	return files, nil
}

// addPoint adds c's point to the curve named name (started when it is not
// the last one).
func addPoint(curves []metrics.Curve, name string, c sweepCell) []metrics.Curve {
	if len(curves) == 0 || curves[len(curves)-1].Name != name {
		curves = append(curves, metrics.Curve{Name: name})
	}
	cur := &curves[len(curves)-1]
	cur.Points = append(cur.Points, metrics.Point{X: c.err, Y: c.viol, XErr: c.errSD, YErr: c.violSD})
	return curves
}

func unitInterval(x float64) error {
	if !(x >= 0 && x <= 1) {
		return fmt.Errorf("want numbers in [0, 1]")
	}
	return nil
}
