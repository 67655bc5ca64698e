package federated

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/dpops/accounting"
	"github.com/fairdp/fairdp/fermi"
	"github.com/fairdp/fairdp/loaders"
	"github.com/fairdp/fairdp/trainer"
)

// request is a well-formed request for round r with θ and W filled with v.
func request(s *Silo[float64], r int, v float64) Request {
	rq := Request{Round: r, Theta: make([]float64, s.info.NumParams), W: make([]float64, s.info.WLen)}
	for i := range rq.Theta {
		rq.Theta[i] = v
	}
	return rq
}

// startFromFile builds silo index on data with cfg, continuing the state in
// path if there is one (as `fairdp silo serve --state path` does).
func startFromFile(t *testing.T, cfg trainer.Config, data *loaders.Dataset, index int, path string) *Silo[float64] {
	t.Helper()
	st, err := LoadSiloState(path)
	if err != nil {
		t.Fatal(err)
	}
	gen := 0
	if st != nil {
		gen = st.Generation + 1
	}
	_, run := dpops.NewRand(cfg.Seed)
	s, err := NewSilo[float64](cfg, data, SiloSource(run, index, gen), SiloOptions{Index: index, State: st, StatePath: path})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// ledgerEpsilon is the ε, computed here from the parts, of one count
// release (noise multiplier countSigma at q = 1) and, for each (q, σ), the
// given number of rounds: the truth a receipt must report. Under PLD (the
// default accountant, which silos keep unless told RDP) it is the PLD
// composition of the same releases built afresh, or the RDP bound where
// that is smaller (a PLD ledger states the smaller of two upper bounds).
func ledgerEpsilon(t *testing.T, kind string, delta, countSigma float64, rounds []accounting.Mechanism) float64 {
	t.Helper()
	rdp := rdpLedgerEpsilon(t, delta, countSigma, rounds)
	if kind == accounting.AccountantRDP {
		return rdp
	}
	mechs := []accounting.Mechanism{{Kind: accounting.KindSubsampledGaussian, SampleRate: 1, NoiseMultiplier: countSigma, Steps: 1}}
	for _, m := range rounds {
		mechs = append(mechs, accounting.Mechanism{Kind: accounting.KindSubsampledGaussian, SampleRate: m.SampleRate, NoiseMultiplier: m.NoiseMultiplier, Steps: m.Steps})
	}
	var comp accounting.PLD
	for _, m := range mechs {
		if err := comp.Step(m, m.Steps); err != nil {
			t.Fatal(err)
		}
	}
	pld, err := comp.Epsilon(delta)
	if err != nil {
		t.Fatal(err)
	}
	return min(pld, rdp)
}

// rdpLedgerEpsilon is ledgerEpsilon by RDP (Opacus's orders).
func rdpLedgerEpsilon(t *testing.T, delta, countSigma float64, rounds []accounting.Mechanism) float64 {
	t.Helper()
	orders := accounting.OpacusOrders()
	rdp := make([]float64, len(orders))
	for i, a := range orders {
		rdp[i] = accounting.SubsampledGaussianRDP(1, countSigma, a)
		for _, m := range rounds {
			rdp[i] += float64(m.Steps) * accounting.SubsampledGaussianRDP(m.SampleRate, m.NoiseMultiplier, a)
		}
	}
	eps, _, err := accounting.EpsilonFromRDP(orders, rdp, delta)
	if err != nil {
		t.Fatal(err)
	}
	return eps
}

// TestRestartWithOtherFlags: a silo that answered every
// round of a 2-epoch plan and is restarted with 4 epochs (so a larger σ
// for the new plan) continues its ledger: the receipt lists both noise
// levels with their rounds, equals the true composition, and rounds that
// would take it past its ε are refused.
func TestRestartWithOtherFlags(t *testing.T) {
	data := synthetic(400, 3)
	path := filepath.Join(t.TempDir(), "silo0.json")
	cfg := testConfig(21)
	first := startFromFile(t, cfg, data, 0, path)
	planned := first.info.Rounds / 2
	for r := 1; r <= planned; r++ {
		if _, err := first.Round(request(first, r, 0.01*float64(r))); err != nil {
			t.Fatalf("round %d: %v", r, err)
		}
	}
	sigma1, countSigma := first.alg.Sigma, first.alg.CountSigma
	if e, plan := first.SpentEpsilon(), must[accounting.Receipt](t)(first.alg.Receipt()); e > cfg.Privacy.Epsilon || plan.Epsilon == nil {
		t.Fatalf("first start spent ε %v of %v", e, cfg.Privacy.Epsilon)
	}

	cfg.Epochs = 4
	second := startFromFile(t, cfg, data, 0, path)
	sigma2 := second.alg.Sigma
	if !(sigma2 > sigma1) {
		t.Fatalf("σ for 4 epochs %v should exceed σ for 2 epochs %v", sigma2, sigma1)
	}
	answered := 0
	var refusal error
	// Under testConfig's --scope sensitive the rounds are plain Gaussians,
	// whose cost adds up linearly (in zCDP): the budget lasts about two
	// epochs of the new plan after the first start's one, so try up to 5.
	for r := planned + 1; r <= 5*planned; r++ {
		if _, err := second.Round(request(second, r, 0.001*float64(r))); err != nil {
			refusal = err
			break
		}
		answered++
	}
	if !errors.Is(refusal, accounting.ErrBudgetExceeded) || answered == 0 {
		t.Fatalf("restarted silo answered %d more rounds, then: %v; want some, then a budget refusal", answered, refusal)
	}
	q := 1.0 // testConfig is --scope sensitive: rounds are plain Gaussians (the sample is not hidden)
	steps := []accounting.Mechanism{{SampleRate: q, NoiseMultiplier: sigma1, Steps: planned}, {SampleRate: q, NoiseMultiplier: sigma2, Steps: answered}}
	want := ledgerEpsilon(t, accounting.DefaultAccountant, first.delta, countSigma, steps)
	if want > cfg.Privacy.Epsilon {
		t.Errorf("the silo answered past its budget: true ε %v > %v", want, cfg.Privacy.Epsilon)
	}
	steps[1].Steps++
	if next := ledgerEpsilon(t, accounting.DefaultAccountant, first.delta, countSigma, steps); next <= cfg.Privacy.Epsilon {
		t.Errorf("round %d was refused although it stays within the budget (ε %v)", planned+answered+1, next)
	}
	r := must[accounting.Receipt](t)(second.FullReceipt())
	if r.Epsilon == nil || math.Abs(*r.Epsilon-want) > 1e-9 {
		t.Errorf("receipt ε %v, true composition %v", r.Epsilon, want)
	}
	var got []string
	for _, m := range r.Mechanisms {
		got = append(got, fmt.Sprintf("q=%.6g σ=%.6g ×%d", m.SampleRate, m.NoiseMultiplier, m.Steps))
	}
	wantLines := []string{fmt.Sprintf("q=1 σ=%.6g ×1", countSigma), fmt.Sprintf("q=%.6g σ=%.6g ×%d", q, sigma1, planned),
		fmt.Sprintf("q=%.6g σ=%.6g ×%d", q, sigma2, answered)}
	if !slices.Equal(got, wantLines) {
		t.Errorf("receipt mechanisms %v, want %v", got, wantLines)
	}
	// The file says the same as the silo.
	st, err := LoadSiloState(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Rounds != planned+answered || len(st.Mechanisms) != 3 || st.Generation != 1 {
		t.Errorf("state file: %d rounds, %d mechanisms, generation %d", st.Rounds, len(st.Mechanisms), st.Generation)
	}
	// A restart cannot raise the budget either.
	cfg.Privacy.Epsilon = 5
	third := startFromFile(t, cfg, data, 0, path)
	if _, err := third.Round(request(third, st.Rounds+1, 0)); !errors.Is(err, accounting.ErrBudgetExceeded) {
		t.Errorf("a restart with --epsilon 5 answered past the first budget: %v", err)
	}
}

// TestRepeatedRestartsReuseCounts: a silo restarted
// several times releases its noisy group counts once, reuses them (the
// same p̂_S every time), and its receipt is the true total.
func TestRepeatedRestartsReuseCounts(t *testing.T) {
	data := synthetic(400, 4)
	path := filepath.Join(t.TempDir(), "silo1.json")
	cfg := testConfig(22)
	var freq []float64
	round := 0
	var q, sigma, countSigma, delta float64
	for gen := range 4 {
		s := startFromFile(t, cfg, data, 1, path)
		if gen == 0 {
			freq = s.alg.Reg.Freq()
			// testConfig is --scope sensitive: rounds are plain Gaussians.
			q, sigma, countSigma, delta = 1, s.alg.Sigma, s.alg.CountSigma, s.delta
		} else if f := s.alg.Reg.Freq(); !slices.Equal(f, freq) {
			t.Fatalf("start %d: group frequencies %v, first start %v: the counts were released again", gen, f, freq)
		}
		for range 5 {
			round++
			if _, err := s.Round(request(s, round, 0.1)); err != nil {
				t.Fatal(err)
			}
		}
		r := must[accounting.Receipt](t)(s.FullReceipt())
		counts := 0
		for _, m := range r.Mechanisms {
			if fermi.IsCountRelease(m) {
				counts += m.Steps
			}
		}
		want := ledgerEpsilon(t, accounting.DefaultAccountant, delta, countSigma, []accounting.Mechanism{{SampleRate: q, NoiseMultiplier: sigma, Steps: round}})
		if counts != 1 || r.Epsilon == nil || math.Abs(*r.Epsilon-want) > 1e-9 {
			t.Errorf("start %d: %d count releases, ε %v; want 1 and %v", gen, counts, r.Epsilon, want)
		}
		if gen > 0 && !strings.Contains(r.Note, fmt.Sprintf("restarted %d times", gen)) {
			t.Errorf("start %d: note %q does not say the silo was restarted", gen, r.Note)
		}
	}
}

// TestLastRoundAnsweredAgainAfterRestart: the answer to the last round is
// part of the state, so a restarted silo returns it again (bit for bit,
// without charging) to a server resuming that round, refuses the same
// round for another θ, and refuses older rounds.
func TestLastRoundAnsweredAgainAfterRestart(t *testing.T) {
	data := synthetic(300, 5)
	path := filepath.Join(t.TempDir(), "silo.json")
	cfg := testConfig(23)
	s := startFromFile(t, cfg, data, 0, path)
	var last Message
	for r := 1; r <= 3; r++ {
		m, err := s.Round(request(s, r, 0.2))
		if err != nil {
			t.Fatal(err)
		}
		last = m
	}
	restarted := startFromFile(t, cfg, data, 0, path)
	before := restarted.SpentEpsilon()
	again, err := restarted.Round(request(restarted, 3, 0.2))
	if err != nil {
		t.Fatal(err)
	}
	if !equalFloats(again.Theta, last.Theta) || !equalFloats(again.W, last.W) || restarted.Spent() != 3 || restarted.SpentEpsilon() != before {
		t.Errorf("round 3 again: same answer %v, spent %d, ε %v → %v", equalFloats(again.Theta, last.Theta), restarted.Spent(), before, restarted.SpentEpsilon())
	}
	if _, err := restarted.Round(request(restarted, 3, 0.3)); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "different θ") {
		t.Errorf("round 3 for another θ: %v", err)
	}
	if _, err := restarted.Round(request(restarted, 2, 0.2)); !errors.Is(err, ErrMalformed) {
		t.Errorf("an older round: %v", err)
	}
}

// TestStateRefusals: a state file that is damaged, for other data, for
// another silo or another privacy setting is refused with a clear error,
// and a state file that cannot be written stops the silo before it
// answers anything.
func TestStateRefusals(t *testing.T) {
	data := synthetic(300, 6)
	dir := t.TempDir()
	path := filepath.Join(dir, "silo.json")
	cfg := testConfig(24)
	s := startFromFile(t, cfg, data, 0, path)
	if _, err := s.Round(request(s, 1, 0)); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for cut := 0; cut < len(good)-1; cut += max(1, len(good)/40) {
		if _, err := DecodeSiloState(good[:cut]); err == nil {
			t.Fatalf("state truncated to %d of %d bytes was accepted", cut, len(good))
		}
	}
	var st SiloState
	if err := json.Unmarshal(good, &st); err != nil {
		t.Fatal(err)
	}
	mutate := func(f func(*SiloState)) []byte {
		c := st
		c.Mechanisms = slices.Clone(st.Mechanisms)
		f(&c)
		b, _ := json.Marshal(c)
		return b
	}
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"version", mutate(func(c *SiloState) { c.Version = 1 }), "version 1"},
		{"rounds", mutate(func(c *SiloState) { c.Rounds = 7 }), "round releases"},
		{"negative budget", mutate(func(c *SiloState) { c.Budget = -1 }), "budget"},
		{"delta", mutate(func(c *SiloState) { c.Delta = 2 }), "delta"},
		{"count", mutate(func(c *SiloState) { c.Counts = []float64{0.5, 3} }), "group count"},
		{"sigma", mutate(func(c *SiloState) { c.Mechanisms[0].NoiseMultiplier = 0 }), "not a valid"},
		{"unknown field", bytes.Replace(good, []byte(`"version"`), []byte(`"versoin"`), 1), "not a valid state file"},
		{"trailing", append(slices.Clone(good), []byte(`{}`)...), "trailing"},
	} {
		if _, err := DecodeSiloState(tc.data); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
	_, run := dpops.NewRand(cfg.Seed)
	load := func() *SiloState {
		st, err := LoadSiloState(path)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	if _, err := NewSilo[float64](cfg, synthetic(300, 7), run, SiloOptions{Index: 0, State: load()}); err == nil || !strings.Contains(err.Error(), "other data") {
		t.Errorf("other data: %v", err)
	}
	if _, err := NewSilo[float64](cfg, data, run, SiloOptions{Index: 1, State: load()}); err == nil || !strings.Contains(err.Error(), "written by silo 0") {
		t.Errorf("other silo: %v", err)
	}
	np := cfg
	np.Privacy.Epsilon = math.Inf(1)
	if _, err := NewSilo[float64](np, data, run, SiloOptions{Index: 0, State: load()}); err == nil || !strings.Contains(err.Error(), "private") {
		t.Errorf("not private now: %v", err)
	}
	if _, err := NewSilo[float64](cfg, data, run, SiloOptions{Index: 0, StatePath: filepath.Join(dir, "missing", "x.json")}); err == nil {
		t.Error("a silo whose state file cannot be written started")
	}
}

// TestRestartRefusesOtherReleaseSettings: a silo that
// answered rounds under one setting and is restarted on the same state
// with another setting that changes what its messages release (the
// un-noised loss sum under scope sensitive, the sensitivity, the group
// counts, the accountant's formula) is refused with an error naming that
// setting, and its state file is left byte for byte as it was. Before
// the fix the state recorded none of them, so the restart continued the
// ledger and its receipt stated the new setting's scope.
func TestRestartRefusesOtherReleaseSettings(t *testing.T) {
	data := synthetic(300, 8)
	base := testConfig(25) // scope sensitive, fairness dp, clip 1, λ 1, accountant, Poisson, logistic
	for _, tc := range []struct {
		field string
		set   func(*trainer.Config)
	}{
		{"Fair.Scope", func(c *trainer.Config) { c.Fair.Scope = accounting.ScopeAll }},
		{"Fair.Fairness", func(c *trainer.Config) { c.Fair.Fairness = "eo" }},
		{"Privacy.Clip", func(c *trainer.Config) { c.Privacy.Clip = 2 * base.Privacy.Clip }},
		{"Fair.Lambda", func(c *trainer.Config) { c.Fair.Lambda = 2 * base.Fair.Lambda }},
		{"Fair.Calibration", func(c *trainer.Config) { c.Fair.Calibration = "paper" }},
		{"Fair.PublicGroupSizes", func(c *trainer.Config) { c.Fair.PublicGroupSizes = true }},
		{"Privacy.Sampling", func(c *trainer.Config) { c.Privacy.Sampling = accounting.SamplingShuffle }},
		{"Model", func(c *trainer.Config) { c.Model, c.Hidden = "mlp", []int{4} }},
		{"Privacy.Delta", func(c *trainer.Config) { c.Privacy.Delta = accounting.DefaultDelta(data.N()) / 10 }},
	} {
		path := filepath.Join(t.TempDir(), "silo.json")
		first := startFromFile(t, base, data, 0, path)
		for r := 1; r <= 2; r++ {
			if _, err := first.Round(request(first, r, 0.01)); err != nil {
				t.Fatalf("%s: round %d: %v", tc.field, r, err)
			}
		}
		before, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		st, err := LoadSiloState(path)
		if err != nil {
			t.Fatal(err)
		}
		cfg := base
		tc.set(&cfg)
		_, run := dpops.NewRand(cfg.Seed)
		_, err = NewSilo[float64](cfg, data, SiloSource(run, 0, st.Generation+1), SiloOptions{Index: 0, State: st, StatePath: path})
		var fields trainer.FieldErrors
		if !errors.As(err, &fields) || len(fields) != 1 || fields[0].Field != tc.field || !strings.Contains(err.Error(), "in the silo's state") {
			t.Errorf("restart with another %s: %v, want a refusal naming %s alone", tc.field, err, tc.field)
		}
		if after, err := os.ReadFile(path); err != nil || !bytes.Equal(before, after) {
			t.Errorf("%s: the refused restart changed the state file (%v)", tc.field, err)
		}
	}
	// The same settings (another ε and epochs only) continue the ledger.
	path := filepath.Join(t.TempDir(), "silo.json")
	first := startFromFile(t, base, data, 0, path)
	if _, err := first.Round(request(first, 1, 0.01)); err != nil {
		t.Fatal(err)
	}
	cfg := base
	cfg.Epochs, cfg.Privacy.Epsilon = 3, 1
	if s := startFromFile(t, cfg, data, 0, path); s.Spent() != 1 || s.State().Release != first.State().Release {
		t.Errorf("restart with the same release settings: %d rounds, settings %+v vs %+v", s.Spent(), s.State().Release, first.State().Release)
	}
}

// answeredStateFile is the state file, as a JSON object, of a silo with
// configuration cfg that answered one round, for tests that edit it.
func answeredStateFile(t *testing.T, cfg trainer.Config) map[string]any {
	t.Helper()
	path := filepath.Join(t.TempDir(), "silo.json")
	s := startFromFile(t, cfg, synthetic(300, 9), 0, path)
	if _, err := s.Round(request(s, 1, 0)); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestOldStateVersionRefused: a version-2 state file (no release settings)
// is refused with a message saying why and what to do, not continued under
// whatever the flags say now.
func TestOldStateVersionRefused(t *testing.T) {
	m := answeredStateFile(t, testConfig(26))
	m["version"] = 2
	delete(m, "release_settings")
	old, _ := json.Marshal(m)
	_, err := DecodeSiloState(old)
	if err == nil || !strings.Contains(err.Error(), "version 2") || !strings.Contains(err.Error(), "did not record the settings") {
		t.Errorf("version-2 state: %v, want a refusal saying it lacks the release settings", err)
	}
	// A current file missing its settings is malformed, not silently zero.
	m["version"] = SiloStateVersion
	noSettings, _ := json.Marshal(m)
	if _, err := DecodeSiloState(noSettings); err == nil || !strings.Contains(err.Error(), "release settings") {
		t.Errorf("state without release settings: %v", err)
	}
}

// TestVersion3StateUnderSensitiveScopeRefused: a version-3 state file
// charged scope-sensitive rounds at the Poisson rate, which understates ε
// (the sample is not hidden under that scope), so it is refused; a
// version-3 file under scope all was charged as now and is read.
func TestVersion3StateUnderSensitiveScopeRefused(t *testing.T) {
	for _, scope := range []string{accounting.ScopeSensitive, accounting.ScopeAll} {
		cfg := testConfig(27)
		cfg.Fair.Scope = scope
		m := answeredStateFile(t, cfg)
		m["version"] = 3
		old, _ := json.Marshal(m)
		st, err := DecodeSiloState(old)
		switch scope {
		case accounting.ScopeSensitive:
			if err == nil || !strings.Contains(err.Error(), "version 3 under scope sensitive") {
				t.Errorf("version-3 sensitive-scope state: %v, want a refusal", err)
			}
		default:
			if err != nil || st.Version != SiloStateVersion || st.Rounds != 1 {
				t.Errorf("version-3 scope-all state: %v, %+v; want it read as version %d", err, st, SiloStateVersion)
			}
		}
	}
}

// TestDoubleFaultResume, over gRPC on loopback: at each
// phase of a round one silo (or the server) crashes; then both silos and
// the server are restarted from their files and the federation finishes.
// No round is lost or answered twice with different noise, and every
// silo's receipt equals an uninterrupted run's.
func TestDoubleFaultResume(t *testing.T) {
	certs := certDir(t)
	for _, phase := range []string{"silo crashes before saving its answer", "silo crashes after saving, before replying",
		"server crashes before its checkpoint"} {
		for faulty := range 2 {
			if phase == "server crashes before its checkpoint" && faulty == 1 {
				continue
			}
			t.Run(fmt.Sprintf("%s/silo%d", phase, faulty), func(t *testing.T) {
				doubleFault(t, certs, phase, faulty)
			})
		}
	}
}

func doubleFault(t *testing.T, certs, phase string, faulty int) {
	cfg := testConfig(25)
	cfg.Epochs = 1
	dir := t.TempDir()
	datas := []*loaders.Dataset{synthetic(240, 8), synthetic(240, 9)}
	paths := []string{filepath.Join(dir, "silo0.json"), filepath.Join(dir, "silo1.json")}
	start := func(i int, addr string, after func(*Silo[float64]) error) (*Silo[float64], string, func()) {
		s := startFromFile(t, cfg, datas[i], i, paths[i])
		a, stop := startSilo(t, s, addr, certs, after)
		return s, a, stop
	}
	silos := make([]*Silo[float64], 2)
	addrs := make([]string, 2)
	stops := make([]func(), 2)
	for i := range 2 {
		silos[i], addrs[i], stops[i] = start(i, "", nil)
	}
	defer func() {
		for _, s := range stops {
			s()
		}
	}()
	sc := serverConfig(cfg)
	sc.Checkpoint = filepath.Join(dir, "server.json")
	sc.Resume = true
	ctx := context.Background()
	srv, err := NewServer[float64](ctx, sc, dialAll(t, addrs, certs))
	if err != nil {
		t.Fatal(err)
	}
	const k = 3 // rounds before the fault
	for range k {
		if err := srv.Step(ctx); err != nil {
			t.Fatal(err)
		}
	}
	crash := errors.New("injected crash")
	switch phase {
	case "silo crashes before saving its answer":
		faultBeforeSave = func(silo, round int) error {
			if silo == faulty && round == k+1 {
				return crash
			}
			return nil
		}
		defer func() { faultBeforeSave = nil }()
		if err := srv.Step(ctx); err == nil {
			t.Fatal("round with a crashing silo succeeded")
		}
		faultBeforeSave = nil
	case "silo crashes after saving, before replying":
		stops[faulty]()
		silos[faulty], addrs[faulty], stops[faulty] = start(faulty, addrs[faulty], func(s *Silo[float64]) error {
			if s.Spent() == k+1 {
				return crash
			}
			return nil
		})
		srv, err = NewServer[float64](ctx, sc, dialAll(t, addrs, certs))
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Step(ctx); err == nil {
			t.Fatal("round with a crashing silo succeeded")
		}
	case "server crashes before its checkpoint":
		saved, err := os.ReadFile(sc.Checkpoint)
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Step(ctx); err != nil {
			t.Fatal(err)
		}
		// The server died after both silos answered round k+1 but before
		// its checkpoint of that round reached the disk.
		if err := os.WriteFile(sc.Checkpoint, saved, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Kill everything and restart both silos from their state files and the
	// server from its checkpoint.
	for i := range 2 {
		stops[i]()
	}
	for i := range 2 {
		silos[i], addrs[i], stops[i] = start(i, addrs[i], nil)
	}
	srv2, err := NewServer[float64](ctx, sc, dialAll(t, addrs, certs))
	if err != nil {
		t.Fatal(err)
	}
	if srv2.Round != k {
		t.Fatalf("server resumed at round %d, want %d", srv2.Round, k)
	}
	if err := srv2.Run(ctx); err != nil {
		t.Fatalf("resume after %s: %v", phase, err)
	}
	for i, s := range silos {
		planned := s.info.Rounds
		if s.Spent() != planned || srv2.Round != planned {
			t.Errorf("silo %d answered %d rounds, server finished %d, want %d", i, s.Spent(), srv2.Round, planned)
		}
		want, err := s.Epsilon(planned) // an uninterrupted run's ε at these settings
		if err != nil {
			t.Fatal(err)
		}
		r := must[accounting.Receipt](t)(s.FullReceipt())
		if r.Epsilon == nil || math.Abs(*r.Epsilon-want) > 1e-9 || *r.Epsilon > cfg.Privacy.Epsilon {
			t.Errorf("silo %d: receipt ε %v, uninterrupted run %v, budget %v", i, r.Epsilon, want, cfg.Privacy.Epsilon)
		}
		if len(r.Mechanisms) != 2 || r.Mechanisms[1].Steps != planned {
			t.Errorf("silo %d: mechanisms %+v, want the counts once and %d rounds", i, r.Mechanisms, planned)
		}
	}
}

// FuzzSiloState: decoding any bytes as a state file returns a state that
// passes its own checks or an error, never a panic; a valid state encodes
// and decodes to itself.
func FuzzSiloState(f *testing.F) {
	cfg := testConfig(26)
	s := startFromFile(&testing.T{}, cfg, synthetic(200, 10), 0, "")
	if _, err := s.Round(request(s, 1, 0.5)); err != nil {
		f.Fatal(err)
	}
	st := s.State()
	good, err := json.Marshal(st)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"version":2}`))
	f.Add(good[:len(good)/2])
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := DecodeSiloState(data)
		if err != nil {
			return
		}
		again, err := json.Marshal(st)
		if err != nil {
			t.Fatalf("a decoded state does not encode: %v", err)
		}
		if _, err := DecodeSiloState(again); err != nil {
			t.Fatalf("a decoded state does not decode again: %v", err)
		}
	})
}

// FuzzSiloRequest: any bytes the gRPC layer may hand the silo decode to a
// request that the silo answers or refuses with an error, never a panic,
// and a refused request spends nothing.
func FuzzSiloRequest(f *testing.F) {
	cfg := testConfig(27)
	s := startFromFile(&testing.T{}, cfg, synthetic(200, 11), 0, "")
	good, err := gobCodec{}.Marshal(request(s, 1, 0.1))
	if err != nil {
		f.Fatal(err)
	}
	bad, _ := gobCodec{}.Marshal(Request{Round: 1, Theta: []float64{math.NaN()}})
	f.Add(good)
	f.Add(bad)
	f.Add([]byte{})
	f.Add(good[:len(good)/2])
	f.Fuzz(func(t *testing.T, data []byte) {
		var rq Request
		if err := (gobCodec{}).Unmarshal(data, &rq); err != nil {
			return
		}
		spent := s.SpentEpsilon()
		if _, err := s.Round(rq); err != nil && s.SpentEpsilon() != spent {
			t.Fatalf("a refused request spent ε %v → %v", spent, s.SpentEpsilon())
		}
	})
}

// must unwraps a value and an error for a test, failing it on the error;
// must(t)(f()) reads like f().
func must[V any](t testing.TB) func(V, error) V {
	return func(v V, err error) V {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}
