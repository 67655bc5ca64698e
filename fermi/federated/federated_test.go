package federated

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/dpops/accounting"
	"github.com/fairdp/fairdp/fermi"
	"github.com/fairdp/fairdp/loaders"
	"github.com/fairdp/fairdp/trainer"
)

// synthetic is a small two-group binary task whose label depends on the
// group, so λ matters; feature 0 is "age".
func synthetic(n int, seed uint64) *loaders.Dataset {
	r := rand.New(rand.NewPCG(seed, 1))
	d := &loaders.Dataset{Name: "synthetic", Dim: 3, FeatureNames: []string{"age", "x1", "x2"},
		LabelNames: []string{"0", "1"}, GroupNames: []string{"a", "b"}}
	for range n {
		g := 0
		if r.Float64() < 0.35 {
			g = 1
		}
		age, x1, x2 := r.NormFloat64(), r.NormFloat64(), r.NormFloat64()
		y := 0
		if x1+0.8*float64(g)+0.3*age+0.5*r.NormFloat64() > 0.4 {
			y = 1
		}
		d.X = append(d.X, age, x1, x2)
		d.Labels, d.Groups = append(d.Labels, y), append(d.Groups, g)
	}
	return d
}

func testConfig(seed uint64) trainer.Config {
	c := trainer.Defaults()
	c.Algo, c.DType, c.Epochs, c.Batch, c.LR, c.Optimizer, c.Quiet = Name, "float64", 2, 40, 0.1, "sgd", true
	c.Seed = &seed
	c.Privacy.Epsilon, c.Privacy.Clip = 2, 1
	c.Fair.Lambda, c.Fair.Scope, c.Fair.LRW = 1, "sensitive", 0.1
	return c
}

func testJob(t *testing.T, cfg trainer.Config, train *loaders.Dataset) *trainer.Job {
	t.Helper()
	_, src := dpops.NewRand(cfg.Seed)
	return &trainer.Job{Cfg: cfg, Train: train, Test: synthetic(200, 99), Source: src}
}

// TestHeterogeneous checks the SteFFLe paper's heterogeneity split on literal
// cases: h = 1 gives each silo its block of the sorted attribute, any h keeps
// every record exactly once with the block sizes, and h = 0.5 keeps half of
// each block.
func TestHeterogeneous(t *testing.T) {
	attr := []float64{5, 3, 1, 4, 2, 0}
	parts, err := Heterogeneous(attr, 2, 1, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	if want := [][]int{{2, 4, 5}, {0, 1, 3}}; !slices.EqualFunc(parts, want, slices.Equal) {
		t.Fatalf("h = 1: got %v, want %v", parts, want)
	}
	attr = make([]float64, 1000)
	for i := range attr {
		attr[i] = float64(i)
	}
	for _, tc := range []struct {
		h        float64
		minKept  int // records of silo 0 from its own block [0, 333)
		maxKept  int
		siloSize []int
	}{
		{0, 60, 160, []int{333, 333, 334}},
		{0.5, 166, 240, []int{333, 333, 334}},
		{0.75, 250, 300, []int{333, 333, 334}},
		{1, 333, 333, []int{333, 333, 334}},
	} {
		parts, err := Heterogeneous(attr, 3, tc.h, rand.New(rand.NewPCG(3, 4)))
		if err != nil {
			t.Fatal(err)
		}
		seen := make([]bool, len(attr))
		for s, p := range parts {
			if len(p) != tc.siloSize[s] {
				t.Errorf("h = %v: silo %d has %d records, want %d", tc.h, s, len(p), tc.siloSize[s])
			}
			for _, i := range p {
				if seen[i] {
					t.Fatalf("h = %v: record %d in two silos", tc.h, i)
				}
				seen[i] = true
			}
		}
		kept := 0
		for _, i := range parts[0] {
			if i < 333 {
				kept++
			}
		}
		if kept < tc.minKept || kept > tc.maxKept {
			t.Errorf("h = %v: silo 0 holds %d records of its block, want %d..%d", tc.h, kept, tc.minKept, tc.maxKept)
		}
	}
	if _, err := Heterogeneous(attr, 3, 1.5, rand.New(rand.NewPCG(1, 1))); err == nil {
		t.Error("h = 1.5 accepted")
	}
}

func TestMapping(t *testing.T) {
	m, err := SensitiveSiloMapping(4, [][]int{{0, 2}, {1, 3}}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if m.Silos != 3 || !slices.Equal(m.Sensitive, []int{2, 2, 2, 2}) || !slices.Equal(m.NonSensitive, []int{0, 1, 0, 1}) {
		t.Fatalf("got %+v", m)
	}
	if _, err := m.Horizontal(); err == nil || !strings.Contains(err.Error(), "record 0") {
		t.Errorf("hybrid mapping: got %v, want an error naming record 0", err)
	}
	h, _ := HorizontalMapping(4, [][]int{{0, 2}, {1, 3}})
	if parts, err := h.Horizontal(); err != nil || !slices.Equal(parts[1], []int{1, 3}) {
		t.Errorf("horizontal: %v %v", parts, err)
	}
	if _, err := HorizontalMapping(3, [][]int{{0, 1}, {1, 2}}); err == nil {
		t.Error("record in two silos accepted")
	}
}

// TestOneSiloIsCentralDPFERMI: with N = 1 the silo draws exactly central
// DP-FERMI's batches and noise (same seed) and the server's step is
// DP-FERMI's, so the trained models are bit-identical (acceptance: "N = 1
// reproduces central DP-FERMI").
func TestOneSiloIsCentralDPFERMI(t *testing.T) {
	for _, acc := range []string{accounting.AccountantRDP, accounting.AccountantPLD} {
		t.Run(acc, func(t *testing.T) { oneSiloIsCentral(t, acc) })
	}
}

// oneSiloIsCentral is TestOneSiloIsCentralDPFERMI under accountant acc,
// which central DP-FERMI and the silo both calibrate and account with.
func oneSiloIsCentral(t *testing.T, acc string) {
	cfg := testConfig(7)
	cfg.Privacy.Accountant = acc
	train := synthetic(500, 1)
	central, err := fermi.New[float64](testJob(t, cfg, train))
	if err != nil {
		t.Fatal(err)
	}
	repC, mC, err := trainer.Run(context.Background(), testJob(t, cfg, train), trainer.Algorithm[float64](central))
	if err != nil {
		t.Fatal(err)
	}
	job := testJob(t, cfg, train)
	fed, err := New[float64](job, Settings{Silos: 1})
	if err != nil {
		t.Fatal(err)
	}
	repF, mF, err := trainer.Run(context.Background(), job, trainer.Algorithm[float64](fed))
	if err != nil {
		t.Fatal(err)
	}
	pc, pf := mC.Params(), mF.Params()
	for i := range pc {
		for j := range pc[i].Value {
			if pc[i].Value[j] != pf[i].Value[j] {
				t.Fatalf("param %s[%d]: central %v, one silo %v", pc[i].Name, j, pc[i].Value[j], pf[i].Value[j])
			}
		}
	}
	if *repC.Privacy.Epsilon != *repF.Privacy.Epsilon || repC.Test.Error != repF.Test.Error {
		t.Errorf("ε %v vs %v, test error %v vs %v", *repC.Privacy.Epsilon, *repF.Privacy.Epsilon, repC.Test.Error, repF.Test.Error)
	}
	if *repF.Privacy.Epsilon > cfg.Privacy.Epsilon+1e-9 || *repF.Privacy.Epsilon < 0.9*cfg.Privacy.Epsilon {
		t.Errorf("ε spent %v, want close to the budget %v", *repF.Privacy.Epsilon, cfg.Privacy.Epsilon)
	}
}

// buildSilos makes the three silos of a seeded run from scratch.
func buildSilos(t *testing.T, cfg trainer.Config, train *loaders.Dataset) []*Silo[float64] {
	t.Helper()
	_, src := dpops.NewRand(cfg.Seed)
	attr, _ := FeatureColumn(train, "age")
	parts, err := Heterogeneous(attr, 3, 0.75, silosRand(src))
	if err != nil {
		t.Fatal(err)
	}
	var out []*Silo[float64]
	for i, p := range parts {
		s, err := NewSilo[float64](cfg, loaders.Subset(train, p), SiloSource(src, i, 0), SiloOptions{Index: i})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

func serverConfig(cfg trainer.Config) ServerConfig {
	return ServerConfig{LR: cfg.LR, Lambda: cfg.Fair.Lambda, LRW: cfg.Fair.LRW, Radius: cfg.Fair.Radius, Seed: cfg.Seed,
		Retries: 3, Backoff: 20 * time.Millisecond, Timeout: 5 * time.Second}
}

// startSilo serves s on a loopback port (or addr) with mutual TLS and
// returns its address and a stop function.
func startSilo(t *testing.T, s *Silo[float64], addr, certs string, after func(*Silo[float64]) error) (string, func()) {
	t.Helper()
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	var lis net.Listener
	var err error
	for range 50 { // the port of a killed silo may take a moment to free
		if lis, err = net.Listen("tcp", addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg, err := LoadTLS(certs, "silo")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = Serve(ctx, lis, s, tlsCfg, after); close(done) }()
	return lis.Addr().String(), func() { cancel(); <-done }
}

func dialAll(t *testing.T, addrs []string, certs string) []Client {
	t.Helper()
	tlsCfg, err := LoadTLS(certs, "server")
	if err != nil {
		t.Fatal(err)
	}
	var out []Client
	for _, a := range addrs {
		c, closeFn, err := Dial(a, tlsCfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = closeFn() })
		out = append(out, c)
	}
	return out
}

func certDir(t *testing.T) string {
	dir := t.TempDir()
	if err := GenerateCerts(dir, []string{"127.0.0.1", "localhost"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	return dir
}

func params(s *Server[float64]) []float64 { return s.theta() }

// TestLoopbackMatchesInProcess: three silos behind gRPC with mutual TLS on
// loopback train bit-for-bit the same model and W as the same silos in
// process, and the trainer adapter (fairdp train --algo steffle) agrees.
func TestLoopbackMatchesInProcess(t *testing.T) {
	cfg := testConfig(11)
	train := synthetic(600, 2)
	ctx := context.Background()

	// Served silos draw their noise with the hardened sampler (their
	// messages leave the process); the in-process twins do the same here, so
	// the two differ only in transport.
	var local []Client
	for _, s := range buildSilos(t, cfg, train) {
		s.alg.HardenedNoise = true
		local = append(local, Local(s))
	}
	inProc, err := NewServer[float64](ctx, serverConfig(cfg), local)
	if err != nil {
		t.Fatal(err)
	}
	if err := inProc.Run(ctx); err != nil {
		t.Fatal(err)
	}

	certs := certDir(t)
	var addrs []string
	for _, s := range buildSilos(t, cfg, train) {
		addr, stop := startSilo(t, s, "", certs, nil)
		defer stop()
		addrs = append(addrs, addr)
	}
	remote, err := NewServer[float64](ctx, serverConfig(cfg), dialAll(t, addrs, certs))
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if inProc.Round != remote.Round || inProc.Round < 10 {
		t.Fatalf("rounds: in-process %d, loopback %d", inProc.Round, remote.Round)
	}
	if !equalFloats(params(inProc), params(remote)) || !equalFloats(inProc.Reg.W, remote.Reg.W) {
		t.Fatalf("loopback model differs from in-process:\n%v %v\n%v %v", params(inProc), inProc.Reg.W, params(remote), remote.Reg.W)
	}
	if slices.Max(remote.Epsilon) > cfg.Privacy.Epsilon+1e-9 {
		t.Errorf("silo ε %v above the budget %v", remote.Epsilon, cfg.Privacy.Epsilon)
	}

	// The trainer adapter partitions the same way and runs the same rounds.
	job := testJob(t, cfg, train)
	alg, err := New[float64](job, Settings{Silos: 3, Heterogeneity: 0.75, SiloAttribute: "age"})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range alg.Silos {
		s.alg.HardenedNoise = true
	}
	_, m, err := trainer.Run(ctx, job, trainer.Algorithm[float64](alg))
	if err != nil {
		t.Fatal(err)
	}
	var got []float64
	for _, p := range m.Params() {
		got = append(got, p.Value...)
	}
	if !equalFloats(got, params(inProc)) {
		t.Fatalf("trainer adapter differs from the server: %v vs %v", got, params(inProc))
	}
}

// TestBudgetRefusal: a silo calibrated for fewer rounds than the server
// wants refuses the first round past its ε, and the server reports it.
func TestBudgetRefusal(t *testing.T) {
	cfg := testConfig(5)
	silos := buildSilos(t, cfg, synthetic(600, 3))
	certs := certDir(t)
	var addrs []string
	for _, s := range silos {
		addr, stop := startSilo(t, s, "", certs, nil)
		defer stop()
		addrs = append(addrs, addr)
	}
	sc := serverConfig(cfg)
	sc.Rounds = must[Info](t)(silos[0].Info()).Rounds + 5
	srv, err := NewServer[float64](context.Background(), sc, dialAll(t, addrs, certs))
	if err != nil {
		t.Fatal(err)
	}
	err = srv.Run(context.Background())
	if !errors.Is(err, accounting.ErrBudgetExceeded) || !strings.Contains(err.Error(), "refuses round") || !strings.Contains(err.Error(), "budget 2") {
		t.Fatalf("got %v, want a budget refusal", err)
	}
	if srv.Round >= sc.Rounds || srv.Round < must[Info](t)(silos[0].Info()).Rounds-3 {
		t.Errorf("server stopped after %d rounds", srv.Round)
	}
	t.Log(err)
}

// TestMalformedRequests: wrong shapes, non-finite values and wrong round
// numbers are rejected over gRPC with InvalidArgument, and the silo spends
// nothing on them.
func TestMalformedRequests(t *testing.T) {
	cfg := testConfig(3)
	silo := buildSilos(t, cfg, synthetic(300, 4))[0]
	certs := certDir(t)
	addr, stop := startSilo(t, silo, "", certs, nil)
	defer stop()
	c := dialAll(t, []string{addr}, certs)[0]
	info, err := c.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	good := Request{Round: 1, Theta: make([]float64, info.NumParams), W: make([]float64, info.WLen)}
	nan := slices.Clone(good.Theta)
	nan[1] = math.NaN()
	for _, tc := range []struct {
		name string
		rq   Request
		want string
	}{
		{"short θ", Request{Round: 1, Theta: good.Theta[1:], W: good.W}, "θ values"},
		{"long W", Request{Round: 1, Theta: good.Theta, W: append(slices.Clone(good.W), 0)}, "W values"},
		{"NaN", Request{Round: 1, Theta: nan, W: good.W}, "θ[1] = NaN"},
		{"Inf W", Request{Round: 1, Theta: good.Theta, W: []float64{math.Inf(1), 0, 0, 0}}, "W[0] = +Inf"},
		{"round 0", Request{Round: 0, Theta: good.Theta, W: good.W}, "round 0"},
		{"skipped round", Request{Round: 3, Theta: good.Theta, W: good.W}, "continues only at round 1"},
	} {
		_, err := c.Round(context.Background(), tc.rq)
		if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want a malformed-request error with %q", tc.name, err, tc.want)
		}
	}
	if silo.Spent() != 0 {
		t.Errorf("silo spent %d rounds on malformed requests", silo.Spent())
	}
	msg, err := c.Round(context.Background(), good)
	if err != nil || msg.Round != 1 || silo.Spent() != 1 {
		t.Fatalf("good request: %v (spent %d)", err, silo.Spent())
	}
	again, err := c.Round(context.Background(), good)
	if err != nil || !equalFloats(again.Theta, msg.Theta) || silo.Spent() != 1 {
		t.Errorf("repeated round: %v, same answer %v, spent %d", err, equalFloats(again.Theta, msg.Theta), silo.Spent())
	}
}

// TestKillAndResume: a silo killed mid-run makes the server retry with
// back-off and stop cleanly; the silo restarts with its spent budget, the
// server resumes from its checkpoint and finishes the planned rounds, and
// no silo goes past its budget.
func TestKillAndResume(t *testing.T) {
	cfg := testConfig(13)
	silos := buildSilos(t, cfg, synthetic(600, 5))
	certs := certDir(t)
	var addrs []string
	var stops []func()
	for _, s := range silos {
		addr, stop := startSilo(t, s, "", certs, nil)
		addrs, stops = append(addrs, addr), append(stops, stop)
	}
	defer func() {
		for _, s := range stops {
			s()
		}
	}()
	sc := serverConfig(cfg)
	sc.Checkpoint = t.TempDir() + "/server.json"
	sc.Resume = true
	ctx := context.Background()
	srv, err := NewServer[float64](ctx, sc, dialAll(t, addrs, certs))
	if err != nil {
		t.Fatal(err)
	}
	planned := srv.Cfg.Rounds
	for range 5 {
		if err := srv.Step(ctx); err != nil {
			t.Fatal(err)
		}
	}
	stops[2]()
	stops[2] = func() {}
	err = srv.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), "unreachable after 3 attempts") {
		t.Fatalf("got %v, want the server to give up on the killed silo", err)
	}
	// Restart silo 2 from its persisted state: the rounds it answered count
	// against its budget, and its noise streams are fresh (generation 1).
	_, src := dpops.NewRand(cfg.Seed)
	spent := silos[2].Spent()
	st := silos[2].State()
	restarted, err := NewSilo[float64](cfg, silos[2].data, SiloSource(src, 2, 1), SiloOptions{Index: 2, State: &st})
	if err != nil {
		t.Fatal(err)
	}
	_, stop := startSilo(t, restarted, addrs[2], certs, nil)
	stops[2] = stop
	srv2, err := NewServer[float64](ctx, sc, dialAll(t, addrs, certs))
	if err != nil {
		t.Fatal(err)
	}
	if srv2.Round != 5 || !equalFloats(params(srv2), params(srv)) {
		t.Fatalf("resumed at round %d (want 5) with θ equal %v", srv2.Round, equalFloats(params(srv2), params(srv)))
	}
	if err := srv2.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if srv2.Round != planned || restarted.Spent() != planned {
		t.Errorf("finished %d rounds (silo 2 answered %d), want %d", srv2.Round, restarted.Spent(), planned)
	}
	if e := restarted.SpentEpsilon(); e > cfg.Privacy.Epsilon+1e-9 {
		t.Errorf("restarted silo spent ε %v > %v", e, cfg.Privacy.Epsilon)
	}
	// The federation's receipt counts every round silo 2 answered, before
	// and after its restart, not only those of its second start.
	receipt, lines, err := srv2.Privacy(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := restarted.Epsilon(planned)
	if got := lines[2].Epsilon; got == nil || math.Abs(*got-want) > 1e-6 || lines[2].Rounds != planned {
		t.Errorf("silo 2's receipt: ε %v after %d rounds, want %v after %d", got, lines[2].Rounds, want, planned)
	}
	if m := must[accounting.Receipt](t)(restarted.Receipt()).Mechanisms; m[len(m)-1].Steps != planned-spent {
		t.Errorf("this start's receipt has %d steps, want %d (the rest were answered before the restart)", m[len(m)-1].Steps, planned-spent)
	}
	if receipt.Epsilon == nil || *receipt.Epsilon > cfg.Privacy.Epsilon+1e-9 || !strings.Contains(receipt.Note, "per silo: silo 0 (") {
		t.Errorf("federation receipt %+v", receipt)
	}
}
