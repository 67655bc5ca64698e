package nn

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// Dropout zeroes each input value with probability P while training and
// scales the kept ones by 1/(1−P) ("inverted" dropout, as Gorgonia's and
// PyTorch's), so evaluation is the identity. It is what a Gorgonia graph's
// Dropout lowers to (package graph).
//
// The masks come from the layer's own generator, seeded by Seed: they do
// not depend on the data, so they change nothing in the privacy accounting
// (each sample's gradient is still clipped as a whole), and a run is
// repeated exactly from its seed. The mask of the last training Forward is
// the tap: Backward multiplies the output gradient by it, and a parameter-
// free layer adds nothing to SqNorms or ParamGrads.
type Dropout[T Float] struct {
	p    float64
	seed uint64
	rng  *rand.Rand
	mask []T // 0 or 1/(1−P) per value of the last training Forward
	y    []T // the last output (x itself after an evaluation pass)
	buf  []T // the layer's own output buffer (y is not: it may alias x)
	dx   []T
	on   bool // the last Forward was a training pass with P > 0
	// pcg is rng's source, whose position a checkpoint saves.
	pcg *rand.PCG
}

// NewDropout returns a Dropout layer dropping with probability p ∈ [0, 1),
// its masks drawn from a generator seeded by seed.
func NewDropout[T Float](p float64, seed uint64) *Dropout[T] {
	if !(p >= 0 && p < 1) {
		panic(fmt.Sprintf("nn.NewDropout: probability %v, want 0 ≤ p < 1", p))
	}
	pcg := rand.NewPCG(seed, 0x64726f70)
	return &Dropout[T]{p: p, seed: seed, rng: rand.New(pcg), pcg: pcg}
}

// MarshalBinary implements encoding.BinaryMarshaler: the position of the
// mask generator, which a training checkpoint saves so that a resumed run
// draws the masks the uninterrupted run would have. The masks follow from
// the layer's seed alone, not from the data or the run's noise.
func (d *Dropout[T]) MarshalBinary() ([]byte, error) { return d.pcg.MarshalBinary() }

// UnmarshalBinary implements encoding.BinaryUnmarshaler.
func (d *Dropout[T]) UnmarshalBinary(b []byte) error { return d.pcg.UnmarshalBinary(b) }

// Name implements Layer.
func (d *Dropout[T]) Name() string { return fmt.Sprintf("Dropout(%g)", d.p) }

// OutShape implements Layer: the input shape.
func (d *Dropout[T]) OutShape(in []int) []int { return slices.Clone(in) }

// Forward implements Layer. With train false (or P = 0) it returns x itself.
func (d *Dropout[T]) Forward(x []T, batch int, train bool) []T {
	if batch == 0 && len(x) != 0 || batch > 0 && len(x)%batch != 0 {
		panic(fmt.Sprintf("nn: %s: %d values are not a batch of %d", d.Name(), len(x), batch))
	}
	d.on = train && d.p > 0
	if !d.on {
		d.y = x
		return x
	}
	keep := 1 - d.p
	scale := T(1 / keep)
	d.mask = grow(d.mask, len(x))
	d.buf = grow(d.buf, len(x))
	d.y = d.buf
	for i, v := range x {
		m := T(0)
		if d.rng.Float64() < keep {
			m = scale
		}
		d.mask[i] = m
		d.y[i] = v * m
	}
	return d.y
}

// Backward implements Layer: dy times the last mask (dy itself after an
// evaluation pass).
func (d *Dropout[T]) Backward(dy []T, needInput bool) []T {
	mustLen(d, "output gradient", dy, len(d.y))
	if !needInput {
		return nil
	}
	if !d.on {
		return dy
	}
	d.dx = grow(d.dx, len(dy))
	for i, g := range dy {
		d.dx[i] = g * d.mask[i]
	}
	return d.dx
}

// Params implements Layer: Dropout has none.
func (d *Dropout[T]) Params() []*Param[T] { return nil }

// ParamGrads implements Layer (no-op).
func (d *Dropout[T]) ParamGrads(scale []T) {}

// SqNorms implements Layer (no-op).
func (d *Dropout[T]) SqNorms(out []T) {}

// Spec implements Describer.
func (d *Dropout[T]) Spec() LayerSpec { return LayerSpec{Kind: KindDropout, P: d.p, Seed: d.seed} }
