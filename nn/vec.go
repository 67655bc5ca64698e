package nn

import (
	"fmt"
	"unsafe"
)

// Small vector kernels shared by the layers. Reductions accumulate in
// float64 so float32 models get norms and statistics accurate to float32
// rounding of the result rather than of every partial sum.

// sqSum returns Σ v² in float64: four partial sums s_j over the elements
// 4q+j, in order of q, added as (s0+s1)+(s2+s3). float32 slices run the
// four sums in one AVX register (sqSumLanes32), bit for bit the same.
func sqSum[T Float](v []T) float64 {
	var lanes [4]float64
	i := 0
	// Fewer than four values (a one-logit layer's ‖b_i‖²) have no whole
	// group: skip the call, the Go loop alone gives the same sum.
	if elemSize[T]() == 4 && len(v) >= 4 && sqSumLanes32(as32(v), &lanes) {
		i = len(v) / 4 * 4
	}
	return sqSumFrom(v, i, lanes)
}

// sqSumRows sets out[r] = sqSum(v[r·stride : r·stride+n]) for every r <
// len(out), bit for bit, eight rows (with FMA) or four at a time in one
// assembly call where the CPU has it (see sqSumRows32x8FMA and
// sqSumRows32x4AVX): a narrow layer's per-sample norms are a long run of
// short rows, where one row's add chain alone leaves the adder idle and
// per-row calls cost as much as the sums.
func sqSumRows[T Float](v []T, stride, n int, out []float64) {
	r := 0
	if elemSize[T]() == 4 {
		r = sqSumRows32(as32(v), stride, n, out)
	}
	for ; r < len(out); r++ {
		out[r] = sqSum(v[r*stride : r*stride+n])
	}
}

// sqSumFrom is sqSum's Go loop: it continues the partial sums s from
// element i (a multiple of 4) and adds them up.
func sqSumFrom[T Float](v []T, i int, s [4]float64) float64 {
	s0, s1, s2, s3 := s[0], s[1], s[2], s[3]
	for ; i+4 <= len(v); i += 4 {
		a, b, c, d := float64(v[i]), float64(v[i+1]), float64(v[i+2]), float64(v[i+3])
		s0 += a * a
		s1 += b * b
		s2 += c * c
		s3 += d * d
	}
	for ; i < len(v); i++ {
		a := float64(v[i])
		s0 += a * a
	}
	return (s0 + s1) + (s2 + s3)
}

// dot returns Σ a·b in float64 (len(b) ≥ len(a)).
func dot[T Float](a, b []T) float64 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += float64(a[i]) * float64(b[i])
		s1 += float64(a[i+1]) * float64(b[i+1])
		s2 += float64(a[i+2]) * float64(b[i+2])
		s3 += float64(a[i+3]) * float64(b[i+3])
	}
	for ; i < len(a); i++ {
		s0 += float64(a[i]) * float64(b[i])
	}
	return (s0 + s1) + (s2 + s3)
}

// sum returns Σ v in float64.
func sum[T Float](v []T) float64 {
	var s0, s1 float64
	i := 0
	for ; i+2 <= len(v); i += 2 {
		s0 += float64(v[i])
		s1 += float64(v[i+1])
	}
	if i < len(v) {
		s0 += float64(v[i])
	}
	return s0 + s1
}

// addTo does dst += src (len(dst) ≥ len(src)). It is col2im's inner loop;
// unrolled by 8 it measured 1.4× faster than the plain loop.
func addTo[T Float](dst, src []T) {
	dst = dst[:len(src)]
	i := 0
	for ; i+8 <= len(src); i += 8 {
		d, s := dst[i:i+8:i+8], src[i:i+8:i+8]
		d[0] += s[0]
		d[1] += s[1]
		d[2] += s[2]
		d[3] += s[3]
		d[4] += s[4]
		d[5] += s[5]
		d[6] += s[6]
		d[7] += s[7]
	}
	for ; i < len(src); i++ {
		dst[i] += src[i]
	}
}

// axpy does y += f·x (len(y) ≥ len(x)), each product rounded before it is
// added (no fused multiply-add), so the AVX path (axpy32) gives the same
// bits as this loop. It is ClipSum's accumulation of a sample's clipped
// [∂W | ∂b]: 25K values per sample of the MNIST CNN's second convolution,
// where the plain Go loop cost as much as the product it follows.
func axpy[T Float](f T, x, y []T) {
	y = y[:len(x)]
	i := 0
	if elemSize[T]() == 4 {
		i = axpy32(float32(f), as32(x), as32(y))
	}
	for ; i < len(x); i++ {
		y[i] += T(f * x[i]) // the conversion keeps the product rounded
	}
}

// prod is the number of elements of a shape.
func prod(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// mustLen panics with a message naming the layer and the argument when a
// slice does not hold exactly the expected number of values. Layer inputs
// come from fairdp's own code, never straight from user files, so a wrong
// length is a programming error.
func mustLen[T any](layer interface{ Name() string }, what string, s []T, want int) {
	if len(s) != want {
		panic(fmt.Sprintf("nn: %s: %s has %d values, want %d", layer.Name(), what, len(s), want))
	}
}

// mustSize panics unless a per-sample shape has exactly want elements.
func mustSize(layer string, in []int, want int) {
	if prod(in) != want {
		panic(fmt.Sprintf("nn: %s expects %d values per sample, got shape %v", layer, want, in))
	}
}

// elemSize is the size in bytes of one T.
func elemSize[T Float]() int {
	var z T
	return int(unsafe.Sizeof(z))
}
