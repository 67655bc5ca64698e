package models

import (
	"math/rand/v2"
	"testing"

	"github.com/fairdp/fairdp/backend"
	"github.com/fairdp/fairdp/nn"
)

// Throughput of one full training step in float32 on synthetic inputs
// (the Step of trainer's SGD and DPSGD and of package fermi's DP-FERMI, as
// `fairdp train` runs them, then SGD's update), to compare with
// the peer figures in bench/RESULTS.md (PyTorch tuned 6.62M / 4,193 /
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

// LibraryStep returns one full training step of the algorithm algo
// ("sgd", "dpsgd" or "fermi", as trainer names them) on m with the batch x
// and labels. It is set by steps_test.go, an external test package,
// because the packages that implement the algorithms import this one.
var LibraryStep func(tb testing.TB, algo string, m *Model[float32], x []float32, labels []int, classes int) func()

// stepAlgos maps each step kind to the algorithm whose Step it times.
var stepAlgos = map[string]string{stepPlain: "sgd", stepDPSGD: "dpsgd", stepDPFERMI: "fermi"}

// stepper holds one benchmark's model and batch.
type stepper struct {
	m       *Model[float32]
	classes int
	x       []float32
	labels  []int
}

func newStepper(tb testing.TB, spec Spec, batch int) *stepper {
	rng := rand.New(rand.NewPCG(41, 42))
	m, err := New[float32](spec, rng)
	if err != nil {
		tb.Fatal(err)
	}
	s := &stepper{m: m, classes: spec.Classes, x: make([]float32, batch*m.InSize()), labels: make([]int, batch)}
	for i := range s.x {
		s.x[i] = float32(rng.NormFloat64())
	}
	for i := range s.labels {
		s.labels[i] = rng.IntN(spec.Classes)
	}
	return s
}

// stepFunc returns the step of the given kind (stepPlain, stepDPSGD or
// stepDPFERMI) on s.
func (s *stepper) stepFunc(tb testing.TB, kind string) func() {
	algo, ok := stepAlgos[kind]
	if !ok {
		tb.Fatalf("unknown step kind %q", kind)
	}
	return LibraryStep(tb, algo, s.m, s.x, s.labels, s.classes)
}

func benchStep(b *testing.B, spec Spec, batch int, kind string) {
	backend.SetThreads(1) // nn parallelises over the batch itself (like the "tuned" peer runs)
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
