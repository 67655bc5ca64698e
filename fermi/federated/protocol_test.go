package federated

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/models"
	"github.com/fairdp/fairdp/trainer"
)

// TestStepDecayScale: η_θ's multiplier is Factor^⌊(round−1)/Every⌋, so
// the first decay takes effect in round Every+1; no factor, a factor of 1
// or no step leave η_θ alone.
func TestStepDecayScale(t *testing.T) {
	for _, tc := range []struct {
		d     StepDecay
		round int
		want  float64
	}{
		{StepDecay{0.5, 3}, 1, 1}, {StepDecay{0.5, 3}, 3, 1}, {StepDecay{0.5, 3}, 4, 0.5},
		{StepDecay{0.5, 3}, 6, 0.5}, {StepDecay{0.5, 3}, 7, 0.25}, {StepDecay{0.1, 1}, 3, 0.1 * 0.1},
		{StepDecay{}, 100, 1}, {StepDecay{1, 2}, 100, 1}, {StepDecay{0.5, 0}, 100, 1},
	} {
		if got := tc.d.Scale(tc.round); math.Abs(got-tc.want) > 1e-15 {
			t.Errorf("%+v round %d: scale %v, want %v", tc.d, tc.round, got, tc.want)
		}
	}
}

// TestCheckpointEpochs: every every-th epoch from epoch from, within the
// run (the authors' code: every 10 from 20 of 60; N = 1: every 3 from 6 of
// 15 in this package's reading).
func TestCheckpointEpochs(t *testing.T) {
	for _, tc := range []struct {
		every, from, epochs int
		want                []int
	}{
		{10, 20, 60, []int{20, 30, 40, 50, 60}},
		{3, 6, 15, []int{6, 9, 12, 15}},
		{10, 0, 35, []int{10, 20, 30}},
		{10, 61, 60, nil},
		{0, 20, 60, nil},
	} {
		if got := CheckpointEpochs(tc.every, tc.from, tc.epochs); !slices.Equal(got, tc.want) {
			t.Errorf("every %d from %d of %d: %v, want %v", tc.every, tc.from, tc.epochs, got, tc.want)
		}
	}
}

// TestProtocolValidation: invalid protocol options are refused with the
// field named.
func TestProtocolValidation(t *testing.T) {
	for _, tc := range []struct {
		name  string
		set   func(*trainer.FederationConfig)
		field string
	}{
		{"decay above 1", func(f *trainer.FederationConfig) { f.LRDecay, f.LRDecayEvery = 1.5, 1 }, "Federation.LRDecay"},
		{"negative decay", func(f *trainer.FederationConfig) { f.LRDecay, f.LRDecayEvery = -0.5, 1 }, "Federation.LRDecay"},
		{"decay without a step", func(f *trainer.FederationConfig) { f.LRDecay = 0.5 }, "Federation.LRDecayEvery"},
		{"negative average step", func(f *trainer.FederationConfig) { f.AverageEvery = -1 }, "Federation.AverageEvery"},
		{"average start without a step", func(f *trainer.FederationConfig) { f.AverageFrom = 20 }, "Federation.AverageFrom"},
	} {
		cfg := testConfig(1)
		tc.set(&cfg.Federation)
		err := cfg.Validate()
		var fe trainer.FieldErrors
		if !errors.As(err, &fe) || len(fe) != 1 || fe[0].Field != tc.field {
			t.Errorf("%s: Validate gives %v, want one error naming %s", tc.name, err, tc.field)
		}
		if _, err := New[float64](testJob(t, cfg, synthetic(200, 2)), cfg.Federation); err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: New gives %v, want an error naming %s", tc.name, err, tc.field)
		}
	}
	// Checkpoints past the run's last epoch: nothing to average.
	cfg := testConfig(1)
	cfg.Federation.AverageEvery, cfg.Federation.AverageFrom = 10, 20
	if _, err := New[float64](testJob(t, cfg, synthetic(200, 2)), cfg.Federation); err == nil || !strings.Contains(err.Error(), "Federation.AverageFrom") {
		t.Errorf("AverageFrom 20 with Epochs %d: %v, want an error naming Federation.AverageFrom", cfg.Epochs, err)
	}
	for _, d := range []StepDecay{{Factor: 2, Every: 1}, {Factor: 0.5}} {
		if err := d.Validate(); err == nil || !strings.Contains(err.Error(), "ServerConfig.Decay.") {
			t.Errorf("%+v: %v, want an error naming ServerConfig.Decay", d, err)
		}
	}
}

// fixedSilo answers every round with the same θ direction and a zero W
// direction, so the server's θ steps show the learning rate it used.
type fixedSilo struct {
	info  Info
	theta []float64
}

func (f fixedSilo) Info(context.Context) (Info, error) { return f.info, nil }
func (f fixedSilo) Round(_ context.Context, rq Request) (Message, error) {
	return Message{Round: rq.Round, Theta: f.theta, W: make([]float64, f.info.WLen)}, nil
}
func (f fixedSilo) Name() string { return "fixed silo" }

// TestStepDecayRounds: against a silo that always sends the direction g,
// round r moves θ by exactly −η·Scale(r)·(g + wd·θ): full steps in rounds
// 1–2, half steps in 3–4, quarter steps in 5, weight decay included.
func TestStepDecayRounds(t *testing.T) {
	spec := models.Spec{Arch: "logistic", InShape: []int{3}, Classes: 2}
	m, err := models.New[float64](spec, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	g := make([]float64, m.NumParams())
	for i := range g {
		g[i] = 0.5 + float64(i)
	}
	silo := fixedSilo{info: Info{Records: 10, Spec: spec, NumParams: len(g), Groups: 2, Classes: 2, WLen: 4, Rounds: 5}, theta: g}
	seed := uint64(3)
	const lr, wd = 0.1, 0.01
	srv, err := NewServer[float64](context.Background(), ServerConfig{LR: lr, WeightDecay: wd, Decay: StepDecay{Factor: 0.5, Every: 2},
		Lambda: 1, LRW: 0.1, Radius: 5, Seed: &seed}, []Client{silo})
	if err != nil {
		t.Fatal(err)
	}
	for r, scale := range []float64{1, 1, 0.5, 0.5, 0.25} {
		before := srv.theta()
		if err := srv.Step(context.Background()); err != nil {
			t.Fatal(err)
		}
		for i, got := range srv.theta() {
			want := before[i] - lr*scale*(g[i]+wd*before[i])
			if math.Abs(got-want) > 1e-14 {
				t.Fatalf("round %d, θ[%d]: %v, want %v (η scaled by %v)", r+1, i, got, want, scale)
			}
		}
	}
}

// TestCheckpointAverageIsTheMeanOfSeparateRuns: a run that averages its
// checkpoints after epochs 2 and 3 reports exactly the mean of the test
// metrics of the same run stopped after 2 and after 3 epochs, and
// evaluating the checkpoints does not change the trained model. The noise
// is a fixed multiplier and the group sizes public, so that the stopped
// runs train exactly the first epochs of the long one; η_θ halves every
// epoch in all three, and in-process Steffle takes the same decayed steps
// as Server.
func TestCheckpointAverageIsTheMeanOfSeparateRuns(t *testing.T) {
	base := testConfig(5)
	base.Privacy.Epsilon, base.Privacy.Sigma, base.Fair.PublicGroupSizes = math.Inf(1), 1, true
	set := Settings{Silos: 3, Heterogeneity: 0.75, SiloAttribute: "age", Mode: trainer.FederationHorizontal,
		LRDecay: 0.5, LRDecayEvery: 1}
	run := func(epochs int, average bool) (*trainer.Report, []float64, *Steffle[float64]) {
		cfg := base
		cfg.Epochs = epochs
		s := set
		if average {
			s.AverageEvery, s.AverageFrom = 1, 2
		}
		return trainSteffle(t, cfg, s)
	}
	avgRep, avgParams, alg := run(3, true)
	rep2, _, _ := run(2, false)
	rep3, params3, _ := run(3, false)
	avg := *ResultOf(avgRep).CheckpointAverage
	if !slices.Equal(avg.Epochs, []int{2, 3}) {
		t.Fatalf("checkpoint epochs %v, want [2 3]", avg.Epochs)
	}
	for _, c := range []struct {
		name      string
		got, a, b float64
	}{
		{"error", avg.Error, rep2.Test.Error, rep3.Test.Error},
		{"DP violation", avg.DPViolation, rep2.Test.DPViolation, rep3.Test.DPViolation},
		{"EO violation", avg.EOViolation, rep2.Test.EOViolation, rep3.Test.EOViolation},
	} {
		if want := (c.a + c.b) / 2; c.got != want {
			t.Errorf("averaged test %s %v, want the mean %v of the 2- and 3-epoch runs (%v, %v)", c.name, c.got, want, c.a, c.b)
		}
	}
	if rep2.Test.Error == rep3.Test.Error && rep2.Test.DPViolation == rep3.Test.DPViolation {
		t.Errorf("the 2- and 3-epoch models score alike (%v); the test cannot tell checkpoints apart", rep2.Test.Error)
	}
	if !equalFloats(avgParams, params3) || avgRep.Test.Error != rep3.Test.Error {
		t.Errorf("evaluating checkpoints changed the model: %v vs %v", avgParams, params3)
	}
	// The step decay: the last round stepped with η_θ/4, and Server with the
	// same schedule in rounds trains the same model bit for bit.
	rounds := alg.roundsPerEpoch()
	if got := alg.server.Cfg.Decay; got != (StepDecay{Factor: 0.5, Every: rounds}) {
		t.Errorf("decay %+v, want factor 0.5 every %d rounds (one epoch)", got, rounds)
	}
	cfg := base
	cfg.Epochs = 3
	var local []Client
	for _, s := range buildSilos(t, cfg, synthetic(600, 2)) {
		local = append(local, Local(s))
	}
	sc := serverConfig(cfg)
	sc.Decay, sc.Rounds = StepDecay{Factor: 0.5, Every: rounds}, 3*rounds
	srv, err := NewServer[float64](context.Background(), sc, local)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !equalFloats(params(srv), params3) {
		t.Errorf("Server with the decay in rounds differs from in-process Steffle:\n%v\n%v", params(srv), params3)
	}
	_, noDecay, _ := trainSteffle(t, cfg, Settings{Silos: 3, Heterogeneity: 0.75, SiloAttribute: "age"})
	if equalFloats(noDecay, params3) {
		t.Error("the decayed run equals the constant-rate run: the schedule had no effect")
	}
}

// TestAuthorsPreset: steffle-credit-authors is steffle-credit with the
// authors' code's protocol: δ of the whole training set, η_θ halved every
// 20 epochs, checkpoints every 10 epochs from 20 of 60, and the code's
// λ = 0.5; the noise is calibrated by the accountant (Theorem 6's closed
// form is refused at its own ε under scope sensitive); it validates.
func TestAuthorsPreset(t *testing.T) {
	var plain, c trainer.Config = trainer.Defaults(), trainer.Defaults()
	if err := trainer.ApplyPreset(&plain, "steffle-credit"); err != nil {
		t.Fatal(err)
	}
	if err := trainer.ApplyPreset(&c, "steffle-credit-authors"); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	f := c.Federation
	if c.Fair.Calibration != "accountant" || !f.TotalDelta || f.LRDecay != 0.5 || f.LRDecayEvery != 20 || f.AverageEvery != 10 || f.AverageFrom != 20 ||
		c.Epochs != 60 || c.Batch != 256 || c.Fair.Lambda != AuthorsLambda {
		t.Errorf("preset: %+v, calibration %s, epochs %d, batch %d, λ %v", f, c.Fair.Calibration, c.Epochs, c.Batch, c.Fair.Lambda)
	}
	// Everything else is steffle-credit's.
	c.Fair.Calibration, c.Fair.Lambda, c.Federation, c.Preset = plain.Fair.Calibration, plain.Fair.Lambda, plain.Federation, plain.Preset
	if got, want := fmt.Sprintf("%+v", c), fmt.Sprintf("%+v", plain); got != want {
		t.Errorf("steffle-credit-authors differs from steffle-credit beyond the protocol:\n%s\n%s", got, want)
	}
}

// TestTotalDelta: with Federation.TotalDelta every silo's δ is 1/n² of the
// whole training set (smaller than its own 1/ñ²); a given Privacy.Delta
// wins.
func TestTotalDelta(t *testing.T) {
	train := synthetic(600, 2)
	for _, tc := range []struct {
		total bool
		delta float64
		want  func(silo int, records int) float64
	}{
		{false, 0, func(_, r int) float64 { return 1 / float64(r*r) }},
		{true, 0, func(_, _ int) float64 { return 1 / (600.0 * 600) }},
		{true, 1e-7, func(_, _ int) float64 { return 1e-7 }},
	} {
		cfg := testConfig(3)
		cfg.Privacy.Delta = tc.delta
		a, err := New[float64](testJob(t, cfg, train), Settings{Silos: 3, SiloAttribute: "age", TotalDelta: tc.total})
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range a.SiloPrivacy() {
			if want := tc.want(i, p.Records); p.Delta != want {
				t.Errorf("TotalDelta %v, Delta %v: silo %d (%d records) has δ %v, want %v", tc.total, tc.delta, i, p.Records, p.Delta, want)
			}
		}
	}
}
