package models

import (
	"math"
	"math/rand/v2"
	"testing"

	"fairdp/backend"
	"fairdp/nn"
)

// Throughput of one full training step in float32 on synthetic inputs
// (plain, DP-SGD, and DP-FERMI through package fermi), to compare with
// REFERENCE §9's peer figures (PyTorch tuned 6.62M / 4,193 /
// 18.8 samples/s; Opacus DP-SGD 1.20M / 504 / 9.5 for logistic / MNIST CNN /
// VGG-like). cpu-s/op (user+system CPU per step, all threads) shows what a
// step costs when other jobs share the machine. Run with
//
//	go test -run '^$' -bench . -benchtime 5x ./models
//	CGO_LDFLAGS=-lopenblas go test -tags openblas -run '^$' -bench . -benchtime 5x ./models

var (
	benchLogistic = Spec{Arch: "logistic", InShape: []int{102}, Classes: 2}
	benchMNIST    = Spec{Arch: "mnist-cnn", InShape: []int{1, 28, 28}, Classes: 10}
	benchVGG      = Spec{Arch: "vgg", InShape: []int{3, 128, 128}, Classes: 9}
)

func BenchmarkTrainLogistic(b *testing.B) { benchStep(b, benchLogistic, 1024, stepPlain) }
func BenchmarkTrainMNISTCNN(b *testing.B) { benchStep(b, benchMNIST, 256, stepPlain) }
func BenchmarkTrainVGG(b *testing.B)      { benchStep(b, benchVGG, 64, stepPlain) }

func BenchmarkDPStepLogistic(b *testing.B) { benchStep(b, benchLogistic, 1024, stepDPSGD) }
func BenchmarkDPStepMNISTCNN(b *testing.B) { benchStep(b, benchMNIST, 256, stepDPSGD) }
func BenchmarkDPStepVGG(b *testing.B)      { benchStep(b, benchVGG, 64, stepDPSGD) }

func BenchmarkDPFERMIStepLogistic(b *testing.B) { benchStep(b, benchLogistic, 1024, stepDPFERMI) }
func BenchmarkDPFERMIStepMNISTCNN(b *testing.B) { benchStep(b, benchMNIST, 256, stepDPFERMI) }
func BenchmarkDPFERMIStepVGG(b *testing.B)      { benchStep(b, benchVGG, 64, stepDPFERMI) }

// The kinds of step a benchmark (and a row of TestBenchTable) times.
const (
	stepPlain   = "plain"
	stepDPSGD   = "dp-sgd"
	stepDPFERMI = "dp-fermi"
)

// stepKinds are the rows of each model in TestBenchTable, in order.
var stepKinds = []string{stepPlain, stepDPSGD, stepDPFERMI}

// DPFERMIStep returns one full DP-FERMI step (package fermi's Algorithm
// Step on the batch x, labels with a synthetic binary sensitive attribute,
// then opt) on m. It is set by fermibench_test.go, an external test
// package, because package fermi imports this one.
var DPFERMIStep func(tb testing.TB, m *Model[float32], opt nn.Optimizer[float32], x []float32, labels []int, classes int) func()

// stepper holds one benchmark's model, batch and buffers.
type stepper struct {
	m       *Model[float32]
	classes int
	opt     nn.Optimizer[float32]
	rng     *rand.Rand
	x       []float32
	labels  []int
	loss    []float32
	dlogits []float32
	norms   []float32
	scale   []float32
}

func newStepper(tb testing.TB, spec Spec, batch int) *stepper {
	rng := rand.New(rand.NewPCG(41, 42))
	m, err := New[float32](spec, rng)
	if err != nil {
		tb.Fatal(err)
	}
	s := &stepper{m: m, classes: spec.Classes, opt: nn.NewSGD[float32](1e-3), rng: rng,
		x: make([]float32, batch*m.InSize()), labels: make([]int, batch),
		loss: make([]float32, batch), dlogits: make([]float32, batch*m.OutDim()),
		norms: make([]float32, batch), scale: make([]float32, batch)}
	for i := range s.x {
		s.x[i] = float32(rng.NormFloat64())
	}
	for i := range s.labels {
		s.labels[i] = rng.IntN(spec.Classes)
	}
	return s
}

// step is one non-private step: forward, loss, backward, batch gradient
// (mean over the batch), SGD.
func (s *stepper) step() {
	batch := len(s.labels)
	logits := s.m.Forward(s.x, batch, true)
	s.m.Loss(logits, s.labels, nil, s.loss, s.dlogits)
	s.m.Backward(s.dlogits)
	for i := range s.scale {
		s.scale[i] = 1 / float32(batch)
	}
	s.m.ZeroGrads()
	s.m.ParamGrads(s.scale)
	s.opt.Step(s.m.Params())
}

// dpStep is DP-SGD as Opacus runs it in REFERENCE §9 (C = 1, σ = 1):
// per-sample norms, clip factors, the clipped sum, Gaussian noise, SGD.
func (s *stepper) dpStep() {
	const clip, sigma = 1.0, 1.0
	batch := len(s.labels)
	logits := s.m.Forward(s.x, batch, true)
	s.m.Loss(logits, s.labels, nil, s.loss, s.dlogits)
	s.m.Backward(s.dlogits)
	clear(s.norms)
	s.m.SqNorms(s.norms)
	for i, sq := range s.norms {
		s.scale[i] = float32(math.Min(1, clip/math.Sqrt(float64(sq)))) / float32(batch)
	}
	s.m.ZeroGrads()
	s.m.ParamGrads(s.scale)
	for _, p := range s.m.Params() {
		for j := range p.Grad {
			p.Grad[j] += float32(sigma * clip / float64(batch) * s.rng.NormFloat64())
		}
	}
	s.opt.Step(s.m.Params())
}

// stepFunc returns the step of the given kind (stepPlain, stepDPSGD or
// stepDPFERMI) on s.
func (s *stepper) stepFunc(tb testing.TB, kind string) func() {
	switch kind {
	case stepPlain:
		return s.step
	case stepDPSGD:
		return s.dpStep
	case stepDPFERMI:
		return DPFERMIStep(tb, s.m, s.opt, s.x, s.labels, s.classes)
	}
	tb.Fatalf("unknown step kind %q", kind)
	return nil
}

func benchStep(b *testing.B, spec Spec, batch int, kind string) {
	backend.SetThreads(1) // nn parallelises over the batch itself (REFERENCE §9 "tuned")
	s := newStepper(b, spec, batch)
	run := s.stepFunc(b, kind)
	run() // sizes every layer's buffers
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuSeconds()
	for range b.N {
		run()
	}
	b.ReportMetric(float64(batch*b.N)/b.Elapsed().Seconds(), "samples/s")
	b.ReportMetric((cpuSeconds()-cpu)/float64(b.N), "cpu-s/op")
	b.Logf("backend %s, %d workers, batch %d", backend.Name(), nn.Workers(), batch)
}
