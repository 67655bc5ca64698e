package bench

// The SteFFLe grid under the authors' code's protocol: the
// rows come from TestSteffleFull with FAIRDP_STEFFLE_PROTOCOL=authors
// (see bench/results/steffle.md, "Authors' protocol"); this file turns the
// CSV into the tables (means and paired differences with 95 % confidence
// intervals) and the plot:
//
//	FAIRDP_STEFFLE_REPORT=1 go test -run SteffleAuthorsReport -v ./bench
//
// FAIRDP_STEFFLE_OUT names another CSV (default
// results/steffle_credit_authors.csv); the plots are written beside it.

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mathext"

	"github.com/fairdp/fairdp/metrics"
	"github.com/fairdp/fairdp/trainer"
)

// authorsCell is one setting of the grid; authorsRow one run of it.
type authorsCell struct {
	silos       int
	h, lam, eps float64
}

type authorsRow struct {
	seed int
	r    steffleResult
}

// readAuthorsCSV reads the grid's rows by cell, each cell's runs in seed
// order.
func readAuthorsCSV(t *testing.T, path string) map[authorsCell][]authorsRow {
	t.Helper()
	done := steffleReadCSV(t, path, steffleParams{authors: true}.header())
	out := map[authorsCell][]authorsRow{}
	for key, r := range done {
		f := strings.Split(strings.TrimSuffix(key, ","), ",")
		n, err := strconv.Atoi(f[0])
		if err != nil {
			continue // central / sgd rows are not part of this grid
		}
		num := func(s string) float64 {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				t.Fatalf("%s: %q: %v", path, key, err)
			}
			return v
		}
		c := authorsCell{silos: n, h: num(f[1]), lam: num(f[2]), eps: num(f[3])}
		out[c] = append(out[c], authorsRow{seed: int(num(f[4])), r: r})
	}
	for c := range out {
		slices.SortFunc(out[c], func(a, b authorsRow) int { return a.seed - b.seed })
	}
	return out
}

// ci95 is the mean of v and the half-width of its 95 % confidence
// interval (Student's t with len(v)−1 degrees of freedom; NaN for one
// value).
func ci95(v []float64) (mean, half float64) {
	mean, sd := trainer.MeanSD(v)
	if len(v) < 2 {
		return mean, math.NaN()
	}
	return mean, t975(float64(len(v)-1)) * sd / math.Sqrt(float64(len(v)))
}

// t975 is the 0.975 quantile of Student's t with nu degrees of freedom:
// P(|T| > t) = 0.05 is I_{ν/(ν+t²)}(ν/2, 1/2) = 0.05 (the regularised
// incomplete beta function), so t = sqrt(ν(1−z)/z) with z its inverse.
func t975(nu float64) float64 {
	z := mathext.InvRegIncBeta(nu/2, 0.5, 0.05)
	return math.Sqrt(nu * (1 - z) / z)
}

// pairedCI95 is ci95 of the per-seed differences a − b over the seeds both
// cells have, and that number of seeds.
func pairedCI95(a, b []authorsRow, f func(steffleResult) float64) (mean, half float64, n int) {
	bySeed := map[int]steffleResult{}
	for _, r := range b {
		bySeed[r.seed] = r.r
	}
	var d []float64
	for _, r := range a {
		if o, ok := bySeed[r.seed]; ok {
			d = append(d, f(r.r)-f(o))
		}
	}
	mean, half = ci95(d)
	return mean, half, len(d)
}

func fmtCI(mean, half float64, signed bool) string {
	f := "%.4f ± %.4f"
	if signed {
		f = "%+.4f ± %.4f"
	}
	return fmt.Sprintf(f, mean, half)
}

var (
	authorsErr  = func(r steffleResult) float64 { return r.err }
	authorsViol = func(r steffleResult) float64 { return r.viol }
)

// authorsTables writes the markdown tables of the grid.
func authorsTables(w io.Writer, cells map[authorsCell][]authorsRow) {
	keys := slices.SortedFunc(func(yield func(authorsCell) bool) {
		for c := range cells {
			if !yield(c) {
				return
			}
		}
	}, func(a, b authorsCell) int {
		return cmp.Or(cmp.Compare(a.eps, b.eps), cmp.Compare(a.lam, b.lam), cmp.Compare(a.h, b.h), cmp.Compare(a.silos, b.silos))
	})
	fmt.Fprintln(w, "### Every cell (checkpoint averages; mean ± 95 % CI half-width over seeds)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| ε | λ | h | N | seeds | test error | DP violation | last-iterate error | last-iterate violation | σ (silo 0) | spent ε (max) |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|")
	for _, c := range keys {
		rs := cells[c]
		pick := func(f func(steffleResult) float64) []float64 {
			v := make([]float64, len(rs))
			for i, r := range rs {
				v[i] = f(r.r)
			}
			return v
		}
		em, eh := ci95(pick(authorsErr))
		vm, vh := ci95(pick(authorsViol))
		lm, lh := ci95(pick(func(r steffleResult) float64 { return r.lastErr }))
		lv, lvh := ci95(pick(func(r steffleResult) float64 { return r.lastViol }))
		fmt.Fprintf(w, "| %v | %v | %v | %d | %d | %s | %s | %s | %s | %.3g | %.3f |\n", c.eps, c.lam, c.h, c.silos, len(rs),
			fmtCI(em, eh, false), fmtCI(vm, vh, false), fmtCI(lm, lh, false), fmtCI(lv, lvh, false),
			rs[0].r.sigma, slices.Max(pick(func(r steffleResult) float64 { return r.spent })))
	}
	diffTable := func(title, head string, rows [][2]authorsCell, label func(a, b authorsCell) string) {
		fmt.Fprintln(w)
		fmt.Fprintln(w, title)
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| "+head+" | seeds | Δ test error | Δ DP violation |")
		fmt.Fprintln(w, strings.Repeat("|---", strings.Count(head, "|")+4)+"|")
		for _, p := range rows {
			a, b := cells[p[0]], cells[p[1]]
			if len(a) == 0 || len(b) == 0 {
				continue
			}
			em, eh, n := pairedCI95(a, b, authorsErr)
			vm, vh, _ := pairedCI95(a, b, authorsViol)
			fmt.Fprintf(w, "| %s | %d | %s | %s |\n", label(p[0], p[1]), n, fmtCI(em, eh, true), fmtCI(vm, vh, true))
		}
	}
	var hRows, nRows, lRows, pRows [][2]authorsCell
	for _, c := range keys {
		if !math.IsInf(c.eps, 1) {
			b := c
			b.eps = math.Inf(1)
			pRows = append(pRows, [2]authorsCell{c, b})
		}
		if c.h == 0.75 {
			b := c
			b.h = 0
			hRows = append(hRows, [2]authorsCell{c, b})
		}
		if c.silos == 6 || c.silos == 12 {
			b := c
			b.silos = 3
			nRows = append(nRows, [2]authorsCell{c, b})
		}
		if c.lam > 0 {
			b := c
			b.lam = 0
			lRows = append(lRows, [2]authorsCell{c, b})
		}
	}
	diffTable("### Effect of h: (h = 0.75) − (h = 0), paired by seed, 95 % CI", "ε | λ | N", hRows,
		func(a, _ authorsCell) string { return fmt.Sprintf("%v | %v | %d", a.eps, a.lam, a.silos) })
	diffTable("### Effect of N: (N = 6 or 12) − (N = 3), same ε, λ, h, paired by seed, 95 % CI (all 60 epochs)", "ε | λ | h | N vs 3", nRows,
		func(a, _ authorsCell) string { return fmt.Sprintf("%v | %v | %v | %d", a.eps, a.lam, a.h, a.silos) })
	diffTable("### Effect of λ: (λ > 0) − (λ = 0), paired by seed, 95 % CI", "ε | λ | h | N", lRows,
		func(a, _ authorsCell) string { return fmt.Sprintf("%v | %v | %v | %d", a.eps, a.lam, a.h, a.silos) })
	diffTable("### Cost of privacy: (ε finite) − (ε = ∞, same protocol, no noise), paired by seed, 95 % CI", "ε | λ | h | N", pRows,
		func(a, _ authorsCell) string { return fmt.Sprintf("%v | %v | %v | %d", a.eps, a.lam, a.h, a.silos) })
}

// authorsPlots writes test error and DP violation against N, one curve
// per (ε, λ, h), with 95 % confidence bars; curves are offset a little
// along x so their bars do not hide each other.
func authorsPlots(t *testing.T, dir string, cells map[authorsCell][]authorsRow) {
	type curveKey struct{ eps, lam, h float64 }
	var keys []curveKey
	for c := range cells {
		k := curveKey{c.eps, c.lam, c.h}
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b curveKey) int {
		return cmp.Or(cmp.Compare(a.eps, b.eps), cmp.Compare(a.lam, b.lam), cmp.Compare(a.h, b.h))
	})
	for _, m := range []struct {
		file, ylabel string
		f            func(steffleResult) float64
	}{
		{"steffle_authors_error.png", "test error (checkpoint average)", authorsErr},
		{"steffle_authors_violation.png", "test DP violation (checkpoint average)", authorsViol},
	} {
		var curves []metrics.Curve
		for i, k := range keys {
			c := metrics.Curve{Name: fmt.Sprintf("ε = %v, λ = %v, h = %v", k.eps, k.lam, k.h)}
			for _, n := range []int{1, 3, 6, 12} {
				rs := cells[authorsCell{silos: n, h: k.h, lam: k.lam, eps: k.eps}]
				if n == 1 && k.h != 0 {
					rs = cells[authorsCell{silos: 1, lam: k.lam, eps: k.eps}] // N = 1 has no h
				}
				if len(rs) < 2 {
					continue
				}
				v := make([]float64, len(rs))
				for j, r := range rs {
					v[j] = m.f(r.r)
				}
				mean, half := ci95(v)
				x := math.Log2(float64(n)) + 0.03*(float64(i)-float64(len(keys)-1)/2)
				c.Points = append(c.Points, metrics.Point{X: x, Y: mean, YErr: half})
			}
			curves = append(curves, c)
		}
		title := "SteFFLe on Credit, authors' protocol: " + m.ylabel + " against log2 N (N = 1, 3, 6, 12), 95 % CI"
		if err := metrics.ScatterPlot(filepath.Join(dir, m.file), title, "log2 N (silos)", m.ylabel, curves, metrics.WithSize(1100, 750)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSteffleAuthorsReport prints the tables and writes the plots of the
// authors'-protocol grid from its CSV.
func TestSteffleAuthorsReport(t *testing.T) {
	if os.Getenv("FAIRDP_STEFFLE_REPORT") == "" {
		t.Skip("set FAIRDP_STEFFLE_REPORT=1 to tabulate and plot the authors'-protocol SteFFLe grid")
	}
	path := os.Getenv("FAIRDP_STEFFLE_OUT")
	if path == "" {
		path = filepath.Join("results", "steffle_credit_authors.csv")
	}
	cells := readAuthorsCSV(t, path)
	if len(cells) == 0 {
		t.Fatalf("%s: no rows", path)
	}
	authorsTables(os.Stdout, cells)
	authorsPlots(t, filepath.Dir(path), cells)
}

// TestCI95: the half-width is t(0.975, n−1)·sd/√n, checked against
// tabulated quantiles (t(0.975, 1) = 12.706, t(0.975, 14) = 2.1448).
func TestCI95(t *testing.T) {
	if m, h := ci95([]float64{1, 3}); m != 2 || math.Abs(h-12.7062*math.Sqrt2/math.Sqrt2) > 1e-3 {
		t.Errorf("ci95(1, 3) = %v ± %v, want 2 ± 12.706", m, h)
	}
	v := make([]float64, 15)
	for i := range v {
		v[i] = float64(i)
	}
	_, sd := trainer.MeanSD(v)
	if _, h := ci95(v); math.Abs(h-2.1448*sd/math.Sqrt(15)) > 1e-3 {
		t.Errorf("ci95(0..14) half-width %v, want %v", h, 2.1448*sd/math.Sqrt(15))
	}
}
