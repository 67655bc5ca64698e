package linear

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/dpops/accounting"
)

// TestPostProcNotCoveredNamesModelJSON: post-processing writes report.json
// and model.json, never model.ckpt, so its receipt's not_covered must not
// say that model.ckpt holds the split's key and the preprocessing (it did
// before: the text was the checkpointing trainers').
func TestPostProcNotCoveredNamesModelJSON(t *testing.T) {
	for _, base := range []string{"", BaseDPSGD} {
		t.Run("base="+base, func(t *testing.T) { testNotCoveredNamesModelJSON(t, base) })
	}
}

// testNotCoveredNamesModelJSON is TestPostProcNotCoveredNamesModelJSON
// with the given base (a DP-SGD base's own receipt names model.ckpt and
// metrics.jsonl).
func testNotCoveredNamesModelJSON(t *testing.T, base string) {
	cfg := privateBaseConfig()
	editPostproc(&cfg, func(pc *PostprocConfig) {
		pc.Base, pc.BaseEpsilon = base, 0
		if base != "" {
			pc.Bins = 4
		}
	})
	cfg.Out = t.TempDir()
	rep, err := RunPostproc(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var items []string
	for _, nc := range rep.Privacy.NotCovered {
		items = append(items, nc.Item)
		if strings.Contains(nc.Detail, "model.ckpt") || strings.Contains(nc.Detail, "metrics.jsonl") {
			t.Errorf("not_covered %s names a file post-processing does not write: %s", nc.Item, nc.Detail)
		}
		if nc.Item == accounting.NotCoveredPreprocessing && !strings.Contains(nc.Detail, "model.json") {
			t.Errorf("not_covered preprocessing does not name model.json: %s", nc.Detail)
		}
	}
	if !slices.Contains(items, accounting.NotCoveredTestEvaluation) || !slices.Contains(items, accounting.NotCoveredPreprocessing) {
		t.Errorf("not_covered %v lost an item", items)
	}
	for _, f := range []string{"report.json", "model.json"} {
		if _, err := os.Stat(filepath.Join(cfg.Out, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	if _, err := os.Stat(filepath.Join(cfg.Out, "model.ckpt")); err == nil {
		t.Error("post-processing wrote a model.ckpt")
	}
}

// TestFairSweepRowDP: sweep.csv's demographic-parity cells are the report's
// DP violations, after every column of the header earlier versions wrote
// (written out here, not taken from FairSweepOldColumns), which stays a
// prefix so old files resume.
func TestFairSweepRowDP(t *testing.T) {
	old := []string{"algorithm", "epsilon", "gamma", "seed", "failed", "train_error", "train_eo", "test_error",
		"test_eo", "expected_train_error", "expected_train_eo", "expected_test_error", "expected_test_eo", "epsilon_spent", "reason"}
	if !slices.Equal(FairSweepColumns[:len(old)], old) || !slices.ContainsFunc(FairSweepOldColumns, func(o []string) bool { return slices.Equal(o, old) }) {
		t.Fatalf("header %v does not extend the old one %v, or the old one is not listed", FairSweepColumns, old)
	}
	cfg := privateBaseConfig()
	editPostproc(&cfg, func(pc *PostprocConfig) { pc.Base, pc.BaseEpsilon, pc.Fairness = "", 0, "dp" })
	d, err := LoadFairData(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := RunFair(context.Background(), d, cfg)
	if err != nil {
		t.Fatal(err)
	}
	row := FairSweepRow(cfg, rep)
	res := FairExtra(rep)
	want := map[string]string{"test_dp": FormatSweepCell(rep.Test.DPViolation), "expected_test_dp": FormatSweepCell(res.ExpectedTest.DPViolation),
		"train_dp": "", "expected_train_dp": "", "test_eo": FormatSweepCell(rep.Test.EOViolation)}
	if len(row) != len(FairSweepColumns) {
		t.Fatalf("row of %d cells for %d columns", len(row), len(FairSweepColumns))
	}
	for col, v := range want {
		if got := row[slices.Index(FairSweepColumns, col)]; got != v {
			t.Errorf("%s = %q, want %q (a private run's training cells stay empty)", col, got, v)
		}
	}
	if !(res.ExpectedTest.DPViolation > 0) {
		t.Errorf("expected DP violation %v: the test cannot tell the columns apart", res.ExpectedTest.DPViolation)
	}
}

// TestPostProcSlackRuleReceipt: the slack rule and the data-aware γ change
// only the LP, never the receipt of the whole-record pipeline, and the
// report's configuration records them, so --config report.json repeats the
// run.
func TestPostProcSlackRuleReceipt(t *testing.T) {
	cfg := privateBaseConfig()
	editPostproc(&cfg, func(pc *PostprocConfig) { pc.Fairness, pc.Bins = "dp", 4 })
	d, err := LoadFairData(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var receipt0 string
	for _, tc := range []PostprocConfig{{}, {Slack: "none"}, {Slack: "sd", SlackZ: 2}, {Slack: "none", GammaShare: 0.3}} {
		c := cfg
		editPostproc(&c, func(pc *PostprocConfig) { pc.Slack, pc.SlackZ, pc.GammaShare = tc.Slack, tc.SlackZ, tc.GammaShare })
		rep, err := RunFair(context.Background(), d, c)
		if err != nil {
			t.Fatal(err)
		}
		r, _ := json.Marshal(rep.Privacy)
		if receipt0 == "" {
			receipt0 = string(r)
		} else if string(r) != receipt0 {
			t.Errorf("%+v: receipt\n%s\nwant\n%s", tc, r, receipt0)
		}
		got := PostprocConfigOf(rep.Config)
		if got.Slack != tc.Slack || got.SlackZ != tc.SlackZ || got.GammaShare != tc.GammaShare {
			t.Errorf("%+v: report config %+v does not record the rule", tc, got)
		}
		pp := FairExtra(rep).PostProcessing
		if wantRule, _ := ParseSlackRule(tc.Slack); pp.SlackRule != wantRule || (tc.Slack == "none") != (pp.Slack == 0) {
			t.Errorf("%+v: ran rule %q with slack %v", tc, pp.SlackRule, pp.Slack)
		}
	}
}
