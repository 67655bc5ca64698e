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

var haveSqSumAVX = cpu.X86.HasAVX

// sqSumLanes32 fills out as sqSumLanes32AVX does and reports whether it did.
func sqSumLanes32(v []float32, out *[4]float64) bool {
	if !haveSqSumAVX {
		return false
	}
	sqSumLanes32AVX(v, out)
	return true
}

// sqSumLanes32x4AVX is vec_amd64.s: out[r] is what sqSumLanes32AVX gives
// for the groups×4 values starting stride elements after row r-1's, for
// four rows at once. Each row's lanes add in exactly the same order as
// sqSumLanes32AVX's (so the bits are the same), but the four rows' chains
// are independent, so the adds overlap instead of waiting on each other's
// latency: the per-sample input norm of a narrow Linear layer (logistic
// regression's 102 inputs) is bound by that latency, not by loads.
//
//go:noescape
func sqSumLanes32x4AVX(v *float32, stride, groups int, out *[4][4]float64)

// sqSumLanes32x4 fills out as sqSumLanes32x4AVX does for the rows of n
// values at v[0:], v[stride:], v[2·stride:], v[3·stride:] and reports
// whether it did (it checks the bounds the assembly cannot).
func sqSumLanes32x4(v []float32, stride, n int, out *[4][4]float64) bool {
	if !haveSqSumAVX || n < 4 || stride < n || 3*stride+n > len(v) {
		return false
	}
	sqSumLanes32x4AVX(&v[0], stride, n/4, out)
	return true
}
