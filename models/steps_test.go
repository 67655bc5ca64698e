package models_test

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/fermi"
	"github.com/fairdp/fairdp/loaders"
	"github.com/fairdp/fairdp/models"
	"github.com/fairdp/fairdp/nn"
	"github.com/fairdp/fairdp/trainer"
)

// The benchmarks (Benchmark… in bench_test.go and the rows of
// TestBenchTable) time the steps users run: the Step of trainer's SGD and
// DPSGD and of package fermi's DP-FERMI, then the optimizer. Those packages
// import package models, so the steps are built here, in the external test
// package, and handed to the benchmarks through models.LibraryStep.
func init() { models.LibraryStep = libraryStep }

// libraryStep builds the algorithm algo ("sgd", "dpsgd" or "fermi") as
// `fairdp train --algo algo` would with the defaults (DP-FERMI: demographic
// parity, λ = 10, --scope all), C = 1 and σ = 1 (the Opacus peer runs'
// setting), on a training set that is exactly the benchmark's batch
// (q = 1) with a synthetic binary sensitive attribute, and returns one full
// step: the algorithm's Step (forward, loss, backward, and for the private
// ones per-sample clipping, noise and the accountant's charge) followed by
// SGD's update with learning rate 10⁻³.
func libraryStep(tb testing.TB, algo string, m *models.Model[float32], x []float32, labels []int, classes int) func() {
	n := len(labels)
	cfg := trainer.Defaults()
	seed := uint64(43)
	cfg.Algo, cfg.Seed, cfg.Quiet, cfg.Batch, cfg.Epochs = trainer.AlgoName(algo), &seed, true, n, 1
	cfg.Privacy.Epsilon, cfg.Privacy.Sigma, cfg.Privacy.Clip = math.Inf(1), 1, 1
	r := rand.New(rand.NewPCG(43, 44))
	groups := make([]int, n)
	idx := make([]int, n)
	for i := range groups {
		groups[i] = r.IntN(2)
		idx[i] = i
	}
	names := make([]string, max(2, classes))
	for i := range names {
		names[i] = fmt.Sprint("class ", i)
	}
	d := &loaders.Dataset{Name: "benchmark batch", Labels: labels, Groups: groups, LabelNames: names, GroupNames: []string{"a", "b"}}
	rr, src := dpops.NewRand(cfg.Seed)
	job := &trainer.Job{Cfg: cfg, Train: d, Test: d, Rand: rr, Source: src, Log: io.Discard}
	var a trainer.Algorithm[float32]
	var err error
	switch algo {
	case "sgd":
		a = &trainer.SGD[float32]{BatchSize: n}
	case "dpsgd":
		p := cfg.Privacy
		a, err = trainer.NewDPSGDFrom[float32](trainer.DPSGDOptions{Records: n, Batch: cfg.Batch, Epochs: cfg.Epochs, Clip: p.Clip,
			Sigma: p.Sigma, Epsilon: p.Epsilon, Delta: p.Delta, Sampling: trainer.Sampling(p.Sampling), Seed: cfg.Seed,
			Accountant: p.Accountant}, src)
	case fermi.Name:
		a, err = fermi.New[float32](job)
	default:
		err = fmt.Errorf("no benchmark step for algorithm %q", algo)
	}
	if err != nil {
		tb.Fatal(err)
	}
	opt := nn.NewSGD[float32](1e-3)
	b := trainer.Batch[float32]{Idx: idx, X: x, Labels: labels, Groups: groups}
	return func() {
		if _, err := a.Step(m, b); err != nil {
			tb.Fatal(err)
		}
		opt.Step(m.Params())
	}
}
