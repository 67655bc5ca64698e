// Package dpops is the machinery of private training: per-sample clipping
// over model taps, noise, secure randomness and sampling; accounting in
// dpops/accounting.
//
// It exists so that every trainer (DPSGD and DPSGD-F, DP-FERMI, SteFFLe, the
// linear and tailoring code) gets its privacy-critical primitives from one
// audited place instead of re-deriving them:
//
//   - rand.go: NewRand gives a run its randomness — a CSPRNG keyed from
//     crypto/rand, or, when the user passes a seed, a bit-reproducible (and
//     explicitly not secure) stream — and Source.Derive splits it into
//     independent named streams (data shuffling, sampling, noise).
//
//   - noise.go: Gaussian and Laplace noise over whole parameter buffers (the
//     hot path of every DP-SGD step) and floating-point-safe samplers for
//     single released scalars (counts, sums, standard errors), which resist
//     Mironov's 2012 attack on textbook floating-point noise.
//
//   - release.go: NoiseAndScale, the release step of every DP-SGD-style
//     trainer (noise on the clipped sums, then division by the expected
//     batch), and its hardened twin for sums that leave the process.
//
//   - prefetch.go: Normals draws a large model's standard normals from the
//     noise stream on a goroutine of its own while the step computes its
//     gradients (the noise does not depend on the data), and
//     NoiseAndScaleDrawn adds them and scales in one pass with
//     NoiseAndScale's arithmetic (AVX for float32, drawn_amd64.s): the same
//     bits, without a serial ~3 ms of drawing at the end of an MNIST CNN
//     step. DP-SGD and DP-FERMI both draw ahead.
//
//   - chacha.go: the noise streams are Go's math/rand/v2 ChaCha8, and
//     Normals draws their values in bulk, bit for bit: chachaStream reads the
//     generator's position from its MarshalBinary encoding, computes each
//     seed's 16 ChaCha8 blocks at once (chacha_amd64.s, AVX-512 or AVX2,
//     written by internal/chachagen), takes the ziggurat's accepted draws
//     (about 97 %) straight from those blocks and hands the rest to a copy of
//     Go's NormFloat64 (ziggurat_tables.go); then it moves the generator on.
//     Nothing about the noise changes (TestFastNormalsMatchNormFloat64
//     compares every draw and the generator's next value); only the speed:
//     1.4–1.6 ms instead of 3.2–3.8 for the MNIST CNN's 431K draws. Go's
//     generator itself was kept (its 4-block SSE2 code is the slow part)
//     because a seeded run's noise, the receipts and the checkpoints all name
//     and store ChaCha8 positions.
//
//   - sampler.go: Poisson subsampling (what the RDP accountant assumes) and
//     shuffled fixed-size batches (paper fidelity, flagged as not covered by
//     RDP accounting).
//
//   - clip.go: the per-sample clipping engine over nn taps: joint per-sample
//     norms of one or more parameter blocks, clip factors for a flat bound or
//     a bound per sample, and the clipped sum Σ c_i g_i, without one
//     backward pass per sample. A model's layers are clipped one by one
//     (Layered), so the layer that gains most (nn.ClipSummer) can be last
//     and add its clipped gradients as its norms come, with the factors and
//     every other gradient bit for bit those of the unfused order.
//
//   - factors.go: the batch's norms (√ of the squared norms, for clip.go)
//     and DP-SGD's clip factors min(1, C/‖g_i‖), four at a time in AVX
//     assembly (factors_amd64.s) with the scalar loops' bits.
package dpops
