package accounting

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
)

func decode(t *testing.T, r Receipt) map[string]any {
	t.Helper()
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func row1Accountant(t *testing.T) *RDP {
	t.Helper()
	var a RDP
	if err := a.Step(SubsampledGaussian(0.04, 1.5, 1, "gradients"), 2250); err != nil {
		t.Fatal(err)
	}
	return &a
}

// TestRDPReceiptJSON: the receipt of Opacus's test_rdp_accountant vector
// (σ = 1.5, q = 0.04, 2250 steps) carries the fields
// DESIGN's privacy model asks for, with the right values.
func TestRDPReceiptJSON(t *testing.T) {
	r, err := row1Accountant(t).Receipt(1e-5, RunInfo{})
	if err != nil {
		t.Fatal(err)
	}
	m := decode(t, r)
	if eps := m["epsilon"].(float64); relErr(eps, 7.32911117143) > 1e-6 {
		t.Errorf("epsilon = %v", eps)
	}
	if ec := m["epsilon_classic"].(float64); !(ec > 7.33 && ec < 9) {
		t.Errorf("epsilon_classic = %v", ec)
	}
	want := map[string]any{
		"delta": 1e-5, "accountant": "rdp", "conversion": "balle2020", "scope": "all",
		"sampling": "poisson", "rdp_valid": true, "seeded": false,
	}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s = %v, want %v", k, m[k], v)
		}
	}
	if _, ok := m["order"].(float64); !ok {
		t.Errorf("order missing: %v", m)
	}
	for _, absent := range []string{"seed", "note", "rho"} {
		if _, ok := m[absent]; ok {
			t.Errorf("%s should be absent: %v", absent, m[absent])
		}
	}
	mech := m["mechanisms"].([]any)[0].(map[string]any)
	wantMech := map[string]any{"kind": "subsampled-gaussian", "q": 0.04, "sigma": 1.5, "sensitivity": 1.0,
		"steps": 2250.0, "protects": "gradients"}
	if !reflect.DeepEqual(mech, wantMech) {
		t.Errorf("mechanism = %v, want %v", mech, wantMech)
	}
}

func TestReceiptShuffleAndSeed(t *testing.T) {
	seed := uint64(42)
	r, err := row1Accountant(t).Receipt(1e-5, RunInfo{Scope: ScopeSensitive, Sampling: SamplingShuffle, Seed: &seed, StepsPerEpoch: 25})
	if err != nil {
		t.Fatal(err)
	}
	m := decode(t, r)
	if m["rdp_valid"] != true || m["sampling"] != "shuffle" || m["scope"] != "sensitive" {
		t.Errorf("rdp_valid %v sampling %v scope %v", m["rdp_valid"], m["sampling"], m["scope"])
	}
	sh, _ := m["shuffle"].(map[string]any)
	if sh["epochs"] != 90.0 || sh["adjacency"] != AdjacencyZeroOut || sh["poisson_equivalent_epsilon"] == nil {
		t.Errorf("shuffle = %v", m["shuffle"])
	}
	if note, _ := m["note"].(string); !strings.Contains(note, "at most one batch per epoch") || !strings.Contains(note, "NOT a guarantee") {
		t.Errorf("note = %q, want the shuffled bound's statement", note)
	}
	if _, err := row1Accountant(t).Receipt(1e-5, RunInfo{Sampling: SamplingShuffle}); err == nil {
		t.Error("a shuffled receipt without the steps per epoch was issued")
	}
	if m["seeded"] != true || m["seed"] != 42.0 {
		t.Errorf("seeded %v seed %v", m["seeded"], m["seed"])
	}
	seed = 7 // the receipt keeps its own copy
	if *r.Seed != 42 {
		t.Errorf("receipt seed aliases the caller's: %v", *r.Seed)
	}
	if _, err := row1Accountant(t).Receipt(1e-5, RunInfo{Sampling: "uniform"}); err == nil {
		t.Error("unknown sampling accepted")
	}
	if _, err := row1Accountant(t).Receipt(1e-5, RunInfo{Scope: "some"}); err == nil {
		t.Error("unknown scope accepted")
	}
	if _, err := row1Accountant(t).Receipt(0, RunInfo{}); err == nil {
		t.Error("delta 0 accepted")
	}
}

func TestNotPrivateReceipts(t *testing.T) {
	data, err := json.Marshal(NotPrivate())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"epsilon":null`) {
		t.Errorf("NotPrivate JSON = %s, want epsilon null", data)
	}
	if NotPrivate().Private() {
		t.Error("NotPrivate().Private() = true")
	}
	// σ = 0: the RDP accountant reports ε = ∞ as null, with a note.
	var a RDP
	_ = a.Step(SubsampledGaussian(0.01, 0, 1, "gradients"), 10)
	r, err := a.Receipt(1e-5, RunInfo{})
	if err != nil {
		t.Fatal(err)
	}
	m := decode(t, r)
	if m["epsilon"] != nil || r.Private() {
		t.Errorf("σ = 0: epsilon = %v, want null", m["epsilon"])
	}
	if _, ok := m["order"]; ok {
		t.Error("σ = 0: no order should be reported")
	}
	if !strings.Contains(r.Note, "not differentially private") {
		t.Errorf("note = %q", r.Note)
	}
	if !strings.HasPrefix(r.String(), "none (ε = ∞") {
		t.Errorf("String() = %q", r.String())
	}
	if text := receiptText(t, NotPrivate()); text != "privacy: none (ε = ∞: not differentially private)\n  note: not private: no noise was added\n" {
		t.Errorf("NotPrivate text = %q", text)
	}
}

func TestZCDPAndPureReceipts(t *testing.T) {
	var z ZCDP
	_ = z.Spend(1.0/64, "stage 1")
	_ = z.SpendGaussian(1, 4, "stage 2") // ρ = 1/32
	r, err := z.Receipt(1e-3, RunInfo{})
	if err != nil {
		t.Fatal(err)
	}
	m := decode(t, r)
	if m["accountant"] != "zcdp" || m["conversion"] != "optimal" || relErr(m["rho"].(float64), 3.0/64) > 1e-15 {
		t.Errorf("zcdp receipt = %v", m)
	}
	wantEps, _ := ZCDPToEpsilon(3.0/64, 1e-3)
	wantBS, _ := ZCDPToEpsilonBunSteinke(3.0/64, 1e-3)
	if m["epsilon"] != wantEps || m["epsilon_classic"] != wantBS {
		t.Errorf("epsilon %v classic %v, want %v %v", m["epsilon"], m["epsilon_classic"], wantEps, wantBS)
	}
	mechs := m["mechanisms"].([]any)
	if g := mechs[1].(map[string]any); g["kind"] != "gaussian" || g["sigma"] != 4.0 || g["rho"] != 1.0/32 {
		t.Errorf("gaussian mechanism = %v", g)
	}
	if text := receiptText(t, r); !strings.Contains(text, "bun-steinke conversion") || !strings.Contains(text, "zCDP: ρ = 0.04688") {
		t.Errorf("text = %q", text)
	}

	var p Pure
	for range 100 {
		_ = p.Spend(0.1, "round")
	}
	basic, err := p.Receipt(0, RunInfo{})
	if err != nil {
		t.Fatal(err)
	}
	if *basic.Epsilon != p.Epsilon() || basic.Delta != 0 || basic.Conversion != ConversionBasic {
		t.Errorf("basic receipt = %+v", basic)
	}
	adv, err := p.Receipt(1e-5, RunInfo{})
	if err != nil {
		t.Fatal(err)
	}
	if relErr(*adv.Epsilon, 5.8502350929445575) > 1e-12 || adv.Delta != 1e-5 || adv.Conversion != ConversionAdvanced {
		t.Errorf("advanced receipt = %+v", adv)
	}
	if _, err := p.Receipt(2, RunInfo{}); err == nil {
		t.Error("delta' = 2 accepted")
	}
}

// TestReceiptRoundTrip: a receipt read back from JSON (a checkpoint) is
// identical to the one written.
func TestReceiptRoundTrip(t *testing.T) {
	seed := uint64(3)
	var a RDP
	_ = a.Step(SubsampledGaussian(1.0/214, 0.8, 1, "gradients"), 12840)
	_ = a.Step(SubsampledGaussian(1.0/214, 8, 0, "group counts"), 12840)
	r, err := a.Receipt(1e-6, RunInfo{Sampling: SamplingShuffle, Seed: &seed, StepsPerEpoch: 214})
	if err != nil {
		t.Fatal(err)
	}
	var z ZCDP
	_ = z.SpendGaussian(2, 3, "XᵀY")
	rz, _ := z.Receipt(1e-6, RunInfo{})
	var p Pure
	_ = p.SpendLaplace(0.02, 0.04, "cells")
	rp, _ := p.Receipt(0, RunInfo{Scope: ScopeSensitive})
	for _, want := range []Receipt{r, rz, rp, NotPrivate()} {
		data, err := json.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		var got Receipt
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("round trip changed the receipt:\n got %+v\nwant %+v\njson %s", got, want, data)
		}
	}
	if _, err := json.Marshal(Mechanism{Kind: "mystery"}); err == nil {
		t.Error("a mechanism of unknown kind was written")
	}
}

func TestReceiptText(t *testing.T) {
	seed := uint64(9)
	r, err := row1Accountant(t).Receipt(1e-5, RunInfo{Seed: &seed})
	if err != nil {
		t.Fatal(err)
	}
	text := receiptText(t, r)
	if first := strings.SplitN(text, "\n", 2)[0]; first != "privacy: "+r.String() {
		t.Errorf("first line %q is not the String() headline %q", first, r.String())
	}
	for _, want := range []string{
		"(ε = 7.329, δ = 1e-05)-DP", "rdp accountant", "balle2020 conversion", "order ",
		"classic conversion: ε = ", "subsampled-gaussian q=0.04 σ=1.5 sensitivity=1 ×2250 (gradients)",
		"scope: all; sampling: poisson; noise seeded with 9",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	if math.IsNaN(*r.Order) {
		t.Error("order NaN")
	}
	// A shuffled run's ε is now a proven bound: no caveat on its line,
	// the Poisson figure below it, marked as no guarantee. A receipt
	// written before (rdp_valid false) keeps the caveat.
	shuffled, _ := row1Accountant(t).Receipt(1e-5, RunInfo{Sampling: SamplingShuffle, StepsPerEpoch: 25})
	if strings.Contains(shuffled.String(), "NOT A GUARANTEE") ||
		!strings.Contains(receiptText(t, shuffled), "Poisson sampling at the same rate would give ε = 7.329 (NOT a guarantee") {
		t.Errorf("shuffled receipt:\n%s", receiptText(t, shuffled))
	}
	old, invalid := shuffled, false
	old.RDPValid = &invalid
	if !strings.Contains(old.String(), "NOT A GUARANTEE") {
		t.Errorf("old shuffle headline = %q, want the caveat", old.String())
	}
	// A seeded run says it is not secure on the guarantee's line;
	// a crypto-seeded one does not.
	if first := strings.SplitN(text, "\n", 2)[0]; !strings.Contains(first, "(ε = 7.329, δ = 1e-05)-DP") ||
		!strings.Contains(first, "NOT secure (seeded)") {
		t.Errorf("seeded guarantee line %q lacks (ε, δ) and NOT secure (seeded) together", first)
	}
	if strings.Contains(shuffled.String(), "seeded") {
		t.Errorf("unseeded headline %q claims to be seeded", shuffled.String())
	}
}

func receiptText(t *testing.T, r Receipt) string {
	t.Helper()
	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
