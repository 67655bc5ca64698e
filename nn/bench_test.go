package nn_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/fairdp/fairdp/nn"
)

// Benchmarks of the peer layouts' layer sizes (bench/RESULTS.md) in float32. Each reports
// samples/s for a training step of the layer (Forward, Backward, ParamGrads)
// and, under /dp, the DP-SGD step (Forward, Backward, SqNorms,
// ParamGrads(scale)). Run with
//
//	CGO_LDFLAGS=-lopenblas go test -tags openblas -run XXX -bench . ./nn

type stack struct {
	layers  []nn.Layer[float32]
	inShape []int
	params  []*nn.Param[float32]
	classes int
}

func newStack(inShape []int, layers ...nn.Layer[float32]) *stack {
	s := &stack{layers: layers, inShape: inShape}
	rng := rand.New(rand.NewPCG(1, 2))
	shape := inShape
	for _, l := range layers {
		if in, ok := l.(interface{ Init(*rand.Rand) }); ok {
			in.Init(rng)
		}
		s.params = append(s.params, l.Params()...)
		shape = l.OutShape(shape)
	}
	s.classes = shape[0]
	return s
}

// step runs one training step; dp adds per-sample norms and clipping.
type stepBufs struct {
	x          []float32
	labels     []int
	loss, dlog []float32
	norms      []float32
	scale      []float32
}

func (s *stack) bufs(batch int) *stepBufs {
	rng := rand.New(rand.NewPCG(3, 4))
	n := 1
	for _, d := range s.inShape {
		n *= d
	}
	b := &stepBufs{x: make([]float32, batch*n), labels: make([]int, batch),
		loss: make([]float32, batch), dlog: make([]float32, batch*s.classes),
		norms: make([]float32, batch), scale: make([]float32, batch)}
	for i := range b.x {
		b.x[i] = float32(rng.NormFloat64())
	}
	for i := range b.labels {
		b.labels[i] = rng.IntN(s.classes)
	}
	return b
}

func (s *stack) step(b *stepBufs, batch int, dp bool) {
	h := b.x[:batch*len(b.x)/len(b.labels)]
	for _, l := range s.layers {
		h = l.Forward(h, batch, true)
	}
	nn.SoftmaxCrossEntropy(h, b.labels[:batch], s.classes, nil, b.loss[:batch], b.dlog[:batch*s.classes])
	d := b.dlog[:batch*s.classes]
	for i := len(s.layers) - 1; i >= 0; i-- {
		d = s.layers[i].Backward(d, i > 0)
	}
	nn.ZeroGrads(s.params)
	var scale []float32
	if dp {
		clear(b.norms[:batch])
		for _, l := range s.layers {
			l.SqNorms(b.norms[:batch])
		}
		for i, n2 := range b.norms[:batch] {
			b.scale[i] = float32(math.Min(1, 1/math.Sqrt(float64(n2))))
		}
		scale = b.scale[:batch]
	}
	for _, l := range s.layers {
		l.ParamGrads(scale)
	}
}

func mnistCNN() *stack {
	return newStack([]int{1, 28, 28},
		nn.NewConv2d[float32](1, 28, 28, 20, 5, 1, 0), nn.NewReLU[float32](), nn.NewMaxPool2d[float32](20, 24, 24, 2),
		nn.NewConv2d[float32](20, 12, 12, 50, 5, 1, 0), nn.NewReLU[float32](), nn.NewMaxPool2d[float32](50, 8, 8, 2),
		nn.NewFlatten[float32](), nn.NewLinear[float32](800, 500), nn.NewReLU[float32](), nn.NewLinear[float32](500, 10))
}

func vggLike() *stack {
	conv := func(in, out, hw int) nn.Layer[float32] { return nn.NewConv2d[float32](in, hw, hw, out, 3, 1, 1) }
	relu := nn.NewReLU[float32]
	return newStack([]int{3, 128, 128},
		conv(3, 32, 128), relu(), conv(32, 32, 128), relu(), nn.NewMaxPool2d[float32](32, 128, 128, 2),
		conv(32, 64, 64), relu(), conv(64, 64, 64), relu(), nn.NewMaxPool2d[float32](64, 64, 64, 2),
		conv(64, 128, 32), relu(), conv(128, 128, 32), relu(), nn.NewMaxPool2d[float32](128, 32, 32, 4),
		nn.NewFlatten[float32](), nn.NewLinear[float32](8192, 160), relu(), nn.NewLinear[float32](160, 64), relu(),
		nn.NewLinear[float32](64, 9))
}

func benchStack(b *testing.B, s *stack, batch int) {
	for _, dp := range []bool{false, true} {
		name := "step"
		if dp {
			name = "dp"
		}
		b.Run(name, func(b *testing.B) {
			bufs := s.bufs(batch)
			s.step(bufs, batch, dp) // warm-up: buffers grow once
			b.ReportAllocs()
			b.ResetTimer()
			cpu := cpuTime()
			for range b.N {
				s.step(bufs, batch, dp)
			}
			reportRates(b, batch, cpu)
		})
	}
}

func BenchmarkMNISTCNN(b *testing.B) { benchStack(b, mnistCNN(), 256) }

func BenchmarkVGGLike(b *testing.B) { benchStack(b, vggLike(), 64) }

// benchLayer times one layer's step on random input and output gradient.
func benchLayer(b *testing.B, l nn.Layer[float32], inShape []int, batch int, needInput bool) {
	rng := rand.New(rand.NewPCG(5, 6))
	in, out := 1, 1
	for _, d := range inShape {
		in *= d
	}
	for _, d := range l.OutShape(inShape) {
		out *= d
	}
	if i, ok := l.(interface{ Init(*rand.Rand) }); ok {
		i.Init(rng)
	}
	x := make([]float32, batch*in)
	dy := make([]float32, batch*out)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	for i := range dy {
		dy[i] = float32(rng.NormFloat64())
	}
	norms := make([]float32, batch)
	scale := make([]float32, batch)
	for i := range scale {
		scale[i] = 0.5
	}
	run := func(mode string) {
		l.Forward(x, batch, true)
		l.Backward(dy, needInput)
		switch mode {
		case "step":
			l.ParamGrads(nil)
		case "dp":
			l.SqNorms(norms)
			l.ParamGrads(scale)
		case "sqnorms":
			l.SqNorms(norms)
		case "dp-fused":
			l.(nn.ClipSummer[float32]).ClipSum(norms, halfScaler{})
		}
	}
	modes := []string{"step", "dp"}
	if s, ok := l.(nn.ClipSummer[float32]); ok && s.ClipSumGain(batch) > 0 {
		modes = append(modes, "dp-fused")
	}
	for _, mode := range modes {
		b.Run(mode, func(b *testing.B) {
			run(mode)
			b.ReportAllocs()
			b.ResetTimer()
			cpu := cpuTime()
			for range b.N {
				run(mode)
			}
			reportRates(b, batch, cpu)
		})
	}
}

// halfScaler clips every sample by half, as the "dp" mode's scale does.
type halfScaler struct{}

func (halfScaler) SampleScale(int) float32 { return 0.5 }

func BenchmarkLinear102x1(b *testing.B) {
	benchLayer(b, nn.NewLinear[float32](102, 1), []int{102}, 1024, false)
}

func BenchmarkLinear800x500(b *testing.B) {
	benchLayer(b, nn.NewLinear[float32](800, 500), []int{800}, 256, true)
}

func BenchmarkMNISTConv1(b *testing.B) {
	benchLayer(b, nn.NewConv2d[float32](1, 28, 28, 20, 5, 1, 0), []int{1, 28, 28}, 256, false)
}

func BenchmarkMNISTConv2(b *testing.B) {
	benchLayer(b, nn.NewConv2d[float32](20, 12, 12, 50, 5, 1, 0), []int{20, 12, 12}, 256, true)
}

func BenchmarkVGGConv(b *testing.B) {
	for _, c := range []struct {
		name          string
		in, out, size int
	}{{"1_3to32_128", 3, 32, 128}, {"2_32to32_128", 32, 32, 128}, {"3_32to64_64", 32, 64, 64},
		{"4_64to64_64", 64, 64, 64}, {"5_64to128_32", 64, 128, 32}, {"6_128to128_32", 128, 128, 32}} {
		b.Run(c.name, func(b *testing.B) {
			benchLayer(b, nn.NewConv2d[float32](c.in, c.size, c.size, c.out, 3, 1, 1), []int{c.in, c.size, c.size}, 64, c.in != 3)
		})
	}
}

// cpuTime is the process's user+system CPU time. The machine is shared, so
// besides wall-clock samples/s the benchmarks report CPU seconds per step,
// which contention inflates far less.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func reportRates(b *testing.B, batch int, cpuStart time.Duration) {
	b.ReportMetric(float64(batch*b.N)/b.Elapsed().Seconds(), "samples/s")
	b.ReportMetric((cpuTime()-cpuStart).Seconds()*1e3/float64(b.N), "cpu-ms/op")
}

// BenchmarkConvCache compares keeping the per-sample gradients (the
// default) with recomputing them (cache limit 0).
func BenchmarkConvCache(b *testing.B) {
	for _, cache := range []int{0, nn.DefaultCacheBytes} {
		for _, c := range []struct {
			name                string
			in, out, size, k, p int
			batch               int
		}{{"MNISTConv2", 20, 50, 12, 5, 0, 256}, {"VGGConv6", 128, 128, 32, 3, 1, 64}} {
			b.Run(fmt.Sprintf("%s/cache=%dMiB", c.name, cache>>20), func(b *testing.B) {
				conv := nn.NewConv2d[float32](c.in, c.size, c.size, c.out, c.k, 1, c.p)
				conv.SetCacheLimit(cache)
				benchLayer(b, conv, []int{c.in, c.size, c.size}, c.batch, true)
			})
		}
	}
}
