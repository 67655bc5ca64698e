package trainer

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/dpops/accounting"
)

// rdpReceipt is the receipt of a DPSGD-like run: the RDP accountant after
// steps of one subsampled Gaussian.
func rdpReceipt(t *testing.T, q, sigma float64, steps int, delta float64) accounting.Receipt {
	t.Helper()
	var a accounting.RDP
	if err := a.Step(accounting.SubsampledGaussian(q, sigma, 1, "gradients"), steps); err != nil {
		t.Fatal(err)
	}
	r, err := a.Receipt(delta, accounting.RunInfo{})
	if err != nil {
		t.Fatal(err)
	}
	r.AddNotCovered(accounting.NotCoveredTestEvaluation, "exact test metrics")
	return r
}

func zcdpReceipt(t *testing.T, std, delta float64) accounting.Receipt {
	t.Helper()
	z, err := accounting.NewZCDP(math.Inf(1))
	if err != nil {
		t.Fatal(err)
	}
	if err := z.SpendGaussian(1, std, "scores"); err != nil {
		t.Fatal(err)
	}
	r, err := z.Receipt(delta, accounting.RunInfo{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func laplaceReceipt(t *testing.T, scales ...float64) accounting.Receipt {
	t.Helper()
	var p accounting.Pure
	for _, b := range scales {
		if err := p.SpendLaplace(1, b, "counts"); err != nil {
			t.Fatal(err)
		}
	}
	r, err := p.Receipt(0, accounting.RunInfo{Scope: accounting.ScopeSensitive})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// composedRDP is the expected RDP total, by the accountant itself: every
// subsampled-Gaussian mechanism of the receipts stepped into one RDP
// accountant, converted at delta.
func composedRDP(t *testing.T, delta float64, recs ...accounting.Receipt) (eps, order float64) {
	t.Helper()
	var a accounting.RDP
	for _, r := range recs {
		for _, m := range r.Mechanisms {
			if err := a.Step(m, m.Steps); err != nil {
				t.Fatal(err)
			}
		}
	}
	return a.Epsilon(delta)
}

func basicSum(recs ...accounting.Receipt) (eps, delta float64) {
	for _, r := range recs {
		eps += *r.Epsilon
		delta += r.Delta
	}
	return eps, delta
}

func TestSweepPrivacyTotal(t *testing.T) {
	const delta = 1e-5
	run1 := rdpReceipt(t, 0.01, 1.1, 1000, delta)
	run2 := rdpReceipt(t, 0.02, 0.9, 500, delta)
	run3 := rdpReceipt(t, 0.01, 1.1, 1000, 2*delta) // same mechanism, other δ
	// A receipt whose ε is larger than its mechanisms give: something was
	// charged that the mechanism list does not show.
	padded := rdpReceipt(t, 0.01, 1.1, 1000, delta)
	more := *padded.Epsilon * 1.5
	padded.Epsilon = &more
	legacyEps := 0.7
	legacy := accounting.Receipt{Epsilon: &legacyEps, Delta: 3e-6}
	z1, z2 := zcdpReceipt(t, 4, delta), zcdpReceipt(t, 6, delta)
	lap1, lap2 := laplaceReceipt(t, 2, 4), laplaceReceipt(t, 1)
	notPrivate := accounting.NotPrivate()

	rdp12, order12 := composedRDP(t, delta, run1, run2)
	rdp13, order13 := composedRDP(t, 2*delta, run1, run3)
	b12, d12 := basicSum(run1, run2)
	rhoSum := *z1.Rho + *z2.Rho
	orders := accounting.OpacusOrders()
	zCurve := make([]float64, len(orders))
	for i, a := range orders {
		zCurve[i] = a * rhoSum
	}
	zEps, zOrder, err := accounting.EpsilonFromRDP(orders, zCurve, delta)
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name       string
		runs       []accounting.Receipt
		opts       SweepTotalOptions
		method     string
		eps        float64 // NaN: no finite total
		delta      float64
		order      float64 // 0: none
		rdpRuns    int
		noteSays   string
		basicCheck bool // the RDP total must beat the basic sum
	}{
		{"two DPSGD runs: RDP at their δ", []accounting.Receipt{run1, run2}, SweepTotalOptions{},
			SweepTotalRDP, rdp12, delta, order12, 2, "", true},
		{"runs with different δ: RDP at the largest", []accounting.Receipt{run1, run3}, SweepTotalOptions{},
			SweepTotalRDP, rdp13, 2 * delta, order13, 2, "", true},
		{"one run: its own receipt (basic)", []accounting.Receipt{run1}, SweepTotalOptions{},
			SweepTotalBasic, *run1.Epsilon, delta, 0, 0, "", false},
		{"a row without mechanisms adds by basic composition", []accounting.Receipt{run1, run2, legacy}, SweepTotalOptions{},
			SweepTotalRDPBasic, rdp12 + legacyEps, delta + 3e-6, order12, 2, "added by basic composition: k2 (the receipt lists no mechanisms)", true},
		{"a receipt larger than its mechanisms is not RDP-composed", []accounting.Receipt{run1, run2, padded}, SweepTotalOptions{},
			SweepTotalRDPBasic, rdp12 + more, 2 * delta, order12, 2, "less than the", true},
		{"zCDP runs: ρ summed as RDP αρ", []accounting.Receipt{z1, z2}, SweepTotalOptions{},
			SweepTotalRDP, zEps, delta, zOrder, 2, "", true},
		{"pure runs at δ = 0: the sum of ε", []accounting.Receipt{lap1, lap2}, SweepTotalOptions{},
			SweepTotalBasic, *lap1.Epsilon + *lap2.Epsilon, 0, 0, 0, "", false},
		{"basic only when asked", []accounting.Receipt{run1, run2}, SweepTotalOptions{BasicOnly: "federated"},
			SweepTotalBasic, b12, d12, 0, 0, "basic composition only: federated", false},
		{"a non-private run makes the total infinite", []accounting.Receipt{run1, notPrivate}, SweepTotalOptions{},
			SweepTotalNone, math.NaN(), 0, 0, 0, "1 of 2 runs state no finite ε", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newSweepPrivacy(tc.opts)
			for i, r := range tc.runs {
				p.Add(fmt.Sprint("k", i), r)
			}
			got := p.Total()
			if got.Method != tc.method || got.Runs != len(tc.runs) || got.RDPRuns != tc.rdpRuns {
				t.Fatalf("method %s, %d runs, %d by RDP; want %s, %d, %d (%+v)", got.Method, got.Runs, got.RDPRuns,
					tc.method, len(tc.runs), tc.rdpRuns, got)
			}
			if math.IsNaN(tc.eps) {
				if got.Epsilon != nil {
					t.Fatalf("ε = %v, want ∞", *got.Epsilon)
				}
			} else if got.Epsilon == nil || math.Abs(*got.Epsilon-tc.eps) > 1e-12*tc.eps || math.Abs(got.Delta-tc.delta) > 1e-18 {
				t.Fatalf("total %s, want ε = %v, δ = %v", got, tc.eps, tc.delta)
			}
			if (got.Order == nil) != (tc.order == 0) || (got.Order != nil && *got.Order != tc.order) {
				t.Errorf("order %v, want %v", got.Order, tc.order)
			}
			if !strings.Contains(got.Note, tc.noteSays) {
				t.Errorf("note %q does not say %q", got.Note, tc.noteSays)
			}
			if got.Epsilon != nil {
				for _, r := range tc.runs {
					if *got.Epsilon < *r.Epsilon && got.Delta <= r.Delta {
						t.Errorf("total %s is smaller than a run's ε %v at δ %v", got, *r.Epsilon, r.Delta)
					}
				}
				be, bd := basicSum(tc.runs...)
				if *got.BasicEpsilon != be || got.BasicDelta != bd {
					t.Errorf("basic composition %v, %v; want %v, %v", *got.BasicEpsilon, got.BasicDelta, be, bd)
				}
				if tc.basicCheck && !(*got.Epsilon < be && got.Delta <= bd) {
					t.Errorf("RDP total %s does not beat the basic sum (%v, %v)", got, be, bd)
				}
			}
			items := map[string]bool{}
			for _, n := range got.NotCovered {
				items[n.Item] = true
			}
			if !items[accounting.NotCoveredHyperparams] {
				t.Errorf("not_covered lacks %s: %v", accounting.NotCoveredHyperparams, got.NotCovered)
			}
			if tc.runs[0].NotCovered != nil && !items[accounting.NotCoveredTestEvaluation] {
				t.Errorf("not_covered lacks the runs' %s: %v", accounting.NotCoveredTestEvaluation, got.NotCovered)
			}
		})
	}
	// The zCDP total on the order grid is never below the optimal
	// conversion of the summed ρ (the receipts' own conversion).
	if opt, _ := accounting.ZCDPToEpsilon(rhoSum, delta); zEps < opt {
		t.Errorf("zCDP total %v below the optimal conversion %v", zEps, opt)
	}
	// A run added twice (a resumed sweep) counts once; its sensitive scope
	// is the total's.
	p := newSweepPrivacy(SweepTotalOptions{})
	for _, r := range []accounting.Receipt{run1, run2, run2, lap1} {
		p.Add(fmt.Sprint("k", *r.Epsilon), r)
	}
	if got := p.Total(); got.Runs != 3 || got.Scope != accounting.ScopeSensitive {
		t.Errorf("run added twice: %d runs, scope %q; want 3, sensitive", got.Runs, got.Scope)
	}
	// The runs' caveats reach the total, each once, the first few in full.
	p = newSweepPrivacy(SweepTotalOptions{})
	for i := range 6 {
		r := rdpReceipt(t, 0.01, 1.1, 1000, 1e-5)
		r.AddNote(fmt.Sprint("caveat ", i/2)) // three distinct notes, each twice
		if i == 5 {
			r.Note = "caveat 3"
		}
		p.Add(fmt.Sprint("n", i), r)
	}
	note := p.Total().Note
	for _, want := range []string{"a run's note: caveat 0; a run's note: caveat 1; a run's note: caveat 2", "1 more distinct run notes"} {
		if !strings.Contains(note, want) {
			t.Errorf("note %q lacks %q", note, want)
		}
	}
	if strings.Count(note, "caveat 0") != 1 {
		t.Errorf("a repeated run note is repeated in the total: %q", note)
	}
}

// TestSweepReceipts: receipts survive reopening, a torn last line is cut,
// a repeated key keeps the last receipt, and publishedPrivacy counts
// exactly the runs with rows, each once; a row without a receipt makes the
// total unknown.
func TestSweepReceipts(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "receipts.jsonl")
	s, err := openSweepReceipts(path)
	if err != nil {
		t.Fatal(err)
	}
	r1, r2 := rdpReceipt(t, 0.01, 1.1, 1000, 1e-5), rdpReceipt(t, 0.02, 0.9, 500, 1e-5)
	orphan := rdpReceipt(t, 0.5, 0.5, 100, 1e-5) // its run was redone: replaced below
	for _, kr := range []struct {
		k string
		r accounting.Receipt
	}{{"a", r1}, {"b", orphan}, {"b", r2}, {"c", orphan}} {
		if err := s.Append(kr.k, kr.r); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"key":"d","rece`) // torn by a crash
	f.Close()
	if s, err = openSweepReceipts(path); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, ok := s.Receipt("d"); ok {
		t.Error("the torn line was read")
	}
	if raw, _ := os.ReadFile(path); strings.Contains(string(raw), `"d"`) {
		t.Error("the torn line is still in the file")
	}
	if got, _ := s.Receipt("b"); *got.Epsilon != *r2.Epsilon {
		t.Errorf("key b has ε %v, want the last receipt's %v", *got.Epsilon, *r2.Epsilon)
	}

	log, err := OpenSweepLog(filepath.Join(dir, "sweep.csv"), []string{"k", "eps"}, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	for _, row := range [][]string{{"a", "x"}, {"b", "x"}} { // c has no row: not published
		if err := log.Append(row); err != nil {
			t.Fatal(err)
		}
	}
	got := publishedPrivacy(log, s, SweepTotalOptions{}).Total()
	rdp, _ := composedRDP(t, 1e-5, r1, r2)
	if got.Runs != 2 || got.Method != SweepTotalRDP || math.Abs(*got.Epsilon-rdp) > 1e-12 {
		t.Errorf("published total %s, want RDP of a, b (%v) over 2 runs", got, rdp)
	}
	if err := log.Append([]string{"old", "0.5"}); err != nil {
		t.Fatal(err)
	}
	if got := publishedPrivacy(log, s, SweepTotalOptions{}).Total(); got.Runs != 3 || got.Epsilon != nil {
		t.Errorf("a row with no receipt counted as %s, want 3 runs and no finite total", got)
	}

	// writeSweepTotal keeps the settings and adds the total.
	settings := SweepSettings{Version: "v", Seeded: true, BaseSeed: 3}
	if err := CheckSweepSettings(dir, Defaults(), &settings); err != nil {
		t.Fatal(err)
	}
	if err := writeSweepTotal(dir, got); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "sweep.json"))
	var back SweepSettings
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if back.PrivacyTotal == nil || *back.PrivacyTotal.Epsilon != *got.Epsilon || back.BaseSeed != 3 {
		t.Errorf("sweep.json after writeSweepTotal: %s", raw)
	}
	if err := CheckSweepSettings(dir, Defaults(), &SweepSettings{Version: "v", Seeded: true, BaseSeed: 3}); err != nil {
		t.Errorf("a sweep with a total no longer resumes: %v", err)
	}
}
