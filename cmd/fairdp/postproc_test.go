package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/linear"
	"github.com/fairdp/fairdp/trainer"
)

func runPostprocArgs(t *testing.T, sweep bool, args ...string) (string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	var err error
	if sweep {
		err = flagError(runPostprocSweep(context.Background(), args, &out, &errb))
	} else {
		err = flagError(runPostproc(context.Background(), trainer.Defaults(), args, &out, &errb))
	}
	return out.String() + errb.String(), err
}

// jagielskiReport is the part of report.json the tests read.
type jagielskiReport struct {
	Algorithm string `json:"algorithm"`
	Dataset   string `json:"dataset"`
	Model     string `json:"model"`
	Train     struct {
		N           int     `json:"n"`
		Error       float64 `json:"error"`
		EOViolation float64 `json:"eo_violation"`
		Groups      []struct {
			Group string `json:"group"`
		} `json:"groups"`
	} `json:"train"`
	Test struct {
		N           int     `json:"n"`
		EOViolation float64 `json:"eo_violation"`
	} `json:"test"`
	Privacy struct {
		Epsilon    *float64 `json:"epsilon"`
		Delta      float64  `json:"delta"`
		Scope      string   `json:"scope"`
		Seeded     bool     `json:"seeded"`
		Conversion string   `json:"conversion"`
	} `json:"privacy"`
	Extra struct{ Jagielski jagielskiExtra } `json:"extra"`
}

type jagielskiExtra struct {
	Failed        bool   `json:"failed"`
	Reason        string `json:"reason"`
	ExpectedTrain struct {
		Error       float64 `json:"error"`
		EOViolation float64 `json:"eo_violation"`
	} `json:"expected_train"`
	PostProcessing *struct {
		Slack     float64 `json:"slack"`
		Objective float64 `json:"lp_objective"`
	} `json:"postprocessing"`
}

func readPostprocReport(t *testing.T, dir string) jagielskiReport {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep jagielskiReport
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestPostprocTrainPostproc post-processes logistic regression on the
// (embedded) Adult data: non-private, the expected training EO violation is
// at most γ and the expected error is the LP optimum; private, the receipt
// is ε-DP for the sensitive attribute.
func TestPostprocTrainPostproc(t *testing.T) {
	dir := t.TempDir()
	out, err := runPostprocArgs(t, false, "--algo", "postproc", "--gamma", "0.02", "--epsilon", "inf",
		"--seed", "3", "--limit", "8000", "--out", dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	rep := readPostprocReport(t, dir)
	if rep.Algorithm != "postproc" || !strings.HasPrefix(rep.Dataset, "adult") || rep.Train.N != 8000 || len(rep.Train.Groups) != 2 ||
		rep.Privacy.Epsilon != nil || !strings.Contains(rep.Model, "logistic") {
		t.Errorf("report %+v", rep)
	}
	exp := rep.Extra.Jagielski.ExpectedTrain
	if exp.EOViolation > 0.02+1e-6 || math.Abs(exp.Error-rep.Extra.Jagielski.PostProcessing.Objective) > 1e-9 {
		t.Errorf("expected train EO %v (γ 0.02), error %v vs LP optimum %v", exp.EOViolation, exp.Error, rep.Extra.Jagielski.PostProcessing.Objective)
	}
	for _, want := range []string{"Female", "expected over the classifier's coins", "privacy: none"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "model.json")); err != nil {
		t.Error(err)
	}

	out, err = runPostprocArgs(t, false, "--algo", "postproc", "--gamma", "0.05", "--epsilon", "1",
		"--seed", "3", "--limit", "8000", "--out", dir, "--quiet", "--overwrite")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	rep = readPostprocReport(t, dir)
	if rep.Privacy.Epsilon == nil || *rep.Privacy.Epsilon != 1 || rep.Privacy.Scope != "sensitive" || !rep.Privacy.Seeded ||
		rep.Extra.Jagielski.PostProcessing.Slack <= 0 {
		t.Errorf("private report %+v", rep)
	}
}

// TestPostprocTrainOracle runs a short private oracle learner.
func TestPostprocTrainOracle(t *testing.T) {
	dir := t.TempDir()
	out, err := runPostprocArgs(t, false, "--algo", "oracle", "--gamma", "0.05", "--epsilon", "5", "--rounds", "10",
		"--seed", "4", "--limit", "6000", "--out", dir, "--fairness", "fpr")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	rep := readPostprocReport(t, dir)
	// With 10 rounds basic composition beats advanced: δ = 0 in the receipt.
	if rep.Algorithm != "oracle" || rep.Privacy.Epsilon == nil || *rep.Privacy.Epsilon > 5 || *rep.Privacy.Epsilon < 4.99 ||
		rep.Privacy.Conversion != "basic" || rep.Test.N == 0 {
		t.Errorf("report %+v", rep)
	}
	if !strings.Contains(out, "auditor") {
		t.Errorf("receipt does not list the auditor's releases:\n%s", out)
	}
}

// writeScoresCSV writes an external model's scores: two groups, group b
// with lower scores for the same label, and a split column.
func writeScoresCSV(t *testing.T, path string, n int, noPositivesIn string) {
	t.Helper()
	r := rand.New(rand.NewPCG(5, 5))
	var b strings.Builder
	b.WriteString("id,score,sex,income,part\n")
	for i := range n {
		g := []string{"a", "b"}[r.IntN(2)]
		y := 0
		if r.Float64() < 0.3 && g != noPositivesIn {
			y = 1
		}
		s := 0.3 + 0.3*float64(y) + 0.15*r.NormFloat64()
		if g == "b" {
			s -= 0.1
		}
		part := "train"
		if i%4 == 0 {
			part = "test"
		}
		fmt.Fprintf(&b, "%d,%.4f,%s,%d,%s\n", i, s, g, y, part)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPostprocScoresCSV post-processes scores read from a CSV column.
func TestPostprocScoresCSV(t *testing.T) {
	dir := t.TempDir()
	scores := filepath.Join(dir, "scores.csv")
	writeScoresCSV(t, scores, 4000, "")
	args := []string{"--algo", "postproc", "--scores", scores, "--score-column", "score", "--group-column", "sex",
		"--label-column", "income", "--split-column", "part", "--gamma", "0.01", "--epsilon", "inf", "--bins", "5", "--out", dir}
	out, err := runPostprocArgs(t, false, args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	rep := readPostprocReport(t, dir)
	if rep.Dataset != "scores.csv" || rep.Train.N != 3000 || rep.Test.N != 1000 || rep.Extra.Jagielski.ExpectedTrain.EOViolation > 0.01+1e-6 ||
		!strings.Contains(rep.Model, "scores from scores.csv") {
		t.Errorf("report %+v", rep)
	}

	// A group without positives makes equalized odds undefined: the run
	// fails, says why, and still writes its report.
	writeScoresCSV(t, scores, 400, "b")
	out, err = runPostprocArgs(t, false, append(args, "--overwrite")...)
	if err == nil || !strings.Contains(err.Error(), "failed") {
		t.Fatalf("err = %v, want a failure\n%s", err, out)
	}
	if rep := readPostprocReport(t, dir); !rep.Extra.Jagielski.Failed || rep.Extra.Jagielski.Reason == "" {
		t.Errorf("failed run's report %+v", rep.Extra.Jagielski)
	}

	// Errors name the file, the line and the column.
	bad := filepath.Join(dir, "bad.csv")
	os.WriteFile(bad, []byte("score,group,label\n0.5,a,1\n0.2,b,yes\n"), 0o644)
	_, err = runPostprocArgs(t, false, "--algo", "postproc", "--scores", bad, "--epsilon", "inf")
	if err == nil || !strings.Contains(err.Error(), "bad.csv:3") || !strings.Contains(err.Error(), `"label"`) {
		t.Errorf("bad label: %v", err)
	}
	_, err = runPostprocArgs(t, false, "--algo", "postproc", "--scores", bad, "--score-column", "p", "--epsilon", "inf")
	if err == nil || !strings.Contains(err.Error(), `no column "p"`) || !strings.Contains(err.Error(), "--score-column") {
		t.Errorf("missing column: %v", err)
	}
}

// TestPostprocSweep writes sweep.csv and pareto.png.
func TestPostprocSweep(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new") // --out is created
	out, err := runPostprocArgs(t, true, "--algo", "postproc", "--gamma", "0,0.05", "--epsilon", "1,inf", "--seeds", "2",
		"--limit", "6000", "--out", dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	f, err := os.Open(filepath.Join(dir, "sweep.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1+2*2*2 || strings.Join(rows[0], ",") != strings.Join(linear.FairSweepColumns, ",") {
		t.Fatalf("sweep.csv has %d rows, header %v", len(rows), rows[0])
	}
	// One row per (ε, γ, seed), in the order runs finished; ε = inf rows
	// spend nothing.
	byKey := map[string][]string{}
	for _, r := range rows[1:] {
		byKey[strings.Join(r[:4], ",")] = r
	}
	// Run i of a cell has the library's per-cell seed from the base seed
	// (0 without --seed).
	for _, e := range []string{"1", "inf"} {
		for _, g := range []string{"0", "0.05"} {
			for i := range 2 {
				seed := strconv.FormatUint(trainer.SweepSeed(0, "postproc,"+e+","+g, i), 10)
				r, ok := byKey["postproc,"+e+","+g+","+seed]
				if !ok || e == "inf" && r[13] != "inf" || e == "1" && r[13] != "1" {
					t.Errorf("run ε %s γ %s seed %s: row %v", e, g, seed, r)
				}
			}
		}
	}

	// Run again: every run is done, nothing is redone and the rows stay.
	before, _ := os.ReadFile(filepath.Join(dir, "sweep.csv"))
	if out, err := runPostprocArgs(t, true, "--algo", "postproc", "--gamma", "0,0.05", "--epsilon", "1,inf", "--seeds", "2",
		"--limit", "6000", "--out", dir); err != nil || !strings.Contains(out, "(0 to do)") {
		t.Fatalf("resume: %v\n%s", err, out)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "sweep.csv")); !bytes.Equal(before, after) {
		t.Errorf("a finished sweep changed when resumed:\n%s\n%s", before, after)
	}
	// A sweep.csv written before the DP-violation columns resumes: its
	// header and rows gain the columns (empty), nothing is redone.
	nOld := len(linear.FairSweepOldColumns[0])
	var old bytes.Buffer
	w := csv.NewWriter(&old)
	for _, r := range rows {
		w.Write(r[:nOld])
	}
	w.Flush()
	os.WriteFile(filepath.Join(dir, "sweep.csv"), old.Bytes(), 0o644)
	if out, err := runPostprocArgs(t, true, "--algo", "postproc", "--gamma", "0,0.05", "--epsilon", "1,inf", "--seeds", "2",
		"--limit", "6000", "--out", dir); err != nil || !strings.Contains(out, "(0 to do)") {
		t.Fatalf("resume of a sweep.csv without the DP columns: %v\n%s", err, out)
	}
	csvRaw, _ := os.ReadFile(filepath.Join(dir, "sweep.csv"))
	upgraded, err := csv.NewReader(bytes.NewReader(csvRaw)).ReadAll()
	if err != nil || len(upgraded) != len(rows) || strings.Join(upgraded[0], ",") != strings.Join(linear.FairSweepColumns, ",") ||
		strings.Join(upgraded[1][nOld:], "") != "" || strings.Join(upgraded[1][:nOld], ",") != strings.Join(rows[1][:nOld], ",") {
		t.Errorf("upgraded sweep.csv %q (%v)", upgraded, err)
	}
	// Other settings in the same directory are refused.
	if _, err := runPostprocArgs(t, true, "--algo", "postproc", "--gamma", "0", "--epsilon", "1", "--seeds", "1",
		"--limit", "5000", "--out", dir); err == nil || !strings.Contains(err.Error(), "other settings") {
		t.Errorf("resume with another --limit: %v", err)
	}
	img, err := os.Open(filepath.Join(dir, "pareto.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer img.Close()
	if _, err := png.Decode(img); err != nil {
		t.Errorf("pareto.png: %v", err)
	}
	if !strings.Contains(out, "ε = inf") {
		t.Errorf("summary lacks the ε = inf curve:\n%s", out)
	}
	// A sweep made before per-cell seeds (its runs used seeds S+i+1) is
	// refused, not extended with runs of another seed rule.
	path := filepath.Join(dir, "sweep.json")
	raw, _ := os.ReadFile(path)
	os.WriteFile(path, regexp.MustCompile(`,\s*"seed_derivation": "[^"]*"`).ReplaceAll(raw, nil), 0o644)
	if _, err := runPostprocArgs(t, true, "--algo", "postproc", "--gamma", "0,0.05", "--epsilon", "1,inf", "--seeds", "2",
		"--limit", "6000", "--out", dir); err == nil || !strings.Contains(err.Error(), "cannot be extended") {
		t.Errorf("resuming a sweep of the old seed rule: %v", err)
	}
}

func TestPostprocErrors(t *testing.T) {
	for _, tc := range []struct {
		sweep bool
		args  []string
		want  string
	}{
		{false, []string{"--algo", "fermi"}, "--algo must be postproc or oracle"},
		{false, []string{"--algo", "oracle", "--fairness", "dp"}, "--fairness"}, // dp is post-processing's only
		{false, []string{"--algo", "postproc", "--fairness", "parity"}, "--fairness"},
		{false, []string{"--algo", "oracle", "--scores", "x.csv"}, "--scores is for post-processing only"},
		{false, []string{"--algo", "postproc", "--epochs", "3"}, "not defined: -epochs"},
		{false, []string{"--algo", "postproc", "--gamma", "-1"}, "--gamma"},
		{false, []string{"--algo", "postproc", "--epsilon", "0"}, "positive number or inf"},
		{false, []string{"--algo", "postproc", "--bins", "1"}, "--bins"},
		{true, []string{"--algo", "postproc"}, "--out D is required"},
		{true, []string{"--algo", "postproc", "--gamma", "0,x", "--out", "d"}, "separated by commas"},
		{true, []string{"--algo", "postproc", "--epsilon", "0,1", "--out", "d"}, "positive numbers or inf"},
	} {
		_, err := runPostprocArgs(t, tc.sweep, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want %q", tc.args, err, tc.want)
		}
	}
}

// TestPostprocPrivateBaseDefaults: --base dpsgd without --gamma, --bins,
// --slack, --gamma-share and --base-epsilon runs the private pipeline's
// defaults (γ = linear.DefaultPrivateGamma, linear.DefaultPrivateSlack,
// linear.PrivateBins public bins for it, linear.PrivateGammaShare,
// monotone cells, the default share of ε) and records them, where a run
// without a base keeps the paper's γ = 0.05, two bins, union-bound slack, a
// fixed γ and the raw noisy cells; given flags win. (Before the slack
// rules the first case ran the union bound and 2 bins at these 3,000
// records; before the data-aware γ the second ran a fixed γ; before the
// monotone cells every run used the raw cells and 4 bins.)
func TestPostprocPrivateBaseDefaults(t *testing.T) {
	read := func(dir string) linear.PostprocConfig {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(dir, "report.json"))
		if err != nil {
			t.Fatal(err)
		}
		var rep struct {
			Config struct {
				Jagielski linear.PostprocConfig `json:"jagielski"`
			} `json:"config"`
		}
		if err := json.Unmarshal(data, &rep); err != nil {
			t.Fatal(err)
		}
		return rep.Config.Jagielski
	}
	for _, tc := range []struct {
		args  []string
		gamma float64
		bins  int
		baseE float64
		slack string
		share float64
		mono  bool
	}{
		// 3,000 training records, ε = 1 for the cells: PrivateBinsNoSlack
		// bins without slack, monotone cells, and γ fixed below m·ε = 4,000.
		{[]string{"--base", "dpsgd", "--fairness", "dp"}, linear.DefaultPrivateGamma, linear.PrivateBinsNoSlack, linear.DefaultBaseEpsilon(2), "none", 0, true},
		// 8,000 at ε = 1: the data-aware γ for parity, not for error rates.
		{[]string{"--base", "dpsgd", "--fairness", "dp", "--limit", "8000"}, linear.DefaultPrivateGamma, linear.PrivateBinsNoSlack, linear.DefaultBaseEpsilon(2), "none",
			linear.DefaultPrivateGammaShare, true},
		{[]string{"--base", "objpert", "--fairness", "eo", "--limit", "8000"}, linear.DefaultPrivateGamma, linear.PrivateBinsNoSlack, linear.DefaultBaseEpsilon(2), "none", 0, true},
		{[]string{"--base", "objpert", "--gamma", "0.1", "--bins", "2", "--base-epsilon", "1.5", "--slack", "sd", "--gamma-share", "0.1", "--monotone-cells=false"},
			0.1, 2, 1.5, "sd", 0.1, false},
		// The union bound keeps the m·ε rule: 2 bins at m·ε = 3,000.
		{[]string{"--base", "objpert", "--slack", "union"}, linear.DefaultPrivateGamma, 2, linear.DefaultBaseEpsilon(2), "union", 0, true},
		{nil, 0.05, 2, 0, "", 0, false},
	} {
		dir := t.TempDir()
		args := append([]string{"--algo", "postproc", "--epsilon", "2", "--seed", "4", "--limit", "3000", "--quiet", "--out", dir, "--overwrite"}, tc.args...)
		if out, err := runPostprocArgs(t, false, args...); err != nil {
			t.Fatalf("%v: %v\n%s", tc.args, err, out)
		}
		if got := read(dir); got.Gamma != tc.gamma || got.Bins != tc.bins || got.BaseEpsilon != tc.baseE || got.Slack != tc.slack || got.GammaShare != tc.share ||
			got.Monotone != tc.mono {
			t.Errorf("%v: γ %v bins %d base ε %v slack %q γ share %v monotone %v, want %v, %d, %v, %q, %v, %v", tc.args, got.Gamma, got.Bins, got.BaseEpsilon, got.Slack,
				got.GammaShare, got.Monotone, tc.gamma, tc.bins, tc.baseE, tc.slack, tc.share, tc.mono)
		}
	}
}

// TestPostprocSweepPrivateBaseDefaults: a sweep with a private base runs
// each cell as `fairdp train` would (the private pipeline's bin rule,
// slack and γ share rule), not the paper's defaults for a non-private base.
func TestPostprocSweepPrivateBaseDefaults(t *testing.T) {
	dir := t.TempDir()
	out, err := runPostprocArgs(t, true, "--algo", "postproc", "--base", "objpert", "--fairness", "dp", "--gamma", "0.02",
		"--epsilon", "1", "--seeds", "1", "--limit", "3000", "--out", dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var cfg trainer.Config
	if err := json.Unmarshal(readSweepSettings(t, dir).Config, &cfg); err != nil {
		t.Fatal(err)
	}
	j := linear.PostprocConfigOf(cfg)
	if j.Bins != 0 || j.Slack != string(linear.DefaultPrivateSlack) || j.GammaShare != linear.GammaShareAuto {
		t.Errorf("sweep settings: bins %d, slack %q, γ share %v; want the private pipeline's bin rule (0), slack %q and γ share rule (%v)",
			j.Bins, j.Slack, j.GammaShare, linear.DefaultPrivateSlack, linear.GammaShareAuto)
	}
}
