package trainer

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/dpops/accounting"
)

// pldReceipt is rdpReceipt's run receipted by the PLD accountant, the
// default.
func pldReceipt(t *testing.T, q, sigma float64, steps int, delta float64) accounting.Receipt {
	t.Helper()
	l, err := accounting.NewLedger(accounting.AccountantPLD, accounting.PLDOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Step(accounting.SubsampledGaussian(q, sigma, 1, "gradients"), steps); err != nil {
		t.Fatal(err)
	}
	r, err := l.Receipt(delta, accounting.RunInfo{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestSweepTotalAccountant checks that a sweep total says which accountant
// its ε comes from and which the runs' receipts used: PLD runs are
// PLD-composed across runs (equal to a PLD accountant charged with the same
// releases afresh, and below the RDP composition of the same runs), mixed
// runs RDP-composed from their mechanisms, and a single run's total is its
// own PLD receipt.
func TestSweepTotalAccountant(t *testing.T) {
	const delta = 1e-5
	p1, p2 := pldReceipt(t, 0.01, 1.1, 1000, delta), pldReceipt(t, 0.02, 0.9, 500, delta)
	r1 := rdpReceipt(t, 0.01, 1.1, 1000, delta)
	rdp12, _ := composedRDP(t, delta, p1, p2)
	var fresh accounting.PLD
	for _, m := range []struct {
		q, sigma float64
		steps    int
	}{{0.01, 1.1, 1000}, {0.02, 0.9, 500}} {
		if err := fresh.Step(accounting.SubsampledGaussian(m.q, m.sigma, 1, "gradients"), m.steps); err != nil {
			t.Fatal(err)
		}
	}
	pld12, err := fresh.Epsilon(delta)
	if err != nil || !(pld12 < rdp12) {
		t.Fatalf("fresh PLD composition %v (%v), RDP's %v: want it smaller", pld12, err, rdp12)
	}
	legacyEps := 0.7
	legacy := accounting.Receipt{Epsilon: &legacyEps, Delta: 3e-6}
	for _, tc := range []struct {
		name                string
		runs                []accounting.Receipt
		method, accountant  string
		runAccountants      []string
		eps                 float64
		noteSays, noteLacks string
	}{
		{"two PLD runs: PLD across runs", []accounting.Receipt{p1, p2}, SweepTotalPLD, "pld", []string{"pld"}, pld12, "", "across runs by RDP"},
		{"one PLD run: its receipt", []accounting.Receipt{p1}, SweepTotalBasic, "pld", []string{"pld"}, *p1.Epsilon, "", "receipts are by"},
		{"PLD and RDP runs", []accounting.Receipt{p1, r1}, SweepTotalRDP, "rdp", []string{"pld", "rdp"}, 0, "receipts are by pld+rdp", ""},
		{"RDP runs say nothing more", []accounting.Receipt{r1, rdpReceipt(t, 0.02, 0.9, 500, delta)}, SweepTotalRDP, "rdp", []string{"rdp"}, 0, "", "receipts are by"},
		{"a legacy row added by basic composition", []accounting.Receipt{p1, p2, legacy}, SweepTotalRDPBasic, "rdp+unknown", []string{"pld", "unknown"}, rdp12 + legacyEps, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSweepPrivacy(SweepTotalOptions{})
			for i, r := range tc.runs {
				s.Add(fmt.Sprint("k", i), r)
			}
			got := s.Total()
			if got.Method != tc.method || got.Accountant != tc.accountant || !slices.Equal(got.RunAccountants, tc.runAccountants) {
				t.Errorf("method %s, accountant %q, runs' %v; want %s, %q, %v", got.Method, got.Accountant, got.RunAccountants,
					tc.method, tc.accountant, tc.runAccountants)
			}
			if tc.eps != 0 && (got.Epsilon == nil || math.Abs(*got.Epsilon-tc.eps) > 1e-12*tc.eps) {
				t.Errorf("total %s, want ε = %v", got, tc.eps)
			}
			if !strings.Contains(got.Note, tc.noteSays) || tc.noteLacks != "" && strings.Contains(got.Note, tc.noteLacks) {
				t.Errorf("note %q: want %q, not %q", got.Note, tc.noteSays, tc.noteLacks)
			}
		})
	}
}
