package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/tailoring"
)

func runTailoringArgs(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	err := flagError(runTrain(context.Background(), args, &out, &errb))
	return out.String(), errb.String(), err
}

// smallSynthetic keeps the CLI tests fast: three groups, 20 stage-2 steps.
var smallSynthetic = []string{"--groups", "400,50,100", "--slopes", "0,-4,4", "--steps", "20"}

type tailoringJSON struct {
	Algorithm string `json:"algorithm"`
	Dataset   string `json:"dataset"`
	Model     string `json:"model"`
	Task      string `json:"task"`
	Rho       float64
	Trials    int
	Test      struct {
		N      int              `json:"n"`
		MSPE   *float64         `json:"mspe"`
		Groups []map[string]any `json:"groups"`
	} `json:"test"`
	Privacy struct {
		Epsilon    *float64 `json:"epsilon"`
		Rho        *float64 `json:"rho"`
		Seeded     bool     `json:"seeded"`
		Mechanisms []struct {
			Protects string `json:"protects"`
		} `json:"mechanisms"`
		Note string `json:"note"`
	} `json:"privacy"`
	Sweep []struct {
		Rho   float64            `json:"rho"`
		Ratio map[string]float64 `json:"ratio"`
	} `json:"sweep"`
}

func readTailoringReport(t *testing.T, dir string) (tailoringJSON, map[string]any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep tailoringJSON
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	// The tailoring results are extra.tailoring, its options config.tailoring.
	var top struct {
		Extra  struct{ Tailoring json.RawMessage }
		Config struct{ Tailoring json.RawMessage }
	}
	if err := json.Unmarshal(data, &top); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(top.Extra.Tailoring, &rep); err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	json.Unmarshal(top.Extra.Tailoring, &raw)
	var opts map[string]any
	json.Unmarshal(top.Config.Tailoring, &opts)
	raw["options"] = opts
	return rep, raw
}

func TestTailoringReport(t *testing.T) {
	argsTo := func(dir string) []string {
		return append([]string{"--algo", "tailoring", "--task", "regression", "--rho", "2", "--trials", "4",
			"--seed", "7", "--out", dir}, smallSynthetic...)
	}
	dir := t.TempDir()
	out, _, err := runTailoringArgs(t, argsTo(dir)...)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"dpse, ρ = 2, 4 trials", "g2", "budget share",
		"privacy of all 4 fits released (trials × methods × ρ values = 4 × 1 × 1), composed to ρ = 8: (ε =",
		"each fit alone (ρ = 2): (ε =", "report.json"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	rep, raw := readTailoringReport(t, dir)
	if rep.Algorithm != "tailoring" || rep.Dataset != "synthetic" || rep.Task != "regression" || rep.Trials != 4 ||
		!strings.Contains(rep.Model, "pooled") {
		t.Errorf("report header %+v", rep)
	}
	if rep.Test.N != 550 || rep.Test.MSPE == nil || len(rep.Test.Groups) != 3 {
		t.Fatalf("test split %+v", rep.Test)
	}
	for k, want := range []float64{400, 50, 100} {
		g := rep.Test.Groups[k]
		if g["n"] != want || g["group"] != fmt.Sprintf("g%d", k+1) {
			t.Errorf("group %d: %v", k, g)
		}
		for _, key := range []string{"mspe", "mspe_std", "mspe_min", "mspe_max", "budget_share"} {
			if _, ok := g[key].(float64); !ok {
				t.Errorf("group %d lacks %s: %v", k, key, g)
			}
		}
	}
	// The report summarises 4 fits at ρ = 2: the receipt charges all of them.
	if rep.Privacy.Rho == nil || math.Abs(*rep.Privacy.Rho-4*2) > 1e-12 || rep.Privacy.Epsilon == nil || !rep.Privacy.Seeded ||
		!strings.Contains(rep.Privacy.Note, "4 fits released together") {
		t.Errorf("privacy %+v", rep.Privacy)
	}
	if _, ok := raw["options"].(map[string]any)["y_bound"]; !ok {
		t.Errorf("options lack the public bounds: %v", raw["options"])
	}

	// The same seed gives the same numbers.
	dir2 := t.TempDir()
	if _, _, err := runTailoringArgs(t, append(argsTo(dir2), "--quiet")...); err != nil {
		t.Fatal(err)
	}
	rep2, _ := readTailoringReport(t, dir2)
	a, _ := json.Marshal(rep.Test)
	b, _ := json.Marshal(rep2.Test)
	if !bytes.Equal(a, b) {
		t.Errorf("seeded runs differ:\n%s\n%s", a, b)
	}
}

func TestTailoringDPNoSE(t *testing.T) {
	dir := t.TempDir()
	_, _, err := runTailoringArgs(t, append([]string{"--algo", "dpnose", "--rho", "1.5", "--trials", "2", "--seed", "1",
		"--out", dir, "--quiet"}, smallSynthetic...)...)
	if err != nil {
		t.Fatal(err)
	}
	rep, _ := readTailoringReport(t, dir)
	if rep.Algorithm != "dpnose" || rep.Privacy.Rho == nil || math.Abs(*rep.Privacy.Rho-2*1.5) > 1e-12 {
		t.Errorf("dpnose report %+v", rep)
	}
	for _, m := range rep.Privacy.Mechanisms {
		if strings.Contains(m.Protects, "stage 1") {
			t.Errorf("DPNoSE released %s", m.Protects)
		}
	}
	for _, g := range rep.Test.Groups {
		if s := g["budget_share"].(float64); math.Abs(s-1.0/3) > 1e-12 {
			t.Errorf("DPNoSE share %v, want 1/3", s)
		}
	}
}

func TestTailoringSweep(t *testing.T) {
	dir := t.TempDir()
	// --noise-ridge 2 keeps every noisy XᵀX positive definite. Without it most
	// ρ = 0.5 trials fail on this tiny data, and whether any of the three
	// succeeds depends on the BLAS build: stage 2's noise std depends on
	// stage 1's data-dependent shares, so a last-bit difference between
	// BLAS kernels changes the seeded noise that follows (seen: 1 of 3
	// succeeds on gonum, 0 of 3 on OpenBLAS 0.3.21 on an AMD EPYC).
	out, _, err := runTailoringArgs(t, append([]string{"--algo", "tailoring", "--rho", "0.5,4", "--trials", "3", "--seed", "2",
		"--model", "per-group", "--variant", "ols", "--noise-ridge", "2", "--out", dir}, smallSynthetic...)...)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"DPSE/DPNoSE ratio", "dpnose, ρ = 4", "dpse, ρ = 0.5"} {
		if !strings.Contains(out, want) {
			t.Errorf("sweep output lacks %q:\n%s", want, out)
		}
	}
	rep, _ := readTailoringReport(t, dir)
	if len(rep.Sweep) != 2 || rep.Sweep[1].Rho != 4 || len(rep.Sweep[0].Ratio) != 4 {
		t.Fatalf("sweep %+v", rep.Sweep)
	}
	// Both methods' 3 trials at each ρ are released: 3·2·(0.5 + 4).
	if want := 3 * 2 * (0.5 + 4); rep.Privacy.Rho == nil || math.Abs(*rep.Privacy.Rho-want) > 1e-12*want ||
		!strings.Contains(rep.Privacy.Note, "12 fits released together") {
		t.Errorf("sweep receipt %+v, want ρ = %v for 12 fits", rep.Privacy, want)
	}
	for _, f := range []string{"sweep.csv", "ratio.png"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	csv, _ := os.ReadFile(filepath.Join(dir, "sweep.csv"))
	if lines := strings.Count(string(csv), "\n"); lines != 1+2*4 {
		t.Errorf("sweep.csv has %d lines, want 9:\n%s", lines, csv)
	}
}

// TestTailoringCSV runs on a CSV with a numeric target and a group column.
func TestTailoringCSV(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("x,region,y\n")
	for i := range 300 {
		x := float64(i%17)/8 - 1
		region, slope := "north", 2.0
		if i%5 == 0 {
			region, slope = "south", -3.0
		}
		fmt.Fprintf(&b, "%g,%s,%g\n", x, region, slope*x+0.1*float64(i%7))
	}
	data := filepath.Join(dir, "regions.csv")
	schema := filepath.Join(dir, "regions.json")
	os.WriteFile(data, []byte(b.String()), 0o644)
	os.WriteFile(schema, []byte(`{"name": "regions", "format": {"header": true}, "target": "y",
		"sensitive": {"columns": ["region"]}, "numeric": ["x"]}`), 0o644)
	out := filepath.Join(dir, "out")
	if _, _, err := runTailoringArgs(t, "--algo", "tailoring", "--dataset", data, "--schema", schema, "--rho", "4",
		"--trials", "2", "--seed", "3", "--x-bound", "3", "--y-bound", "5", "--steps", "20", "--out", out, "--quiet"); err != nil {
		t.Fatal(err)
	}
	rep, _ := readTailoringReport(t, out)
	if rep.Dataset != "regions.csv" || len(rep.Test.Groups) != 2 || rep.Test.N != 75 {
		t.Fatalf("CSV report %+v", rep)
	}
	// Private data, 2 trials at ρ = 4 summarised: the receipt charges 8 and
	// does not call the run a simulation.
	if rep.Privacy.Rho == nil || math.Abs(*rep.Privacy.Rho-2*4) > 1e-12 || strings.Contains(rep.Privacy.Note, "synthetic") {
		t.Errorf("CSV receipt %+v, want ρ = 8", rep.Privacy)
	}
	names := []string{rep.Test.Groups[0]["group"].(string), rep.Test.Groups[1]["group"].(string)}
	if strings.Join(names, ",") != "north,south" {
		t.Errorf("groups %v, want north,south", names)
	}

	// The same file as a classification task (y > 0), logistic loss.
	os.WriteFile(schema, []byte(`{"name": "regions", "format": {"header": true}, "label": {"column": "y", "threshold": 0},
		"sensitive": {"columns": ["region"]}, "numeric": ["x"]}`), 0o644)
	out = filepath.Join(dir, "out2")
	if _, _, err := runTailoringArgs(t, "--algo", "dpnose", "--task", "classification", "--dataset", data, "--schema", schema,
		"--rho", "4", "--trials", "2", "--seed", "3", "--x-bound", "3", "--steps", "20", "--out", out, "--quiet"); err != nil {
		t.Fatal(err)
	}
	_, raw := readTailoringReport(t, out)
	test := raw["test"].(map[string]any)
	if test["metric"] != "error" || test["error"] == nil || test["groups"].([]any)[0].(map[string]any)["error_std"] == nil {
		t.Errorf("classification test split %v", test)
	}
}

// TestTailoringObjective: --objective sums and --warm-start reach the run
// (the synthetic study's sums give a different fit from Algorithm 2's
// means on the same seed) and are recorded in a report that validates
// against the schema; the default report has neither key.
func TestTailoringObjective(t *testing.T) {
	mspe := map[string]float64{}
	for _, extra := range [][]string{nil, {"--objective", "sums", "--warm-start"}} {
		dir := t.TempDir()
		args := append([]string{"--algo", "tailoring", "--rho", "2", "--trials", "2", "--seed", "3", "--out", dir, "--quiet"}, smallSynthetic...)
		if _, _, err := runTailoringArgs(t, append(args, extra...)...); err != nil {
			t.Fatal(err)
		}
		v := validateReport(t, dir, "tailoring")
		opts := v["config"].(map[string]any)["tailoring"].(map[string]any)
		key := fmt.Sprint(extra)
		mspe[key] = v["test"].(map[string]any)["mspe"].(float64)
		if extra == nil {
			if _, ok := opts["objective"]; ok {
				t.Errorf("default run records objective %v, want no key (older reports stay identical)", opts["objective"])
			}
			continue
		}
		if opts["objective"] != "sums" || opts["warm_start"] != true {
			t.Errorf("config.tailoring records objective %v, warm_start %v; want sums, true", opts["objective"], opts["warm_start"])
		}
	}
	if len(mspe) != 2 || mspe["[]"] == mspe["[--objective sums --warm-start]"] {
		t.Errorf("test MSPE by run %v: want the two readings to differ", mspe)
	}
}

func TestTailoringErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--algo", "tailoring", "--task", "ranking"}, "--task"},
		{[]string{"--algo", "tailoring", "--rho", "0"}, "every ρ must be > 0"},
		{[]string{"--algo", "tailoring", "--rho", "two"}, "finite numbers"},
		{[]string{"--algo", "tailoring", "--trials", "0"}, "--trials"},
		{[]string{"--algo", "tailoring", "--groups", "10,20", "--slopes", "1"}, "one slope per group"},
		{[]string{"--algo", "tailoring", "--groups", "10,2.5", "--slopes", "1,2"}, "positive integers"},
		{[]string{"--algo", "tailoring", "--noise", "1,2"}, "--noise"},
		{[]string{"--algo", "tailoring", "--model", "tree"}, "--model"},
		{[]string{"--algo", "tailoring", "--variant", "ols", "--multiplier", "1"}, "unconstrained"},
		{[]string{"--algo", "tailoring", "--nose-budget", "half"}, "--nose-budget"},
		{[]string{"--algo", "tailoring", "--task", "classification"}, "synthetic data set is regression"},
		{[]string{"--algo", "tailoring", "--dataset", "data.csv"}, "--schema is required"},
		{[]string{"--algo", "tailoring", "--dataset", "data.csv", "--schema", "s.json"}, "--x-bound"},
		{[]string{"--algo", "tailoring", "--epochs", "3"}, "flag provided but not defined: -epochs"},
		{[]string{"--algo", "tailoring", "extra"}, "unexpected argument"},
		{[]string{"--algo", "tailoring", "--steps", "0"}, "--steps"},
		{[]string{"--algo", "tailoring", "--tau-share", "1"}, "--tau-share"},
		{[]string{"--algo", "tailoring", "--lr", "0"}, "--lr"},
		{[]string{"--algo", "tailoring", "--box", "-1"}, "--box"},
		{[]string{"--algo", "tailoring", "--loss-clip", "-1"}, "--loss-clip"},
		{[]string{"--algo", "tailoring", "--objective", "median"}, "--objective"},
		{[]string{"--algo", "tailoring", "--variant", "ols", "--warm-start"}, "--warm-start"},
	} {
		_, _, err := runTailoringArgs(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want %q", tc.args, err, tc.want)
		}
	}
}

// TestTailoringSweepResumes kills a ρ = 1,2 comparison after ρ = 1 (its
// log keeps ρ = 1's row and a torn line; report.json, sweep.csv and
// ratio.png are not yet written) and checks that the rerun skips ρ = 1
// and prints and writes exactly what an uninterrupted run does, and that
// a rerun with other settings is refused.
func TestTailoringSweepResumes(t *testing.T) {
	for _, trainStats := range []bool{false, true} {
		t.Run(fmt.Sprintf("report-train-stats=%v", trainStats), func(t *testing.T) { testTailoringSweepResumes(t, trainStats) })
	}
}

// testTailoringSweepResumes is TestTailoringSweepResumes without or with
// --report-train-stats (whose exact statistics the log then keeps).
func testTailoringSweepResumes(t *testing.T, trainStats bool) {
	args := func(dir string, extra ...string) []string {
		a := append([]string{"--algo", "tailoring", "--rho", "1,2", "--trials", "2", "--seed", "5", "--out", dir}, smallSynthetic...)
		if trainStats {
			a = append(a, "--report-train-stats")
		}
		return append(a, extra...)
	}
	// report.json without its wall-clock seconds.
	report := func(dir string) string {
		raw, err := os.ReadFile(filepath.Join(dir, "report.json"))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		delete(m, "seconds")
		out, _ := json.Marshal(m)
		return string(out)
	}
	read := func(path string) string {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(raw)
	}
	whole := t.TempDir()
	wantOut, _, err := runTailoringArgs(t, args(whole)...)
	if err != nil {
		t.Fatal(err)
	}
	logged := read(filepath.Join(whole, tailoring.RhoLogName))
	lines := strings.SplitAfter(logged, "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[1], "1,") || !strings.HasPrefix(lines[2], "2,") {
		t.Fatalf("%s after ρ = 1,2:\n%s", tailoring.RhoLogName, logged)
	}

	if got := strings.Contains(logged, `""Train"":[`); got != trainStats { // CSV-quoted JSON
		t.Errorf("%s holds the exact training-split statistics: %v, want %v (as --report-train-stats):\n%s",
			tailoring.RhoLogName, got, trainStats, logged)
	}

	resumed := t.TempDir()
	if _, _, err := runTailoringArgs(t, args(resumed)...); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"report.json", "sweep.csv", "ratio.png"} {
		os.Remove(filepath.Join(resumed, f))
	}
	// The state of a kill during ρ = 2's append: ρ = 1's row and a torn line.
	killed := lines[0] + lines[1] + lines[2][:len(lines[2])/2]
	if err := os.WriteFile(filepath.Join(resumed, tailoring.RhoLogName), []byte(killed), 0o644); err != nil {
		t.Fatal(err)
	}
	gotOut, _, err := runTailoringArgs(t, args(resumed)...)
	if err != nil {
		t.Fatal(err)
	}
	if gotOut = strings.ReplaceAll(gotOut, resumed, whole); gotOut != wantOut { // the last line names the directory
		t.Errorf("resumed output differs from the uninterrupted run's:\n%s\nwant:\n%s", gotOut, wantOut)
	}
	if got, want := report(resumed), report(whole); got != want {
		t.Errorf("resumed report.json differs:\n%s\nwant:\n%s", got, want)
	}
	for _, f := range []string{"sweep.csv", "ratio.png", tailoring.RhoLogName} {
		if got, want := read(filepath.Join(resumed, f)), read(filepath.Join(whole, f)); got != want {
			t.Errorf("resumed %s differs from the uninterrupted run's", f)
		}
	}

	// A finished comparison rerun, from its flags or from its report.json,
	// runs nothing and says the same.
	for _, rerun := range [][]string{args(resumed), {"--config", filepath.Join(whole, "report.json"), "--out", resumed}} {
		if out, _, err := runTailoringArgs(t, rerun...); err != nil || strings.ReplaceAll(out, resumed, whole) != wantOut {
			t.Errorf("rerun %v of a finished comparison (err %v):\n%s", rerun, err, out)
		}
	}

	// A skipped ρ is read from the log, not run again: a doctored row
	// (its CSV cell is JSON with doubled quotes) shows in the output.
	doctored := strings.Replace(lines[1], `""Trials"":2`, `""Trials"":7`, -1)
	if doctored == lines[1] {
		t.Fatalf("ρ = 1's row has no Trials 2 (CSV-quoted JSON): %s", lines[1])
	}
	os.WriteFile(filepath.Join(resumed, tailoring.RhoLogName), []byte(lines[0]+doctored), 0o644)
	if out, _, err := runTailoringArgs(t, args(resumed)...); err != nil || !strings.Contains(out, "7 trials") {
		t.Errorf("the rerun did not take ρ = 1 from the log (err %v):\n%s", err, out)
	}

	for _, changed := range [][]string{{"--ridge", "0.5"}, {"--seed", "6"}} {
		_, _, err := runTailoringArgs(t, args(resumed, changed...)...)
		if err == nil || !strings.Contains(err.Error(), "other settings") {
			t.Errorf("rerun with %v: err %v, want a refusal naming other settings", changed, err)
		}
	}
}

// TestTailoringRegressionSplit: a regression report's
// test split states no classification number (a consumer read "error": 0,
// "accuracy": 0 as a perfect classifier) and carries each group's MSPE,
// the mean over the trials that extra.tailoring.test reports; the schema
// accepts it and refuses a regression split with classification numbers.
func TestTailoringRegressionSplit(t *testing.T) {
	dir := t.TempDir()
	if _, _, err := runTailoringArgs(t, append([]string{"--algo", "tailoring", "--rho", "2", "--trials", "3", "--seed", "5",
		"--out", dir, "--quiet"}, smallSynthetic...)...); err != nil {
		t.Fatal(err)
	}
	rep := validateReport(t, dir, "tailoring")
	test := rep["test"].(map[string]any)
	for _, key := range []string{"error", "accuracy", "dp_violation", "eo_violation"} {
		if _, ok := test[key]; ok {
			t.Errorf("regression test split states %s: %v", key, test)
		}
	}
	extra := rep["extra"].(map[string]any)["tailoring"].(map[string]any)["test"].(map[string]any)
	want := extra["groups"].([]any)
	groups, _ := test["groups"].([]any)
	if len(groups) != len(want) || len(groups) != 3 {
		t.Fatalf("test.groups %v, want one row per group of %v", test["groups"], want)
	}
	for k, g := range groups {
		g, w := g.(map[string]any), want[k].(map[string]any)
		if g["group"] != w["group"] || g["n"] != w["n"] || g["mspe"] != w["mspe"] || len(g) != 3 {
			t.Errorf("test.groups[%d] = %v, want group, n and mspe of %v", k, g, w)
		}
	}
	if test["mspe"] != extra["mspe"] || test["overall"].(map[string]any)["mspe"] != extra["mspe"] {
		t.Errorf("test mspe %v, overall %v; extra's mean %v", test["mspe"], test["overall"], extra["mspe"])
	}
	for name, mutate := range map[string]func(sp map[string]any){
		"error 0":          func(sp map[string]any) { sp["error"] = 0.0 },
		"group accuracy 0": func(sp map[string]any) { sp["groups"].([]any)[0].(map[string]any)["accuracy"] = 0.0 },
		"neither":          func(sp map[string]any) { delete(sp, "mspe") },
	} {
		raw, _ := json.Marshal(rep)
		var m map[string]any
		json.Unmarshal(raw, &m)
		mutate(m["test"].(map[string]any))
		if err := reportSchema.Validate(m); err == nil {
			t.Errorf("%s: the schema accepts it", name)
		}
	}
}
