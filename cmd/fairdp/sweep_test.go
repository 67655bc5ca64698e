package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/fairdp/fairdp/dpops/accounting"
	"github.com/fairdp/fairdp/trainer"
)

// cancelAfter is stdout for a sweep that is "killed" (its context
// cancelled) once it has printed n progress lines.
type cancelAfter struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	n      int
	cancel context.CancelFunc
}

func (w *cancelAfter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if progressLines(w.buf.String()) >= w.n && w.cancel != nil {
		w.cancel()
	}
	return len(p), nil
}

// progressLines counts the "[i/N] ..." lines a sweep prints per finished run.
func progressLines(out string) int {
	n := 0
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "[") {
			n++
		}
	}
	return n
}

func readSweepCSV(t *testing.T, dir string) ([][]string, []byte) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "sweep.csv"))
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(bytes.NewReader(raw)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return recs, raw
}

func sweepArgs(dir string, extra ...string) []string {
	return append([]string{"--algo", "fermi", "--limit", "600", "--epochs", "1", "--batch", "64",
		"--lambda", "0,2", "--epsilon", "1,inf", "--seeds", "2", "--seed", "1", "--workers", "2", "--out", dir}, extra...)
}

// TestSweepResume kills a sweep midway (cancels its context after three
// runs have finished) and runs the same command again: the second run
// trains exactly the runs the first did not finish, the rows of the first
// stay untouched, and the final CSV has one row per run of the grid.
func TestSweepResume(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := &cancelAfter{n: 3, cancel: cancel}
	err := runSweep(ctx, sweepArgs(dir), first, &bytes.Buffer{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted sweep returned %v, want context.Canceled\n%s", err, first.buf.String())
	}
	recs, before := readSweepCSV(t, dir)
	done1 := progressLines(first.buf.String())
	if len(recs)-1 != done1 || done1 < 3 || done1 >= 8 {
		t.Fatalf("after the interruption: %d rows in sweep.csv, %d runs reported; want the same number, 3 ≤ n < 8\n%s",
			len(recs)-1, done1, first.buf.String())
	}
	if !strings.Contains(first.buf.String(), "sweep interrupted") {
		t.Errorf("no resume hint:\n%s", first.buf.String())
	}
	var second bytes.Buffer
	if err := runSweep(context.Background(), sweepArgs(dir), &second, &bytes.Buffer{}); err != nil {
		t.Fatalf("resumed sweep: %v\n%s", err, second.String())
	}
	out := second.String()
	if got := progressLines(out); got != 8-done1 {
		t.Errorf("resumed sweep trained %d runs, want the %d missing ones:\n%s", got, 8-done1, out)
	}
	if !strings.Contains(out, "8 runs, "+strconv.Itoa(done1)+" already in") {
		t.Errorf("resumed sweep does not say how many runs were already done:\n%s", out)
	}
	recs, after := readSweepCSV(t, dir)
	if !bytes.HasPrefix(after, before) {
		t.Errorf("the rows written before the interruption changed:\nbefore\n%s\nafter\n%s", before, after)
	}
	if len(recs) != 9 || strings.Join(recs[0], ",") != strings.Join(trainer.SweepColumns, ",") {
		t.Fatalf("final sweep.csv has %d lines (want header + 8):\n%s", len(recs), after)
	}
	keys := map[string]bool{}
	for _, r := range recs[1:] {
		keys[strings.Join(r[:3], ",")] = true
		if r[0] == "1" && (r[5] == "inf" || r[6] == "") {
			t.Errorf("private run without spent ε or δ: %v", r)
		}
		if r[0] == "inf" && r[5] != "inf" {
			t.Errorf("non-private run reports spent ε %s", r[5])
		}
	}
	// Run i of cell (ε, λ) has seed SweepSeed(1, "ε,λ", i): its own noise.
	for _, cell := range []string{"1,0", "1,2", "inf,0", "inf,2"} {
		for i := range 2 {
			if k := cell + "," + strconv.FormatUint(trainer.SweepSeed(1, cell, i), 10); !keys[k] {
				t.Errorf("run %s missing from sweep.csv", k)
			}
		}
	}
	for _, want := range []string{"summary", "test error", "demographic-parity violation", "pareto.png"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if st, err := os.Stat(filepath.Join(dir, "pareto.png")); err != nil || st.Size() < 1000 {
		t.Errorf("pareto.png: %v", err)
	}
	// The grid has ε = inf runs: publishing the sweep is not private.
	if total, _ := readSweepTotal(t, dir); total == nil || total.Epsilon != nil || total.Runs != 8 {
		t.Errorf("privacy_total %+v, want 8 runs and no finite ε", total)
	}
	if !strings.Contains(out, "privacy total (publishing every run): none over 8 runs") {
		t.Errorf("output does not state the infinite total:\n%s", out)
	}
	// A third run has nothing left to do.
	var third bytes.Buffer
	if err := runSweep(context.Background(), sweepArgs(dir), &third, &bytes.Buffer{}); err != nil || progressLines(third.String()) != 0 {
		t.Errorf("complete sweep run again: %v, %d runs trained", err, progressLines(third.String()))
	}
	// Other settings in the same directory are refused.
	err = runSweep(context.Background(), sweepArgs(dir, "--epochs", "2"), &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "epochs 1, now 2") {
		t.Errorf("resuming with --epochs 2: %v", err)
	}
}

// TestSweepRowMatchesTrain: a seeded sweep run is the same job as `fairdp
// train` with the same flags and seed.
func TestSweepRowMatchesTrain(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--algo", "fermi", "--limit", "600", "--epochs", "1", "--batch", "64", "--seed", "4", "--out"}
	var out bytes.Buffer
	if err := runSweep(context.Background(), append(args, dir, "--lambda", "2", "--epsilon", "3"), &out, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	recs, _ := readSweepCSV(t, dir)
	tdir := t.TempDir()
	// The row's seed is the run's own; the split is the sweep's --seed.
	if recs[1][2] != strconv.FormatUint(trainer.SweepSeed(4, "3,2", 0), 10) {
		t.Fatalf("row seed %s, want SweepSeed(4, \"3,2\", 0)", recs[1][2])
	}
	// train adapts the settings no flag gives to the data (450 records at
	// ε = 3: η 0.1, clip 0.1); the sweep runs the configured ones, so the
	// defaults are spelled out.
	targs := []string{"train", "--quiet", "--lambda", "2", "--epsilon", "3", "--seed", recs[1][2], "--split-seed", "4", "--algo", "fermi",
		"--limit", "600", "--epochs", "1", "--batch", "64", "--lr", "0.005", "--clip", "1", "--out", tdir}
	if _, _, err := runCLI(t, targs...); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(tdir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Test    struct{ Error float64 }
		Privacy struct{ Epsilon float64 }
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	if recs[1][3] != f(rep.Test.Error) || recs[1][5] != f(rep.Privacy.Epsilon) {
		t.Errorf("sweep row %v; train gave test error %v and ε %v", recs[1], rep.Test.Error, rep.Privacy.Epsilon)
	}
}

func TestSweepErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--lambda", "1"}, "--out DIR is required"},
		{[]string{"--out", dir, "--lambda", "-1"}, "≥ 0"},
		{[]string{"--out", dir, "--epsilon", "1,x"}, "numbers separated by commas"},
		{[]string{"--out", dir, "--lambda", "1,1"}, "appears twice"},
		{[]string{"--out", dir, "--seeds", "0"}, "--seeds"},
		{[]string{"--algo", "postproc"}, "--out D is required"}, // Jagielski et al.'s sweep
	} {
		err := runSweep(context.Background(), tc.args, &bytes.Buffer{}, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("sweep %v: %v, want an error mentioning %q", tc.args, err, tc.want)
		}
	}
}

// TestDefaultTrainIsFERMI: `fairdp train` without flags is DP-FERMI on
// Adult at ε = 1 with δ = 1/n² and prints the per-group table and the
// receipt (shortened to one epoch here).
func TestDefaultTrainIsFERMI(t *testing.T) {
	out, _, err := runCLI(t, "train", "--epochs", "1", "--seed", "3", "--quiet")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"fermi on adult", "Male", "Female", "DP violation", "privacy: (ε = 1, δ = 8.69e-10)-DP"} {
		if !strings.Contains(out, want) {
			t.Errorf("default train output lacks %q:\n%s", want, out)
		}
	}
}

func steffleSweepArgs(dir string, extra ...string) []string {
	return append([]string{"--algo", "steffle", "--limit", "600", "--epochs", "1", "--batch", "64", "--scope", "sensitive",
		"--silos", "1,3", "--heterogeneity", "0,0.75", "--lambda", "0,1", "--epsilon", "1", "--seeds", "1", "--seed", "1",
		"--workers", "2", "--out", dir}, extra...)
}

// TestSteffleSweepResume: a SteFFLe grid over N and h is killed midway and
// resumed like a DP-FERMI sweep; sweep.csv leads with silos and
// heterogeneity, the summary has a row per (N, h, ε, λ), and each ε gets a
// plot with one curve per (N, h).
func TestSteffleSweepResume(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := &cancelAfter{n: 3, cancel: cancel}
	err := runSweep(ctx, steffleSweepArgs(dir), first, &bytes.Buffer{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted sweep returned %v, want context.Canceled\n%s", err, first.buf.String())
	}
	recs, before := readSweepCSV(t, dir)
	done1 := progressLines(first.buf.String())
	if len(recs)-1 != done1 || done1 < 3 || done1 >= 8 {
		t.Fatalf("after the interruption: %d rows, %d runs reported; want the same, 3 ≤ n < 8\n%s", len(recs)-1, done1, first.buf.String())
	}
	var second bytes.Buffer
	if err := runSweep(context.Background(), steffleSweepArgs(dir), &second, &bytes.Buffer{}); err != nil {
		t.Fatalf("resumed sweep: %v\n%s", err, second.String())
	}
	out := second.String()
	if got := progressLines(out); got != 8-done1 {
		t.Errorf("resumed sweep trained %d runs, want the %d missing ones:\n%s", got, 8-done1, out)
	}
	if !strings.Contains(out, "2 N × 2 h × 1 ε × 2 λ × 1 seeds = 8 runs, "+strconv.Itoa(done1)+" already in") {
		t.Errorf("resumed sweep does not describe the grid:\n%s", out)
	}
	recs, after := readSweepCSV(t, dir)
	if !bytes.HasPrefix(after, before) {
		t.Errorf("rows written before the interruption changed")
	}
	if len(recs) != 9 || strings.Join(recs[0][:6], ",") != "silos,heterogeneity,epsilon,lambda,seed,error" {
		t.Fatalf("final sweep.csv:\n%s", after)
	}
	keys := map[string]bool{}
	for _, r := range recs[1:] {
		keys[strings.Join(r[:5], ",")] = true
		if eps, err := strconv.ParseFloat(r[7], 64); err != nil || eps > 1+1e-9 || eps < 0.5 {
			t.Errorf("run %v: spent ε %s, want in [0.5, 1]", r[:5], r[7])
		}
		if ermi, err := strconv.ParseFloat(r[12], 64); err != nil || ermi < 0 {
			t.Errorf("run %v: test_ermi %q, want a number ≥ 0", r[:5], r[12])
		}
	}
	for _, n := range []string{"1", "3"} {
		for _, h := range []string{"0", "0.75"} {
			for _, l := range []string{"0", "1"} {
				cell := n + "," + h + ",1," + l
				if k := cell + "," + strconv.FormatUint(trainer.SweepSeed(1, cell, 0), 10); !keys[k] {
					t.Errorf("run %s missing", k)
				}
			}
		}
	}
	for _, want := range []string{"N  h     ε  λ", "3  0.75  1  1", "pareto-eps-1.png"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	for _, f := range []string{"pareto.png", "pareto-eps-1.png"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() < 1000 {
			t.Errorf("%s: %v", f, err)
		}
	}
	// A DP-FERMI sweep.csv in the directory is not silently reused.
	fdir := t.TempDir()
	if err := runSweep(context.Background(), sweepArgs(fdir, "--seeds", "1", "--lambda", "0", "--epsilon", "inf"), &bytes.Buffer{}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(fdir, "sweep.json"))
	if err != nil || strings.Contains(string(raw), "ederation") {
		t.Errorf("a DP-FERMI sweep.json must not hold the federation (older sweeps must resume): %v\n%s", err, raw)
	}
	os.Remove(filepath.Join(fdir, "sweep.json"))
	err = runSweep(context.Background(), steffleSweepArgs(fdir), &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "starts with the columns silos,heterogeneity") {
		t.Errorf("steffle sweep over a DP-FERMI sweep.csv: %v", err)
	}
	// Grids over N and h are SteFFLe's only.
	err = runSweep(context.Background(), sweepArgs(t.TempDir(), "--silos", "1,3"), &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "--silos applies to --algo steffle only") {
		t.Errorf("--algo fermi --silos 1,3: %v", err)
	}
	err = runSweep(context.Background(), steffleSweepArgs(t.TempDir(), "--federation", "mapping", "--mapping", "m.csv"), &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "--silos and --heterogeneity take one value") {
		t.Errorf("--federation mapping with --silos 1,3: %v", err)
	}
	err = runSweep(context.Background(), steffleSweepArgs(t.TempDir(), "--heterogeneity", "0,1.5"), &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "[0, 1]") {
		t.Errorf("--heterogeneity 0,1.5: %v", err)
	}
}

// TestSteffleSweepRowMatchesTrain: a seeded SteFFLe sweep run is the job
// `fairdp train --algo steffle` runs with the same flags and seed.
func TestSteffleSweepRowMatchesTrain(t *testing.T) {
	// --lr is given: train would otherwise adapt it to the data (SteFFLe's
	// data-aware η), which the sweep does not.
	args := []string{"--algo", "steffle", "--limit", "600", "--epochs", "1", "--batch", "64", "--lr", "0.005", "--scope", "sensitive", "--seed", "4",
		"--silos", "3", "--heterogeneity", "0.75", "--lambda", "1", "--epsilon", "3", "--out"}
	dir := t.TempDir()
	if err := runSweep(context.Background(), append(args, dir), &bytes.Buffer{}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	recs, _ := readSweepCSV(t, dir)
	tdir := t.TempDir()
	seed := trainer.SweepSeed(4, "3,0.75,3,1", 0)
	if recs[1][4] != strconv.FormatUint(seed, 10) {
		t.Fatalf("row seed %s, want %d", recs[1][4], seed)
	}
	args[slices.Index(args, "--seed")+1] = recs[1][4]
	if _, _, err := runCLI(t, append([]string{"train", "--quiet", "--split-seed", "4"}, append(args, tdir)...)...); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(tdir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Test struct {
			Error       float64 `json:"error"`
			DPViolation float64 `json:"dp_violation"`
		}
		Privacy struct{ Epsilon float64 }
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	if r := recs[1]; r[0] != "3" || r[1] != "0.75" || r[5] != f(rep.Test.Error) || r[9] != f(rep.Test.DPViolation) || r[7] != f(rep.Privacy.Epsilon) {
		t.Errorf("sweep row %v; train gave test error %v, DP violation %v, ε %v", r, rep.Test.Error, rep.Test.DPViolation, rep.Privacy.Epsilon)
	}
}

// TestSweepLegacySeeds: a sweep started before per-cell seeds (its
// sweep.json has no seed_derivation, its runs used the seeds S+i) is
// refused, not extended with runs of another seed rule.
func TestSweepLegacySeeds(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--algo", "fermi", "--limit", "300", "--epochs", "1", "--batch", "64", "--seed", "5", "--lambda", "0",
		"--epsilon", "2", "--seeds", "2", "--workers", "1", "--out", dir}
	if err := runSweep(context.Background(), args, &bytes.Buffer{}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "sweep.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil || m["seed_derivation"] != trainer.SweepSeedDerivation {
		t.Fatalf("sweep.json %s (%v): want the seed derivation recorded", raw, err)
	}
	legacy := regexp.MustCompile(`,\s*"seed_derivation": "[^"]*"`).ReplaceAll(raw, nil)
	if bytes.Equal(legacy, raw) {
		t.Fatalf("could not remove seed_derivation from %s", raw)
	}
	if err := os.WriteFile(path, legacy, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := runSweep(context.Background(), args, &bytes.Buffer{}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "cannot be extended") {
		t.Errorf("resuming a sweep of the old seed rule: %v, want it refused", err)
	}
}

// readSweepSettings is dir's sweep.json.
func readSweepSettings(t *testing.T, dir string) trainer.SweepSettings {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "sweep.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s trainer.SweepSettings
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// readSweepTotal is sweep.json's privacy_total and the receipts in
// receipts.jsonl, by run key.
func readSweepTotal(t *testing.T, dir string) (*trainer.SweepTotal, map[string]accounting.Receipt) {
	t.Helper()
	s := readSweepSettings(t, dir)
	recs := map[string]accounting.Receipt{}
	lines, err := os.ReadFile(filepath.Join(dir, "receipts.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(lines)), "\n") {
		if l == "" {
			continue
		}
		var r struct {
			Key     string             `json:"key"`
			Receipt accounting.Receipt `json:"receipt"`
		}
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		recs[r.Key] = r.Receipt
	}
	return s.PrivacyTotal, recs
}

// TestSweepPrivacyTotal: a sweep states the guarantee of publishing all
// its runs. For two private FERMI runs (receipted by PLD, the default) it
// is the PLD composition of both runs' mechanisms (composed here by hand
// with a fresh PLD accountant), below their RDP composition, larger
// than either run's ε; resuming counts every run once, and extending the
// grid adds the new runs.
func TestSweepPrivacyTotal(t *testing.T) {
	dir := t.TempDir()
	args := func(seeds string) []string {
		return []string{"--algo", "fermi", "--limit", "600", "--epochs", "1", "--batch", "64", "--lambda", "0,2",
			"--epsilon", "1", "--seeds", seeds, "--seed", "1", "--workers", "2", "--out", dir}
	}
	check := func(runs int, out string) {
		t.Helper()
		total, recs := readSweepTotal(t, dir)
		rows, _ := readSweepCSV(t, dir)
		if total == nil || total.Runs != runs || len(rows)-1 != runs || total.Epsilon == nil {
			t.Fatalf("privacy_total %+v for %d rows, want %d runs with a finite ε", total, len(rows)-1, runs)
		}
		var acct accounting.PLD
		var rdp accounting.RDP
		delta := 0.0
		for _, r := range rows[1:] {
			rec, ok := recs[strings.Join(r[:3], ",")]
			if !ok {
				t.Fatalf("run %v has no receipt", r[:3])
			}
			spent, _ := strconv.ParseFloat(r[5], 64)
			if math.Abs(spent-*rec.Epsilon) > 1e-5*spent {
				t.Errorf("run %v: sweep.csv ε %v, receipt %v", r[:3], spent, *rec.Epsilon)
			}
			if *total.Epsilon <= *rec.Epsilon {
				t.Errorf("total ε %v is not larger than run %v's %v", *total.Epsilon, r[:3], *rec.Epsilon)
			}
			delta = max(delta, rec.Delta)
			for _, m := range rec.Mechanisms {
				if err := acct.Step(m, m.Steps); err != nil {
					t.Fatal(err)
				}
				if err := rdp.Step(m, m.Steps); err != nil {
					t.Fatal(err)
				}
			}
		}
		want, err := acct.Epsilon(delta)
		if err != nil {
			t.Fatal(err)
		}
		if total.Method != trainer.SweepTotalPLD || total.Delta != delta || math.Abs(*total.Epsilon-want) > 1e-12*want {
			t.Errorf("privacy_total %s (%s), want (ε = %v, δ = %v) by pld", total, total.Method, want, delta)
		}
		if rdpEps, _ := rdp.Epsilon(delta); *total.Epsilon >= *total.BasicEpsilon || *total.Epsilon >= rdpEps {
			t.Errorf("PLD total %v not below the basic sum %v and the RDP composition %v", *total.Epsilon, *total.BasicEpsilon, rdpEps)
		}
		if line := fmt.Sprintf("privacy total (publishing every run): (ε = %.4g, δ = %.3g)-DP over %d runs [pld composition",
			want, delta, runs); !strings.Contains(out, line) {
			t.Errorf("output lacks %q:\n%s", line, out)
		}
	}
	var out bytes.Buffer
	if err := runSweep(context.Background(), args("1"), &out, &bytes.Buffer{}); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	check(2, out.String())
	first, _ := readSweepTotal(t, dir)
	out.Reset()
	if err := runSweep(context.Background(), args("1"), &out, &bytes.Buffer{}); err != nil || progressLines(out.String()) != 0 {
		t.Fatalf("resumed: %v\n%s", err, out.String())
	}
	check(2, out.String())
	if again, _ := readSweepTotal(t, dir); *again.Epsilon != *first.Epsilon {
		t.Errorf("resuming a finished sweep changed its total from %v to %v", *first.Epsilon, *again.Epsilon)
	}
	out.Reset()
	if err := runSweep(context.Background(), args("2"), &out, &bytes.Buffer{}); err != nil || progressLines(out.String()) != 2 {
		t.Fatalf("extended: %v\n%s", err, out.String())
	}
	check(4, out.String())

	// Rows whose receipts are lost (receipts.jsonl removed, or a sweep
	// made before receipts were kept) make the total unknown: it is never
	// rebuilt from the rows' rounded ε and δ.
	if err := os.Remove(filepath.Join(dir, "receipts.jsonl")); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := runSweep(context.Background(), args("2"), &out, &bytes.Buffer{}); err != nil || progressLines(out.String()) != 0 {
		t.Fatalf("resume without receipts: %v\n%s", err, out.String())
	}
	if lost, _ := readSweepTotal(t, dir); lost.Runs != 4 || lost.Epsilon != nil {
		t.Errorf("total without receipts %s, want 4 runs and no finite ε", lost)
	}
}

// TestPostprocSweepPrivacyTotal: a post-processing sweep's runs are pure
// ε-DP (δ = 0), so the total is the sum of their ε.
func TestPostprocSweepPrivacyTotal(t *testing.T) {
	dir := t.TempDir()
	out, err := runPostprocArgs(t, true, "--algo", "postproc", "--gamma", "0,0.05", "--epsilon", "1,2", "--seeds", "1",
		"--limit", "3000", "--out", dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	total, recs := readSweepTotal(t, dir)
	if total == nil || total.Runs != 4 || len(recs) != 4 {
		t.Fatalf("privacy_total %+v with %d receipts, want 4 runs", total, len(recs))
	}
	if total.Epsilon == nil || *total.Epsilon != 1+1+2+2 || total.Delta != 0 || total.Method != trainer.SweepTotalBasic ||
		total.Scope != accounting.ScopeSensitive {
		t.Errorf("privacy_total %s, scope %s; want (ε = 6, δ = 0) by basic composition, sensitive scope", total, total.Scope)
	}
	if !strings.Contains(out, "privacy total (publishing every run): (ε = 6, δ = 0)-DP over 4 runs [basic composition]") {
		t.Errorf("output lacks the total:\n%s", out)
	}
}
