package metrics

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// TestEvaluateJSON pins the `train`/`test` object of report.json on the
// hand-worked binary records (violations: DP 0.1,
// EO 1/3).
func TestEvaluateJSON(t *testing.T) {
	pred, y, s := records(binaryTriples)
	got, err := json.Marshal(Evaluate(pred, y, s, 2, []string{"A", "B"}))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"n":9,"error":0.33333333333333337,"accuracy":0.6666666666666666,` +
		`"dp_violation":0.09999999999999998,"eo_violation":0.33333333333333337,"groups":[` +
		`{"group":"A","n":5,"accuracy":0.6,"tpr":0.5,"fpr":0.3333333333333333,"selection_rate":0.4},` +
		`{"group":"B","n":4,"accuracy":0.75,"tpr":0.6666666666666666,"fpr":0,"selection_rate":0.5}],` +
		`"overall":{"group":"overall","n":9,"accuracy":0.6666666666666666,"tpr":0.6,"fpr":0.25,"selection_rate":0.4444444444444444}}`
	if string(got) != want {
		t.Errorf("JSON\n got %s\nwant %s", got, want)
	}
	var back Split
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatal(err)
	}
	if back.N != 9 || len(back.Groups) != 2 || back.Overall == nil || back.MSPE != nil {
		t.Errorf("round trip: %+v", back)
	}
}

// TestEvaluateAgrees: Evaluate is the composition of PerGroup, Overall and
// the two violations, on random multi-class data with unnamed groups.
func TestEvaluateAgrees(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for trial := range 50 {
		classes, groups := 2+rng.IntN(4), 1+rng.IntN(4)
		pred, y, s := randomRecords(rng, 1+rng.IntN(100), classes, groups)
		sp := Evaluate(pred, y, s, classes, nil)
		k := 0
		for _, r := range s {
			k = max(k, r+1)
		}
		overall := Overall(pred, y, classes)
		if sp.N != len(pred) || sp.Accuracy != overall.Accuracy || math.Abs(sp.Error+sp.Accuracy-1) > 1e-15 ||
			sp.DPViolation != DemographicParity(pred, s, classes, k) || sp.EOViolation != EqualizedOdds(pred, y, s, classes, k) {
			t.Fatalf("trial %d: split %+v disagrees with the separate functions", trial, sp)
		}
		per := PerGroup(pred, y, s, classes, nil)
		if len(sp.Groups) != k || len(per) != k {
			t.Fatalf("trial %d: %d groups, want %d", trial, len(sp.Groups), k)
		}
		a, _ := json.Marshal(sp.Groups)
		b, _ := json.Marshal(per)
		c, _ := json.Marshal(sp.Overall)
		d, _ := json.Marshal(overall)
		if !bytes.Equal(a, b) || !bytes.Equal(c, d) {
			t.Fatalf("trial %d: groups %s / %s, overall %s / %s", trial, a, b, c, d)
		}
	}
}

func TestEvaluateEmpty(t *testing.T) {
	sp := Evaluate(nil, nil, nil, 2, []string{"F", "M"})
	if sp.N != 0 || sp.Error != 0 || sp.Accuracy != 0 || sp.DPViolation != 0 || sp.EOViolation != 0 || len(sp.Groups) != 2 {
		t.Errorf("empty split = %+v", sp)
	}
	if _, err := json.Marshal(sp); err != nil {
		t.Errorf("empty split does not encode: %v", err)
	}
}

func TestWriteTable(t *testing.T) {
	pred, y, s := records(append(binaryTriples, [3]int{2, 0, 0}))
	var buf bytes.Buffer
	if err := WriteTable(&buf, "test split", Evaluate(pred, y, s, 2, []string{"Male", "Female", "Other"})); err != nil {
		t.Fatal(err)
	}
	want := `test split
group    n   accuracy  TPR     FPR     selection rate
Male     5   0.6000    0.5000  0.3333  0.4000
Female   4   0.7500    0.6667  0.0000  0.5000
Other    1   1.0000    -       0.0000  0.0000
overall  10  0.7000    0.6000  0.2000  0.4000
error 0.3000  DP violation 0.5000  EO violation 0.3333
`
	if buf.String() != want {
		t.Errorf("table\n%s\nwant\n%s", buf.String(), want)
	}
}

func TestWriteTableRegression(t *testing.T) {
	var buf bytes.Buffer
	sp := EvaluateRegression([]float64{1, 2, 4}, []float64{1, 2, 2}, []int{0, 0, 2}, []string{"big", "none", "small"})
	if err := WriteTable(&buf, "MSPE", sp); err != nil {
		t.Fatal(err)
	}
	want := `MSPE
group    n  MSPE
big      2  0.0000
none     0  -
small    1  4.0000
overall  3  1.3333
`
	if buf.String() != want {
		t.Errorf("table\n%s\nwant\n%s", buf.String(), want)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriteTableError(t *testing.T) {
	if err := WriteTable(failingWriter{}, "x", Split{}); err == nil || err.Error() != "disk full" {
		t.Errorf("WriteTable error = %v, want disk full", err)
	}
}
