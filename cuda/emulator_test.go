//go:build cudaemu && !cuda

package cuda

import (
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func newEmu(t *testing.T, workers int) *Emulator {
	t.Helper()
	e, err := NewEmulator(EmulatorOptions{Workers: workers})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Error(err)
		}
	})
	return e
}

// alloc returns a device buffer holding s.
func alloc[E any](t *testing.T, d Device, s []E) DevicePtr {
	t.Helper()
	p, err := d.Alloc(max(byteSize(s), 1))
	if err != nil {
		t.Fatal(err)
	}
	if err := CopyIn(d, p, s); err != nil {
		t.Fatal(err)
	}
	return p
}

func fetch[E any](t *testing.T, d Device, p DevicePtr, n int) []E {
	t.Helper()
	s := make([]E, n)
	if err := CopyOut(d, s, p); err != nil {
		t.Fatal(err)
	}
	return s
}

// The emulator runs exactly the kernels the Go side launches, and each
// kernel's parameter list as the C++ compiler typed it (pointer, 4 or 8
// bytes) is the one nvcc put into the committed PTX: the argument slots the
// tests exercise here are the ones a GPU reads.
func TestEmulatorKernelsMatchPTX(t *testing.T) {
	e := newEmu(t, 1)
	var want []string
	for _, ks := range ptxModules {
		want = append(want, ks...)
	}
	var got []string
	for _, k := range emulatorKernels() {
		if !strings.HasPrefix(k, "emu_test_") {
			got = append(got, k)
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("emulator kernels %v, ptxModules %v", got, want)
	}
	entry := regexp.MustCompile(`\.visible \.entry (\w+)\(([^)]*)\)`)
	param := regexp.MustCompile(`\.param \.(\w+) `)
	for module := range ptxModules {
		ptx, err := os.ReadFile(ptxName(module, 80))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range entry.FindAllStringSubmatch(string(ptx), -1) {
			var kinds strings.Builder
			for _, p := range param.FindAllStringSubmatch(m[2], -1) {
				switch p[1] {
				case "u64":
					kinds.WriteString("[p8]")
				case "f64", "s64":
					kinds.WriteString("8")
				case "u32", "s32", "f32":
					kinds.WriteString("4")
				default:
					t.Fatalf("%s: PTX parameter type %s", m[1], p[1])
				}
			}
			k := e.kernels[m[1]]
			if !regexp.MustCompile("^" + kinds.String() + "$").MatchString(k.kinds) {
				t.Errorf("%s: emulator parameters %q, PTX %s", m[1], k.kinds, kinds.String())
			}
		}
	}
}

// Thread and block coordinates of 3-D launches, block shapes that are not
// multiples of anything, and more blocks than workers.
func TestEmulatorCoordinates(t *testing.T) {
	for _, c := range []struct{ grid, block Dim3 }{
		{D1(1), D1(1)}, {D1(3), D1(7)}, {Dim3{2, 3, 2}, Dim3{3, 2, 4}}, {Dim3{5, 1, 1}, Dim3{1, 1, 3}}, {D1(9), D1(1024)},
	} {
		e := newEmu(t, 3)
		nb, nt := c.grid.count(), c.block.count()
		out := alloc(t, e, make([]int32, 6*nb*nt))
		dims := alloc(t, e, make([]int32, 6))
		if err := e.Launch("emu_test_coords", c.grid, c.block, 0, Ptr(out), Ptr(dims)); err != nil {
			t.Fatal(err)
		}
		got := fetch[int32](t, e, out, int(6*nb*nt))
		g, b := c.grid.norm(), c.block.norm()
		i := 0
		for bz := range g.Z {
			for by := range g.Y {
				for bx := range g.X {
					for tz := range b.Z {
						for ty := range b.Y {
							for tx := range b.X {
								want := []int32{int32(tx), int32(ty), int32(tz), int32(bx), int32(by), int32(bz)}
								if !slices.Equal(got[6*i:6*i+6], want) {
									t.Fatalf("grid %v block %v: thread %d has coordinates %v, want %v", g, b, i, got[6*i:6*i+6], want)
								}
								i++
							}
						}
					}
				}
			}
		}
		if d := fetch[int32](t, e, dims, 6); !slices.Equal(d, []int32{int32(b.X), int32(b.Y), int32(b.Z), int32(g.X), int32(g.Y), int32(g.Z)}) {
			t.Errorf("blockDim, gridDim = %v, want %v %v", d, b, g)
		}
	}
}

// __syncthreads is a barrier and __shared__ memory is one copy per block
// (blocks run concurrently on several workers); a barrier that some threads
// skip is reported, not hung on.
func TestEmulatorBarrierAndSharedMemory(t *testing.T) {
	e := newEmu(t, 2)
	r := rand.New(rand.NewPCG(21, 22))
	for _, threads := range []int{1, 2, 33, 256, 1024} {
		const blocks = 7
		in := randF32(r, blocks*threads, 1)
		din, dout := alloc(t, e, in), alloc(t, e, make([]float32, len(in)))
		if err := e.Launch("emu_test_reverse", D1(blocks), D1(threads), 0, Ptr(dout), Ptr(din)); err != nil {
			t.Fatal(err)
		}
		got := fetch[float32](t, e, dout, len(in))
		for b := range blocks {
			for j := range threads {
				// reversed twice: element j of the block, doubled
				if want := in[b*threads+j] * 2; got[b*threads+j] != want {
					t.Fatalf("%d threads: block %d element %d = %v, want %v", threads, b, j, got[b*threads+j], want)
				}
			}
		}
	}
	out := alloc(t, e, make([]int32, 64))
	err := e.Launch("emu_test_divergent", D1(2), D1(64), 0, Ptr(out), Int(5))
	wantErr(t, err, "5 of 64 threads wait at __syncthreads (barrier 1) while the others have returned")
	if err := e.Launch("emu_test_divergent", D1(2), D1(64), 0, Ptr(out), Int(64)); err != nil {
		t.Errorf("a barrier every thread reaches: %v", err)
	}
}

// Integer and floating-point atomics across concurrently running blocks
// (integer-valued floats, so every order of the additions gives the same
// sum).
func TestEmulatorAtomics(t *testing.T) {
	e := newEmu(t, 4)
	const n = 50_000
	x := make([]float32, n)
	want := 0.0
	for i := range x {
		x[i] = float32(i%201 - 100)
		want += float64(x[i])
	}
	fsum, dsum := alloc(t, e, []float32{0}), alloc(t, e, []float64{0})
	imin, count := alloc(t, e, []int32{math.MaxInt32}), alloc(t, e, []uint32{0})
	if err := e.Launch("emu_test_atomics", D1(37), D1(128), 0, Ptr(fsum), Ptr(dsum), Ptr(imin), Ptr(count), Ptr(alloc(t, e, x)), Int(n)); err != nil {
		t.Fatal(err)
	}
	if f, d := fetch[float32](t, e, fsum, 1)[0], fetch[float64](t, e, dsum, 1)[0]; float64(f) != want || d != want {
		t.Errorf("atomicAdd sums %v (float), %v (double), want %v", f, d, want)
	}
	if m, c := fetch[int32](t, e, imin, 1)[0], fetch[uint32](t, e, count, 1)[0]; m != -100 || c != n {
		t.Errorf("atomicMin %d, count %d; want -100, %d", m, c, n)
	}
}

// What the emulator refuses: unknown kernels, wrong argument counts,
// pointers outside every allocation, block and grid shapes a GPU rejects,
// copies past an allocation's end, freeing an interior pointer, use after
// Close. Fresh memory reads as 0xFF bytes, and DeviceBackend frees all it
// allocated.
func TestEmulatorRefusals(t *testing.T) {
	e := newEmu(t, 1)
	p := alloc(t, e, make([]float32, 10))
	wantErr(t, e.Launch("fairdp_nope", D1(1), D1(1), 0), "no kernel fairdp_nope")
	wantErr(t, e.Launch("fairdp_relu_forward", D1(1), D1(32), 0, Ptr(p), Ptr(p)), "2 arguments, the kernel takes 3")
	wantErr(t, e.Launch("fairdp_relu_forward", D1(1), D1(32), 0, Ptr(p), Ptr(p+4096), Int(1)), "pointer argument 1")
	wantErr(t, e.Launch("fairdp_relu_forward", D1(1), D1(2048), 0, Ptr(p), Ptr(p), Int(1)), "exceeds 1024 threads")
	wantErr(t, e.Launch("fairdp_relu_forward", D1(0), D1(32), 0, Ptr(p), Ptr(p), Int(1)), "component < 1")
	wantErr(t, e.Launch("fairdp_relu_forward", Dim3{1, 1 << 16, 1}, D1(32), 0, Ptr(p), Ptr(p), Int(1)), "grid")
	wantErr(t, e.Launch("fairdp_relu_forward", D1(1), D1(32), 16, Ptr(p), Ptr(p), Int(1)), "dynamic shared memory")
	wantErr(t, CopyIn(e, p+8, make([]float32, 10)), "run past the end")
	wantErr(t, CopyOut(e, make([]float32, 1), 16), "not in any live allocation")
	wantErr(t, e.Free(p+4), "not the start of a live allocation")
	if _, err := e.Alloc(0); err == nil {
		t.Error("Alloc(0) succeeded")
	}
	q, err := e.Alloc(12)
	if err != nil {
		t.Fatal(err)
	}
	if got := fetch[uint32](t, e, q, 3); !slices.Equal(got, []uint32{math.MaxUint32, math.MaxUint32, math.MaxUint32}) {
		t.Errorf("fresh memory reads %x, want all ones", got)
	}
	if err := e.Free(q); err != nil {
		t.Fatal(err)
	}
	wantErr(t, e.Free(q), "not the start of a live allocation")

	be := NewDeviceBackend(newEmu(t, 1))
	y := make([]float32, 300)
	if err := be.ReLUForward(y, randF32(rand.New(rand.NewPCG(1, 1)), 300, 1)); err != nil {
		t.Fatal(err)
	}
	dev := be.Device().(*Emulator)
	if dev.Live() == 0 {
		t.Error("DeviceBackend keeps no buffers between calls")
	}
	if err := be.Close(); err != nil {
		t.Fatal(err)
	}
	if dev.Live() != 0 {
		t.Errorf("%d allocations live after Close", dev.Live())
	}
	wantErr(t, be.ReLUForward(y, y), "used after Close")
	wantErr(t, CopyIn(dev, p, y), "used after Close")
}

// colMajorGemm is the definition of cuBLAS's ?gemm, in float64: C (m×n,
// ldc) = alpha·op(A)·op(B) + beta·C with every matrix stored column-major,
// element (i, j) of X at x[i + j·ldx].
func colMajorGemm(ta, tb Transpose, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	at := func(i, l int) float64 {
		if ta {
			return a[l+i*lda]
		}
		return a[i+l*lda]
	}
	bt := func(l, j int) float64 {
		if tb {
			return b[j+l*ldb]
		}
		return b[l+j*ldb]
	}
	for j := range n {
		for i := range m {
			s := 0.0
			for l := range k {
				s += at(i, l) * bt(l, j)
			}
			if beta == 0 {
				c[i+j*ldc] = alpha * s
			} else {
				c[i+j*ldc] = alpha*s + beta*c[i+j*ldc]
			}
		}
	}
}

// Sgemm and Dgemm on the emulated device have cuBLAS's column-major
// semantics: every transpose pair, leading dimensions larger than the rows
// (the padding is left alone), beta = 0 overwriting NaN, k = 0 and alpha = 0
// scaling C only, sizes 0 and 1; and a literal 2×2 case where row-major
// semantics would give another answer.
func TestEmulatorGemmColumnMajor(t *testing.T) {
	e := newEmu(t, 1)
	// Literal: A = [1 2; 3 4] column-major is a = {1, 3, 2, 4}; B = I·2.
	// A·B = [2 4; 6 8] → c = {2, 6, 4, 8}; Aᵀ·B = [2 6; 4 8] → {2, 4, 6, 8}.
	a, b := alloc(t, e, []float32{1, 3, 2, 4}), alloc(t, e, []float32{2, 0, 0, 2})
	c := alloc(t, e, make([]float32, 4))
	if err := e.Sgemm(NoTrans, NoTrans, 2, 2, 2, 1, a, 2, b, 2, 0, c, 2); err != nil {
		t.Fatal(err)
	}
	sameBits32(t, "A·B", fetch[float32](t, e, c, 4), []float32{2, 6, 4, 8})
	if err := e.Sgemm(Trans, NoTrans, 2, 2, 2, 1, a, 2, b, 2, 0, c, 2); err != nil {
		t.Fatal(err)
	}
	sameBits32(t, "Aᵀ·B", fetch[float32](t, e, c, 4), []float32{2, 4, 6, 8})

	r := rand.New(rand.NewPCG(23, 24))
	shapes := [][3]int{{1, 1, 1}, {3, 5, 7}, {17, 1, 9}, {1, 13, 4}, {33, 31, 65}, {4, 3, 0}, {0, 3, 2}, {5, 0, 2}}
	for _, sh := range shapes {
		m, n, k := sh[0], sh[1], sh[2]
		for _, ta := range []Transpose{NoTrans, Trans} {
			for _, tb := range []Transpose{NoTrans, Trans} {
				for _, ab := range [][2]float64{{1, 0}, {-0.5, 2}, {0, 3}} {
					alpha, beta := ab[0], ab[1]
					rowsA, colsA := ta.stored(m, k)
					rowsB, colsB := tb.stored(k, n)
					lda, ldb, ldc := max(1, rowsA)+r.IntN(3), max(1, rowsB)+r.IntN(3), max(1, m)+r.IntN(3)
					a64 := widen(randF32(r, lda*max(colsA, 1), 1))
					b64 := widen(randF32(r, ldb*max(colsB, 1), 1))
					c64 := widen(randF32(r, ldc*max(n, 1), 1))
					if beta == 0 {
						for i := range c64 {
							c64[i] = math.NaN() // beta = 0: C is not read
						}
					}
					want := append([]float64(nil), c64...)
					colMajorGemm(ta, tb, m, n, k, alpha, a64, lda, b64, ldb, beta, want, ldc)
					for i := range want {
						if math.IsNaN(want[i]) && beta == 0 {
							want[i] = c64[i] // padding rows below m keep their (NaN) contents
						}
					}
					da, db, dc := alloc(t, e, a64), alloc(t, e, b64), alloc(t, e, c64)
					if err := e.Dgemm(ta, tb, m, n, k, alpha, da, lda, db, ldb, beta, dc, ldc); err != nil {
						t.Fatalf("Dgemm %v%v %v: %v", ta, tb, sh, err)
					}
					got := fetch[float64](t, e, dc, len(c64))
					checkGemm := func(what string, got []float64, tol float64) {
						t.Helper()
						for i := range want {
							if math.IsNaN(want[i]) != math.IsNaN(got[i]) || math.Abs(got[i]-want[i]) > tol*(1+math.Abs(want[i])) {
								t.Fatalf("%s %v%v m,n,k=%v alpha %v beta %v lda %d ldb %d ldc %d: c[%d] = %v, want %v",
									what, ta, tb, sh, alpha, beta, lda, ldb, ldc, i, got[i], want[i])
							}
						}
					}
					checkGemm("Dgemm", got, 1e-12)
					sa, sb, sc := alloc(t, e, narrow(a64)), alloc(t, e, narrow(b64)), alloc(t, e, narrow(c64))
					if err := e.Sgemm(ta, tb, m, n, k, float32(alpha), sa, lda, sb, ldb, float32(beta), sc, ldc); err != nil {
						t.Fatalf("Sgemm %v%v %v: %v", ta, tb, sh, err)
					}
					checkGemm("Sgemm", widen(fetch[float32](t, e, sc, len(c64))), 1e-5)
					for _, p := range []DevicePtr{da, db, dc, sa, sb, sc} {
						if err := e.Free(p); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
		}
	}
	// cuBLAS's argument checks, and operands that run past their allocation.
	wantErr(t, e.Sgemm(NoTrans, NoTrans, 3, 2, 2, 1, a, 2, b, 2, 0, c, 3), "leading dimensions")
	wantErr(t, e.Sgemm(NoTrans, NoTrans, -1, 2, 2, 1, a, 2, b, 2, 0, c, 2), "must be ≥ 0")
	wantErr(t, e.Sgemm(NoTrans, NoTrans, 2, 3, 2, 1, a, 2, b, 2, 0, c, 2), "gemm operand")
}

func narrow(s []float64) []float32 {
	n := make([]float32, len(s))
	for i, v := range s {
		n[i] = float32(v)
	}
	return n
}

// The kernels' grid-stride loops are correct for any launch shape, not only
// DeviceBackend's: element-wise kernels with small and odd blocks and grids,
// and the block-reducing kernels (which need FAIRDP_BLOCK threads) with
// fewer blocks than units; the results equal the twins bit for bit.
func TestEmulatorAnyLaunchShape(t *testing.T) {
	e := newEmu(t, 2)
	r := rand.New(rand.NewPCG(25, 26))
	const n = 1001
	x := append(randF32(r, n-len(specials), 1), specials...)
	want := make([]float32, n)
	if err := (CPU{}).ReLUForward(want, x); err != nil {
		t.Fatal(err)
	}
	seed := NoiseSeed{Key: [2]uint32{5, 6}, Nonce: [2]uint32{7, 8}, Stream: 9}
	noise := make([]float32, n)
	if err := (CPU{}).AddGaussian(noise, 0.5, seed); err != nil {
		t.Fatal(err)
	}
	dx := alloc(t, e, x)
	for _, s := range [][2]int{{1, 1}, {1, 32}, {3, 7}, {1000, 1}, {4, 1024}, {65, 13}} {
		dy := alloc(t, e, make([]float32, n))
		if err := e.Launch("fairdp_relu_forward", D1(s[0]), D1(s[1]), 0, Ptr(dy), Ptr(dx), Int(n)); err != nil {
			t.Fatal(err)
		}
		sameBits32(t, "relu_forward, any shape", fetch[float32](t, e, dy, n), want)
		dn := alloc(t, e, make([]float32, n))
		if err := CopyIn(e, dn, make([]float32, n)); err != nil {
			t.Fatal(err)
		}
		if err := e.Launch("fairdp_add_gaussian", D1(s[0]), D1(s[1]), 0, Ptr(dn), Int(n), F64(0.5), U32(seed.Key[0]),
			U32(seed.Key[1]), U32(seed.Nonce[0]), U32(seed.Nonce[1]), U32(seed.Stream)); err != nil {
			t.Fatal(err)
		}
		sameBits32(t, "add_gaussian, any shape", fetch[float32](t, e, dn, n), noise)
	}
	// Per-sample norms: one block per sample or fewer blocks than samples.
	const samples, in, out = 9, 300, 7
	a, b := randF32(r, samples*in, 1), randF32(r, samples*out, 1)
	wantSq := make([]float64, samples)
	if err := (CPU{}).LinearSqNorms(wantSq, a, b, samples, in, out, true); err != nil {
		t.Fatal(err)
	}
	da, db := alloc(t, e, a), alloc(t, e, b)
	for _, blocks := range []int{1, 2, samples, 64} {
		dsq := alloc(t, e, make([]float64, samples))
		if err := e.Launch("fairdp_linear_sqnorms", D1(blocks), D1(block), 0, Ptr(dsq), Ptr(da), Ptr(db),
			Int(samples), Int(in), Int(out), Int(1)); err != nil {
			t.Fatal(err)
		}
		sameBits64(t, "linear_sqnorms, any grid", fetch[float64](t, e, dsq, samples), wantSq)
	}
}

// DeviceBackend caps a launch at maxGrid blocks; past 2¹⁶·256 elements the
// kernels' grid-stride loops cover the rest.
func TestEmulatorGridCap(t *testing.T) {
	if testing.Short() {
		t.Skip("64 MB through the emulator")
	}
	be := NewDeviceBackend(newEmu(t, 2))
	const n = maxGrid*block + 1001
	r := rand.New(rand.NewPCG(27, 28))
	x := randF32(r, n, 1)
	got, want := make([]float32, n), make([]float32, n)
	if err := be.ReLUForward(got, x); err != nil {
		t.Fatal(err)
	}
	must(t, (CPU{}).ReLUForward(want, x))
	sameBits32(t, "ReLU past the grid cap", got, want)
	if g := launchShape(n, false); g.X != maxGrid {
		t.Errorf("launchShape(%d) = %v, want the cap %d", n, g, maxGrid)
	}
}

// The kernels' own Philox4x32-10 (fairdp.cuh, compiled for the emulated
// device) gives Random123's known answers, the vectors TestPhiloxKnownAnswers
// checks the Go twin with.
func TestEmulatorPhiloxKnownAnswers(t *testing.T) {
	e := newEmu(t, 1)
	ctr := []uint32{0, 0, 0, 0, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}
	key := []uint32{0, 0, 0xffffffff, 0xffffffff, 0xa4093822, 0x299f31d0}
	want := []uint32{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8, 0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd,
		0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}
	out := alloc(t, e, make([]uint32, 12))
	must(t, e.Launch("emu_test_philox", D1(1), D1(32), 0, Ptr(out), Ptr(alloc(t, e, ctr)), Ptr(alloc(t, e, key)), Int(3)))
	if got := fetch[uint32](t, e, out, 12); !slices.Equal(got, want) {
		t.Errorf("device Philox4x32-10 = %08x, Random123 %08x", got, want)
	}
}

// A kernel that writes past the end of its buffer stops at the guard page
// (SIGSEGV in the launch) instead of corrupting memory: run in a child
// process, which must crash.
func TestEmulatorGuardPage(t *testing.T) {
	if os.Getenv("FAIRDP_EMU_OVERRUN") == "1" {
		e, err := NewEmulator(EmulatorOptions{Workers: 1})
		if err != nil {
			t.Fatal(err)
		}
		p, err := e.Alloc(256) // 64 floats, ending at the guard page
		if err != nil {
			t.Fatal(err)
		}
		_ = e.Launch("fairdp_relu_forward", D1(1), D1(128), 0, Ptr(p), Ptr(p), Int(128))
		t.Fatal("the overrun did not fault")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestEmulatorGuardPage$")
	cmd.Env = append(os.Environ(), "FAIRDP_EMU_OVERRUN=1")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "SIGSEGV") {
		t.Fatalf("child exited with %v, want a SIGSEGV crash; output:\n%.2000s", err, out)
	}
	// Within bounds the same launch is fine.
	e := newEmu(t, 1)
	p := alloc(t, e, make([]float32, 64))
	if err := e.Launch("fairdp_relu_forward", D1(1), D1(128), 0, Ptr(p), Ptr(p), Int(64)); err != nil {
		t.Fatal(err)
	}
}

// SgemmStrided is its products one by one: a batch with a shared (stride 0)
// operand against separate Sgemm calls, and its argument checks.
func TestEmulatorSgemmStrided(t *testing.T) {
	e := newEmu(t, 1)
	r := rand.New(rand.NewPCG(29, 30))
	const m, n, k, batch = 5, 3, 4, 6
	a := randF32(r, batch*k*m, 1) // Aᵢ stored k×m (Trans), stride k·m
	b := randF32(r, k*n, 1)       // shared
	c0 := randF32(r, batch*m*n, 1)
	da, db, dc := alloc(t, e, a), alloc(t, e, b), alloc(t, e, c0)
	must(t, e.SgemmStrided(Trans, NoTrans, m, n, k, 0.5, da, k, k*m, db, k, 0, 2, dc, m, m*n, batch))
	want := alloc(t, e, c0)
	for i := range batch {
		must(t, e.Sgemm(Trans, NoTrans, m, n, k, 0.5, da+DevicePtr(4*i*k*m), k, db, k, 2, want+DevicePtr(4*i*m*n), m))
	}
	sameBits32(t, "SgemmStrided vs Sgemm per product", fetch[float32](t, e, dc, batch*m*n), fetch[float32](t, e, want, batch*m*n))
	must(t, e.SgemmStrided(NoTrans, NoTrans, m, n, k, 1, da, m, 0, db, k, 0, 0, dc, m, 0, 0))
	wantErr(t, e.SgemmStrided(NoTrans, NoTrans, m, n, k, 1, da, m, -1, db, k, 0, 0, dc, m, 0, 1), "must be ≥ 0")
	wantErr(t, e.SgemmStrided(NoTrans, NoTrans, m, n, k, 1, da, m, k*m, db, k, 0, 0, dc, m, m*n, batch+1), "product 6")
}
