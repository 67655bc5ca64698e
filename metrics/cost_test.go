package metrics

import (
	"encoding/json"
	"math"
	"testing"
)

// TestCostOfPrivacyTable1 uses Table 1 of the DPSGD-F paper (Xu, Du and Wu 2021)
// with its "cost of privacy" rule: the SGD row is the baseline and the
// private accuracies are SGD + the tabulated differences.
func TestCostOfPrivacyTable1(t *testing.T) {
	tests := []struct {
		name      string
		groups    []string
		sgd, diff []float64
		maxGap    float64
		equal     bool
	}{
		{"MNIST DPSGD", []string{"class 2", "class 8"}, []float64{.9903, .9292}, []float64{-.0707, -.6807}, .6100, false},
		{"MNIST Naive", []string{"class 2", "class 8"}, []float64{.9903, .9292}, []float64{-.1512, -.1510}, .0002, true},
		{"MNIST DPSGD-F", []string{"class 2", "class 8"}, []float64{.9903, .9292}, []float64{-.0281, -.0432}, .0151, true},
		{"Adult DPSGD", []string{"M", "F"}, []float64{.7610, .9117}, []float64{-.0740, -.0281}, .0459, true},
		{"Dutch DPSGD", []string{"M", "F"}, []float64{.8013, .7744}, []float64{-.1534, -.0466}, .1068, false},
		{"Dutch DPSGD-F", []string{"M", "F"}, []float64{.8013, .7744}, []float64{-.0160, -.0099}, .0061, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var private, baseline []GroupMetrics
			for i, g := range tt.groups {
				baseline = append(baseline, GroupMetrics{Group: g, N: 100, Accuracy: tt.sgd[i]})
				private = append(private, GroupMetrics{Group: g, N: 100, Accuracy: tt.sgd[i] + tt.diff[i]})
			}
			rep := CostOfPrivacy(private, baseline, EqualCostTau)
			if math.Abs(rep.MaxGap-tt.maxGap) > 1e-12 || rep.Equal != tt.equal || rep.Tau != EqualCostTau {
				t.Errorf("max gap %.6f equal %v tau %g, want %.6f %v %g", rep.MaxGap, rep.Equal, rep.Tau, tt.maxGap, tt.equal, EqualCostTau)
			}
			for i, g := range rep.Groups {
				if g.Group != tt.groups[i] || math.Abs(g.Delta-tt.diff[i]) > 1e-12 {
					t.Errorf("group %d: %+v, want %s with delta %g", i, g, tt.groups[i], tt.diff[i])
				}
			}
		})
	}
}

func TestCostOfPrivacyMatching(t *testing.T) {
	private := []GroupMetrics{
		{Group: "b", N: 10, Accuracy: 0.5},
		{Group: "a", N: 20, Accuracy: 0.875},
		{Group: "empty", N: 0},
	}
	baseline := []GroupMetrics{
		{Group: "a", N: 20, Accuracy: 0.875},
		{Group: "empty", N: 0, Accuracy: 0},
		{Group: "b", N: 10, Accuracy: 0.625},
		{Group: "only in baseline", N: 3, Accuracy: 1},
	}
	rep := CostOfPrivacy(private, baseline, 0.125)
	got, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	// Gap between b (-0.125) and a (0); the empty group is listed but not
	// counted. 0.125 ≤ τ = 0.125 is equal cost (the boundary is included).
	want := `{"tau":0.125,"max_gap":0.125,"equal":true,"groups":[` +
		`{"group":"b","n":10,"accuracy_private":0.5,"accuracy_baseline":0.625,"delta":-0.125},` +
		`{"group":"a","n":20,"accuracy_private":0.875,"accuracy_baseline":0.875,"delta":0},` +
		`{"group":"empty","n":0,"accuracy_private":0,"accuracy_baseline":0,"delta":0}]}`
	if string(got) != want {
		t.Errorf("JSON\n got %s\nwant %s", got, want)
	}

	msg := panicMessage(func() { CostOfPrivacy(private, baseline[:1], EqualCostTau) })
	if msg != `metrics: CostOfPrivacy: group "b" has no baseline row` {
		t.Errorf("missing baseline: panic %q", msg)
	}
}

// TestCostOfPrivacyBoundary: a gap of exactly τ on paper counts as equal even
// when rounding puts the computed gap an ulp above τ.
func TestCostOfPrivacyBoundary(t *testing.T) {
	// 0.95 - 1 = -0.050000000000000044 in float64.
	private := []GroupMetrics{{Group: "x", N: 1, Accuracy: 0.9}, {Group: "y", N: 1, Accuracy: 0.95}}
	baseline := []GroupMetrics{{Group: "x", N: 1, Accuracy: 0.9}, {Group: "y", N: 1, Accuracy: 1}}
	if gap := CostOfPrivacy(private, baseline, 1).MaxGap; gap <= 0.05 {
		t.Fatalf("test premise: gap %.17g should round above 0.05", gap)
	}
	if rep := CostOfPrivacy(private, baseline, 0.05); !rep.Equal {
		t.Errorf("gap %.17g with τ = 0.05: Equal = false, want true", rep.MaxGap)
	}
	if rep := CostOfPrivacy(private, baseline, 0.0499); rep.Equal {
		t.Errorf("gap %.17g with τ = 0.0499: Equal = true, want false", rep.MaxGap)
	}
}
