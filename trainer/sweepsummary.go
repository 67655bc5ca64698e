package trainer

// The summary of a grid sweep: per-cell means over seeds, the printed
// table and the trade-off plots, for every kind of sweep.

import (
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"text/tabwriter"

	"github.com/fairdp/fairdp/metrics"
)

// MeanSD is the mean and sample standard deviation (n − 1; 0 for one
// value) of v: the "mean ± sd over seeds" of every sweep table and plot.
func MeanSD(v []float64) (mean, sd float64) {
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

// SweepSummaryOptions choose what a sweep summary averages.
type SweepSummaryOptions struct {
	// Metrics are the sweep.csv columns averaged per cell (a cell that
	// does not parse counts as 0).
	Metrics []string
	// Spent, when set, is the column of the spent ε, whose largest finite
	// value over the seeds the summary states.
	Spent string
	// Skip leaves rows out (e.g. failed runs).
	Skip func(row []string) bool
}

// SweepCellSummary is the mean and spread over seeds of one cell.
type SweepCellSummary struct {
	Cell     []float64 // the axes' values
	Runs     int
	Mean, SD []float64 // per SweepSummaryOptions.Metrics
	Spent    string    // largest spent ε over the seeds, 'f' 4 ("inf": none finite)
}

// Summary averages sweep.csv's rows per cell of the grid, in grid order;
// cells without rows are left out.
func (p *SweepPlan) Summary(o SweepSummaryOptions) ([]SweepCellSummary, error) {
	return summarizeSweep(p.Rows(), p.opts.Columns, p.opts.Grid, o)
}

// summarizeSweep is SweepPlan.Summary for rows with the header columns.
func summarizeSweep(rows [][]string, columns []string, g SweepGrid, o SweepSummaryOptions) ([]SweepCellSummary, error) {
	col := func(name string) (int, error) {
		if i := slices.Index(columns, name); i >= 0 {
			return i, nil
		}
		return 0, fmt.Errorf("sweep summary: no column %q", name)
	}
	idx := make([]int, len(o.Metrics))
	for i, m := range o.Metrics {
		var err error
		if idx[i], err = col(m); err != nil {
			return nil, err
		}
	}
	spentCol := -1
	if o.Spent != "" {
		var err error
		if spentCol, err = col(o.Spent); err != nil {
			return nil, err
		}
	}
	var out []SweepCellSummary
	for _, cell := range g.Cells() {
		key := g.CellKey(cell)
		vals := make([][]float64, len(idx))
		runs, maxSpent := 0, -1.0
		for _, r := range rows {
			if !slices.Equal(r[:len(key)], key) || o.Skip != nil && o.Skip(r) {
				continue
			}
			runs++
			for i, c := range idx {
				v, _ := strconv.ParseFloat(r[c], 64)
				vals[i] = append(vals[i], v)
			}
			if spentCol >= 0 {
				if s, err := strconv.ParseFloat(r[spentCol], 64); err == nil && !math.IsInf(s, 0) {
					maxSpent = max(maxSpent, s)
				}
			}
		}
		if runs == 0 {
			continue
		}
		s := SweepCellSummary{Cell: cell, Runs: runs, Mean: make([]float64, len(idx)), SD: make([]float64, len(idx)), Spent: "inf"}
		for i := range vals {
			s.Mean[i], s.SD[i] = MeanSD(vals[i])
		}
		if maxSpent >= 0 {
			s.Spent = strconv.FormatFloat(maxSpent, 'f', 4, 64)
		}
		out = append(out, s)
	}
	return out, nil
}

// WriteSweepTable prints the summary as a table: the axes (headed by
// axisLabels), the number of runs, each metric as mean ± sd (headed by
// metricLabels) and the spent ε.
func WriteSweepTable(w io.Writer, cells []SweepCellSummary, axisLabels, metricLabels []string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, l := range axisLabels {
		fmt.Fprintf(tw, "%s\t", l)
	}
	fmt.Fprint(tw, "runs")
	for _, l := range metricLabels {
		fmt.Fprintf(tw, "\t%s", l)
	}
	fmt.Fprintln(tw, "\tspent ε")
	for _, c := range cells {
		for _, v := range c.Cell {
			fmt.Fprintf(tw, "%s\t", FormatSweepValue(v))
		}
		fmt.Fprintf(tw, "%d", c.Runs)
		for i := range c.Mean {
			fmt.Fprintf(tw, "\t%.4f ± %.4f", c.Mean[i], c.SD[i])
		}
		fmt.Fprintf(tw, "\t%s\n", c.Spent)
	}
	return tw.Flush()
}

// SweepPlotOptions is the trade-off plot of a sweep's summary
// (SweepPlan.Plot): one point per cell at the means of two metrics, with
// error bars of one standard deviation over seeds, and each curve's Pareto
// front.
type SweepPlotOptions struct {
	Title, XLabel, YLabel string
	// X and Y are the metrics on the axes: indices into
	// SweepSummaryOptions.Metrics.
	X, Y int
	// Curve names the curve a cell's point is on; consecutive cells with
	// the same name form one curve.
	Curve func(SweepCellSummary) string
	// SplitValues, when set, draws one plot per value v of the cell axis
	// SplitAxis (an index into SweepCellSummary.Cell), in this order:
	// pareto-SplitName-v.png titled SplitTitle(v), the first value's also
	// as pareto.png. Without it the one plot is pareto.png, titled Title.
	// A grid with more axes than a plot can show in readable curves
	// (SteFFLe's silos and heterogeneity, crossed with ε) splits by one.
	SplitValues []float64
	SplitAxis   int
	SplitName   string
	SplitTitle  func(v float64) string
}

// Plot draws the summary cells (Summary) into the sweep's directory as
// o says and returns the files it wrote, so that every sweep's plot has
// one file layout.
func (p *SweepPlan) Plot(cells []SweepCellSummary, o SweepPlotOptions) ([]string, error) {
	if o.Curve == nil {
		return nil, errors.New("sweep: SweepPlotOptions.Curve is required")
	}
	if len(o.SplitValues) == 0 {
		path := filepath.Join(p.opts.Dir, "pareto.png")
		return []string{path}, metrics.ParetoPlot(path, o.Title, o.XLabel, o.YLabel, sweepCurves(cells, o.Curve, o.X, o.Y))
	}
	if o.SplitTitle == nil {
		return nil, errors.New("sweep: SweepPlotOptions.SplitTitle is required with SplitValues")
	}
	var files []string
	for i, v := range o.SplitValues {
		var at []SweepCellSummary
		for _, c := range cells {
			if c.Cell[o.SplitAxis] == v {
				at = append(at, c)
			}
		}
		curves := sweepCurves(at, o.Curve, o.X, o.Y)
		names := []string{"pareto-" + o.SplitName + "-" + FormatSweepValue(v) + ".png"}
		if i == 0 {
			names = append(names, "pareto.png")
		}
		for _, name := range names {
			path := filepath.Join(p.opts.Dir, name)
			if err := metrics.ParetoPlot(path, o.SplitTitle(v), o.XLabel, o.YLabel, curves); err != nil {
				return nil, err
			}
			files = append(files, path)
		}
	}
	return files, nil
}

// sweepCurves turns cell summaries into plot curves: consecutive cells
// with the same name(c) form one curve, each cell a point (Mean[x],
// Mean[y]) with error bars of one standard deviation.
func sweepCurves(cells []SweepCellSummary, name func(SweepCellSummary) string, x, y int) []metrics.Curve {
	var curves []metrics.Curve
	for _, c := range cells {
		n := name(c)
		if len(curves) == 0 || curves[len(curves)-1].Name != n {
			curves = append(curves, metrics.Curve{Name: n})
		}
		cur := &curves[len(curves)-1]
		cur.Points = append(cur.Points, metrics.Point{X: c.Mean[x], Y: c.Mean[y], XErr: c.SD[x], YErr: c.SD[y]})
	}
	return curves
}
