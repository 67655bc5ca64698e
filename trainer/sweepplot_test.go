package trainer

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/fairdp/fairdp/metrics"
)

// TestSweepPlanPlot: Plot's one plot and its split plots are the
// trade-off plots drawn by hand with metrics.ParetoPlot from the same
// points, under the file names `fairdp sweep` has always written
// (pareto.png; pareto-eps-E.png per ε with the first ε's also as
// pareto.png).
func TestSweepPlanPlot(t *testing.T) {
	// Cells of a SteFFLe-like grid: N, h, ε, λ; metrics error, violation.
	var cells []SweepCellSummary
	for _, n := range []float64{2, 4} {
		for _, e := range []float64{1, 3} {
			for _, l := range []float64{0, 1} {
				cells = append(cells, SweepCellSummary{Cell: []float64{n, 0.5, e, l},
					Mean: []float64{0.2 + 0.01*n + 0.02*l, 0.1 - 0.01*e - 0.03*l}, SD: []float64{0.01, 0.02}})
			}
		}
	}
	dir := t.TempDir()
	p := &SweepPlan{opts: SweepOptions{Dir: dir}}
	name := func(c SweepCellSummary) string { return fmt.Sprintf("N = %g", c.Cell[0]) }
	files, err := p.Plot(cells, SweepPlotOptions{XLabel: "x", YLabel: "y", X: 0, Y: 1, Curve: name,
		SplitValues: []float64{3, 1}, SplitAxis: 2, SplitName: "eps", SplitTitle: func(e float64) string { return fmt.Sprint("ε = ", e) }})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"pareto-eps-3.png", "pareto.png", "pareto-eps-1.png"}
	for i := range want {
		want[i] = filepath.Join(dir, want[i])
	}
	if !slices.Equal(files, want) {
		t.Fatalf("files %v, want %v", files, want)
	}
	ref := t.TempDir()
	for _, e := range []float64{3, 1} {
		var curves []metrics.Curve
		for _, n := range []float64{2, 4} {
			c := metrics.Curve{Name: fmt.Sprintf("N = %g", n)}
			for _, cell := range cells {
				if cell.Cell[0] == n && cell.Cell[2] == e {
					c.Points = append(c.Points, metrics.Point{X: cell.Mean[0], Y: cell.Mean[1], XErr: cell.SD[0], YErr: cell.SD[1]})
				}
			}
			curves = append(curves, c)
		}
		path := filepath.Join(ref, fmt.Sprint(e, ".png"))
		if err := metrics.ParetoPlot(path, fmt.Sprint("ε = ", e), "x", "y", curves); err != nil {
			t.Fatal(err)
		}
		samePNG(t, filepath.Join(dir, fmt.Sprintf("pareto-eps-%g.png", e)), path)
	}
	samePNG(t, filepath.Join(dir, "pareto.png"), filepath.Join(ref, "3.png"))

	one := t.TempDir()
	p = &SweepPlan{opts: SweepOptions{Dir: one}}
	files, err = p.Plot(cells[:4], SweepPlotOptions{Title: "t", XLabel: "x", YLabel: "y", X: 1, Y: 0,
		Curve: func(c SweepCellSummary) string { return fmt.Sprint("ε = ", c.Cell[2]) }})
	if err != nil || !slices.Equal(files, []string{filepath.Join(one, "pareto.png")}) {
		t.Fatalf("one plot: files %v, %v", files, err)
	}
	var curves []metrics.Curve
	for _, e := range []float64{1, 3} {
		c := metrics.Curve{Name: fmt.Sprint("ε = ", e)}
		for _, cell := range cells[:4] {
			if cell.Cell[2] == e {
				c.Points = append(c.Points, metrics.Point{X: cell.Mean[1], Y: cell.Mean[0], XErr: cell.SD[1], YErr: cell.SD[0]})
			}
		}
		curves = append(curves, c)
	}
	if err := metrics.ParetoPlot(filepath.Join(ref, "one.png"), "t", "x", "y", curves); err != nil {
		t.Fatal(err)
	}
	samePNG(t, files[0], filepath.Join(ref, "one.png"))

	if _, err := p.Plot(cells, SweepPlotOptions{}); err == nil {
		t.Error("Plot without Curve: no error")
	}
}

func samePNG(t *testing.T, got, want string) {
	t.Helper()
	a, err := os.ReadFile(got)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Errorf("%s differs from the plot drawn by hand (%s)", got, want)
	}
}
