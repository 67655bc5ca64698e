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
