package dpops

import (
	"fmt"
	"math"

	"github.com/fairdp/fairdp/nn"
)

// Tapped is a block of parameters whose per-sample gradients are known
// through its taps after a backward pass: a models.Model, one nn.Layer, or
// an algorithm's own block (DP-FERMI's W matrix).
type Tapped[T nn.Float] interface {
	// SqNorms adds ‖g_i‖² of the block to out[i].
	SqNorms(out []T)
	// ParamGrads adds Σ_i scale[i]·g_i into the block's gradient buffers.
	ParamGrads(scale []T)
}

// Bound gives the clip bound of each sample: Flat for DP-SGD's single C,
// PerSample for DPSGD-F's group bounds.
type Bound interface {
	At(i int) float64
}

// Flat is one clip bound C for every sample (math.Inf(1): no clipping).
type Flat float64

// At implements Bound.
func (c Flat) At(int) float64 { return float64(c) }

// PerSample holds one bound per sample of the batch.
type PerSample []float64

// At implements Bound.
func (c PerSample) At(i int) float64 { return c[i] }

// Layered is a Tapped block made of layers, whose SqNorms and ParamGrads
// are its layers' in order (a models.Model). Clipper.Clip looks into it
// for a layer that clips and sums in the same pass as its norms.
type Layered[T nn.Float] interface {
	Tapped[T]
	// TappedLayers lists the layers in the order SqNorms adds them.
	TappedLayers() []nn.Layer[T]
}

// Clipper clips per sample and sums, reusing its buffers across steps.
//
// For a batch of n samples whose backward pass has run on every block,
// Clip computes the joint norm ‖g_i‖ = sqrt(Σ_blocks ‖g_i^block‖²) (joint
// clipping of several blocks, e.g. DP-FERMI's θ and W), the factors
// c_i = min(1, C_i/‖g_i‖), and adds Σ_i c_i g_i to every block's gradient.
// Clipping only part of the loss (DP-FERMI's sensitive term) is a backward
// pass of that part alone followed by Clip; the rest of the loss is then
// back-propagated and added with ParamGrads(nil).
//
// When a block is Layered and one of its layers is an nn.ClipSummer that
// gains from it, that layer (the one with the largest gain) is fused: every
// other part's norms are computed first, and the layer adds c_i·g_i as soon
// as its own part of sample i's norm is known, instead of keeping or
// recomputing its per-sample gradients for a ParamGrads afterwards. The
// parts after it in the sum add their norms into buffers of their own, and
// SampleScale adds them in their place, so the norms, the factors and every
// other part's gradients are bit for bit those of the unfused order; the
// fused layer's sum is the same terms added in another order.
type Clipper[T nn.Float] struct {
	sq, scale []T
	norms     []float64
	parts     []Tapped[T]
	after     [][]T // norms of the parts after the fused one, part by part
	bound     Bound // of the running Clip, for SampleScale
}

// Clip clips the n samples of the last backward pass of blocks to bound
// and adds the clipped sum to their gradients. It returns the per-sample
// norms before clipping (DPSGD-F counts how many exceed C0); the slice is
// reused by the next call.
func (c *Clipper[T]) Clip(n int, bound Bound, blocks ...Tapped[T]) ([]float64, error) {
	if n < 0 {
		return nil, fmt.Errorf("dpops: batch size %d", n)
	}
	parts, fused := c.split(n, blocks)
	c.sq = resize(c.sq, n)
	clear(c.sq)
	c.scale = resize(c.scale, n)
	if fused < 0 {
		for _, p := range parts {
			p.SqNorms(c.sq)
		}
	} else {
		for _, p := range parts[:fused] {
			p.SqNorms(c.sq)
		}
		rest := parts[fused+1:]
		c.after = resize(c.after, len(rest))
		for j, p := range rest {
			c.after[j] = resize(c.after[j], n)
			clear(c.after[j])
			p.SqNorms(c.after[j])
		}
		c.bound = bound
		parts[fused].(nn.ClipSummer[T]).ClipSum(c.sq, (*clipScaler[T])(c))
		c.bound = nil
	}
	norms, err := c.checkNorms()
	if err != nil {
		return nil, err
	}
	if f, ok := bound.(Flat); ok && f > 0 {
		clipFactors(norms, float64(f), c.scale) // four at a time (factors.go)
	} else {
		for i, g := range norms {
			b := bound.At(i)
			if !(b > 0) {
				return nil, fmt.Errorf("dpops: clip bound of sample %d is %v; it must be > 0", i, b)
			}
			c.scale[i] = T(ClipFactor(g, b))
		}
	}
	for j, p := range parts {
		if j != fused {
			p.ParamGrads(c.scale)
		}
	}
	return norms, nil
}

// split lists the parts Clip works on (every Layered block's layers, other
// blocks whole) in the order their norms are summed, and the index of the
// one to fuse (−1: none), reusing c.parts.
func (c *Clipper[T]) split(n int, blocks []Tapped[T]) ([]Tapped[T], int) {
	c.parts = c.parts[:0]
	fused, gain := -1, 0
	for _, b := range blocks {
		l, ok := b.(Layered[T])
		if !ok {
			c.parts = append(c.parts, b)
			continue
		}
		for _, layer := range l.TappedLayers() {
			if s, ok := layer.(nn.ClipSummer[T]); ok {
				if g := s.ClipSumGain(n); g > gain {
					fused, gain = len(c.parts), g
				}
			}
			c.parts = append(c.parts, layer)
		}
	}
	return c.parts, fused
}

// clipScaler is a Clipper seen as the nn.SampleScaler of its fused layer.
type clipScaler[T nn.Float] Clipper[T]

// SampleScale implements nn.SampleScaler: sq[i] holds the parts before the
// fused layer and the layer itself; the parts after it are added in their
// order, and the factor is the one Clip's loop gives that total (0 for a
// total or a bound Clip will refuse).
func (s *clipScaler[T]) SampleScale(i int) T {
	v := s.sq[i]
	for _, a := range s.after {
		v += a[i]
	}
	s.sq[i] = v
	g, b := float64(v), s.bound.At(i)
	if !finiteSquare(g) || !(b > 0) {
		return 0
	}
	return T(ClipFactor(math.Sqrt(g), b))
}

// Norms returns each sample's joint gradient norm over blocks without
// touching the gradients (the slice is reused by the next call).
func (c *Clipper[T]) Norms(n int, blocks ...Tapped[T]) ([]float64, error) {
	if n < 0 {
		return nil, fmt.Errorf("dpops: batch size %d", n)
	}
	c.sq = resize(c.sq, n)
	clear(c.sq)
	for _, blk := range blocks {
		blk.SqNorms(c.sq)
	}
	return c.checkNorms()
}

// checkNorms turns the squared norms in c.sq into c.norms, refusing a
// sample whose loss was not finite.
func (c *Clipper[T]) checkNorms() ([]float64, error) {
	c.norms = resize(c.norms, len(c.sq))
	if sqrtNorms(c.sq, c.norms) { // four at a time (factors.go)
		return c.norms, nil
	}
	for i, s := range c.sq { // a value is not finite: find the first
		v := float64(s)
		if !finiteSquare(v) {
			return nil, fmt.Errorf("dpops: sample %d has gradient norm² %v; the loss is not finite", i, v)
		}
		c.norms[i] = math.Sqrt(v)
	}
	return c.norms, nil
}

// finiteSquare reports whether v is a usable squared norm: not NaN, ±Inf
// or negative.
func finiteSquare(v float64) bool { return v >= 0 && v <= math.MaxFloat64 }

// ClipFactor is min(1, bound/norm), the scale that brings a gradient of the
// given norm within bound (1 for a zero gradient or an infinite bound).
func ClipFactor(norm, bound float64) float64 {
	if norm <= bound {
		return 1
	}
	return bound / norm
}

func resize[E any](s []E, n int) []E {
	if cap(s) < n {
		return make([]E, n)
	}
	return s[:n]
}
