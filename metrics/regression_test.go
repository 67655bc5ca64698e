package metrics

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"
)

// TestMSPE checks the per-group MSPE on hand-computed values.
func TestMSPE(t *testing.T) {
	tests := []struct {
		name    string
		pred, y []float64
		want    float64
	}{
		{"exact", []float64{1, 2}, []float64{1, 2}, 0},
		{"errors 1 and 3", []float64{1, -1}, []float64{0, 2}, 5},
		{"one record", []float64{0.5}, []float64{2}, 2.25},
		{"empty", nil, nil, math.NaN()},
	}
	for _, tt := range tests {
		got := MSPE(tt.pred, tt.y)
		if got != tt.want && !(math.IsNaN(got) && math.IsNaN(tt.want)) {
			t.Errorf("%s: MSPE = %g, want %g", tt.name, got, tt.want)
		}
	}
	if msg := panicMessage(func() { MSPE([]float64{1}, nil) }); msg != "metrics: 0 targets for 1 predictions, want one target per prediction" {
		t.Errorf("length mismatch: panic %q", msg)
	}
}

func TestGroupMSPE(t *testing.T) {
	pred := []float64{1, 2, 3, 4, 5}
	y := []float64{0, 2, 5, 4, 2}
	s := []int{0, 0, 2, 2, 2}
	// Group 0: (1 + 0)/2; group 1 empty; group 2: (4 + 0 + 9)/3.
	got := GroupMSPE(pred, y, s, 3)
	if got[0] != 0.5 || !math.IsNaN(got[1]) || got[2] != 13.0/3 {
		t.Errorf("GroupMSPE = %v, want [0.5 NaN 4.333…]", got)
	}
	// The group values are MSPE on each group's records.
	if want := MSPE(pred[2:], y[2:]); got[2] != want {
		t.Errorf("group 2: %g, MSPE of its records %g", got[2], want)
	}
	if msg := panicMessage(func() { GroupMSPE(pred, y, s, 2) }); msg != "metrics: s[2] = 2, want 0..1" {
		t.Errorf("group out of range: panic %q", msg)
	}
	if msg := panicMessage(func() { GroupMSPE(pred, y, s[:4], 3) }); msg != "metrics: 4 groups for 5 predictions, want one group per prediction" {
		t.Errorf("short groups: panic %q", msg)
	}
}

// TestEvaluateRegressionJSON: a perfect group still reports "mspe": 0, an
// empty group reports no mspe, and no classification number appears
// ("error": 0, "accuracy": 0 would read as a perfect classifier).
// Read back, the split is the one written.
func TestEvaluateRegressionJSON(t *testing.T) {
	sp := EvaluateRegression([]float64{1, 2, 4}, []float64{1, 2, 2}, []int{0, 0, 2}, []string{"big", "none", "small"})
	got, err := json.Marshal(sp)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"n":3,"groups":[` +
		`{"group":"big","n":2,"mspe":0},` +
		`{"group":"none","n":0},` +
		`{"group":"small","n":1,"mspe":4}],` +
		`"overall":{"group":"overall","n":3,"mspe":1.3333333333333333},` +
		`"mspe":1.3333333333333333}`
	if string(got) != want {
		t.Errorf("JSON\n got %s\nwant %s", got, want)
	}
	var back Split
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, sp) {
		t.Errorf("read back %+v, want %+v", back, sp)
	}
}
