// Package nn holds fairdp's neural-network layers: Linear, Conv2d, MaxPool2d,
// activations, Flatten, GroupNorm and Residual, the losses and the
// optimizers.
//
// Linear and Conv2d have a bias unless built with NewLinearNoBias or
// NewConv2dNoBias; Conv2d takes a kernel, stride and zero padding per axis
// (ConvWindow; NewConv2d is the square case). Residual (residual.go) is a
// join of two branches of layers, y = body(x) + shortcut(x), so a network
// with skip connections is still a sequence of layers. Every layer describes itself as a LayerSpec (JSON in
// checkpoints and --model-spec files) that NewLayer builds again.
//
// Every parameterised layer keeps its tap (input A and backprop B = ∂L/∂Z of
// its pre-activation output) after Backward, so parameter gradients can be
// formed later with a per-sample weight: this is how dpops clips per sample
// without one backward pass per sample. Linear layers never form per-sample
// gradients (ghost norms); Conv2d keeps them only while they fit a bounded
// cache (64 MiB per layer by default), where they make the clipped sum cheap.
// One layer per clipped step need not keep them at all: a ClipSummer
// (clipsum.go; Conv2d is one) whose norms are computed after every other
// block's adds each sample's clipped gradient while it is still in the
// core's cache, which took the MNIST CNN's 26 MB round trip out of its DP
// step.
//
// Conv2d runs on im2col + GEMM, and the moves around the products are
// shaped so the products read their operands in place: Forward unfolds U
// (one row per kernel tap, positions contiguous) for [W | b]·U, while
// ParamGrads and the explicit SqNorms unfold Uᵀ directly (im2row, one row
// per output position) for B·Uᵀ, rather than transposing U in the GEMM's
// packing; the unfolded input is not cached (re-unfolding into L2 beat
// reading a 48 MB cache back and transposing it), and Uᵀ's rows are
// padded with zeros to whole kernel tiles. The row moves of
// stride-1 im2col/col2im and im2row, and the 2×2 max-pool, are AVX
// assembly (unfold_amd64.s, maxpool_amd64.s) with Go loops for other
// CPUs and the purego tag; they give the same bits as those loops (they
// copy, and add in the same order). On the MNIST CNN, whose products are
// small, these moves were about half of the step's CPU time; the figures
// are in bench/RESULTS.md.
//
// Each layer owns its output and input-gradient buffers, so a step holds
// one of each per layer. A sequential model may hand a buffer on instead
// (inplace.go): layers that never read their outputs again (Disowning) let
// the next layer take them, and ReLU, Tanh and MaxPool2d can work in a
// buffer they are handed (InPlace). models.Model does this; it halved the
// VGG-like DP step's memory.
//
// The layers are fairdp's own ops rather than Gorgonia graph nodes: Gorgonia
// v0.9.18 runs everything but GEMM on one core, unrolls whole batches for its
// convolutions (9 GB for the VGG-like batch) and allocates every step, which
// made it 4–5× slower than PyTorch here (measured on a 2-core machine with
// the same layouts). graph.Export rebuilds
// any model as a Gorgonia graph and the tests check the two agree.
package nn
