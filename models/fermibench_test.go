package models_test

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"testing"

	"fairdp/dpops"
	"fairdp/fermi"
	"fairdp/loaders"
	"fairdp/models"
	"fairdp/nn"
	"fairdp/trainer"
)

// The DP-FERMI twins of the benchmarks (BenchmarkDPFERMIStep… and the
// dp-fermi rows of TestBenchTable) run package fermi's own Step, which
// imports package models: so the step is built here, in the external test
// package, and handed to the benchmarks through models.DPFERMIStep.
func init() { models.DPFERMIStep = dpFERMIStep }

// dpFERMIStep builds DP-FERMI as `fairdp train --algo fermi` would with
// the defaults (demographic parity, λ = 10, --scope all, C = 1), σ = 1 as
// the DP-SGD twin uses, on a training set that is exactly the benchmark's
// batch with a synthetic binary sensitive attribute, and returns one full
// step: the algorithm's Step (forward, loss and ψ terms, backward, joint
// per-sample clipping of θ and W, noise, W's projected ascent, the
// accountant) followed by the optimizer's step on θ.
func dpFERMIStep(tb testing.TB, m *models.Model[float32], opt nn.Optimizer[float32], x []float32, labels []int, classes int) func() {
	n := len(labels)
	cfg := trainer.Defaults()
	seed := uint64(43)
	cfg.Algo, cfg.Seed, cfg.Quiet, cfg.Batch, cfg.Epochs = fermi.Name, &seed, true, n, 1
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
	a, err := fermi.New[float32](&trainer.Job{Cfg: cfg, Train: d, Test: d, Rand: rr, Source: src, Log: io.Discard})
	if err != nil {
		tb.Fatal(err)
	}
	b := trainer.Batch[float32]{Idx: idx, X: x, Labels: labels, Groups: groups}
	return func() {
		if _, err := a.Step(m, b); err != nil {
			tb.Fatal(err)
		}
		opt.Step(m.Params())
	}
}
