package gemm

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"
)

// family is the set of kernels Sgemm chooses from: every kernel of the best
// instruction set the CPU has, or the one kernel Use named.
type family struct {
	name    string // "avx512", or a kernel's name
	kernels []kernel
}

// active is the family Sgemm uses.
var active atomic.Pointer[family]

// threads is how many goroutines one Sgemm call may use.
var threads atomic.Int32

func init() {
	ks := kernels()
	best := &family{name: ks[0].isa}
	for _, k := range ks {
		if k.isa == best.name {
			best.kernels = append(best.kernels, k)
		}
	}
	active.Store(best)
	if name := os.Getenv("FAIRDP_GEMM_KERNEL"); name != "" {
		if err := Use(name); err != nil {
			fmt.Fprintln(os.Stderr, "fairdp:", err)
		}
	}
	threads.Store(int32(runtime.NumCPU()))
}

// Use restricts Sgemm to one kernel, by name ("avx512 12x32", "avx2 6x16",
// "go 4x4"), or to an instruction set's kernels ("avx512", "avx2", "go").
// It exists for benchmarks and diagnosis (FAIRDP_GEMM_KERNEL does the same
// at start-up): by default Sgemm picks, per call, among the kernels of the
// best instruction set the CPU supports. Kernels the CPU cannot run are
// refused.
func Use(name string) error {
	want := strings.ToLower(strings.ReplaceAll(name, "×", "x"))
	ks := kernels()
	f := &family{name: want}
	var names []string
	for i := range ks {
		n := strings.ReplaceAll(ks[i].name, "×", "x")
		if n == want {
			active.Store(&family{name: ks[i].name, kernels: []kernel{ks[i]}})
			return nil
		}
		if ks[i].isa == want {
			f.kernels = append(f.kernels, ks[i])
		}
		names = append(names, n)
	}
	if len(f.kernels) > 0 {
		active.Store(f)
		return nil
	}
	return fmt.Errorf("gemm: kernel %q is not available on this CPU (have %s)", name, strings.Join(names, ", "))
}

// Kernel names the kernels in use: an instruction set ("avx512") when
// Sgemm picks among its kernels per call, else one kernel ("avx2 6×16").
func Kernel() string {
	f := active.Load()
	if len(f.kernels) == 1 {
		return f.kernels[0].name
	}
	var tiles []string
	for _, k := range f.kernels {
		tiles = append(tiles, fmt.Sprintf("%d×%d", k.mr, k.nr))
	}
	return f.name + " " + strings.Join(tiles, "/")
}

// SIMD reports whether the kernels in use are vector (assembly) kernels,
// the condition under which callers should prefer this package to a BLAS.
func SIMD() bool { return active.Load().kernels[0].isa != "go" }

// pick returns the kernel of f whose tiles cover the m×n product with the
// least padding (wasted multiply-adds on edge tiles), the first listed on
// ties: 36 output rows fit 12×32 tiles exactly but waste 4 rows of 8×32,
// while 32 or 20 rows go to 8×32, the fastest alone.
func (f *family) pick(m, n int) *kernel {
	best, waste := &f.kernels[0], -1
	for i := range f.kernels {
		k := &f.kernels[i]
		if w := roundUp(m, k.mr)*roundUp(n, k.nr) - m*n; waste < 0 || w < waste {
			best, waste = k, w
		}
	}
	return best
}

// SetThreads sets how many goroutines one Sgemm call may use (n < 1 means
// 1). Callers that already run several products at once, one per core, set
// it to 1, as they do for OpenBLAS. The default is the number of CPUs.
func SetThreads(n int) { threads.Store(int32(max(1, n))) }

// Threads reports how many goroutines one Sgemm call may use.
func Threads() int { return int(threads.Load()) }

// Describe names the path in use, for `fairdp version` and progress lines:
// "gemm: avx512 8×32/12×32/14×32 micro-kernels, 2 threads per product".
func Describe() string {
	t := Threads()
	s := "s"
	if t == 1 {
		s = ""
	}
	ks := "micro-kernels"
	if len(active.Load().kernels) == 1 {
		ks = "micro-kernel"
	}
	return fmt.Sprintf("gemm: %s %s, %d thread%s per product", Kernel(), ks, t, s)
}

// Sgemm computes C = alpha·op(A)·op(B) + beta·C for row-major float32
// matrices, where op(A) is m×k, op(B) is k×n and C is m×n; transA and transB
// select the transposes and lda, ldb, ldc are the row strides, as in BLAS's
// sgemm (CblasRowMajor). When beta is 0, C is not read (NaNs in C do not
// propagate). It panics on a stride or slice too small for its shape.
func Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	sgemm(active.Load().pick(m, n), Threads(), transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// Suits reports whether the kernels are efficient for an m×n×k product:
// its tiles cover C with at most twice its area in padding and k is at
// least 4. Matrix-vector shapes (n = 1 in a logistic regression's forward
// pass, k = 1 in its input gradient) would run a 12×32 tile to compute one
// column, or load and store C for one multiply-add; callers with a BLAS
// send those there.
func Suits(m, n, k int) bool {
	kr := active.Load().pick(m, n)
	return k >= 4 && roundUp(m, kr.mr)*roundUp(n, kr.nr) <= 2*m*n
}

// minParallelMACs is the product size below which one goroutine does the
// whole product: starting and joining a goroutine costs microseconds.
const minParallelMACs = 1 << 20

func sgemm(kr *kernel, nt int, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if m < 0 || n < 0 || k < 0 {
		panic(fmt.Sprintf("gemm: negative dimension m=%d n=%d k=%d", m, n, k))
	}
	ar, ac := stored(transA, m, k)
	br, bc := stored(transB, k, n)
	checkMatrix("A", ar, ac, a, lda)
	checkMatrix("B", br, bc, b, ldb)
	checkMatrix("C", m, n, c, ldc)
	if m == 0 || n == 0 {
		return
	}
	// beta = 0 with a product to add is done by the kernels, which then
	// overwrite C instead of accumulating into it.
	overwrite := beta == 0 && k > 0 && alpha != 0
	if beta != 1 && !overwrite {
		ScaleC(m, n, beta, c, ldc)
	}
	if k == 0 || alpha == 0 {
		return
	}
	if nt > 1 && m*n*k >= minParallelMACs {
		if parts := min(nt, n/(2*kr.nr)); parts > 1 {
			split(parts, n, kr.nr, func(j0, j1 int) {
				bj := j0
				if transB {
					bj = j0 * ldb
				}
				serial(kr, transA, transB, m, j1-j0, k, alpha, a, lda, b[bj:], ldb, c[j0:], ldc, overwrite)
			})
			return
		}
		if parts := min(nt, m/(2*kr.mr)); parts > 1 {
			split(parts, m, kr.mr, func(i0, i1 int) {
				ai := i0 * lda
				if transA {
					ai = i0
				}
				serial(kr, transA, transB, i1-i0, n, k, alpha, a[ai:], lda, b, ldb, c[i0*ldc:], ldc, overwrite)
			})
			return
		}
	}
	serial(kr, transA, transB, m, n, k, alpha, a, lda, b, ldb, c, ldc, overwrite)
}

// split runs f over [0, n) in parts contiguous ranges whose bounds are
// multiples of unit (the kernel's tile, so no tile straddles two parts),
// the first on the calling goroutine.
func split(parts, n, unit int, f func(lo, hi int)) {
	per := (n/unit + parts - 1) / parts * unit
	var wg sync.WaitGroup
	for lo := per; lo < n; lo += per {
		wg.Add(1)
		go func(lo int) {
			defer wg.Done()
			f(lo, min(lo+per, n))
		}(lo)
	}
	f(0, min(per, n))
	wg.Wait()
}

// ScaleC sets the m×n matrix C (row stride ldc) to beta·C, which is all a
// product with k = 0 or alpha = 0 leaves; beta = 0 clears C without reading
// it (NaNs do not survive), as BLAS does.
func ScaleC[T ~float32 | ~float64](m, n int, beta T, c []T, ldc int) {
	for i := 0; i < m; i++ {
		row := c[i*ldc : i*ldc+n]
		if beta == 0 {
			clear(row)
			continue
		}
		for j := range row {
			row[j] *= beta
		}
	}
}

// stored is the shape of the matrix stored for an operand that is rows×cols
// after the optional transpose.
func stored(trans bool, rows, cols int) (int, int) {
	if trans {
		return cols, rows
	}
	return rows, cols
}

func checkMatrix(name string, rows, cols int, s []float32, ld int) {
	if ld < max(1, cols) {
		panic(fmt.Sprintf("gemm: %s has %d columns but stride %d", name, cols, ld))
	}
	if rows > 0 && cols > 0 && len(s) < (rows-1)*ld+cols {
		panic(fmt.Sprintf("gemm: %s is %d×%d with stride %d but has %d elements", name, rows, cols, ld, len(s)))
	}
}

// Block sizes (Goto's mc, kc, nc): a kc-deep panel of B (kc×nr) stays in
// L1 while the mc×kc packed block of A (L2) streams past it, and the kc×nc
// block of B sits in L3.
const (
	blockK = 256
	blockM = 192
	blockN = 3072
)

// workspace holds one goroutine's packed blocks and edge tile, each
// allocated once at its largest size (for the largest kernel tile), so a
// workspace never reallocates whatever shapes it serves.
type workspace struct {
	a, b, tile []float32
}

// workspaces is a free list of workspaces. Unlike a sync.Pool it is not
// emptied by garbage collections, so steady-state training steps allocate
// nothing; it holds at most as many workspaces as products ever ran at once.
var workspaces = make(chan *workspace, 256)

func getWorkspace() *workspace {
	select {
	case ws := <-workspaces:
		return ws
	default:
		const maxMR, maxNR = 16, 64 // the largest kernel tile (TestKernelsFitWorkspace)
		return &workspace{
			a:    make([]float32, (blockM+maxMR)*blockK),
			b:    make([]float32, (blockN+maxNR)*blockK),
			tile: make([]float32, maxMR*maxNR),
		}
	}
}

func putWorkspace(ws *workspace) {
	select {
	case workspaces <- ws:
	default:
	}
}

// serial is the blocked product on one goroutine: C += alpha·op(A)·op(B),
// or C = alpha·op(A)·op(B) when overwrite is set (C is then not read).
//
// When op(A) fits one block of rows and B is not transposed, B is read in
// place rather than packed: each of its panels then meets A once, so
// copying it would cost a memory pass for no reuse (the conv forward and
// linear products, whose A is a few dozen rows of weights, and the conv
// weight gradients, whose A is a few dozen channels of output gradient
// against the transposed unfolded input nn lays out for them).
func serial(kr *kernel, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, overwrite bool) {
	mr, nr := kr.mr, kr.nr
	mc := max(mr, blockM/mr*mr)
	nc := max(nr, blockN/nr*nr)
	kc := blockK
	ws := getWorkspace()
	defer putWorkspace(ws)
	tile := ws.tile[:mr*nr]
	inPlace := !transB && m <= mc
	for jc := 0; jc < n; jc += nc {
		nb := min(nc, n-jc)
		for pc := 0; pc < k; pc += kc {
			kb := min(kc, k-pc)
			mode := 0
			if overwrite && pc == 0 {
				mode = 1
			}
			if !inPlace {
				packB(ws.b, transB, b, ldb, pc, jc, kb, nb, nr)
			}
			for ic := 0; ic < m; ic += mc {
				mb := min(mc, m-ic)
				packA(ws.a, transA, a, lda, ic, pc, mb, kb, mr, alpha)
				for jr := 0; jr < nb; jr += nr {
					cols := min(nr, nb-jr)
					bp, bld := &ws.b[jr*kb], nr
					if inPlace {
						if cols == nr {
							bp, bld = &b[pc*ldb+jc+jr], ldb
						} else { // the last columns: pad them to a panel
							packB(ws.b, false, b, ldb, pc, jc+jr, kb, cols, nr)
							bp = &ws.b[0]
						}
					}
					for ir := 0; ir < mb; ir += mr {
						ap := &ws.a[ir*kb]
						rows := min(mr, mb-ir)
						ci := (ic+ir)*ldc + jc + jr
						if rows == mr && cols == nr {
							kr.run(kb, ap, bp, bld, &c[ci], ldc, mode)
							continue
						}
						kr.run(kb, ap, bp, bld, &tile[0], nr, 1)
						for i := 0; i < rows; i++ {
							crow := c[ci+i*ldc : ci+i*ldc+cols]
							src := tile[i*nr : i*nr+cols]
							if mode == 1 {
								copy(crow, src)
								continue
							}
							for j, v := range src {
								crow[j] += v
							}
						}
					}
				}
			}
		}
	}
}

// packA copies rows [i0, i0+mb) × columns [p0, p0+kb) of op(A), times alpha,
// into dst as panels of mr rows: element (i, p) of panel q at
// dst[q·mr·kb + p·mr + i]; the last panel is padded with zeros.
func packA(dst []float32, trans bool, a []float32, lda, i0, p0, mb, kb, mr int, alpha float32) {
	for ir := 0; ir < mb; ir += mr {
		pan := dst[ir*kb : ir*kb+mr*kb]
		rows := min(mr, mb-ir)
		if trans {
			for p := 0; p < kb; p++ {
				src := a[(p0+p)*lda+i0+ir:][:rows]
				d := pan[p*mr : p*mr+rows]
				for i, v := range src {
					d[i] = alpha * v
				}
			}
		} else {
			transposePanel(pan, mr, a, lda, i0+ir, p0, rows, kb, alpha)
		}
		if rows < mr {
			for p := 0; p < kb; p++ {
				clear(pan[p*mr+rows : p*mr+mr])
			}
		}
	}
}

// packB copies rows [p0, p0+kb) × columns [j0, j0+nb) of op(B) into dst as
// panels of nr columns: element (p, j) of panel q at dst[q·nr·kb + p·nr + j];
// the last panel is padded with zeros.
func packB(dst []float32, trans bool, b []float32, ldb, p0, j0, kb, nb, nr int) {
	for jr := 0; jr < nb; jr += nr {
		pan := dst[jr*kb : jr*kb+nr*kb]
		cols := min(nr, nb-jr)
		if trans {
			transposePanel(pan, nr, b, ldb, j0+jr, p0, cols, kb, 1)
		} else {
			for p := 0; p < kb; p++ {
				copy(pan[p*nr:p*nr+cols], b[(p0+p)*ldb+j0+jr:][:cols])
			}
		}
		if cols < nr {
			for p := 0; p < kb; p++ {
				clear(pan[p*nr+cols : p*nr+nr])
			}
		}
	}
}

// transposePanel writes pan[p·w + r] = f·src[(r0+r)·ld + p0 + p] for r <
// rows, p < kb: rows of the source become columns of a panel w wide. Four
// source rows at a time, so each store fills four adjacent elements, after
// transposeRows8 did what it can eight rows at a time with AVX.
func transposePanel(pan []float32, w int, src []float32, ld, r0, p0, rows, kb int, f float32) {
	r := transposeRows8(pan, w, src, ld, r0, p0, rows, kb, f)
	for ; r+4 <= rows; r += 4 {
		s0 := src[(r0+r)*ld+p0:][:kb:kb]
		s1 := src[(r0+r+1)*ld+p0:][:kb:kb]
		s2 := src[(r0+r+2)*ld+p0:][:kb:kb]
		s3 := src[(r0+r+3)*ld+p0:][:kb:kb]
		for p := 0; p < kb; p++ {
			d := pan[p*w+r : p*w+r+4 : p*w+r+4]
			d[0], d[1], d[2], d[3] = f*s0[p], f*s1[p], f*s2[p], f*s3[p]
		}
	}
	for ; r < rows; r++ {
		s0 := src[(r0+r)*ld+p0:][:kb:kb]
		for p, v := range s0 {
			pan[p*w+r] = f * v
		}
	}
}

func roundUp(n, unit int) int { return (n + unit - 1) / unit * unit }

func unsafeSlice(p *float32, n int) []float32 { return unsafe.Slice(p, n) }
