package gemm_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/backend"
	"github.com/fairdp/fairdp/gemm"

	"gonum.org/v1/gonum/blas"
	gonumblas "gonum.org/v1/gonum/blas/gonum"
)

// The products fairdp's layers run, with the tiles nn.Conv2d chooses
// (1 MiB im2col tiles) at the benchmark batch sizes of package models: the
// VGG-like net's first, second and last convolutions (forward, input
// gradient, weight gradient) and the MNIST CNN's convolutions and first
// linear layer, and the MNIST CNN's per-sample weight gradients (DP-SGD's
// norms: one image's output gradient against its unfolded input);
// square512 is the classic peak shape. The weight-gradient products read
// B = Uᵀ as nn unfolds it for them (im2row), not transposed.
var shapes = []struct {
	name           string
	transA, transB bool
	m, n, k        int
}{
	{"vgg-conv1-fwd", false, false, 32, 9344, 28},
	{"vgg-conv2-fwd", false, false, 32, 896, 289},
	{"vgg-conv2-dx", true, false, 288, 896, 32},
	{"vgg-conv2-dw", false, false, 32, 289, 896},
	{"vgg-conv6-fwd", false, false, 128, 224, 1153},
	{"mnist-conv1-fwd", false, false, 20, 10368, 26},
	{"mnist-conv2-fwd", false, false, 50, 576, 501},
	{"mnist-fc1-fwd", false, false, 128, 500, 800},
	{"mnist-conv1-persample", false, false, 20, 26, 576},
	{"mnist-conv2-persample", false, false, 50, 501, 64},
	{"square512", false, false, 512, 512, 512},
}

// impl is one SGEMM under comparison.
type impl struct {
	name  string
	setup func(threads int) // select it and set its thread count
	run   func(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int)
}

func trans(t bool) blas.Transpose {
	if t {
		return blas.Trans
	}
	return blas.NoTrans
}

// impls: package gemm as Sgemm runs it (own: the best instruction set's
// kernels, one picked per call) and each kernel it can run alone, gonum's pure-Go
// SGEMM, OpenBLAS in the openblas build and BLIS with -tags blis.
func impls() []impl {
	isa := gemm.BestISA()
	is := []impl{{name: "own", setup: func(t int) {
		if err := gemm.Use(isa); err != nil {
			panic(err)
		}
		gemm.SetThreads(t)
	}, run: gemm.Sgemm}}
	for _, k := range gemm.Kernels() {
		is = append(is, impl{name: "own-" + strings.NewReplacer("×", "x", " ", "-").Replace(k),
			setup: func(t int) {
				if err := gemm.Use(k); err != nil {
					panic(err)
				}
				gemm.SetThreads(t)
			}, run: gemm.Sgemm})
	}
	gonum := gonumblas.Implementation{}
	is = append(is, impl{name: "gonum", setup: func(int) {}, run: func(tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
		gonum.Sgemm(trans(tA), trans(tB), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	}})
	if backend.Name() == "openblas" {
		ob := backend.Implementation()
		is = append(is, impl{name: "openblas", setup: backend.SetThreads, run: func(tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
			ob.Sgemm(trans(tA), trans(tB), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		}})
	}
	return append(is, extraImpls...)
}

var extraImpls []impl // BLIS, with -tags blis

// BenchmarkSgemm runs every implementation on every shape with 1 and 2
// threads, interleaved (shape-major) so machine load hits all alike:
//
//	go test -run '^$' -bench Sgemm ./gemm
//	CGO_LDFLAGS='-lopenblas -lblis' go test -tags 'openblas blis' -run '^$' -bench Sgemm ./gemm
//
// gonum's SGEMM starts its own goroutines (up to GOMAXPROCS) whatever the
// thread column says. GFLOP/cpu-s (work per CPU second of the whole
// process) is the steadier figure on a shared machine; with two threads it
// also charges a library's spinning threads.
func BenchmarkSgemm(b *testing.B) {
	defer gemm.SetThreads(gemm.Threads())
	defer func() { _ = gemm.Use(gemm.BestISA()) }()
	rng := rand.New(rand.NewPCG(1, 1))
	for _, s := range shapes {
		ar, ac := gemm.Stored(s.transA, s.m, s.k)
		br, bc := gemm.Stored(s.transB, s.k, s.n)
		a, bm, c := make([]float32, ar*ac), make([]float32, br*bc), make([]float32, s.m*s.n)
		for i := range a {
			a[i] = float32(rng.NormFloat64())
		}
		for i := range bm {
			bm[i] = float32(rng.NormFloat64())
		}
		for _, threads := range []int{1, 2} {
			for _, im := range impls() {
				b.Run(fmt.Sprintf("%s/%dt/%s", s.name, threads, im.name), func(b *testing.B) {
					im.setup(threads)
					cpu := cpuSeconds()
					// A counted loop, not b.Loop: the CPU time must cover exactly b.N products.
					for range b.N {
						im.run(s.transA, s.transB, s.m, s.n, s.k, 1, a, ac, bm, bc, 0, c, s.n)
					}
					flop := 2 * float64(s.m*s.n*s.k) * float64(b.N)
					b.ReportMetric(flop/b.Elapsed().Seconds()/1e9, "GFLOP/s")
					if cpu := cpuSeconds() - cpu; cpu > 0 {
						b.ReportMetric(flop/cpu/1e9, "GFLOP/cpu-s")
					}
				})
			}
		}
	}
	backend.SetThreads(1)
}
