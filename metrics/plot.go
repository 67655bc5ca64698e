package metrics

import (
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/fairdp/fairdp/atomicfile"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Series is one line of a LinePlot, e.g. one group's clip bound per epoch.
type Series struct {
	Name string
	X, Y []float64
}

// Point is one result on a trade-off plot, e.g. (test error, DP violation)
// of one λ, with symmetric error bars (0 for none), e.g. the standard
// deviation over seeds.
type Point struct {
	X, Y       float64
	XErr, YErr float64
}

// Curve is a named set of points, e.g. one ε of a λ sweep.
type Curve struct {
	Name   string
	Points []Point
}

// PlotOption changes how a plot is drawn.
type PlotOption func(*plotConfig)

type plotConfig struct {
	widthPx, heightPx int
}

// Default plot size in pixels.
const (
	DefaultPlotWidth  = 800
	DefaultPlotHeight = 600
)

// WithSize sets the PNG size in pixels (default DefaultPlotWidth ×
// DefaultPlotHeight).
func WithSize(widthPx, heightPx int) PlotOption {
	return func(c *plotConfig) { c.widthPx, c.heightPx = widthPx, heightPx }
}

// LinePlot writes a PNG with one line per series, for quantities that evolve
// over training such as per-group clip bounds or loss per epoch. Series
// without points are skipped. The file appears complete or not at all (it is
// written to a temporary file and renamed).
func LinePlot(path, title, xlabel, ylabel string, series []Series, opts ...PlotOption) error {
	p := newPlot(title, xlabel, ylabel)
	for i, s := range series {
		if len(s.X) != len(s.Y) {
			return fmt.Errorf("metrics: plot %s: series %q has %d x values and %d y values, want equal counts", path, s.Name, len(s.X), len(s.Y))
		}
		if len(s.X) == 0 {
			continue
		}
		xys := make(plotter.XYs, len(s.X))
		for j := range xys {
			xys[j] = plotter.XY{X: s.X[j], Y: s.Y[j]}
		}
		if err := finite(xys); err != nil {
			return fmt.Errorf("metrics: plot %s: series %q: %w", path, s.Name, err)
		}
		line, err := plotter.NewLine(xys)
		if err != nil {
			return fmt.Errorf("metrics: plot %s: series %q: %w", path, s.Name, err)
		}
		line.Color = plotutil.Color(i)
		line.Dashes = plotutil.Dashes(i)
		line.Width = vg.Points(1.5)
		p.Add(line)
		p.Legend.Add(s.Name, line)
	}
	return savePNG(p, path, opts)
}

// ScatterPlot writes a PNG with the points of every curve and their error
// bars, e.g. test error against fairness violation for every run.
func ScatterPlot(path, title, xlabel, ylabel string, curves []Curve, opts ...PlotOption) error {
	return pointsPlot(path, title, xlabel, ylabel, curves, false, opts)
}

// ParetoPlot is ScatterPlot plus, for each curve, a line along its Pareto
// front (ParetoFront: lower is better on both axes), the way fairness papers
// show error-versus-violation trade-offs.
func ParetoPlot(path, title, xlabel, ylabel string, curves []Curve, opts ...PlotOption) error {
	return pointsPlot(path, title, xlabel, ylabel, curves, true, opts)
}

// ParetoFront returns the points no other point beats on both coordinates
// (smaller X and Y are better; a point equal to an earlier one is dropped),
// sorted by increasing X.
func ParetoFront(points []Point) []Point {
	sorted := slices.Clone(points)
	slices.SortStableFunc(sorted, func(a, b Point) int {
		if a.X != b.X {
			return cmpFloat(a.X, b.X)
		}
		return cmpFloat(a.Y, b.Y)
	})
	var front []Point
	for _, pt := range sorted {
		if len(front) == 0 || pt.Y < front[len(front)-1].Y {
			front = append(front, pt)
		}
	}
	return front
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func pointsPlot(path, title, xlabel, ylabel string, curves []Curve, front bool, opts []PlotOption) error {
	p := newPlot(title, xlabel, ylabel)
	for i, c := range curves {
		if len(c.Points) == 0 {
			continue
		}
		pts := errorPoints(c.Points)
		xys := make(plotter.XYs, len(pts))
		for j, pt := range pts {
			xys[j] = plotter.XY{X: pt.X, Y: pt.Y}
		}
		err := finite(xys)
		if err == nil {
			err = validErrors(c.Points)
		}
		if err != nil {
			return fmt.Errorf("metrics: plot %s: curve %q: %w", path, c.Name, err)
		}
		scatter, err := plotter.NewScatter(xys)
		if err != nil {
			return fmt.Errorf("metrics: plot %s: curve %q: %w", path, c.Name, err)
		}
		scatter.Color = plotutil.Color(i)
		scatter.Shape = plotutil.Shape(i)
		p.Add(scatter)
		thumbs := []plot.Thumbnailer{scatter}
		if pts.has(func(q Point) bool { return q.XErr != 0 }) {
			bars, err := plotter.NewXErrorBars(pts)
			if err != nil {
				return fmt.Errorf("metrics: plot %s: curve %q: %w", path, c.Name, err)
			}
			bars.Color = plotutil.Color(i)
			p.Add(bars)
		}
		if pts.has(func(q Point) bool { return q.YErr != 0 }) {
			bars, err := plotter.NewYErrorBars(pts)
			if err != nil {
				return fmt.Errorf("metrics: plot %s: curve %q: %w", path, c.Name, err)
			}
			bars.Color = plotutil.Color(i)
			p.Add(bars)
		}
		if front {
			line, err := plotter.NewLine(errorPoints(ParetoFront(c.Points)))
			if err != nil {
				return fmt.Errorf("metrics: plot %s: curve %q: %w", path, c.Name, err)
			}
			line.Color = plotutil.Color(i)
			line.Dashes = plotutil.Dashes(i)
			p.Add(line)
			thumbs = append(thumbs, line)
		}
		p.Legend.Add(c.Name, thumbs...)
	}
	return savePNG(p, path, opts)
}

// errorPoints adapts points to gonum/plot's XYer, XErrorer and YErrorer.
type errorPoints []Point

func (e errorPoints) Len() int                      { return len(e) }
func (e errorPoints) XY(i int) (x, y float64)       { return e[i].X, e[i].Y }
func (e errorPoints) XError(i int) (lo, hi float64) { return e[i].XErr, e[i].XErr }
func (e errorPoints) YError(i int) (lo, hi float64) { return e[i].YErr, e[i].YErr }

func (e errorPoints) has(f func(Point) bool) bool { return slices.ContainsFunc(e, f) }

func finite(xys plotter.XYs) error {
	for j, xy := range xys {
		if !isFinite(xy.X) || !isFinite(xy.Y) {
			return fmt.Errorf("point %d is (%g, %g), want finite coordinates", j, xy.X, xy.Y)
		}
	}
	return nil
}

func validErrors(points []Point) error {
	for j, pt := range points {
		if !isFinite(pt.XErr) || !isFinite(pt.YErr) || pt.XErr < 0 || pt.YErr < 0 {
			return fmt.Errorf("point %d has error bars (%g, %g), want finite and ≥ 0", j, pt.XErr, pt.YErr)
		}
	}
	return nil
}

func isFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func newPlot(title, xlabel, ylabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xlabel
	p.Y.Label.Text = ylabel
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	return p
}

// pad widens an axis range by fractions of its span so that points and
// error bars on the edge stay visible. An axis without data (infinite
// bounds) or with a single value is left to gonum/plot, which gives it a
// range of its own.
func pad(ax *plot.Axis, low, high float64) {
	span := ax.Max - ax.Min
	if !isFinite(span) || span <= 0 {
		return
	}
	ax.Min -= low * span
	ax.Max += high * span
}

// savePNG draws p at the requested pixel size and writes it to path through
// a temporary file in the same directory, renamed into place when complete.
func savePNG(p *plot.Plot, path string, opts []PlotOption) (err error) {
	cfg := plotConfig{widthPx: DefaultPlotWidth, heightPx: DefaultPlotHeight}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.widthPx <= 0 || cfg.heightPx <= 0 {
		return fmt.Errorf("metrics: plot %s: size %d×%d pixels, want positive", path, cfg.widthPx, cfg.heightPx)
	}
	pad(&p.X, 0.05, 0.05)
	pad(&p.Y, 0.05, 0.15) // room for the legend at the top
	// vgimg sizes the image as length/inch·dpi rounded, so lengths of
	// px/dpi inches give exactly px pixels.
	const dpi = vgimg.DefaultDPI
	canvas := vgimg.NewWith(
		vgimg.UseWH(vg.Length(cfg.widthPx)*vg.Inch/dpi, vg.Length(cfg.heightPx)*vg.Inch/dpi),
		vgimg.UseDPI(dpi),
	)
	p.Draw(draw.New(canvas))

	if err := atomicfile.Write(path, func(w io.Writer) error {
		_, err := (vgimg.PngCanvas{Canvas: canvas}).WriteTo(w)
		return err
	}); err != nil {
		return fmt.Errorf("metrics: plot %w", err)
	}
	return nil
}
