package dpops

import (
	"fmt"
	"math"
	mrand "math/rand/v2"

	"github.com/fairdp/fairdp/nn"
)

// Normals draws a step's standard normal values ahead of time, on a
// goroutine of its own, so that the noise of a large model is drawn while
// the step's forward and backward passes run instead of after them: the
// 431K draws of the MNIST CNN took about 3 ms on one core, serial at the
// end of a step whose other work keeps both cores busy only part of the
// time. The values are (*rand.Rand).NormFloat64() from the generator in
// order, exactly the draws AddGaussian would make from rand.New(src), so
// NoiseAndScaleDrawn gives the same bits as NoiseAndScale with that Rand,
// and src is left at the same position. Where the CPU has AVX-512 or AVX2
// they are drawn through a chachaStream (chacha.go), 16 ChaCha8 blocks at a
// time: 1.4–1.6 ms instead of 3.2–3.8 for the MNIST CNN on the reference
// EPYC (BenchmarkNormals). The noise does not depend on the data, so drawing it
// early changes nothing about what is released.
//
// Between Start and Wait, src belongs to the drawing goroutine: the caller
// must not use it.
type Normals struct {
	z      []float64
	done   chan struct{}
	stream chachaStream
}

// Start begins drawing n values from src.
func (d *Normals) Start(src *mrand.ChaCha8, n int) {
	if cap(d.z) < n {
		d.z = make([]float64, n)
	}
	d.z = d.z[:n]
	d.done = make(chan struct{})
	go func() {
		defer close(d.done)
		drawNormals(src, d.z, &d.stream)
	}()
}

// drawNormals sets z to successive (*rand.Rand).NormFloat64() draws from
// src, through s where that is faster.
func drawNormals(src *mrand.ChaCha8, z []float64, s *chachaStream) {
	if fastChaCha && len(z) >= chachaValues && s.load(src) {
		s.normals(z)
		if err := s.store(src); err != nil {
			// Only a position store built itself, so this cannot happen;
			// going on would draw the same noise again next step.
			panic("dpops: cannot move the noise generator on: " + err.Error())
		}
		return
	}
	r := mrand.New(src)
	for i := range z {
		z[i] = r.NormFloat64()
	}
}

// Wait returns the values once they are all drawn (nil if Start was never
// called). It may be called more than once.
func (d *Normals) Wait() []float64 {
	if d.done == nil {
		return nil
	}
	<-d.done
	return d.z
}

// NoiseAndScaleDrawn is NoiseAndScale with the standard normal values
// already drawn (z, one per gradient value of params in order, e.g. from
// Normals): every gradient value g becomes T(g + std·z), AddGaussian's
// arithmetic, and is then scaled by T(scale) as NoiseAndScale does, in one
// pass (addDrawn). A count that does not match changes nothing.
func NoiseAndScaleDrawn[T nn.Float](z []float64, params []*nn.Param[T], std, scale float64) error {
	if !(std >= 0) || math.IsInf(std, 0) {
		return fmt.Errorf("dpops.NoiseAndScaleDrawn: std = %v, want a finite number ≥ 0", std)
	}
	total := 0
	for _, p := range params {
		total += len(p.Grad)
	}
	if total != len(z) {
		return fmt.Errorf("dpops.NoiseAndScaleDrawn: %d values drawn for %d gradient values", len(z), total)
	}
	for _, p := range params {
		addDrawn(p.Grad, z[:len(p.Grad)], std, T(scale))
		z = z[len(p.Grad):]
	}
	return nil
}

// addDrawn sets dst[i] = T(dst[i] + std·z[i]) · scale: AddGaussian's sum
// (std = 0 adds nothing, as there) and noiseAndScale's product, each
// rounded as there, in one pass over dst (float32 in assembly where the
// CPU has AVX: the MNIST CNN's 431K values took 0.5 ms in two Go loops,
// serial at the end of the step).
func addDrawn[T nn.Float](dst []T, z []float64, std float64, scale T) {
	if std == 0 {
		for i := range dst {
			dst[i] *= scale
		}
		return
	}
	done := 0
	if d, ok := any(dst).([]float32); ok {
		done = addDrawn32(d, z, std, float32(scale))
	}
	z = z[:len(dst)]
	for i := done; i < len(dst); i++ {
		dst[i] = T(float64(dst[i])+float64(std*z[i])) * scale
	}
}
