package fermi

import "github.com/fairdp/fairdp/nn"

// wBlock holds the per-sample gradients of W for one batch so that the
// clipping engine can treat W like one more tapped parameter block
// (dpops.Tapped): --scope all then clips each sample's θ and W gradients
// jointly, and --scope sensitive clips their s-dependent parts jointly.
// W is tiny (Mats·k·l values) and each sample touches only its own matrix,
// so explicit per-sample gradients cost n·k·l floats.
type wBlock[T nn.Float] struct {
	size   int       // values per matrix (Groups·Classes)
	weight float64   // κ: SqNorms reports ‖κ g_i‖² (see DPFERMI.WWeight)
	per    []float64 // n rows of size values: sample i's gradient of matrix mat[i]
	mat    []int
	// Grad accumulates Σ_i scale_i·g_i over all matrices (Mats·size values).
	Grad []float64
}

func newWBlock[T nn.Float](mats, size int, weight float64) *wBlock[T] {
	return &wBlock[T]{size: size, weight: weight, Grad: make([]float64, mats*size)}
}

// start prepares per-sample rows for a batch of n (all zero).
func (b *wBlock[T]) start(n int) {
	b.per = grow(b.per, n*b.size)
	clear(b.per)
	b.mat = grow(b.mat, n)
	clear(b.mat)
}

// row is sample i's gradient row (of matrix t).
func (b *wBlock[T]) row(i, t int) []float64 {
	b.mat[i] = t
	return b.per[i*b.size : (i+1)*b.size]
}

// SqNorms implements dpops.Tapped: adds ‖κ g_i‖² to out[i].
func (b *wBlock[T]) SqNorms(out []T) {
	w2 := b.weight * b.weight
	size, per := b.size, b.per[:len(out)*b.size]
	if size == 4 { // a 2×2 matrix: the loop below, unrolled
		for i := range out {
			r := per[4*i : 4*i+4]
			s := 0.0
			s += r[0] * r[0]
			s += r[1] * r[1]
			s += r[2] * r[2]
			s += r[3] * r[3]
			out[i] += T(w2 * s)
		}
		return
	}
	for i := range out {
		s := 0.0
		for _, v := range per[i*size : (i+1)*size] {
			s += v * v
		}
		out[i] += T(w2 * s)
	}
}

// ParamGrads implements dpops.Tapped: adds Σ_i scale_i·g_i to Grad
// (scale nil: all ones). The clipped release is κ times this sum; keeping
// it unweighted divides κ out again.
func (b *wBlock[T]) ParamGrads(scale []T) {
	size, per, grad := b.size, b.per[:len(b.mat)*b.size], b.Grad
	if size == 4 && len(grad) == 4 { // one 2×2 matrix: the loop below with its four sums in registers
		g0, g1, g2, g3 := grad[0], grad[1], grad[2], grad[3]
		for i := range b.mat {
			c := 1.0
			if scale != nil {
				c = float64(scale[i])
			}
			r := per[4*i : 4*i+4]
			g0 += c * r[0]
			g1 += c * r[1]
			g2 += c * r[2]
			g3 += c * r[3]
		}
		grad[0], grad[1], grad[2], grad[3] = g0, g1, g2, g3
		return
	}
	for i, t := range b.mat {
		c := 1.0
		if scale != nil {
			c = float64(scale[i])
		}
		dst := grad[t*size : (t+1)*size]
		for j, v := range per[i*size : (i+1)*size] {
			dst[j] += c * v
		}
	}
}

func grow[E any](s []E, n int) []E {
	if cap(s) < n {
		return make([]E, n)
	}
	return s[:n]
}
