package metrics

import (
	"encoding/json"
	"math"
	"testing"
)

// row is a GroupMetrics with literal rates; nan stands for an undefined rate.
type row struct {
	group                   string
	n                       int
	acc, tpr, fpr, selected float64
}

var nan = math.NaN()

func checkRow(t *testing.T, got GroupMetrics, want row) {
	t.Helper()
	if got.Group != want.group || got.N != want.n {
		t.Errorf("group %q n %d, want %q n %d", got.Group, got.N, want.group, want.n)
	}
	near := func(name string, g, w float64) {
		if math.Abs(g-w) > 1e-15 {
			t.Errorf("%s %s = %.17g, want %.17g", want.group, name, g, w)
		}
	}
	optionalNear := func(name string, g *float64, w float64) {
		switch {
		case math.IsNaN(w) && g != nil:
			t.Errorf("%s %s = %g, want undefined (nil)", want.group, name, *g)
		case !math.IsNaN(w) && g == nil:
			t.Errorf("%s %s undefined, want %g", want.group, name, w)
		case g != nil:
			near(name, *g, w)
		}
	}
	near("accuracy", got.Accuracy, want.acc)
	optionalNear("TPR", got.TPR, want.tpr)
	optionalNear("FPR", got.FPR, want.fpr)
	near("selection rate", got.SelectionRate, want.selected)
}

// TestPerGroupHand checks per-group rates on the hand-worked records of
// fairness_test.go (the DP and EO violations are built from them).
func TestPerGroupHand(t *testing.T) {
	tests := []struct {
		name    string
		triples [][3]int
		classes int
		names   []string
		want    []row
		overall row
	}{
		{
			name: "binary", triples: binaryTriples, classes: 2, names: []string{"A", "B", "C"},
			want: []row{
				{"A", 5, 3.0 / 5, 1.0 / 2, 1.0 / 3, 2.0 / 5},
				{"B", 4, 3.0 / 4, 2.0 / 3, 0, 2.0 / 4},
				{"C", 0, 0, nan, nan, 0},
			},
			overall: row{OverallName, 9, 6.0 / 9, 3.0 / 5, 1.0 / 4, 4.0 / 9},
		},
		{
			// Macro one-vs-rest: g0 TPR mean(1/2, 1, 1), FPR mean(0, 1/3, 0);
			// g1 TPR mean(1, 1/2, 2/3), FPR mean(1/5, 1/4, 0); g2 has no y=2
			// record so its TPR averages classes 0 and 1 only.
			name: "3 classes x 3 groups", triples: multiTriples, classes: 3,
			want: []row{
				{"0", 4, 3.0 / 4, 5.0 / 6, 1.0 / 9, 2.0 / 4},
				{"1", 6, 4.0 / 6, 13.0 / 18, 0.15, 2.0 / 6},
				{"2", 2, 1, 1, 0, 1.0 / 2},
			},
			// Overall: class recalls 3/4, 3/4, 3/4; P[ŷ=c|y≠c] = 1/8, 2/8, 0/8.
			overall: row{OverallName, 12, 9.0 / 12, 3.0 / 4, 1.0 / 8, 5.0 / 12},
		},
		{
			name: "only negatives", triples: [][3]int{{0, 0, 0}, {0, 0, 1}}, classes: 2,
			want:    []row{{"0", 2, 1.0 / 2, nan, 1.0 / 2, 1.0 / 2}},
			overall: row{OverallName, 2, 1.0 / 2, nan, 1.0 / 2, 1.0 / 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pred, y, s := records(tt.triples)
			got := PerGroup(pred, y, s, tt.classes, tt.names)
			if len(got) != len(tt.want) {
				t.Fatalf("%d groups, want %d", len(got), len(tt.want))
			}
			for i := range got {
				checkRow(t, got[i], tt.want[i])
			}
			checkRow(t, Overall(pred, y, tt.classes), tt.overall)
		})
	}
}

func TestErrorRate(t *testing.T) {
	tests := []struct {
		g    GroupMetrics
		want float64
	}{
		{GroupMetrics{N: 4, Accuracy: 0.75}, 0.25},
		{GroupMetrics{N: 0}, 0},
	}
	for _, tt := range tests {
		if got := tt.g.ErrorRate(); got != tt.want {
			t.Errorf("%+v.ErrorRate() = %g, want %g", tt.g, got, tt.want)
		}
	}
}

// TestGroupMetricsJSON pins the results-contract field names and the null
// encoding of undefined rates.
func TestGroupMetricsJSON(t *testing.T) {
	pred, y, s := records([][3]int{{0, 0, 1}, {0, 0, 0}, {1, 1, 1}, {1, 0, 1}})
	got, err := json.Marshal(PerGroup(pred, y, s, 2, []string{"F", "M"}))
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"group":"F","n":2,"accuracy":0.5,"tpr":null,"fpr":0.5,"selection_rate":0.5},` +
		`{"group":"M","n":2,"accuracy":0.5,"tpr":1,"fpr":1,"selection_rate":1}]`
	if string(got) != want {
		t.Errorf("JSON\n got %s\nwant %s", got, want)
	}
	var back []GroupMetrics
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatal(err)
	}
	if back[0].TPR != nil || back[1].TPR == nil || *back[1].TPR != 1 {
		t.Errorf("round trip lost the TPR encoding: %+v", back)
	}
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name            string
		pred, y, s      []int
		classes, groups int
		want            string
	}{
		{"ok", []int{0, 1}, []int{1, 1}, []int{0, 2}, 2, 3, ""},
		{"ok without labels", []int{0, 1}, nil, []int{0, 0}, 2, 1, ""},
		{"one class", []int{0}, []int{0}, []int{0}, 1, 1, "metrics: classes = 1, want at least 2"},
		{"no groups", nil, nil, nil, 2, 0, "metrics: groups = 0, want at least 1"},
		{"short groups", []int{0, 1}, []int{0, 1}, []int{0}, 2, 1, "metrics: 1 groups for 2 predictions, want one group per prediction"},
		{"short labels", []int{0, 1}, []int{0}, []int{0, 0}, 2, 1, "metrics: 1 labels for 2 predictions, want one label per prediction"},
		{"negative prediction", []int{0, -1}, []int{0, 1}, []int{0, 0}, 2, 1, "metrics: pred[1] = -1, want 0..1"},
		{"label too large", []int{0, 1}, []int{0, 3}, []int{0, 0}, 3, 1, "metrics: y[1] = 3, want 0..2"},
		{"group too large", []int{0, 1}, []int{0, 1}, []int{2, 0}, 2, 2, "metrics: s[0] = 2, want 0..1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Check(tt.pred, tt.y, tt.s, tt.classes, tt.groups)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("Check = %q, want %q", got, tt.want)
			}
		})
	}
}
