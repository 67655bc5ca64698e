package gemm

// A kernel computes C[0:mr, 0:nr] += Ã·B̃ (C = Ã·B̃ without reading C when
// overwrite is nonzero) for one packed panel of A (k steps of mr values) and
// one panel of B (k rows of nr values, ldb elements apart: nr when packed,
// B's stride when read in place); c points at the tile's top-left element
// and ldc is C's row stride in elements. Every element of the tile must
// exist: the driver hands edge tiles a scratch tile.
type kernel struct {
	name   string // "avx512 12×32": instruction set and tile, for Describe
	isa    string // "avx512", "avx2" or "go"
	mr, nr int
	run    func(k int, a, b *float32, ldb int, c *float32, ldc int, overwrite int)
}

// generic is the pure-Go kernel, used where no SIMD kernel applies (another
// architecture, a CPU without AVX2+FMA, or the purego build tag). It keeps a
// 4×4 tile of accumulators in locals, which the compiler holds in registers.
var generic = kernel{name: "go 4×4", isa: "go", mr: 4, nr: 4, run: kernGo4x4}

func kernGo4x4(k int, a, b *float32, ldb int, c *float32, ldc int, overwrite int) {
	if k == 0 {
		return
	}
	ap := unsafeSlice(a, 4*k)
	bp := unsafeSlice(b, (k-1)*ldb+4)
	var c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33 float32
	for p := 0; p < k; p++ {
		av := ap[4*p : 4*p+4 : 4*p+4]
		bv := bp[ldb*p : ldb*p+4 : ldb*p+4]
		a0, a1, a2, a3 := av[0], av[1], av[2], av[3]
		b0, b1, b2, b3 := bv[0], bv[1], bv[2], bv[3]
		c00 += a0 * b0
		c01 += a0 * b1
		c02 += a0 * b2
		c03 += a0 * b3
		c10 += a1 * b0
		c11 += a1 * b1
		c12 += a1 * b2
		c13 += a1 * b3
		c20 += a2 * b0
		c21 += a2 * b1
		c22 += a2 * b2
		c23 += a2 * b3
		c30 += a3 * b0
		c31 += a3 * b1
		c32 += a3 * b2
		c33 += a3 * b3
	}
	cs := unsafeSlice(c, 3*ldc+4)
	if overwrite != 0 {
		clear(cs[0:4])
		clear(cs[ldc : ldc+4])
		clear(cs[2*ldc : 2*ldc+4])
		clear(cs[3*ldc : 3*ldc+4])
	}
	r := cs[0:4:4]
	r[0] += c00
	r[1] += c01
	r[2] += c02
	r[3] += c03
	r = cs[ldc : ldc+4 : ldc+4]
	r[0] += c10
	r[1] += c11
	r[2] += c12
	r[3] += c13
	r = cs[2*ldc : 2*ldc+4 : 2*ldc+4]
	r[0] += c20
	r[1] += c21
	r[2] += c22
	r[3] += c23
	r = cs[3*ldc : 3*ldc+4 : 3*ldc+4]
	r[0] += c30
	r[1] += c31
	r[2] += c32
	r[3] += c33
}
