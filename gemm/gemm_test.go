package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// reference is the slow, independent path: a float64 triple loop straight
// from the definition C = alpha·op(A)·op(B) + beta·C (C not read when beta
// is 0). It also returns, per element, the magnitude Σ|alpha·a·b| + |beta·c|
// that bounds float32 rounding error.
func reference(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) (want, mag []float64) {
	want, mag = make([]float64, m*n), make([]float64, m*n)
	at := func(i, p int) float64 {
		if transA {
			return float64(a[p*lda+i])
		}
		return float64(a[i*lda+p])
	}
	bt := func(p, j int) float64 {
		if transB {
			return float64(b[j*ldb+p])
		}
		return float64(b[p*ldb+j])
	}
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s, g float64
			if alpha != 0 {
				for p := 0; p < k; p++ {
					s += at(i, p) * bt(p, j)
					g += math.Abs(at(i, p) * bt(p, j))
				}
			}
			s *= float64(alpha)
			g *= math.Abs(float64(alpha))
			if beta != 0 {
				s += float64(beta) * float64(c[i*ldc+j])
				g += math.Abs(float64(beta) * float64(c[i*ldc+j]))
			}
			want[i*n+j], mag[i*n+j] = s, g
		}
	}
	return want, mag
}

type gemmCase struct {
	transA, transB bool
	m, n, k        int
	pad            int // extra stride beyond the stored columns (lda > cols)
	alpha, beta    float32
	nanC           bool // fill C with NaN (only meaningful with beta = 0)
	nanAB          bool // fill A and B with NaN (only meaningful with alpha = 0)
}

func (c gemmCase) String() string {
	return fmt.Sprintf("tA=%v,tB=%v,m=%d,n=%d,k=%d,pad=%d,alpha=%g,beta=%g,nanC=%v,nanAB=%v",
		c.transA, c.transB, c.m, c.n, c.k, c.pad, c.alpha, c.beta, c.nanC, c.nanAB)
}

// cases: every transpose pair over empty, tiny, prime, tile-straddling and
// block-straddling shapes (k > blockK, m > blockM, n > blockN), padded
// strides and the alpha/beta values BLAS treats specially.
func cases() []gemmCase {
	var cs []gemmCase
	shapes := [][3]int{
		{0, 0, 0}, {0, 5, 3}, {5, 0, 3}, {4, 5, 0}, {1, 1, 1}, {1, 7, 1}, {7, 1, 3}, {2, 3, 5},
		{6, 16, 8}, {12, 32, 9}, {8, 32, 16}, {13, 17, 11}, {31, 37, 29}, {33, 65, 7},
		{17, 97, 263}, {197, 13, 5}, {3, 3100, 4}, {29, 41, 300},
	}
	for _, s := range shapes {
		for _, tA := range []bool{false, true} {
			for _, tB := range []bool{false, true} {
				cs = append(cs, gemmCase{transA: tA, transB: tB, m: s[0], n: s[1], k: s[2], alpha: 1, beta: 0})
				cs = append(cs, gemmCase{transA: tA, transB: tB, m: s[0], n: s[1], k: s[2], pad: 3, alpha: -1.5, beta: 0.75})
			}
		}
	}
	for _, tA := range []bool{false, true} {
		cs = append(cs,
			gemmCase{transA: tA, m: 13, n: 19, k: 7, alpha: 1, beta: 0, nanC: true},
			gemmCase{transA: tA, transB: true, m: 13, n: 19, k: 7, pad: 1, alpha: 2, beta: 0, nanC: true},
			gemmCase{transA: tA, m: 13, n: 19, k: 7, alpha: 1, beta: 1},
			gemmCase{transA: tA, m: 13, n: 19, k: 7, alpha: 0, beta: 1, nanAB: true},
			gemmCase{transA: tA, m: 13, n: 19, k: 7, alpha: 0, beta: -2, nanAB: true},
			gemmCase{transA: tA, m: 13, n: 19, k: 0, alpha: 1, beta: 0, nanC: true},
		)
	}
	return cs
}

func (tc gemmCase) run(t *testing.T, kr *kernel, nt int, rng *rand.Rand) {
	t.Helper()
	ar, ac := stored(tc.transA, tc.m, tc.k)
	br, bc := stored(tc.transB, tc.k, tc.n)
	lda, ldb, ldc := max(1, ac+tc.pad), max(1, bc+tc.pad), max(1, tc.n+tc.pad)
	fill := func(rows, cols, ld int, nan bool) []float32 {
		s := make([]float32, max(0, (rows-1)*ld+cols)+tc.pad) // trailing slack must stay untouched
		for i := range s {
			s[i] = float32(rng.NormFloat64())
			if nan {
				s[i] = float32(math.NaN())
			}
		}
		return s
	}
	a := fill(ar, ac, lda, tc.nanAB)
	b := fill(br, bc, ldb, tc.nanAB)
	c := fill(tc.m, tc.n, ldc, tc.nanC)
	orig := append([]float32(nil), c...)
	want, mag := reference(tc.transA, tc.transB, tc.m, tc.n, tc.k, tc.alpha, a, lda, b, ldb, tc.beta, c, ldc)
	sgemm(kr, nt, tc.transA, tc.transB, tc.m, tc.n, tc.k, tc.alpha, a, lda, b, ldb, tc.beta, c, ldc)
	for idx := range c {
		i, j := idx/ldc, idx%ldc
		if i >= tc.m || j >= tc.n {
			if math.Float32bits(c[idx]) != math.Float32bits(orig[idx]) {
				t.Fatalf("%s, %v: element %d outside C changed: %v → %v", kr.name, tc, idx, orig[idx], c[idx])
			}
			continue
		}
		w, g := want[i*tc.n+j], mag[i*tc.n+j]
		got := float64(c[idx])
		if math.IsNaN(got) || math.Abs(got-w) > 1e-5*g+1e-30 {
			t.Fatalf("%s, %d threads, %v: C[%d,%d] = %v, want %v (±%.2g)", kr.name, nt, tc, i, j, got, w, 1e-5*g)
		}
	}
}

// TestKernelsAgreeWithReference checks every kernel this CPU can run
// against the reference on every case, single-threaded.
func TestKernelsAgreeWithReference(t *testing.T) {
	for _, kr := range kernels() {
		t.Run(strings.ReplaceAll(kr.name, "×", "x"), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			for _, tc := range cases() {
				tc.run(t, &kr, 1, rng)
			}
		})
	}
}

// TestThreadedSplits checks the parallel splits (over N, and over M when N
// is too narrow to split) against the reference, for every kernel.
func TestThreadedSplits(t *testing.T) {
	for _, kr := range kernels() {
		t.Run(strings.ReplaceAll(kr.name, "×", "x"), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, 4))
			for _, tc := range []gemmCase{
				{m: 67, n: 401, k: 53, alpha: 1, beta: 0},                                       // split over N
				{transA: true, transB: true, m: 67, n: 401, k: 53, pad: 2, alpha: 0.5, beta: 2}, // over N, transposed
				{m: 3001, n: 17, k: 29, alpha: 1, beta: 1},                                      // too narrow: over M
				{transA: true, m: 3001, n: 17, k: 29, pad: 1, alpha: -1, beta: 0},               // over M, transposed
			} {
				for _, nt := range []int{2, 3} {
					tc.run(t, &kr, nt, rng)
				}
			}
		})
	}
}

// TestBadShapesPanic checks that a stride or slice too small is refused
// rather than read out of bounds by the assembly.
func TestBadShapesPanic(t *testing.T) {
	for _, f := range []func(){
		func() {
			Sgemm(false, false, 2, 2, 2, 1, make([]float32, 4), 1, make([]float32, 4), 2, 0, make([]float32, 4), 2)
		},
		func() {
			Sgemm(false, false, 2, 2, 2, 1, make([]float32, 3), 2, make([]float32, 4), 2, 0, make([]float32, 4), 2)
		},
		func() {
			Sgemm(false, true, 2, 3, 2, 1, make([]float32, 4), 2, make([]float32, 4), 2, 0, make([]float32, 6), 3)
		},
		func() {
			Sgemm(false, false, 2, 2, 2, 1, make([]float32, 4), 2, make([]float32, 4), 2, 0, make([]float32, 3), 2)
		},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			f()
		}()
	}
}

func TestUse(t *testing.T) {
	defer active.Store(active.Load())
	if err := Use("go 4x4"); err != nil || Kernel() != "go 4×4" || SIMD() {
		t.Fatalf("Use(go 4x4): %v, kernel %s", err, Kernel())
	}
	if err := Use("go"); err != nil || Kernel() != "go 4×4" || !strings.Contains(Describe(), "go 4×4 micro-kernel,") {
		t.Fatalf("Use(go): %v, kernel %s, %s", err, Kernel(), Describe())
	}
	if err := Use("sse9"); err == nil {
		t.Fatal("Use(sse9) accepted")
	}
}

func ExampleSgemm() {
	// C = A·Bᵀ for A 2×3 and B 2×3 (row-major).
	a := []float32{1, 2, 3, 4, 5, 6}
	b := []float32{1, 0, 1, 0, 1, 0}
	c := make([]float32, 4)
	Sgemm(false, true, 2, 2, 3, 1, a, 3, b, 3, 0, c, 2)
	fmt.Println(c)
	// Output: [4 2 10 5]
}

// TestSsyrkUpper checks the upper triangle against the reference product
// and that the strictly lower triangle is untouched, across block edges.
func TestSsyrkUpper(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, tc := range []struct {
		trans       bool
		n, k, pad   int
		alpha, beta float32
	}{
		{false, 1, 1, 0, 1, 0}, {true, 5, 3, 0, 1, 0}, {false, 64, 9, 2, 2, 0.5},
		{true, 65, 17, 1, 1, 0}, {false, 150, 31, 0, -1, 1}, {true, 129, 290, 3, 0.5, -2},
	} {
		ar, ac := stored(tc.trans, tc.n, tc.k)
		lda, ldc := ac+tc.pad, tc.n+tc.pad
		a := make([]float32, (ar-1)*lda+ac)
		c := make([]float32, (tc.n-1)*ldc+tc.n)
		for i := range a {
			a[i] = float32(rng.NormFloat64())
		}
		for i := range c {
			c[i] = float32(rng.NormFloat64())
			if tc.beta == 0 {
				c[i] = float32(math.NaN()) // never read when beta is 0; the lower triangle must stay NaN
			}
		}
		orig := append([]float32(nil), c...)
		want, mag := reference(tc.trans, !tc.trans, tc.n, tc.n, tc.k, tc.alpha, a, lda, a, lda, tc.beta, c, ldc)
		SsyrkUpper(tc.trans, tc.n, tc.k, tc.alpha, a, lda, tc.beta, c, ldc)
		for i := 0; i < tc.n; i++ {
			for j := 0; j < tc.n; j++ {
				got := c[i*ldc+j]
				if j < i {
					if math.Float32bits(got) != math.Float32bits(orig[i*ldc+j]) {
						t.Fatalf("%+v: lower C[%d,%d] changed", tc, i, j)
					}
					continue
				}
				w, g := want[i*tc.n+j], mag[i*tc.n+j]
				if math.IsNaN(float64(got)) || math.Abs(float64(got)-w) > 1e-5*g+1e-30 {
					t.Fatalf("%+v: C[%d,%d] = %v, want %v", tc, i, j, got, w)
				}
			}
		}
	}
}

// TestPick checks the per-call choice of tile on a made-up family: the
// least padding wins, the first listed on ties.
func TestPick(t *testing.T) {
	f := &family{name: "test", kernels: []kernel{{name: "8x32", mr: 8, nr: 32}, {name: "12x32", mr: 12, nr: 32}, {name: "6x16", mr: 6, nr: 16}}}
	for _, tc := range []struct {
		m, n int
		want string
	}{{32, 64, "8x32"}, {36, 64, "12x32"}, {24, 64, "8x32"}, {20, 64, "8x32"}, {50, 64, "6x16"}, {56, 64, "8x32"}, {1, 1, "6x16"}, {6, 40, "6x16"}} {
		if got := f.pick(tc.m, tc.n).name; got != tc.want {
			t.Errorf("pick(%d, %d) = %s, want %s", tc.m, tc.n, got, tc.want)
		}
	}
}

// TestKernelsFitWorkspace: getWorkspace sizes its buffers for tiles up to
// 16×64.
func TestKernelsFitWorkspace(t *testing.T) {
	for _, k := range kernels() {
		if k.mr > 16 || k.nr > 64 {
			t.Errorf("%s is larger than the workspace's 16×64 tile", k.name)
		}
	}
}

// TestTransposePanel checks the packing transpose (eight-row AVX strips
// where available, then Go) element by element on sizes around 8.
func TestTransposePanel(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, rows := range []int{1, 4, 7, 8, 9, 16, 23} {
		for _, kb := range []int{1, 7, 8, 9, 17, 64} {
			const r0, p0, f = 3, 5, 1.5
			w, ld := rows+3, p0+kb+2
			src := make([]float32, (r0+rows)*ld)
			for i := range src {
				src[i] = float32(rng.NormFloat64())
			}
			pan := make([]float32, kb*w)
			for i := range pan {
				pan[i] = -7
			}
			transposePanel(pan, w, src, ld, r0, p0, rows, kb, f)
			for p := 0; p < kb; p++ {
				for r := 0; r < w; r++ {
					want := float32(-7) // columns past rows are not written
					if r < rows {
						want = f * src[(r0+r)*ld+p0+p]
					}
					if got := pan[p*w+r]; got != want {
						t.Fatalf("rows %d, kb %d: pan[%d·w+%d] = %v, want %v", rows, kb, p, r, got, want)
					}
				}
			}
		}
	}
}

// TestSuits: matrix-vector and tiny-k shapes go elsewhere, conv shapes stay.
func TestSuits(t *testing.T) {
	defer active.Store(active.Load())
	active.Store(&family{name: "test", kernels: []kernel{{name: "12x32", mr: 12, nr: 32}, {name: "8x32", mr: 8, nr: 32}}})
	for _, tc := range []struct {
		m, n, k int
		want    bool
	}{{512, 1, 102, false}, {512, 102, 1, false}, {102, 1, 1024, false}, {128, 10, 500, false},
		{32, 896, 289, true}, {20, 10368, 26, true}, {288, 896, 32, true}, {32, 289, 896, true}, {5, 40, 3, false}} {
		if got := Suits(tc.m, tc.n, tc.k); got != tc.want {
			t.Errorf("Suits(%d, %d, %d) = %v, want %v", tc.m, tc.n, tc.k, got, tc.want)
		}
	}
}

// FuzzSgemm compares every kernel with the reference on fuzzer-chosen
// shapes, transposes, strides and alpha/beta (`go test -fuzz FuzzSgemm
// ./gemm`; plain `go test` runs the seeds).
func FuzzSgemm(f *testing.F) {
	f.Add(uint8(5), uint8(7), uint8(3), uint8(0), uint8(0), float32(1), float32(0), uint64(1))
	f.Add(uint8(33), uint8(65), uint8(17), uint8(3), uint8(2), float32(-2), float32(0.5), uint64(2))
	f.Add(uint8(13), uint8(1), uint8(255), uint8(1), uint8(1), float32(0.25), float32(1), uint64(3))
	f.Fuzz(func(t *testing.T, m, n, k, flags, pad uint8, alpha, beta float32, seed uint64) {
		if math.IsNaN(float64(alpha)) || math.IsInf(float64(alpha), 0) || math.Abs(float64(alpha)) > 1e3 ||
			math.IsNaN(float64(beta)) || math.IsInf(float64(beta), 0) || math.Abs(float64(beta)) > 1e3 {
			t.Skip("alpha and beta are kept finite and moderate so the tolerance means something")
		}
		tc := gemmCase{transA: flags&1 != 0, transB: flags&2 != 0, m: int(m), n: int(n), k: int(k),
			pad: int(pad % 5), alpha: alpha, beta: beta, nanC: beta == 0}
		rng := rand.New(rand.NewPCG(seed, 99))
		for _, kr := range kernels() {
			tc.run(t, &kr, 1+int(flags>>2)%3, rng)
		}
	})
}
