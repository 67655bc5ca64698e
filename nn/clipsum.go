package nn

// DP-SGD needs every sample's norm over all parameters before it can scale
// any of the sample's gradients, so a layer whose per-sample gradients are
// explicit computes them twice or keeps them: SqNorms writes them to a cache
// and ParamGrads reads them back (or recomputes the product). For the MNIST
// CNN's second convolution that cache is 26 MB per step at batch 256,
// written once and read once: of the 3.8 CPU-ms its DP pass added to its
// plain one, fusing took away 2.1 (BenchmarkConvCache, dp and dp-fused).
// A layer whose norms are the last to be computed knows every sample's
// whole norm, and so its clip factor, the moment its own part is done: it
// can add the scaled gradient while that gradient is still in the cache of
// the core that computed it. ClipSummer is that pass; the caller
// (dpops.Clipper) computes every other layer's norms first and gives it the
// factors through a SampleScaler.

// ClipSummer is implemented by layers that can add their clipped
// per-sample gradients in the pass that computes the per-sample norms.
type ClipSummer[T Float] interface {
	// ClipSumGain is the number of bytes of per-sample gradients that
	// ClipSum saves keeping or recomputing for a batch of this size after
	// SqNorms; 0 when fusing saves nothing (the layer's norms do not
	// compute per-sample gradients, e.g. the Gram method).
	ClipSumGain(batch int) int
	// ClipSum adds each sample's ‖g_i‖² to sq[i], which must already hold
	// the sample's squared norm over every block added before this layer;
	// then it asks s for the sample's factor f_i and adds f_i·g_i into
	// each Param.Grad. It replaces this layer's SqNorms and ParamGrads for
	// the step: ParamGrads must not follow it. s is called once per sample,
	// from several goroutines at once for different samples.
	ClipSum(sq []T, s SampleScaler[T])
}

// SampleScaler gives the clip factor of a sample once its part of the
// squared norm is in place (see ClipSummer).
type SampleScaler[T Float] interface {
	// SampleScale returns sample i's factor. It may change sq[i], the
	// sample's element of the slice given to ClipSum; it must not touch
	// other samples' elements.
	SampleScale(i int) T
}

// ClipSumGain implements ClipSummer: the [∂W | ∂b] of every sample that
// ParamGrads after an explicit SqNorms reads back from the cache or
// recomputes; 0 when the Gram method is the cheaper norm.
func (c *Conv2d[T]) ClipSumGain(batch int) int {
	if c.NormMethodFor(batch) != NormExplicit {
		return 0
	}
	return batch * c.outC * (c.ckk + 1) * elemSize[T]()
}

// ClipSum implements ClipSummer with the explicit method whatever
// NormMethodFor says: each worker computes a sample's [∂W | ∂b] tile by
// tile as SqNorms does, adds its norm to sq, and adds f_i times it to the
// worker's accumulator; the accumulators are added to the gradients in
// worker order, so the result does not depend on scheduling. Nothing is
// cached.
func (c *Conv2d[T]) ClipSum(sq []T, s SampleScaler[T]) {
	c.mustHaveTap("ClipSum")
	mustLen(c, "norm output", sq, c.batch)
	if c.batch == 0 {
		return
	}
	c.norms, c.scaler = sq, s
	c.gram, c.caching, c.perSampleValid = false, false, false
	parts := c.dispatch(convSqNorms, true)
	for w := 0; w < parts; w++ {
		c.addFlat(c.scratch[w].acc, c.ckk+1)
	}
	c.norms, c.scaler = nil, nil
}
