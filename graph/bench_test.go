//go:build !cuda

package graph

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/fairdp/fairdp/backend"
	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/models"
	"github.com/fairdp/fairdp/nn"
	"github.com/fairdp/fairdp/trainer"
)

// A lowered Gorgonia graph trains on the same nn layers as the native
// model, so its DP-SGD step should cost the same. The benchmarks time one
// float32 DP-SGD step (per-sample norms, clipping, noise, SGD) of the
// native zoo model and of the same network built in Gorgonia (Zoo) and
// lowered, alternating the two in every iteration so that the machine's
// load hits both alike, and report each one's median ms/step and their
// ratio.
// Run with
//
//	CGO_LDFLAGS=-lopenblas go test -tags openblas -run '^$' -bench . -benchtime 10x ./graph

func BenchmarkLoweredVsNativeMNISTCNN(b *testing.B) {
	benchLowered(b, models.Spec{Arch: "mnist-cnn", InShape: []int{1, 28, 28}, Classes: 10}, 64)
}

func BenchmarkLoweredVsNativeVGG(b *testing.B) {
	benchLowered(b, models.Spec{Arch: "vgg", InShape: []int{3, 64, 64}, Classes: 9}, 32)
}

// dpStepper runs DP-SGD steps of one model on a fixed batch: trainer's
// DPSGD Step (C = 1, σ = 1, the batch is the whole training set), as
// `fairdp train --algo dpsgd` runs it, then SGD's update.
type dpStepper struct {
	m     *models.Model[float32]
	opt   nn.Optimizer[float32]
	alg   *trainer.DPSGD[float32]
	batch trainer.Batch[float32]
}

func newDPStepper(tb testing.TB, m *models.Model[float32], x []float32, labels []int) *dpStepper {
	n := len(labels)
	seed := uint64(1)
	_, src := dpops.NewRand(&seed)
	alg, err := trainer.NewDPSGDFrom[float32](trainer.DPSGDOptions{Records: n, Batch: n, Epochs: 1, Clip: 1, Sigma: 1,
		Epsilon: math.Inf(1), Seed: &seed}, src)
	if err != nil {
		tb.Fatal(err)
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	return &dpStepper{m: m, opt: nn.NewSGD[float32](1e-3), alg: alg, batch: trainer.Batch[float32]{Idx: idx, X: x, Labels: labels}}
}

func (s *dpStepper) step(tb testing.TB) {
	if _, err := s.alg.Step(s.m, s.batch); err != nil {
		tb.Fatal(err)
	}
	s.opt.Step(s.m.Params())
}

func benchLowered(b *testing.B, spec models.Spec, batch int) {
	backend.SetThreads(1) // nn parallelises over the batch itself
	native, err := models.New[float32](spec, rand.New(rand.NewPCG(43, 44)))
	if err != nil {
		b.Fatal(err)
	}
	net, err := Zoo[float32](spec, batch, rand.New(rand.NewPCG(43, 44)))
	if err != nil {
		b.Fatal(err)
	}
	l, err := Lower[float32](net.Graph, net.Input, net.Output, LowerOptions{})
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(45, 46))
	x := make([]float32, batch*native.InSize())
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	labels := make([]int, batch)
	for i := range labels {
		labels[i] = rng.IntN(spec.Classes)
	}
	steppers := []*dpStepper{newDPStepper(b, native, x, labels), newDPStepper(b, l.Model, x, labels)}
	for _, s := range steppers {
		s.step(b) // sizes every layer's buffers
	}
	var spent [2][]time.Duration
	b.ResetTimer()
	for i := range b.N {
		for k := range steppers {
			k = (k + i) % 2 // alternate which goes first
			start := time.Now()
			steppers[k].step(b)
			spent[k] = append(spent[k], time.Since(start))
		}
	}
	// Medians: on a shared machine a burst of load can double a few steps.
	median := func(d []time.Duration) float64 {
		slices.Sort(d)
		return d[len(d)/2].Seconds() * 1000
	}
	nativeMs, loweredMs := median(spent[0]), median(spent[1])
	b.ReportMetric(nativeMs, "native-ms/step")
	b.ReportMetric(loweredMs, "lowered-ms/step")
	b.ReportMetric(loweredMs/nativeMs, "lowered/native")
	b.Logf("backend %s, %d workers, batch %d, %s", backend.Name(), nn.Workers(), batch, spec)
}
