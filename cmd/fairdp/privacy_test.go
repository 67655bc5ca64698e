package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/dpops/accounting"
	"github.com/fairdp/fairdp/dpops/accounting/accountingtest"
)

func runPrivacyArgs(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err = runPrivacy(args, &out, &errOut)
	return out.String(), errOut.String(), err
}

// TestPrivacyEpsilonAcceptance checks Opacus's test_rdp_accountant vector:
// σ = 1.5, q = 0.04, 2250 steps, δ = 1e-5 → 7.3291 (by RDP, which that
// vector states).
func TestPrivacyEpsilonAcceptance(t *testing.T) {
	out, _, err := runPrivacyArgs(t, "epsilon", "--sigma", "1.5", "--sample-rate", "0.04", "--steps", "2250", "--delta", "1e-5", "--accountant", "rdp")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "ε = 7.3291 at RDP order 3.9") || !strings.Contains(out, "balle2020") {
		t.Errorf("output = %q, want ε = 7.3291 at order 3.9", out)
	}
	out, _, err = runPrivacyArgs(t, "epsilon", "--sigma", "1.5", "--sample-rate", "0.04", "--steps", "2250", "--delta", "1e-5", "--accountant", "rdp", "--classic")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "ε = 8.0738") || !strings.Contains(out, "classic conversion") {
		t.Errorf("--classic output = %q, want ε = 8.0738", out)
	}
}

func TestPrivacyEpsilonJSON(t *testing.T) {
	// TF-Privacy's compute_dp_sgd_privacy test (its orders): ε =
	// 0.7242234026109595 at order 19.
	out, _, err := runPrivacyArgs(t, "epsilon", "--sigma=1.3", "--sample-rate=0.0025", "--steps=6000", "--delta=1e-5", "--accountant=rdp", "--orders=tf", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var got privacyAnswer
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if math.Abs(got.Epsilon-0.7242234026109595)/0.7242234026109595 > 1e-6 || got.Order != 19 {
		t.Errorf("ε = %v at order %v, want 0.7242234026109595 at 19", got.Epsilon, got.Order)
	}
	want := privacyAnswer{Epsilon: got.Epsilon, Order: 19, Sigma: 1.3, SampleRate: 0.0025, Steps: 6000, Delta: 1e-5,
		Accountant: "rdp", Conversion: "balle2020", Orders: "tf", Sampling: "poisson"}
	if got != want {
		t.Errorf("JSON = %+v, want %+v", got, want)
	}
}

// TestPrivacySigma checks Opacus's get_noise_multiplier vectors (σ ≈ 1.416 for
// 2250 steps, σ ≈ 1.3562 for 2000) through the command line.
func TestPrivacySigma(t *testing.T) {
	out, _, err := runPrivacyArgs(t, "sigma", "--epsilon", "8", "--sample-rate", "0.04", "--steps", "2250", "--delta", "1e-5", "--accountant", "rdp", "--tolerance", "0.01", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var got privacyAnswer
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if math.Abs(got.Sigma-1.416) > 5e-5 || got.Epsilon > 8 || got.Epsilon < 7.99 {
		t.Errorf("row 2: σ = %v (ε %v), want 1.416 with ε in [7.99, 8]", got.Sigma, got.Epsilon)
	}
	out, _, err = runPrivacyArgs(t, "sigma", "--epsilon", "8", "--sample-rate", "0.04", "--steps", "2000", "--delta", "1e-5", "--accountant", "rdp")
	if err != nil {
		t.Fatal(err)
	}
	// Exact search: σ* ≈ 1.356134217, printed rounded up to 6 digits.
	if !strings.HasPrefix(out, "σ = 1.35614 gives ε = 7.9999 ≤ 8") {
		t.Errorf("row 3 output = %q", out)
	}
}

func TestPrivacyErrors(t *testing.T) {
	base := []string{"--sample-rate", "0.04", "--steps", "2250", "--delta", "1e-5"}
	with := func(sub string, extra ...string) []string {
		return append(append([]string{sub}, base...), extra...)
	}
	cases := []struct {
		name string
		args []string
		msg  string
	}{
		{"no subcommand", nil, "missing subcommand"},
		{"unknown subcommand", []string{"delta"}, `unknown subcommand "delta"`},
		{"missing sigma", with("epsilon"), "missing --sigma"},
		{"missing delta", []string{"epsilon", "--sigma", "1", "--sample-rate", "0.1", "--steps", "10"}, "missing --delta"},
		{"missing epsilon", with("sigma"), "missing --epsilon"},
		{"sigma zero", with("epsilon", "--sigma", "0"), "--sigma must be a positive number"},
		{"sigma not a number", with("epsilon", "--sigma", "big"), "invalid value"},
		{"q too large", []string{"epsilon", "--sigma", "1", "--sample-rate", "1.5", "--steps", "10", "--delta", "1e-5"}, "--sample-rate must be in (0,1]"},
		{"steps zero", []string{"epsilon", "--sigma", "1", "--sample-rate", "0.5", "--steps", "0", "--delta", "1e-5"}, "--steps must be ≥ 1"},
		{"delta one", []string{"epsilon", "--sigma", "1", "--sample-rate", "0.5", "--steps", "3", "--delta", "1"}, "--delta must be in (0,1)"},
		{"bad orders", with("epsilon", "--sigma", "1", "--accountant", "rdp", "--orders", "mine"), "--orders must be opacus or tf"},
		{"rdp flag with the default", with("epsilon", "--sigma", "1", "--classic"), "the default is pld: add --accountant rdp"},
		{"epsilon negative", with("sigma", "--epsilon", "-1"), "--epsilon must be a positive number"},
		{"bad tolerance", with("sigma", "--epsilon", "1", "--accountant", "rdp", "--tolerance", "-0.1"), "--tolerance must be ≥ 0"},
		{"unreachable", with("sigma", "--epsilon", "0.01", "--accountant", "rdp", "--classic"), "unreachable"},
		{"stray argument", with("epsilon", "--sigma", "1", "extra"), "unexpected argument"},
	}
	for _, c := range cases {
		_, stderr, err := runPrivacyArgs(t, c.args...)
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		if !strings.Contains(err.Error()+stderr, c.msg) {
			t.Errorf("%s: error %q (stderr %q), want it to mention %q", c.name, err, stderr, c.msg)
		}
	}
}

// TestPrivacyDefaultPLD checks that both subcommands answer with the PLD
// accountant when --accountant is not given, as training calibrates: the
// same answer as --accountant pld, which is the accounting API's value.
func TestPrivacyDefaultPLD(t *testing.T) {
	row := []string{"--sample-rate", "0.04", "--steps", "2250", "--delta", "1e-5", "--json"}
	for _, sub := range [][]string{{"epsilon", "--sigma", "1.5"}, {"sigma", "--epsilon", "8"}} {
		def, _, err := runPrivacyArgs(t, append(slices.Clone(sub), row...)...)
		if err != nil {
			t.Fatal(err)
		}
		pld, _, err := runPrivacyArgs(t, append(append(slices.Clone(sub), row...), "--accountant", "pld")...)
		if err != nil {
			t.Fatal(err)
		}
		var got privacyAnswer
		if err := json.Unmarshal([]byte(def), &got); err != nil {
			t.Fatal(err)
		}
		m := accounting.SubsampledGaussian(0.04, got.Sigma, 0, "")
		m.Steps = 2250
		want, err := accounting.PLDEpsilon([]accounting.Mechanism{m}, 1e-5, accounting.PLDOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if def != pld || got.Accountant != "pld" || got.Epsilon != want {
			t.Errorf("%s by default: %s\nwith --accountant pld: %s\nwant accountant pld, ε = %v", sub[0], def, pld, want)
		}
	}
}

func TestPrivacyHelp(t *testing.T) {
	out, _, err := runPrivacyArgs(t, "help")
	if err != nil || !strings.Contains(out, "fairdp privacy epsilon --sigma S") {
		t.Errorf("help: err %v, output %q", err, out)
	}
	for _, sub := range []string{"epsilon", "sigma"} {
		_, stderr, err := runPrivacyArgs(t, sub, "-h")
		if !errors.Is(err, flag.ErrHelp) {
			t.Errorf("%s -h: err = %v, want flag.ErrHelp", sub, err)
		}
		if !strings.Contains(stderr, "-sample-rate") || !strings.Contains(stderr, "-delta") {
			t.Errorf("%s -h: usage %q lacks the flags", sub, stderr)
		}
	}
}

func TestRoundUp(t *testing.T) {
	cases := []struct{ x, want float64 }{
		{1.356134217203362, 1.35614}, {1.4157871431234526, 1.41579}, {2, 2}, {0.000123456789, 0.000123457}, {142520.10921, 142521},
	}
	for _, c := range cases {
		if got := roundUp(c.x, 6); got != c.want || got < c.x {
			t.Errorf("roundUp(%v, 6) = %v, want %v", c.x, got, c.want)
		}
	}
}

// TestPrivacyPLD runs both subcommands with --accountant pld on the
// issue-32 MNIST row (σ = 1, q = 256/60000, 14,040 steps, δ = 1e-5: PLD ε
// 2.82020 by dp_accounting, RDP 3.07607).
func TestPrivacyPLD(t *testing.T) {
	row := []string{"--sample-rate", "0.004266666666666667", "--steps", "14040", "--delta", "1e-5", "--accountant", "pld"}
	out, stderr, err := runPrivacyArgs(t, append([]string{"epsilon", "--sigma", "1"}, row...)...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "ε = 2.8202 by PLD, add-remove, interval 0.0001") || stderr != "" {
		t.Errorf("output %q (stderr %q), want ε = 2.8202 by PLD", out, stderr)
	}
	out, _, err = runPrivacyArgs(t, append([]string{"epsilon", "--sigma", "1", "--json"}, row...)...)
	if err != nil {
		t.Fatal(err)
	}
	var got privacyAnswer
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	want := privacyAnswer{Epsilon: got.Epsilon, Sigma: 1, SampleRate: 256.0 / 60000, Steps: 14040, Delta: 1e-5,
		Accountant: "pld", Relation: "add-remove", Interval: 1e-4, Sampling: "poisson"}
	if got != want || math.Abs(got.Epsilon-2.82020) > 1e-4 || strings.Contains(out, `"order"`) {
		t.Errorf("JSON = %s, want %+v with ε 2.82020 and no RDP order", out, want)
	}

	// The same target asked of PLD needs less noise than of RDP.
	target := []string{"sigma", "--epsilon", "2.8202"}
	out, _, err = runPrivacyArgs(t, append(target, row...)...)
	if err != nil {
		t.Fatal(err)
	}
	// σ* = 1.0000004 (the row's ε was rounded down), printed rounded up.
	if !strings.HasPrefix(out, "σ = 1.00001 gives ε = 2.8201 ≤ 2.8202 by PLD") {
		t.Errorf("sigma output %q, want σ = 1.00001", out)
	}
	rdpOut, _, err := runPrivacyArgs(t, append(append(target, row[:6]...), "--accountant", "rdp")...)
	if err != nil || !strings.Contains(rdpOut, "at RDP order") || !strings.HasPrefix(rdpOut, "σ = 1.0") || strings.HasPrefix(rdpOut, "σ = 1.00001") {
		t.Errorf("rdp sigma output %q (err %v), want a larger σ at an RDP order", rdpOut, err)
	}

	// Replace-one is tighter than add/remove at the same σ.
	out, _, err = runPrivacyArgs(t, "epsilon", "--sigma", "2.454", "--sample-rate", "0.007548", "--steps", "2640",
		"--delta", "8.69e-10", "--accountant", "pld", "--relation", "replace-one", "--json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if got.Relation != "replace-one" || !(got.Epsilon < 0.92767) || got.Epsilon < 0.86 {
		t.Errorf("replace-one: %+v, want ε in [0.86, 0.92767)", got)
	}
}

// TestPrivacyScopeSensitive: --scope sensitive charges T plain Gaussian
// steps (q = 1), as DP-FERMI's ledger does under that scope, whatever the
// sampling rate: ε at σ equals the exact ε of one Gaussian with μ = √T/σ
// (Balle and Wang 2018, Theorem 8) up to PLD's discretisation, and
// --sample-rate is refused with it rather than silently ignored.
func TestPrivacyScopeSensitive(t *testing.T) {
	const sigma, steps, delta = 300.0, 2640, 8.69e-10
	out, _, err := runPrivacyArgs(t, "epsilon", "--sigma", "300", "--scope", "sensitive", "--steps", "2640",
		"--delta", "8.69e-10", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var got privacyAnswer
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	hi := accountingtest.GaussianEpsilon(math.Sqrt(steps)/sigma, delta)
	if got.Scope != "sensitive" || got.SampleRate != 1 || got.Epsilon < hi || got.Epsilon > hi*1.003 {
		t.Errorf("scope sensitive: %+v, want q = 1 and ε in [%v, +0.3 %%] (exact Gaussian)", got, hi)
	}
	_, _, err = runPrivacyArgs(t, "epsilon", "--sigma", "300", "--scope", "sensitive", "--sample-rate", "0.01",
		"--steps", "2640", "--delta", "8.69e-10")
	if err == nil || !strings.Contains(err.Error(), "--sample-rate does not apply to --scope sensitive") {
		t.Errorf("--sample-rate with --scope sensitive: %v", err)
	}
}

// TestPrivacyPLDFallback: where PLD cannot bound the run (here δ below its
// 1e-12 floor) the command says so on stderr and in the JSON, and answers
// with RDP; it never switches silently.
func TestPrivacyPLDFallback(t *testing.T) {
	args := []string{"--sample-rate", "0.04", "--steps", "2250", "--delta", "1e-13", "--accountant", "pld"}
	out, stderr, err := runPrivacyArgs(t, append([]string{"epsilon", "--sigma", "1.5", "--json"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	var got privacyAnswer
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if got.Accountant != "rdp" || !strings.Contains(got.Fallback, "1e-12") || !strings.Contains(stderr, "falling back to RDP") {
		t.Errorf("fallback: %+v, stderr %q", got, stderr)
	}
	out, stderr, err = runPrivacyArgs(t, append([]string{"sigma", "--epsilon", "8"}, args...)...)
	if err != nil || !strings.Contains(out, "at RDP order") || strings.Count(stderr, "falling back to RDP") != 1 {
		t.Errorf("sigma fallback: out %q, stderr %q, err %v", out, stderr, err)
	}
}

func TestPrivacyPLDErrors(t *testing.T) {
	base := []string{"epsilon", "--sigma", "1", "--sample-rate", "0.04", "--steps", "10", "--delta", "1e-5"}
	for _, c := range []struct {
		extra []string
		msg   string
	}{
		{[]string{"--accountant", "prv"}, "--accountant must be rdp or pld"},
		{[]string{"--accountant", "pld", "--classic"}, "--classic applies to --accountant rdp only"},
		{[]string{"--accountant", "pld", "--orders", "tf"}, "--orders applies to --accountant rdp only"},
		{[]string{"--accountant", "rdp", "--relation", "replace-one"}, "--relation applies to --accountant pld only"},
		{[]string{"--accountant", "pld", "--relation", "swap"}, "--relation must be add-remove or replace-one"},
	} {
		_, _, err := runPrivacyArgs(t, append(slices.Clone(base), c.extra...)...)
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%v: err = %v, want %q", c.extra, err, c.msg)
		}
	}
	_, _, err := runPrivacyArgs(t, "sigma", "--epsilon", "1", "--sample-rate", "0.04", "--steps", "10", "--delta", "1e-5",
		"--accountant", "pld", "--tolerance", "0.01")
	if err == nil || !strings.Contains(err.Error(), "--tolerance applies to --accountant rdp only") {
		t.Errorf("--tolerance with pld: err = %v", err)
	}
}

// TestPrivacyShuffle: --sampling shuffle answers the shuffled bound, one
// Gaussian per epoch (row 1's 2250 steps, 25 to an epoch: 90 Gaussians
// with σ = 1.5, by RDP min_α 90α/(2σ²) + Balle et al. 2020's terms,
// written out here), and sigma calibrates against it; a shuffled query
// without --steps-per-epoch, or that flag without shuffle, is refused.
func TestPrivacyShuffle(t *testing.T) {
	out, _, err := runPrivacyArgs(t, "epsilon", "--sigma", "1.5", "--sample-rate", "0.04", "--steps", "2250", "--delta", "1e-5",
		"--accountant", "rdp", "--sampling", "shuffle", "--steps-per-epoch", "25", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var got privacyAnswer
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	want := math.Inf(1)
	for _, a := range accounting.OpacusOrders() {
		if a > 1.01 {
			want = math.Min(want, 90*a/(2*1.5*1.5)+math.Log((a-1)/a)-(math.Log(1e-5)+math.Log(a))/(a-1))
		}
	}
	if math.Abs(got.Epsilon-want) > 1e-9*want || got.Sampling != "shuffle" || got.Epochs != 90 {
		t.Errorf("shuffled answer %+v, want ε = %v over 90 epochs", got, want)
	}
	out, _, err = runPrivacyArgs(t, "sigma", "--epsilon", "8", "--sample-rate", "0.04", "--steps", "2250", "--delta", "1e-5",
		"--sampling", "shuffle", "--steps-per-epoch", "25", "--json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	again, _, err := runPrivacyArgs(t, "epsilon", "--sigma", fmtFloat(got.Sigma), "--sample-rate", "0.04", "--steps", "2250", "--delta", "1e-5",
		"--sampling", "shuffle", "--steps-per-epoch", "25")
	if err != nil || got.Epsilon > 8 || got.Epsilon < 7.99 || !strings.Contains(again, "90 epochs") {
		t.Errorf("calibrated %+v; ε at that σ: %q (err %v)", got, again, err)
	}
	for _, args := range [][]string{
		{"--sampling", "shuffle"}, {"--steps-per-epoch", "25"}, {"--sampling", "uniform"},
	} {
		base := []string{"epsilon", "--sigma", "1", "--sample-rate", "0.04", "--steps", "10", "--delta", "1e-5"}
		if _, _, err := runPrivacyArgs(t, append(base, args...)...); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}

func fmtFloat(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
