package accounting

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestDefaultDelta(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want float64
	}{{750, 1.0 / (750 * 750)}, {33916, 1 / (33916.0 * 33916)}, {1, 1}} {
		if got := DefaultDelta(tc.n); math.Abs(got-tc.want) > 1e-15*tc.want {
			t.Errorf("DefaultDelta(%d) = %v, want 1/n² = %v", tc.n, got, tc.want)
		}
	}
	if !math.IsNaN(DefaultDelta(0)) {
		t.Error("DefaultDelta(0) is a number")
	}
}

func TestCheckDelta(t *testing.T) {
	for _, tc := range []struct {
		delta float64
		n     int
		allow bool
		large bool // want a LargeDeltaError
		ok    bool
	}{
		{1e-6, 750, false, false, true},
		{0.5, 750, false, true, false},
		{1.0 / 750, 750, false, true, false}, // δ = 1/n is not below 1/n
		{0.5, 750, true, false, true},
		{0, 750, true, false, false},
		{1, 750, true, false, false},
		{math.NaN(), 750, true, false, false},
	} {
		err := CheckDelta(tc.delta, tc.n, tc.allow)
		var large *LargeDeltaError
		if (err == nil) != tc.ok || errors.As(err, &large) != tc.large {
			t.Errorf("CheckDelta(%v, %d, %v) = %v", tc.delta, tc.n, tc.allow, err)
		}
	}
}

// TestLargeDeltaNote: a receipt whose δ is not below 1/n of the records it
// covers says the guarantee is weak; one with a small δ does not.
func TestLargeDeltaNote(t *testing.T) {
	var a RDP
	if err := a.Step(SubsampledGaussian(0.1, 1, 1, "g"), 10); err != nil {
		t.Fatal(err)
	}
	weak, err := a.Receipt(0.05, RunInfo{Records: 50})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(weak.Note, "not below 1/n") || !strings.Contains(weak.Note, "weak") {
		t.Errorf("note %q", weak.Note)
	}
	fine, _ := a.Receipt(1e-4, RunInfo{Records: 50})
	if strings.Contains(fine.Note, "1/n") {
		t.Errorf("note %q for δ < 1/n", fine.Note)
	}
}
