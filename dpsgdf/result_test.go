package dpsgdf_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/fairdp/fairdp/dpsgdf"
	"github.com/fairdp/fairdp/trainer"
)

// TestResultReadsReportFiles: DPSGD-F's and Naïve's fields stay at the top
// of report.json's "extra" (a Result written and read back is the same),
// and a report written before Result existed reads into one.
func TestResultReadsReportFiles(t *testing.T) {
	old := `{"algorithm": "dpsgdf", "extra": {"policy": "dpsgdf", "sigma": 1.25, "clip": 1, "count_sigma": 12.5,
		"clip_bounds": {"Female": [0.5, 0.75], "Male": [1, 1]}}}`
	var rep trainer.Report
	if err := json.Unmarshal([]byte(old), &rep); err != nil {
		t.Fatal(err)
	}
	cs := 12.5
	want := &dpsgdf.Result{Policy: dpsgdf.Adaptive, Sigma: 1.25, Clip: 1, CountSigma: &cs,
		ClipBounds: map[string][]float64{"Female": {0.5, 0.75}, "Male": {1, 1}}}
	got := dpsgdf.ResultOf(&rep)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("old report reads as %+v, want %+v", got, want)
	}
	run := &trainer.Report{}
	run.SetExtra("dpsgdf", want)
	raw, err := json.Marshal(run.Extra)
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil || len(top) != 5 || top["clip_bounds"] == nil || top["policy"] == nil {
		t.Errorf("extra written as %s (%v), want the five keys at its top", raw, err)
	}
	if dpsgdf.ResultOf(&trainer.Report{Extra: trainer.Extras{"fermi": json.RawMessage(`{"lambda": 1}`)}}) != nil {
		t.Error("another family's extra read as DPSGD-F's")
	}
}
