package bench

// The readings of the tailoring paper that issue 17 asks to test (REFERENCE
// §7, corrected): the five-group tables' generator is not in the paper, so
// the five-group data of tailoring_test.go are run under each reading the
// text allows and set beside the paper's table; the two-group experiments
// (σ_e = 1, Δ = 2, β ∈ [−5, 5]^P, 1,000 trials) are fully specified and are
// run as written, with their figures as PNG plots. Every run goes through
// tailoring.Run, the call `fairdp train --algo tailoring|dpnose` makes.
//
//	FAIRDP_FULL=1 FAIRDP_BENCH_OUT=/tmp/tailoring go test -timeout 0 -run TailoringReadings -v ./bench
//	FAIRDP_FULL=1 FAIRDP_BENCH_OUT=/tmp/tailoring go test -timeout 0 -run TailoringTwoGroupFigures -v ./bench
//
// FAIRDP_TAILORING_TRIALS sets the trials per cell (default 1,000, the
// paper's count for its two-group figures);
// FAIRDP_TAILORING_OBJECTIVES (default "sums,means") the objectives the
// two-group figures run, in order.

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"fairdp/metrics"
	"fairdp/tailoring"
)

// paperFive is REFERENCE §7's five-group table: per group, DPNoSE and DPSE
// at ρ = 2, 4.5 and 8.
var paperFive = [5][6]float64{
	{1.02, 1.27, 1.01, 1.26, 1.01, 1.25},
	{18.71, 15.75, 18.69, 15.73, 18.64, 15.71},
	{21.09, 17.75, 21.07, 17.73, 21.02, 17.71},
	{21.35, 17.94, 21.34, 17.93, 21.29, 17.91},
	{18.11, 15.29, 18.09, 15.28, 18.05, 15.26},
}

func tailoringTrials(t *testing.T, def int) int {
	v := os.Getenv("FAIRDP_TAILORING_TRIALS")
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("FAIRDP_TAILORING_TRIALS=%q, want a positive integer", v)
	}
	return n
}

// benchOutPath is name's path under $FAIRDP_BENCH_OUT, created if needed
// ("" without it: nothing is written).
func benchOutPath(t *testing.T, name string) string {
	dir := os.Getenv("FAIRDP_BENCH_OUT")
	if dir == "" {
		return ""
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, name)
}

// TestTailoringReadings runs the five-group data under each reading of the
// paper and prints each table beside the paper's.
func TestTailoringReadings(t *testing.T) {
	if os.Getenv("FAIRDP_FULL") == "" {
		t.Skip("full profile: set FAIRDP_FULL=1 (several minutes)")
	}
	trials := tailoringTrials(t, 1000)
	start := time.Now()
	s := newTailoringSetup(t, "five", fiveSizes, fiveSlopes, 4)
	var md strings.Builder
	fmt.Fprintf(&md, "Trials per cell: %d; five groups of %v records, slopes %v, σ_e = 1; pooled model, stage 2 by "+
		"gradient descent, Δ = 2, β ∈ [−5, 5]², step 0.1, G = 0 (no constraint). Mean test MSPE over the trials; "+
		"ratio = DPSE / DPNoSE, beside the paper's ratio at the same ρ.\n", trials, fiveSizes, fiveSlopes)
	for _, r := range []struct {
		title      string
		nose, dpse tailoringCell
	}{
		{"the synthetic study as written: both methods with sums (f = Σ_k ℓ_k weights every record), T = 200",
			tailoringCell{objective: "sums"}, tailoringCell{objective: "sums"}},
		{"reading (a): record-weighted DPNoSE (sums, ordinary regression) against DPSE with Algorithm 2's group terms (means), T = 200",
			tailoringCell{objective: "sums"}, tailoringCell{objective: "means"}},
		{"reading (b), Algorithm 2's means: DPSE's stage 2 starts at stage 1's β̃, T = 10 (DPNoSE from 0, T = 10)",
			tailoringCell{steps: 10}, tailoringCell{steps: 10, warm: true}},
		{"reading (b), Algorithm 2's means: DPSE's stage 2 starts at stage 1's β̃, T = 2 (DPNoSE from 0, T = 2)",
			tailoringCell{steps: 2}, tailoringCell{steps: 2, warm: true}},
		{"reading (b), the synthetic study's sums: DPSE's stage 2 starts at stage 1's β̃, T = 10 (DPNoSE from 0, T = 10)",
			tailoringCell{objective: "sums", steps: 10}, tailoringCell{objective: "sums", steps: 10, warm: true}},
		{"reading (b), the synthetic study's sums: DPSE's stage 2 starts at stage 1's β̃, T = 2 (DPNoSE from 0, T = 2)",
			tailoringCell{objective: "sums", steps: 2}, tailoringCell{objective: "sums", steps: 2, warm: true}},
	} {
		before := md.Len()
		r.nose.method, r.dpse.method = tailoring.DPNoSE, tailoring.DPSE
		fmt.Fprintf(&md, "\n#### Five groups, %s\n\n| group | n | slope |", r.title)
		for _, rho := range tailoringRhos {
			fmt.Fprintf(&md, " DPNoSE ρ=%g | DPSE ρ=%g | ratio | paper's ratio |", rho, rho)
		}
		md.WriteString(" direction as the paper's |\n|---|---|---|" + strings.Repeat("---|---|---|---|", len(tailoringRhos)) + "---|\n")
		cols := make([][2]*tailoring.Summary, len(tailoringRhos))
		for i, rho := range tailoringRhos {
			cols[i] = [2]*tailoring.Summary{s.run(t, r.nose, rho, trials), s.run(t, r.dpse, rho, trials)}
		}
		for k := range s.sizes {
			fmt.Fprintf(&md, "| %d | %d | %g |", k+1, s.sizes[k], s.slopes[k])
			same := 0
			for i := range tailoringRhos {
				nose, se := cols[i][0].Test[k], cols[i][1].Test[k]
				ratio, paper := se.Mean/nose.Mean, paperFive[k][2*i+1]/paperFive[k][2*i]
				fmt.Fprintf(&md, " %.3f ± %.3f | %.3f ± %.3f | %.3f | %.3f |", nose.Mean, nose.Std, se.Mean, se.Std, ratio, paper)
				if (ratio < 1) == (paper < 1) {
					same++
				}
			}
			fmt.Fprintf(&md, " %d of %d ρ |\n", same, len(tailoringRhos))
		}
		for i, rho := range tailoringRhos {
			if f := cols[i][1].Fallbacks; f > 0 {
				fmt.Fprintf(&md, "\nρ = %g: stage 1 fell back to the uniform split in %d DPSE trials.\n", rho, f)
			}
		}
		fmt.Print(md.String()[before:])
	}
	fmt.Fprintf(&md, "\nWall time: %.0f s.\n", time.Since(start).Seconds())
	if path := benchOutPath(t, "tailoring_readings.md"); path != "" {
		if err := os.WriteFile(path, []byte(md.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestTailoringTwoGroupFigures runs the paper's two-group experiments as
// specified: 10,000 records against 500 (20×) or 200 (50×), slopes
// (−10, 10), σ_e = 1, one pooled β ∈ [−5, 5]², Δ = 2, stage 2 by gradient
// descent (T = 200, step 0.1: not given by the paper), ρ = c²/2 for
// c ∈ {0.1, …, 10}, 1,000 trials per cell; for each objective a table, a
// CSV and two PNGs (each group's MSPE, and DPSE/DPNoSE per group).
func TestTailoringTwoGroupFigures(t *testing.T) {
	if os.Getenv("FAIRDP_FULL") == "" {
		t.Skip("full profile: set FAIRDP_FULL=1 (about half an hour per objective on one core)")
	}
	trials := tailoringTrials(t, 1000)
	objectives := strings.Split(os.Getenv("FAIRDP_TAILORING_OBJECTIVES"), ",")
	if objectives[0] == "" {
		objectives = []string{"sums", "means"}
	}
	cs := []float64{0.1, 0.2, 0.5, 1, 2, 5, 10}
	setups := []*tailoringSetup{
		newTailoringSetup(t, "20x", []int{10000, 500}, []float64{-10, 10}, 5),
		newTailoringSetup(t, "50x", []int{10000, 200}, []float64{-10, 10}, 6),
	}
	for _, obj := range objectives {
		start := time.Now()
		reading := map[string]string{"sums": "the synthetic study's sums", "means": "Algorithm 2's means"}[obj]
		if reading == "" {
			t.Fatalf("FAIRDP_TAILORING_OBJECTIVES lists %q, want sums or means", obj)
		}
		var md strings.Builder
		fmt.Fprintf(&md, "\n#### Two groups, slopes (−10, 10), pooled β ∈ [−5, 5]², objective: %s, %d trials per cell\n\n", reading, trials)
		md.WriteString("Mean test MSPE ± its standard error over the trials.\n\n")
		md.WriteString("| ρ (= c²/2) | 20× small: DPNoSE | 20× small: DPSE | ratio | 20× large: DPNoSE | 20× large: DPSE | ratio | 50× small: DPNoSE | 50× small: DPSE | ratio | 50× large: DPNoSE | 50× large: DPSE | ratio |\n")
		md.WriteString("|---|" + strings.Repeat("---|", 12) + "\n")
		var buf bytes.Buffer
		cw := csv.NewWriter(&buf)
		cw.Write([]string{"objective", "setup", "rho", "c", "group", "n", "method", "trials", "mspe_mean", "mspe_std", "mspe_se", "budget_share"})
		var mspe, ratio []metrics.Series
		for _, s := range setups {
			for g, size := range s.sizes {
				for _, m := range []string{"DPNoSE", "DPSE"} {
					mspe = append(mspe, metrics.Series{Name: fmt.Sprintf("%s %s, group %d (n = %d)", s.name, m, g+1, size)})
				}
				ratio = append(ratio, metrics.Series{Name: fmt.Sprintf("%s group %d (n = %d)", s.name, g+1, size)})
			}
		}
		for _, c := range cs {
			rho := c * c / 2
			fmt.Fprintf(&md, "| %.4g (c = %g) |", rho, c)
			for si, s := range setups {
				sums := [2]*tailoring.Summary{}
				for j, m := range []tailoring.Method{tailoring.DPNoSE, tailoring.DPSE} {
					sums[j] = s.run(t, tailoringCell{method: m, objective: obj}, rho, trials)
				}
				for _, g := range []int{1, 0} { // the small group first
					var cell [2]tailoring.GroupStats
					for j, sum := range sums {
						cell[j] = sum.Test[g]
						se := cell[j].Std / math.Sqrt(float64(sum.Trials-sum.Failed))
						cw.Write([]string{obj, s.name, fmtG(rho), fmtG(c), strconv.Itoa(g + 1), strconv.Itoa(s.sizes[g]), sum.Method.String(),
							strconv.Itoa(sum.Trials - sum.Failed), fmtG(cell[j].Mean), fmtG(cell[j].Std), fmtG(se), fmtG(cell[j].Share)})
						fmt.Fprintf(&md, " %.4g ± %.2g |", cell[j].Mean, se)
						mspe[si*4+g*2+j].X = append(mspe[si*4+g*2+j].X, math.Log10(rho))
						mspe[si*4+g*2+j].Y = append(mspe[si*4+g*2+j].Y, cell[j].Mean)
					}
					fmt.Fprintf(&md, " %.3f |", cell[1].Mean/cell[0].Mean)
					ratio[si*2+g].X = append(ratio[si*2+g].X, math.Log10(rho))
					ratio[si*2+g].Y = append(ratio[si*2+g].Y, cell[1].Mean/cell[0].Mean)
				}
			}
			md.WriteString("\n")
		}
		cw.Flush()
		fmt.Fprintf(&md, "\nWall time: %.0f s.\n", time.Since(start).Seconds())
		fmt.Print(md.String())
		base := "tailoring_two_groups_" + obj
		if path := benchOutPath(t, base+".md"); path != "" {
			if err := os.WriteFile(path, []byte(md.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(strings.TrimSuffix(path, ".md")+".csv", buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			title := fmt.Sprintf("Two groups, slopes (-10, 10), pooled [-5, 5]^2, %s: test MSPE", obj)
			if err := metrics.LinePlot(strings.TrimSuffix(path, ".md")+"_mspe.png", title, "log10 rho", "mean test MSPE", mspe); err != nil {
				t.Fatal(err)
			}
			title = fmt.Sprintf("Two groups, %s: DPSE / DPNoSE test MSPE", obj)
			if err := metrics.LinePlot(strings.TrimSuffix(path, ".md")+"_ratio.png", title, "log10 rho", "ratio", ratio); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func fmtG(v float64) string { return strconv.FormatFloat(v, 'g', 8, 64) }
