package cuda

import (
	"errors"
	"fmt"
	"math"
	mrand "math/rand/v2"
)

// Backend runs fairdp's kernels. CPU is the twin that every build has; GPU
// (build tag cuda) runs the PTX kernels. All slices are host memory; the GPU
// backend stages them through device buffers it keeps across calls. Outputs
// come first, as in copy. Every method validates its arguments and returns an
// error instead of panicking.
type Backend interface {
	// Name is "cpu" or "cuda:<ordinal> <device name>".
	Name() string
	// LinearSqNorms adds ‖a_i‖²‖b_i‖² (+‖b_i‖² with bias) to sq[i]: the
	// squared norm of a linear layer's per-sample gradient from its taps a
	// (n×in inputs) and b (n×out backprops).
	LinearSqNorms(sq []float64, a, b []float32, n, in, out int, bias bool) error
	// Im2col unfolds x (n×inC×inH×inW) into u (n×(ckk+1)×hw, nn's layout with
	// a last row of ones for the bias).
	Im2col(u, x []float32, g ConvGeom, n int) error
	// Col2im folds du (n×ckk×hw: Im2col's rows without the ones row) into
	// dx (n×inC×inH×inW), each input element the sum of the entries that
	// read it; with du_i = Wᵀ·B_i that is the convolution's input gradient.
	Col2im(dx, du []float32, g ConvGeom, n int) error
	// ConvSqNorms adds ‖B_i·U_iᵀ‖²_F to sq[i]: the squared norm of a
	// convolution's per-sample [weight | bias] gradient from the unfolded
	// input u and the backprop b (n×outC×hw).
	ConvSqNorms(sq []float64, u, b []float32, g ConvGeom, n int) error
	// ClipFactors sets norms[i] = √sq[i] and scale[i] = min(1, C_i/norms[i])
	// with C_i = bounds[i], or flat when bounds is nil (dpops' Flat and
	// PerSample policies; a joint clip sums several blocks into sq first).
	ClipFactors(scale []float32, norms, sq, bounds []float64, flat float64) error
	// ScaleRows sets dst[i·rowLen+j] = scale[i]·b[i·rowLen+j] (dst may be b).
	ScaleRows(dst, b, scale []float32, rowLen int) error
	// LinearClippedGrad adds Σ_i scale_i·(a_i ⊗ b_i) to dw (in×out) and
	// Σ_i scale_i·b_i to db (out); db nil means a layer without bias.
	LinearClippedGrad(dw, db, a, b, scale []float32, n, in, out int) error
	// ConvClippedGrad adds Σ_i scale_i·B_i·U_iᵀ to [dw | db] (dw is
	// outC×ckk, db is outC).
	ConvClippedGrad(dw, db, u, b, scale []float32, g ConvGeom, n int) error
	// AddGaussian adds std·N(0,1) to every element of dst, drawn by
	// Philox4x32-10 under seed: element j's draw depends only on (seed, j).
	// std = 0 leaves dst unchanged.
	AddGaussian(dst []float32, std float64, seed NoiseSeed) error
	// BiasAdd adds bias[c] to y[(i·channels+c)·spatial+s].
	BiasAdd(y, bias []float32, n, channels, spatial int) error
	// ReLUForward sets y = max(x, 0) (NaN propagates), as nn.ReLU.
	ReLUForward(y, x []float32) error
	// ReLUBackward sets dx = dy where y > 0 and 0 elsewhere, as nn.ReLU.
	ReLUBackward(dx, y, dy []float32) error
	// MaxPoolForward takes the max over k×k windows with stride k of x
	// (n×c×h×w) into y and the arg-max (index within the input plane) into
	// arg, as nn.MaxPool2d.
	MaxPoolForward(y []float32, arg []int32, x []float32, g PoolGeom, n int) error
	// MaxPoolBackward scatters dy into dx (n×c×h×w) through arg.
	MaxPoolBackward(dx, dy []float32, arg []int32, g PoolGeom, n int) error
	// GroupNormForward normalises each sample's groups of channels of x
	// (n×c×h×w) into xhat, keeps each group's 1/√(var+ε) in invStd
	// (n×groups) and sets y = γ_c·x̂ + β_c, as nn.GroupNorm.Forward.
	GroupNormForward(y, xhat []float32, invStd []float64, x, gamma, beta []float32, g GroupGeom, n int) error
	// GroupNormBackward sets ps (n×2c) to each sample's [∂γ | ∂β] from dy
	// and the forward's xhat and invStd and, unless dx is nil, dx = ∂L/∂x,
	// as nn.GroupNorm.Backward.
	GroupNormBackward(dx, ps, dy, xhat []float32, invStd []float64, gamma []float32, g GroupGeom, n int) error
	// Close releases the backend's resources; it must not be used after.
	Close() error
}

// ConvGeom is the geometry of a 2-D convolution over NCHW inputs, as
// nn.NewConv2d takes it.
type ConvGeom struct {
	InC, InH, InW   int
	OutC, K, Stride int
	Pad             int
}

// OutHW returns the output height and width, floor((in+2·pad-k)/stride)+1.
func (g ConvGeom) OutHW() (int, int) {
	return (g.InH+2*g.Pad-g.K)/g.Stride + 1, (g.InW+2*g.Pad-g.K)/g.Stride + 1
}

// CKK is the number of weights per output channel, inC·k·k (the unfolded
// input has CKK()+1 rows, the last for the bias).
func (g ConvGeom) CKK() int { return g.InC * g.K * g.K }

// HW is the number of output positions per channel.
func (g ConvGeom) HW() int { oh, ow := g.OutHW(); return oh * ow }

// Validate reports a geometry nn.NewConv2d would reject, and one whose
// buffers would not fit the kernels' int indices.
func (g ConvGeom) Validate() error {
	if g.InC < 1 || g.InH < 1 || g.InW < 1 || g.OutC < 1 || g.K < 1 || g.Stride < 1 || g.Pad < 0 {
		return fmt.Errorf("cuda: bad convolution geometry %+v: sizes, kernel and stride must be ≥ 1 and pad ≥ 0", g)
	}
	if oh, ow := g.OutHW(); oh < 1 || ow < 1 {
		return fmt.Errorf("cuda: convolution kernel %d is larger than the padded input %d×%d", g.K, g.InH+2*g.Pad, g.InW+2*g.Pad)
	}
	return nil
}

// PoolGeom is the geometry of a k×k max-pool with stride k over C×H×W
// inputs (trailing rows and columns that do not fill a window are dropped).
type PoolGeom struct{ C, H, W, K int }

// OutHW returns the pooled height and width.
func (g PoolGeom) OutHW() (int, int) { return g.H / g.K, g.W / g.K }

// Validate reports a geometry nn.NewMaxPool2d would reject.
func (g PoolGeom) Validate() error {
	if g.C < 1 || g.K < 1 || g.H < g.K || g.W < g.K {
		return fmt.Errorf("cuda: bad max-pool geometry %+v: need c ≥ 1, k ≥ 1 and a window that fits h×w", g)
	}
	return nil
}

// GroupGeom is a group normalisation's geometry as nn.NewGroupNorm takes
// it: C×H×W inputs, Groups dividing C, and nn's ε (nn.GroupNorm.Eps).
type GroupGeom struct {
	C, H, W, Groups int
	Eps             float64
}

// Validate reports a geometry nn.NewGroupNorm would reject, or an ε that is
// not a finite number ≥ 0.
func (g GroupGeom) Validate() error {
	if g.Groups < 1 || g.C < 1 || g.H < 1 || g.W < 1 || g.C%g.Groups != 0 {
		return fmt.Errorf("cuda: bad group-norm geometry %+v: sizes ≥ 1 and Groups dividing C", g)
	}
	if !(g.Eps >= 0) || math.IsInf(g.Eps, 0) {
		return fmt.Errorf("cuda: group-norm Eps %v, want a finite number ≥ 0", g.Eps)
	}
	return nil
}

// Size is the values per sample, C·H·W.
func (g GroupGeom) Size() int { return g.C * g.H * g.W }

// group is a group's layout: hw values per channel, cpg channels and m =
// cpg·hw values per group.
func (g GroupGeom) group() (hw, cpg, m int) {
	hw, cpg = g.H*g.W, g.C/g.Groups
	return hw, cpg, cpg * hw
}

// NoiseSeed keys the Philox stream of one noise draw: 128 secret bits (the
// key and the upper half of the counter) and a stream number (the counter's
// second word) that tells buffers noised under the same seed apart. Draw a
// fresh seed per step from the run's stream with NewNoiseSeed, and never add
// noise under the same seed and stream twice: it would be the same noise.
// The same seed gives the same noise on both backends.
//
// Philox is a statistically strong counter-based generator (it passes
// TestU01's BigCrush), not a cryptographic one: noise keyed with 128 secret
// bits per step is unpredictable only as far as Philox resists
// cryptanalysis, which it was not designed for. dpops' CPU noise comes from
// ChaCha8, a CSPRNG. A receipt of a GPU run should say which generator drew
// the noise.
type NoiseSeed struct {
	Key    [2]uint32
	Nonce  [2]uint32
	Stream uint32
}

// NewNoiseSeed draws a seed from r (the run's noise stream: a CSPRNG, or a
// seeded stream for reproducible runs).
func NewNoiseSeed(r *mrand.Rand) NoiseSeed {
	k, c := r.Uint64(), r.Uint64()
	return NoiseSeed{Key: [2]uint32{uint32(k), uint32(k >> 32)}, Nonce: [2]uint32{uint32(c), uint32(c >> 32)}}
}

// ErrUnavailable is wrapped by every error that says the GPU backend cannot
// be used (no build tag, no driver, no device).
var ErrUnavailable = errors.New("cuda: backend unavailable")

// maxElems bounds every buffer: kernel indices are 32-bit ints.
const maxElems = math.MaxInt32

// The checks below are shared by both backends so that they accept and
// reject exactly the same calls.

func checkLen[E any](fn, what string, s []E, want int) error {
	return checkCount(fn, what, len(s), want)
}

func checkCount(fn, what string, have, want int) error {
	if want < 0 || want > maxElems {
		return fmt.Errorf("cuda.%s: %s would need %d elements; the kernels index at most %d", fn, what, want, maxElems)
	}
	if have != want {
		return fmt.Errorf("cuda.%s: %s has %d elements, want %d", fn, what, have, want)
	}
	return nil
}

func checkDims(fn string, dims ...int) error {
	prod := 1
	for _, d := range dims {
		if d < 0 {
			return fmt.Errorf("cuda.%s: negative size in %v", fn, dims)
		}
		if d > 0 && prod > maxElems/d {
			return fmt.Errorf("cuda.%s: sizes %v exceed %d elements", fn, dims, maxElems)
		}
		prod *= d
	}
	return nil
}

func checkLinear(fn string, a, b []float32, n, in, out int) error {
	if in < 1 || out < 1 {
		return fmt.Errorf("cuda.%s: layer sizes must be ≥ 1, got in=%d out=%d", fn, in, out)
	}
	if err := checkDims(fn, n, in+1, out); err != nil {
		return err
	}
	if err := checkLen(fn, "input tap a", a, n*in); err != nil {
		return err
	}
	return checkLen(fn, "backprop tap b", b, n*out)
}

func checkConv(fn string, u, b []float32, g ConvGeom, n int) error {
	if err := g.Validate(); err != nil {
		return err
	}
	if err := checkDims(fn, n, g.CKK()+1, g.HW()); err != nil {
		return err
	}
	if err := checkDims(fn, n, g.OutC, g.HW()); err != nil {
		return err
	}
	if err := checkLen(fn, "unfolded input u", u, n*(g.CKK()+1)*g.HW()); err != nil {
		return err
	}
	return checkLen(fn, "backprop tap b", b, n*g.OutC*g.HW())
}

func checkNoise(std float64) error {
	if !(std >= 0) || math.IsInf(std, 0) {
		return fmt.Errorf("cuda.AddGaussian: std = %v, want a finite number ≥ 0", std)
	}
	return nil
}

// clipError turns the first bad sample found by ClipFactors into dpops'
// messages (a bad norm is reported before a bad bound, as dpops.Clipper does).
func clipError(sq, bounds []float64, flat float64, badNorm, badBound int) error {
	if badNorm < len(sq) {
		return fmt.Errorf("cuda: sample %d has gradient norm² %v; the loss is not finite", badNorm, sq[badNorm])
	}
	if badBound < len(sq) {
		b := flat
		if bounds != nil {
			b = bounds[badBound]
		}
		return fmt.Errorf("cuda: clip bound of sample %d is %v; it must be > 0", badBound, b)
	}
	return nil
}

func checkClip(scale []float32, norms, sq, bounds []float64) error {
	const fn = "ClipFactors"
	n := len(sq)
	if err := checkLen(fn, "scale", scale, n); err != nil {
		return err
	}
	if err := checkLen(fn, "norms", norms, n); err != nil {
		return err
	}
	if bounds != nil {
		return checkLen(fn, "bounds", bounds, n)
	}
	return nil
}

func checkPool(fn string, g PoolGeom, n, xLen, yLen, argLen int) error {
	if err := g.Validate(); err != nil {
		return err
	}
	oh, ow := g.OutHW()
	if err := checkDims(fn, n, g.C, g.H, g.W); err != nil {
		return err
	}
	if err := checkCount(fn, "input", xLen, n*g.C*g.H*g.W); err != nil {
		return err
	}
	if err := checkCount(fn, "output", yLen, n*g.C*oh*ow); err != nil {
		return err
	}
	return checkCount(fn, "arg-max", argLen, n*g.C*oh*ow)
}

// groupBuf is a buffer of a group-norm call: per values per sample.
type groupBuf struct {
	what string
	s    []float32
	per  int
}

// checkGroupNormForward is GroupNormForward's argument check on both
// backends.
func checkGroupNormForward(y, xhat []float32, invStd []float64, x, gamma, beta []float32, g GroupGeom, n int) error {
	const fn = "GroupNormForward"
	size := g.Size()
	if err := checkGroupNorm(fn, g, n, invStd, gamma, groupBuf{"y", y, size}, groupBuf{"xhat", xhat, size},
		groupBuf{"x", x, size}); err != nil {
		return err
	}
	return checkLen(fn, "beta", beta, g.C)
}

// checkGroupNormBackward is GroupNormBackward's argument check on both
// backends (dx nil: no input gradient).
func checkGroupNormBackward(dx, ps, dy, xhat []float32, invStd []float64, gamma []float32, g GroupGeom, n int) error {
	size := g.Size()
	bufs := []groupBuf{{"ps", ps, 2 * g.C}, {"dy", dy, size}, {"xhat", xhat, size}}
	if dx != nil {
		bufs = append(bufs, groupBuf{"dx", dx, size})
	}
	return checkGroupNorm("GroupNormBackward", g, n, invStd, gamma, bufs...)
}

// checkGroupNorm checks a group normalisation's geometry and buffers: n
// samples' values in each of bufs, Groups per sample in invStd, C in gamma.
func checkGroupNorm(fn string, g GroupGeom, n int, invStd []float64, gamma []float32, bufs ...groupBuf) error {
	if err := g.Validate(); err != nil {
		return err
	}
	if err := checkDims(fn, n, 2*g.C, g.H, g.W); err != nil {
		return err
	}
	for _, b := range bufs {
		if err := checkLen(fn, b.what, b.s, n*b.per); err != nil {
			return err
		}
	}
	if err := checkLen(fn, "invStd", invStd, n*g.Groups); err != nil {
		return err
	}
	return checkLen(fn, "gamma", gamma, g.C)
}
