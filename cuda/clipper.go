package cuda

import (
	"fmt"

	"github.com/fairdp/fairdp/dpops"
)

// Block is one parameter block whose per-sample gradients are known through
// its taps, as dpops.Tapped is on the CPU: LinearTaps or ConvTaps.
type Block interface {
	addSqNorms(be Backend, sq []float64, n int) error
	addClippedGrad(be Backend, scale []float32, n int) error
}

// LinearTaps is a linear layer's taps for one batch (A: n×In inputs, B:
// n×Out backprops ∂L/∂Z) and the gradient buffers the clipped sum is added
// to (GradW: In×Out as nn.Linear's weight, GradB: Out, nil for a layer
// without bias).
type LinearTaps struct {
	A, B         []float32
	In, Out      int
	GradW, GradB []float32
}

func (l *LinearTaps) addSqNorms(be Backend, sq []float64, n int) error {
	return be.LinearSqNorms(sq, l.A, l.B, n, l.In, l.Out, l.GradB != nil)
}

func (l *LinearTaps) addClippedGrad(be Backend, scale []float32, n int) error {
	return be.LinearClippedGrad(l.GradW, l.GradB, l.A, l.B, scale, n, l.In, l.Out)
}

// ConvTaps is a convolution's taps for one batch (X: n×InC×InH×InW inputs,
// B: n×OutC×outH×outW backprops) and its gradient buffers (GradW: OutC×CKK
// as nn.Conv2d's weight, GradB: OutC). The unfolded input is kept between
// the norm and the clipped sum and reused across steps.
type ConvTaps struct {
	X, B         []float32
	Geom         ConvGeom
	GradW, GradB []float32
	u            []float32
	unfolded     bool
}

func (c *ConvTaps) unfold(be Backend, n int) error {
	if err := c.Geom.Validate(); err != nil {
		return err
	}
	if err := checkDims("ConvTaps", n, c.Geom.CKK()+1, c.Geom.HW()); err != nil {
		return err
	}
	size := n * (c.Geom.CKK() + 1) * c.Geom.HW()
	if cap(c.u) < size {
		c.u = make([]float32, size)
	}
	c.u = c.u[:size]
	c.unfolded = false
	if err := be.Im2col(c.u, c.X, c.Geom, n); err != nil {
		return err
	}
	c.unfolded = true
	return nil
}

func (c *ConvTaps) addSqNorms(be Backend, sq []float64, n int) error {
	if err := c.unfold(be, n); err != nil {
		return err
	}
	return be.ConvSqNorms(sq, c.u, c.B, c.Geom, n)
}

func (c *ConvTaps) addClippedGrad(be Backend, scale []float32, n int) error {
	if !c.unfolded || len(c.u) != n*(c.Geom.CKK()+1)*c.Geom.HW() {
		if err := c.unfold(be, n); err != nil {
			return err
		}
	}
	return be.ConvClippedGrad(c.GradW, c.GradB, c.u, c.B, scale, c.Geom, n)
}

// Clipper is dpops.Clipper's clip-and-sum step on a Backend: joint
// per-sample norms over blocks, clip factors for a flat or per-sample bound,
// and the clipped sum Σ_i c_i g_i added to every block's gradient; then
// AddNoise for the Gaussian mechanism. Its buffers are reused across steps.
type Clipper struct {
	be     Backend
	sq     []float64
	norms  []float64
	bounds []float64
	scale  []float32
}

// NewClipper returns a Clipper running on be.
func NewClipper(be Backend) *Clipper { return &Clipper{be: be} }

// Clip clips the n samples of the last backward pass of blocks to bound
// and adds the clipped sum to their gradients, like dpops.Clipper.Clip. It
// returns the per-sample joint norms before clipping (the slice is reused by
// the next call).
func (c *Clipper) Clip(n int, bound dpops.Bound, blocks ...Block) ([]float64, error) {
	if n < 0 {
		return nil, fmt.Errorf("cuda: batch size %d", n)
	}
	if bound == nil {
		return nil, fmt.Errorf("cuda: nil clip bound")
	}
	c.sq = resize(c.sq, n)
	clear(c.sq)
	for _, blk := range blocks {
		if err := blk.addSqNorms(c.be, c.sq, n); err != nil {
			return nil, err
		}
	}
	c.norms = resize(c.norms, n)
	c.scale = resize(c.scale, n)
	var bounds []float64
	flat := 0.0
	switch b := bound.(type) {
	case dpops.Flat:
		flat = float64(b)
	case dpops.PerSample:
		bounds = b
	default:
		c.bounds = resize(c.bounds, n)
		for i := range c.bounds {
			c.bounds[i] = bound.At(i)
		}
		bounds = c.bounds
	}
	if err := c.be.ClipFactors(c.scale, c.norms, c.sq, bounds, flat); err != nil {
		return nil, err
	}
	for _, blk := range blocks {
		if err := blk.addClippedGrad(c.be, c.scale, n); err != nil {
			return nil, err
		}
	}
	return c.norms, nil
}

// AddNoise adds N(0, std²) to every element of grads (the Gaussian
// mechanism over the clipped sum), buffer k under seed with Stream k so no
// two buffers share noise. Draw seed fresh each step (NewNoiseSeed).
func (c *Clipper) AddNoise(std float64, seed NoiseSeed, grads ...[]float32) error {
	for k, g := range grads {
		s := seed
		s.Stream = uint32(k)
		if err := c.be.AddGaussian(g, std, s); err != nil {
			return err
		}
	}
	return nil
}

func resize[E any](s []E, n int) []E {
	if cap(s) < n {
		return make([]E, n)
	}
	return s[:n]
}
