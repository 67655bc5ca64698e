package dpops

import (
	"fmt"
	"math"

	"fairdp/nn"
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

// Clipper clips per sample and sums, reusing its buffers across steps.
//
// For a batch of n samples whose backward pass has run on every block,
// Clip computes the joint norm ‖g_i‖ = sqrt(Σ_blocks ‖g_i^block‖²) (joint
// clipping of several blocks, e.g. DP-FERMI's θ and W), the factors
// c_i = min(1, C_i/‖g_i‖), and adds Σ_i c_i g_i to every block's gradient.
// Clipping only part of the loss (DP-FERMI's sensitive term) is a backward
// pass of that part alone followed by Clip; the rest of the loss is then
// back-propagated and added with ParamGrads(nil).
type Clipper[T nn.Float] struct {
	sq, scale []T
	norms     []float64
}

// Clip clips the n samples of the last backward pass of blocks to bound
// and adds the clipped sum to their gradients. It returns the per-sample
// norms before clipping (DPSGD-F counts how many exceed C0); the slice is
// reused by the next call.
func (c *Clipper[T]) Clip(n int, bound Bound, blocks ...Tapped[T]) ([]float64, error) {
	norms, err := c.Norms(n, blocks...)
	if err != nil {
		return nil, err
	}
	c.scale = resize(c.scale, n)
	for i, g := range norms {
		b := bound.At(i)
		if !(b > 0) {
			return nil, fmt.Errorf("dpops: clip bound of sample %d is %v; it must be > 0", i, b)
		}
		c.scale[i] = T(ClipFactor(g, b))
	}
	for _, blk := range blocks {
		blk.ParamGrads(c.scale)
	}
	return norms, nil
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
	c.norms = resize(c.norms, n)
	if sqrtNorms(c.sq, c.norms) { // four at a time (factors.go)
		return c.norms, nil
	}
	for i, s := range c.sq { // a value is not finite: find the first
		v := float64(s)
		if !(v >= 0 && v <= math.MaxFloat64) { // NaN, ±Inf or negative
			return nil, fmt.Errorf("dpops: sample %d has gradient norm² %v; the loss is not finite", i, v)
		}
		c.norms[i] = math.Sqrt(v)
	}
	return c.norms, nil
}

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
