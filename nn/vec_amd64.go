//go:build amd64 && !purego

package nn

import "golang.org/x/sys/cpu"

// sqSumLanes32AVX is vec_amd64.s: lane j of out is Σ v[4q+j]² over the
// whole groups of four, accumulated in float64 in order of q, each square
// rounded before it is added (VMULPD then VADDPD, no FMA). That is exactly
// sqSum's four partial sums s0…s3, so the result is bit for bit the same;
// it runs at the latency of one vector add per four values instead of the
// scalar loop's conversions and bounds checks (2–3× faster measured), and it
// is the per-sample norm of every conv and linear layer.
//
//go:noescape
func sqSumLanes32AVX(v []float32, out *[4]float64)

// haveVecAVX: the vector kernels below need AVX (no FMA, no AVX2).
var haveVecAVX = cpu.X86.HasAVX

// sqSumLanes32 fills out as sqSumLanes32AVX does and reports whether it did.
func sqSumLanes32(v []float32, out *[4]float64) bool {
	if !haveVecAVX {
		return false
	}
	sqSumLanes32AVX(v, out)
	return true
}

// sqSumRows32x4AVX is vec_amd64.s: out[r] = sqSum(row r) for the 4·quads
// rows of n values at v, v+stride, …, bit for bit (the same lanes in the
// same order as sqSumLanes32AVX, then sqSumFrom's tail and final adds).
// Four rows' add chains are interleaved, so the adds overlap instead of
// waiting on each other's latency, and a whole batch of rows is one call:
// the per-sample input norm of a narrow Linear layer (logistic
// regression's 102 inputs) is a long run of short rows, where one row at a
// time is bound by the add latency and by per-row call overhead.
//
//go:noescape
func sqSumRows32x4AVX(v *float32, stride, n, quads int, out *float64)

// sqSumRows32x8FMA is vec_amd64.s: sqSumRows32x4AVX for the 8·octs rows
// of n values at v, v+stride, …, eight rows at a time, bit for bit the
// same sums. Each square is added with one FMA instead of a multiply and
// an add: the square of a float32 value is exact in float64, so the FMA's
// single rounding is the add's. That frees the adder port the conversions
// share and, with eight add chains instead of four, hides the FMA latency:
// logistic regression's 1024 × 102 input norms took ~6 µs instead of ~11.
//
//go:noescape
func sqSumRows32x8FMA(v *float32, stride, n, octs int, out *float64)

var haveSqSumFMA = cpu.X86.HasAVX && cpu.X86.HasFMA

// sqSumRows32 sets out[r] = sqSum(v[r·stride : r·stride+n]) for as many
// whole octets and then quads of rows of out as the assembly can take (it
// checks the bounds the assembly cannot) and returns how many rows it did:
// 0 without AVX.
func sqSumRows32(v []float32, stride, n int, out []float64) int {
	if !haveVecAVX || n < 1 || stride < 0 {
		return 0
	}
	done := 0
	if haveSqSumFMA {
		octs := len(out) / 8
		for octs > 0 && (8*octs-1)*stride+n > len(v) {
			octs--
		}
		if octs > 0 {
			sqSumRows32x8FMA(&v[0], stride, n, octs, &out[0])
			done = 8 * octs
		}
	}
	quads := (len(out) - done) / 4
	for quads > 0 && (done+4*quads-1)*stride+n > len(v) {
		quads--
	}
	if quads > 0 {
		sqSumRows32x4AVX(&v[done*stride], stride, n, quads, &out[done])
		done += 4 * quads
	}
	return done
}

// axpy32AVX is vec_amd64.s: y[j] += f·x[j] for j < 32·blocks, the product
// rounded before the add (VMULPS then VADDPS, no FMA), as axpy's Go loop.
//
//go:noescape
func axpy32AVX(f float32, x, y *float32, blocks int)

// axpy32 does y += f·x on the whole blocks of 32 values the assembly takes
// and returns how many values it did (0 without AVX); len(y) ≥ len(x).
func axpy32(f float32, x, y []float32) int {
	blocks := len(x) / 32
	if !haveVecAVX || blocks == 0 {
		return 0
	}
	_ = y[len(x)-1]
	axpy32AVX(f, &x[0], &y[0], blocks)
	return 32 * blocks
}
