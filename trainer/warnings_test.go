package trainer

import (
	"strings"
	"testing"

	"github.com/fairdp/fairdp/metrics"
)

func TestWarnings(t *testing.T) {
	labels := []int{0, 0, 0, 1} // majority-class error 0.25
	big := []metrics.GroupMetrics{{Group: "a", N: 40}, {Group: "b", N: 50}}
	for _, tc := range []struct {
		name   string
		test   metrics.Split
		groups []string
		want   []string // substrings, one per expected warning
	}{
		{"fine", metrics.Split{Error: 0.2, Groups: big}, []string{"a", "b"}, nil},
		{"worse than majority", metrics.Split{Error: 0.74, Groups: big}, []string{"a", "b"}, []string{"worse than always predicting"}},
		{"at majority", metrics.Split{Error: 0.255, Groups: big}, []string{"a", "b"}, nil},
		{"one group", metrics.Split{Error: 0.1, Groups: big[:1]}, []string{"a"}, []string{"one group"}},
		{"small group", metrics.Split{Error: 0.1, Groups: []metrics.GroupMetrics{{Group: "a", N: 400}, {Group: "tiny", N: 7}}},
			[]string{"a", "tiny"}, []string{`group "tiny" has 7 test records`}},
	} {
		got := Warnings(tc.test, labels, tc.groups)
		if len(got) != len(tc.want) {
			t.Errorf("%s: warnings %q, want %d", tc.name, got, len(tc.want))
			continue
		}
		for i, w := range tc.want {
			if !strings.Contains(got[i], w) {
				t.Errorf("%s: warning %q lacks %q", tc.name, got[i], w)
			}
		}
	}
}

// TestOneClassWarning: a classifier that predicts one
// class for (almost) every test record has DP and EO violations near 0 by
// construction; a warning says the fairness figures are vacuous. The
// splits are scored from predictions by metrics.Evaluate, so the rates the
// check reads are the report's own.
func TestOneClassWarning(t *testing.T) {
	const n = 200 // two groups of 100: no small-group warning
	labels, groups := make([]int, n), make([]int, n)
	for i := range n {
		labels[i], groups[i] = i%3%2, i%2 // one label in three is 1: majority error 1/3
	}
	// predict returns predictions of class c for all but the first
	// `others` records, which get class other.
	predict := func(c, others, other int) []int {
		p := make([]int, n)
		for i := range p {
			p[i] = c
			if i < others {
				p[i] = other
			}
		}
		return p
	}
	for _, tc := range []struct {
		name    string
		pred    []int
		labels  []int
		classes int
		want    string // "" for no one-class warning
	}{
		{"all class 0", predict(0, 0, 1), labels, 2, "predicts class 0 for 100.0%"},
		{"all class 1", predict(1, 0, 0), labels, 2, "predicts class 1 for 100.0%"},
		{"one in 200 differs", predict(0, 1, 1), labels, 2, "predicts class 0 for 99.5%"},
		{"three in 200 differ", predict(0, 3, 1), labels, 2, ""},
		{"follows the labels", labels, labels, 2, ""},
		// With three classes only P[ŷ = 1] is known: class 1 for everyone
		// is caught, class 0 for most is not claimed (the rest may be 2s).
		{"three classes, all class 1", predict(1, 0, 0), labels, 3, "predicts class 1 for 100.0%"},
		{"three classes, half 0 and half 2", predict(0, n/2, 2), append(labels[:n-1:n-1], 2), 3, ""},
	} {
		sp := metrics.Evaluate(tc.pred, tc.labels, groups, tc.classes, []string{"a", "b"})
		var got []string
		for _, w := range Warnings(sp, tc.labels, []string{"a", "b"}) {
			if strings.Contains(w, "fairness figures are vacuous") {
				got = append(got, w)
			}
		}
		switch {
		case tc.want == "" && len(got) > 0:
			t.Errorf("%s: unexpected one-class warning %q", tc.name, got)
		case tc.want != "" && (len(got) != 1 || !strings.Contains(got[0], tc.want)):
			t.Errorf("%s: warnings %q, want one containing %q", tc.name, got, tc.want)
		}
	}
}
