package trainer

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/dpops/accounting"
	"github.com/fairdp/fairdp/models"
	"github.com/fairdp/fairdp/nn"
)

// TestDPSGDEmptyBatch: an empty Poisson batch is legal; it still releases
// noise and is still charged to the accountant, as Poisson sampling's analysis assumes.
func TestDPSGDEmptyBatch(t *testing.T) {
	job, a := smallDPSGD(t, nil)
	m, err := models.New[float64](ModelSpec(job.Cfg, job.Train), rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	loss, err := a.Step(m, Batch[float64]{Idx: []int{}})
	if err != nil || loss != 0 {
		t.Fatalf("empty batch: loss %v, err %v", loss, err)
	}
	nonzero := 0
	for _, p := range m.Params() {
		for _, g := range p.Grad {
			if g != 0 {
				nonzero++
			}
		}
	}
	if nonzero != m.NumParams() {
		t.Errorf("empty batch: %d of %d gradient values noised", nonzero, m.NumParams())
	}
	h := a.acc.History()
	if len(h) != 1 || h[0].Steps != 1 {
		t.Errorf("empty batch not charged: history %+v", h)
	}
}

// TestShuffleReceiptIsABound: a shuffled run's receipt states a proven
// bound — each epoch one Gaussian mechanism (accounting.ShuffledCharges) —
// and --epsilon calibrates σ against that bound, not against what Poisson
// sampling at the same rate would spend (kept as
// shuffle.poisson_equivalent_epsilon, smaller). Before, the receipt's ε was
// the Poisson figure, flagged rdp_valid = false.
func TestShuffleReceiptIsABound(t *testing.T) {
	rep, _ := quick(t, func(c *Config) {
		c.Algo, c.Privacy.Epsilon, c.Privacy.Sampling, c.Epochs = "dpsgd", 3, "shuffle", 1
	})
	r := rep.Privacy
	if r.Sampling != "shuffle" || r.RDPValid == nil || !*r.RDPValid || r.Shuffle == nil || r.Shuffle.Epochs != 1 ||
		r.Epsilon == nil || *r.Epsilon > 3 || *r.Epsilon < 2.9 || r.Shuffle.PoissonEquivalentEpsilon == nil ||
		!(*r.Shuffle.PoissonEquivalentEpsilon < *r.Epsilon) {
		t.Errorf("shuffle receipt is not the calibrated bound: %+v %+v", r, r.Shuffle)
	}
	if len(r.Mechanisms) != 1 || r.Mechanisms[0].SampleRate != 1 || r.Mechanisms[0].Steps != 1 {
		t.Errorf("charged mechanisms %+v, want one Gaussian for the one epoch", r.Mechanisms)
	}

	// At a fixed σ over 2 epochs: ε is that of 2 Gaussians with σ.
	job, a := smallDPSGD(t, func(c *Config) { c.Epochs, c.Quiet, c.Out, c.Privacy.Sampling = 2, true, t.TempDir(), "shuffle" })
	rep2, _, err := Run[float64](context.Background(), job, a)
	if err != nil {
		t.Fatal(err)
	}
	g := accounting.SubsampledGaussian(1, a.Sigma, 0, "")
	g.Steps = 2
	want, err := accounting.PlanEpsilon(a.acc.Kind(), accounting.PLDOptions{}, a.Delta, g)
	if err != nil {
		t.Fatal(err)
	}
	if p := rep2.Privacy; p.Epsilon == nil || *p.Epsilon != want || p.Shuffle == nil || p.Shuffle.Epochs != 2 {
		t.Errorf("fixed-σ shuffled receipt ε = %v, want %v (2 Gaussians with σ = %v)", p.Epsilon, want, a.Sigma)
	}
	if planned, _ := a.PlannedEpsilon(2); planned != want {
		t.Errorf("planned ε = %v, want the receipt's %v", planned, want)
	}
	if spent, _ := a.Epsilon(); spent != want {
		t.Errorf("spent ε = %v, want the receipt's %v", spent, want)
	}
}

// TestReceiptFailureFailsTheRun: when the accountant cannot state the
// guarantee (here a δ the conversion refuses), the run fails with the
// accountant's error; it never writes or returns a "not private" report.
func TestReceiptFailureFailsTheRun(t *testing.T) {
	job, a := smallDPSGD(t, func(c *Config) { c.Epochs, c.Quiet, c.Out = 1, true, t.TempDir() })
	a.Delta = 1.5
	rep, m, err := Run[float64](context.Background(), job, a)
	if err == nil || !strings.Contains(err.Error(), "delta") || rep != nil || m != nil {
		t.Fatalf("Run = %v, %v, %v; want the accountant's error and no report", rep, m, err)
	}
	if _, err := os.Stat(filepath.Join(job.Cfg.Out, "report.json")); !os.IsNotExist(err) {
		t.Errorf("report.json written after a receipt failure (stat: %v)", err)
	}
}

// smallDPSGD is DP-SGD (σ = 1) on 300 Adult records, seeded.
func smallDPSGD(t *testing.T, mutate func(*Config)) (*Job, *DPSGD[float64]) {
	t.Helper()
	cfg := Defaults()
	seed := uint64(1)
	cfg.Seed, cfg.Algo, cfg.Limit = &seed, "dpsgd", 300
	cfg.Privacy.Sigma = 1
	if mutate != nil {
		mutate(&cfg)
	}
	job, err := Prepare(cfg, PrepareOptions{Log: &bytes.Buffer{}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := newDPSGDJob[float64](job)
	if err != nil {
		t.Fatal(err)
	}
	return job, a
}

// TestDPSGDNoiseDrawnAheadBitIdentical: a model large enough for its noise
// to be drawn while the gradients are computed (prefetchNoise) trains bit
// for bit as when the noise is drawn after them, over several steps (so the
// noise stream must also end each step in the same place), and the stream
// is left where drawing after would leave it.
func TestDPSGDNoiseDrawnAheadBitIdentical(t *testing.T) {
	spec := models.Spec{Arch: "mlp", InShape: []int{100}, Hidden: []int{400}, Classes: 2}
	const n = 64
	rng := rand.New(rand.NewPCG(3, 4))
	x := make([]float32, n*100)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	labels, idx := make([]int, n), make([]int, n)
	for i := range labels {
		labels[i], idx[i] = rng.IntN(2), i
	}
	train := func(ahead bool) (*models.Model[float32], uint64) {
		old := prefetchMinParams
		if !ahead {
			prefetchMinParams = int(^uint(0) >> 1)
		}
		defer func() { prefetchMinParams = old }()
		seed := uint64(5)
		_, src := dpops.NewRand(&seed)
		a, err := NewDPSGDFrom[float32](DPSGDOptions{Records: 4 * n, Batch: n, Epochs: 1, Clip: 1, Sigma: 1.3, Epsilon: math.Inf(1), Seed: &seed}, src)
		if err != nil {
			t.Fatal(err)
		}
		m, err := models.New[float32](spec, rand.New(rand.NewPCG(6, 7)))
		if err != nil {
			t.Fatal(err)
		}
		if got := a.prefetchNoise(m); got != ahead {
			t.Fatalf("prefetchNoise = %v for %d parameters, want %v", got, NumParams(m), ahead)
		}
		opt := nn.NewSGD[float32](0.1)
		for range 3 {
			if _, err := a.Step(m, Batch[float32]{Idx: idx, X: x, Labels: labels}); err != nil {
				t.Fatal(err)
			}
			opt.Step(m.Params())
		}
		return m, a.noise.Uint64()
	}
	want, wantNext := train(false)
	got, gotNext := train(true)
	for k, p := range want.Params() {
		for i, v := range p.Value {
			if w := got.Params()[k].Value[i]; math.Float32bits(w) != math.Float32bits(v) {
				t.Fatalf("param %d value %d: %v with the noise drawn ahead, %v drawn after", k, i, w, v)
			}
		}
	}
	if gotNext != wantNext {
		t.Fatalf("noise stream ends at %#x drawn ahead, %#x drawn after", gotNext, wantNext)
	}
}
