package trainer

import (
	"fmt"
	"strings"
	"testing"

	"fairdp/loaders"
	"fairdp/metrics"
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

func TestSkippedList(t *testing.T) {
	var s []loaders.UTKSkip
	if skippedList(s) != "" {
		t.Error("nothing skipped, yet a list")
	}
	for i := range 12 {
		s = append(s, loaders.UTKSkip{Name: fmt.Sprintf("f%d.jpg", i), Reason: "no race field"})
	}
	got := skippedList(s)
	if !strings.HasPrefix(got, ": f0.jpg (no race field); f1.jpg") || !strings.HasSuffix(got, "f9.jpg (no race field); and 2 more") {
		t.Errorf("list %q", got)
	}
}
