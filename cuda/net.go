package cuda

import (
	"errors"
	"fmt"
	"math"
)

// DeviceNet is a classifier that lives on a Device: a sequence of linear,
// convolution, ReLU, max-pool and group-norm layers (nn's layouts; a convolution's
// output feeds a linear layer as its flattened NCHW rows) ending in one logit
// and the sigmoid cross-entropy (two classes) or one logit per class and the
// softmax cross-entropy. Parameters, activations, the layers' taps,
// per-sample norms, gradients and the step's scratch stay in device memory
// for the model's life, as does the optimizer's state (SetOptimizer:
// momentum, Adam); a DP-SGD step uploads only the batch's inputs and labels
// and, at its end, brings back two ints (the clip checks; a refused step's
// update kernels did nothing) and one float (the summed loss) in one copy. A step with a group clip (DPSGD-F, Naive) also
// uploads each sample's group, brings back two counts per group and
// uploads the policy's bound and weight per group: nothing per sample
// leaves the device.
//
// It keeps the whole training step on the device (NewDeviceMLP builds fairdp's
// logistic model and MLP; a CNN is its convolution, ReLU and pool layers);
// the trainer's Device "cuda" runs its SGD, DP-SGD, DPSGD-F and Naive on
// one (package trainer, ondevice.go; see bench/results/cuda.md), and
// DP-FERMI through a DeviceFermi (fermi.go).
type DeviceNet struct {
	arena  // dev and the model's allocations
	layers []netLayer
	sizes  []int // per-sample values of a[l]: sizes[0] the input, sizes[len] the logits
	// Batch buffers, grown with the largest batch: a[l] layer l's input
	// (a[len] the logits), g[l] ∂L/∂a[l].
	capacity int
	a, g     []DevicePtr
	labels   DevicePtr
	loss     DevicePtr
	sq       DevicePtr
	norms    DevicePtr
	scale    DevicePtr
	ones     DevicePtr
	bad      DevicePtr // the clip check's two flags, then the summed loss (sum)
	sum      DevicePtr
	params   int // arena mark: what comes after are batch buffers
	released bool
	opt      optState     // the optimizer and its device state
	grp      groupBuffers // a group clip's buffers
	conv     convScratch  // the convolutions' unfolding scratch, shared
	io       stepIO       // pinned uploads and read-backs (async.go)
	tf32     bool         // SetTF32
}

// NetLayer describes one layer of a DeviceNet.
type NetLayer struct {
	// Kind is "linear", "conv", "relu", "maxpool" or "groupnorm".
	Kind string
	// In and Out are a linear layer's sizes (Weight In×Out, Bias Out).
	In, Out int
	// Conv is a convolution's geometry (Weight OutC×CKK, Bias OutC, or
	// nil for a convolution without a bias).
	Conv ConvGeom
	// Pool is a max-pool's geometry.
	Pool PoolGeom
	// Norm is a group normalisation's geometry (Weight γ and Bias β, C
	// values each).
	Norm GroupGeom
	// Size is a ReLU's values per sample.
	Size int
	// Weight and Bias are the initial parameters, as nn's layers hold them.
	Weight, Bias []float32
}

// DPSGDStep is one DP-SGD step's settings, as trainer.DPSGD applies them:
// every sample's whole gradient clipped to Clip, N(0, NoiseStd²) added to
// each coordinate of the clipped sum (NoiseStd = σ·C), the result scaled by
// Scale (1 / expected batch size) and applied with rate LR by the net's
// Optimizer (plain SGD unless SetOptimizer chose another). The noise is
// Philox4x32-10 under Seed (drawn fresh per step with NewNoiseSeed),
// parameter buffer k on stream k: a linear layer's weight then bias, a
// convolution's [W | b] as one outC×(ckk+1) buffer (W alone, outC×ckk,
// without a bias), a group norm's γ then β.
//
// With Group set the clip is a group policy's (DPSGD-F, Naive): Clip is
// then the threshold of the per-group counts the policy reads, and its rule
// sets each sample's factor and the noise std (see GroupClip).
type DPSGDStep struct {
	Clip, NoiseStd, Scale float64
	LR                    float32
	Seed                  NoiseSeed
	Group                 *GroupClip

	opt *optState // set by Step: the update releaseBuffer applies
	// stop and stopN, set by Step: the clip check's flags and the batch
	// size, which the update kernels read to skip a refused step on the
	// device (stop 0: checked on the host already).
	stop  DevicePtr
	stopN int
	// noiseAt, set by Step for a group rule on the device: the noise std
	// is the float64 there (fairdp_group_rule's), not NoiseStd.
	noiseAt DevicePtr
}

// netLayer is a layer on the device: its step given its input and output
// buffers (the net owns those).
type netLayer interface {
	inSize() int
	outSize() int
	// grow sizes the layer's own batch buffers for n samples.
	grow(n int) error
	forward(out, in DevicePtr, n int) error
	// backward sets din = ∂L/∂in from dout (din 0: not needed).
	backward(din, dout, in, out DevicePtr, n int) error
	// sqNorms adds the per-sample squared gradient norms to sq; clipped
	// sets the gradient to the clipped sum (dout is scaled in place).
	sqNorms(sq, in, dout DevicePtr, n int) error
	clipped(in, dout, scale, ones DevicePtr, n int) error
	// release noises, scales and applies the gradient, parameter buffers on
	// streams from stream on; it returns the next free stream.
	release(s DPSGDStep, stream uint32) (uint32, error)
	values() ([][]float32, error)
	// deviceBytes is the memory the layer holds itself (not the net's).
	deviceBytes() int64
	close() error
}

// NewDeviceNet allocates the model on dev.
func NewDeviceNet(dev Device, spec []NetLayer) (*DeviceNet, error) {
	net := &DeviceNet{arena: arena{dev: dev}, conv: convScratch{arena: arena{dev: dev}}}
	fail := func(err error) (*DeviceNet, error) {
		net.Close()
		return nil, err
	}
	for i, l := range spec {
		var nl netLayer
		var err error
		switch l.Kind {
		case "linear":
			nl, err = newDevLinear(dev, &net.arena, l.In, l.Out, l.Weight, l.Bias)
		case "conv":
			var c *DeviceConv
			if c, err = NewDeviceConv(dev, l.Conv, l.Weight, l.Bias); err == nil {
				if err = c.share(&net.conv); err != nil {
					c.Close()
				}
			}
			nl = devConv{c}
		case "relu":
			if l.Size < 1 {
				err = fmt.Errorf("cuda: NetLayer %d: ReLU Size %d, want ≥ 1", i, l.Size)
			}
			nl = devReLU{dev, l.Size}
		case "maxpool":
			if err = l.Pool.Validate(); err == nil {
				nl = &devPool{arena: arena{dev: dev}, g: l.Pool}
			}
		case "groupnorm":
			nl, err = newDevGroupNorm(dev, l.Norm, l.Weight, l.Bias)
		default:
			err = fmt.Errorf("cuda: NetLayer %d: Kind %q, want linear, conv, relu, maxpool or groupnorm", i, l.Kind)
		}
		if err != nil {
			return fail(err)
		}
		if i > 0 && nl.inSize() != net.sizes[i] {
			return fail(fmt.Errorf("cuda: NetLayer %d (%s) takes %d values per sample, layer %d gives %d", i, l.Kind, nl.inSize(), i-1, net.sizes[i]))
		}
		if i == 0 {
			net.sizes = append(net.sizes, nl.inSize())
		}
		net.sizes = append(net.sizes, nl.outSize())
		net.layers = append(net.layers, nl)
	}
	if len(spec) == 0 || net.sizes[len(net.sizes)-1] == 2 {
		return fail(fmt.Errorf("cuda: DeviceNet ends in %v logits: want 1 logit for two classes (fairdp's layout) or one per class for more", net.sizes[len(net.sizes)-1:]))
	}
	var err error
	// One allocation, so that a step's flags and loss come back in one copy.
	net.bad = net.alloc(12, &err)
	if err != nil {
		return fail(err)
	}
	net.sum = net.bad + 8
	net.params = net.mark()
	if err := net.io.init(dev); err != nil {
		return fail(err)
	}
	return net, nil
}

// NewDeviceMLP builds fairdp's logistic model (sizes in, logits) or MLP
// (in, hidden…, logits) on dev: linear layers with ReLU between them;
// params[2l] is layer l's weight (in×out), params[2l+1] its bias.
func NewDeviceMLP(dev Device, sizes []int, params [][]float32) (*DeviceNet, error) {
	if len(sizes) < 2 || len(params) != 2*(len(sizes)-1) {
		return nil, fmt.Errorf("cuda: NewDeviceMLP: sizes %v and %d parameter buffers, want in, hidden…, logits and two buffers per layer", sizes, len(params))
	}
	var spec []NetLayer
	for l := 0; l+1 < len(sizes); l++ {
		if l > 0 {
			spec = append(spec, NetLayer{Kind: "relu", Size: sizes[l]})
		}
		spec = append(spec, NetLayer{Kind: "linear", In: sizes[l], Out: sizes[l+1], Weight: params[2*l], Bias: params[2*l+1]})
	}
	return NewDeviceNet(dev, spec)
}

// grow makes the batch buffers hold n samples (a quarter more, so Poisson
// batch sizes settle quickly).
func (net *DeviceNet) grow(n int) error {
	for _, l := range net.layers {
		if err := l.grow(n); err != nil {
			return err
		}
	}
	if n <= net.capacity && net.a != nil { // an empty first batch still needs the buffers
		return nil
	}
	if err := net.dev.Synchronize(); err != nil {
		return err
	}
	net.capacity = 0
	if err := net.freeFrom(net.params); err != nil {
		return err
	}
	c := n + n/4
	for _, s := range net.sizes {
		if err := checkDims("DeviceNet", c, s); err != nil {
			return err
		}
	}
	var err error
	net.a, net.g = make([]DevicePtr, len(net.sizes)), make([]DevicePtr, len(net.sizes))
	for l, s := range net.sizes {
		if l == 0 { // the input: two slots, one uploading while the other is read
			net.io.x[0], net.io.x[1] = net.alloc(4*c*s, &err), net.alloc(4*c*s, &err)
			net.a[0] = net.io.x[net.io.turn]
			continue
		}
		net.a[l] = net.alloc(4*c*s, &err)
		if net.keepsGrad(l) {
			net.g[l] = net.alloc(4*c*s, &err)
		}
	}
	// The other gradients live only from the backward step that writes them
	// to the one that reads them: two buffers, alternating, serve them all
	// (g[l] and g[l+1] differ in parity).
	var shared [2]int
	for l, s := range net.sizes {
		if !net.keepsGrad(l) {
			shared[l%2] = max(shared[l%2], s)
		}
	}
	for p, s := range shared {
		if s == 0 {
			continue
		}
		buf := net.alloc(4*c*s, &err)
		for l := p; l < len(net.sizes); l += 2 {
			if !net.keepsGrad(l) {
				net.g[l] = buf
			}
		}
	}
	net.io.lab[0], net.io.lab[1], net.loss = net.alloc(4*c, &err), net.alloc(4*c, &err), net.alloc(4*c, &err)
	net.labels = net.io.lab[net.io.turn]
	net.sq, net.norms, net.scale, net.ones = net.alloc(8*c, &err), net.alloc(8*c, &err), net.alloc(4*c, &err), net.alloc(4*c, &err)
	if err == nil {
		err = launch1(net.dev, "fairdp_fill_u32", c, Ptr(net.ones), U32(math.Float32bits(1)), Int(c))
	}
	if err == nil {
		err = net.io.grow(c, 4*int64(net.sizes[0]))
	}
	if err != nil {
		return err
	}
	net.capacity = c
	return nil
}

// keepsGrad says whether g[l] (∂L/∂a[l]) must outlive the backward pass:
// the logits' gradient (DP-FERMI reuses it) and a linear layer's output
// gradient, which its ghost norms and clipped sum read after. A
// convolution keeps its per-sample gradients instead, and ReLU, max-pool
// and group norm need theirs only within the backward pass.
func (net *DeviceNet) keepsGrad(l int) bool {
	if l == len(net.layers) {
		return true
	}
	if l == 0 {
		return false
	}
	_, linear := net.layers[l-1].(*devLinear)
	return linear
}

// classes is the number of labels: 2 for one logit.
func (net *DeviceNet) classes() int { return max(2, net.sizes[len(net.sizes)-1]) }

// upload queues a batch and its labels (0..classes-1) for the device
// through the next pinned slot (stepIO.put) and points a[0] and labels at
// that slot; it returns the batch size and the slot, which the step ends
// with io.done.
func (net *DeviceNet) upload(x []float32, labels []int32, extra []byte) (n, slot int, err error) {
	n = len(labels)
	if len(x) != n*net.sizes[0] {
		return 0, 0, fmt.Errorf("cuda: DeviceNet: %d input values for %d samples of %d features", len(x), n, net.sizes[0])
	}
	for i, y := range labels {
		if y < 0 || int(y) >= net.classes() {
			return 0, 0, fmt.Errorf("cuda: DeviceNet: sample %d has label %d, want 0..%d", i, y, net.classes()-1)
		}
	}
	if err := net.grow(n); err != nil {
		return 0, 0, err
	}
	slot = net.io.turn
	if err := net.io.put(slot, x, labels, extra); err != nil {
		return 0, 0, err
	}
	net.a[0], net.labels = net.io.x[slot], net.io.lab[slot]
	return n, slot, nil
}

// forward computes the logits of the n samples in a[0] into a[len].
func (net *DeviceNet) forward(n int) error {
	for l, layer := range net.layers {
		if err := layer.forward(net.a[l+1], net.a[l], n); err != nil {
			return err
		}
	}
	return nil
}

// Logits returns the model's logits for the samples x: n×logits.
func (net *DeviceNet) Logits(x []float32) ([]float32, error) {
	n := len(x) / net.sizes[0]
	var z []float32
	err := onDevice(net.dev, func() error {
		_, slot, err := net.upload(x, make([]int32, n), nil)
		if err != nil {
			return err
		}
		if err := net.forward(n); err != nil {
			return err
		}
		if err := net.io.done(slot); err != nil {
			return err
		}
		z = make([]float32, n*net.sizes[len(net.sizes)-1])
		return CopyOut(net.dev, z, net.a[len(net.a)-1])
	})
	return z, err
}

// Step runs one DP-SGD step on the batch x (n samples, row-major) with
// labels (0..classes-1) and returns the batch's summed loss before the
// update: StepAsync, then Wait. An empty batch still adds noise and updates
// (a Poisson sample may be empty).
func (net *DeviceNet) Step(x []float32, labels []int32, s DPSGDStep) (float64, error) {
	var loss float64
	err := onDevice(net.dev, func() error {
		p, err := net.step(x, labels, s)
		if err != nil {
			return err
		}
		loss, err = p.wait()
		return err
	})
	return loss, err
}

// StepAsync queues Step's work and returns without waiting for the device:
// the result comes back into pinned memory (Pending.Wait). With a group
// clip whose rule runs on the device (GroupClip.OnDevice) the rule's
// released counts come back with it; with a host rule the policy's counts
// are read mid-step, with the clip check and the loss, in one wait, and
// the Pending is already resolved.
func (net *DeviceNet) StepAsync(x []float32, labels []int32, s DPSGDStep) (*Pending, error) {
	var p *Pending
	err := onDevice(net.dev, func() (err error) {
		p, err = net.step(x, labels, s)
		return err
	})
	return p, err
}

// step is StepAsync, on the device's thread.
func (net *DeviceNet) step(x []float32, labels []int32, s DPSGDStep) (*Pending, error) {
	if err := checkNoise(s.NoiseStd); err != nil {
		return nil, err
	}
	if !(s.Clip > 0) || math.IsInf(s.Clip, 0) || !(s.Scale > 0) || math.IsInf(s.Scale, 0) || !(s.LR >= 0) {
		return nil, fmt.Errorf("cuda: DPSGDStep Clip %v, Scale %v, LR %v: want finite Clip and Scale > 0, LR ≥ 0", s.Clip, s.Scale, s.LR)
	}
	if s.Group != nil {
		if err := s.Group.check(len(labels)); err != nil {
			return nil, err
		}
	}
	var extra []byte
	if s.Group != nil && s.Group.OnDevice != nil {
		extra = net.grp.pack(s.Group)
	}
	n, slot, err := net.upload(x, labels, extra)
	if err != nil {
		return nil, err
	}
	if err := net.math(true); err != nil {
		return nil, err
	}
	if err := net.forward(n); err != nil {
		return nil, err
	}
	if err := net.lossGrad(net.g[len(net.layers)], n); err != nil {
		return nil, err
	}
	if err := net.backward(n); err != nil {
		return nil, err
	}
	if err := net.sqNorms(n); err != nil {
		return nil, err
	}
	if err := net.queueClipFactors(s.Clip, n); err != nil {
		return nil, err
	}
	p := &Pending{net: net, slot: slot, n: n}
	var back []hostRange
	switch {
	case s.Group != nil && s.Group.OnDevice != nil:
		// The policy's rule runs on the device; what it released comes
		// back with the step's result, to the policy's own code.
		if back, err = net.deviceRule(s.Group, s.Clip, n, slot, p); err != nil {
			return nil, err
		}
		s.noiseAt = net.grp.out + DevicePtr(8*2*s.Group.Count)
	case s.Group != nil:
		// The policy reads counts of the norms: they come back with the
		// clip check (checked first, as on the CPU) and the loss.
		if s.NoiseStd, p.loss, err = net.groupScales(s.Group, s.Clip, n, slot); err != nil {
			return nil, err
		}
		p.done = true
	}
	s.stop, s.stopN = net.bad, n
	if err := net.math(false); err != nil { // the released sums in FP32 (SetTF32)
		return nil, err
	}
	if err := net.release(net.scale, s, n); err != nil {
		return nil, err
	}
	if !p.done {
		if err := net.io.queueBack(slot, append(back, hostRange{net.bad, flagsAndLoss})...); err != nil {
			return nil, err
		}
	}
	return p, net.io.done(slot)
}

// readChecked reads ranges (the step's mid-step values) and then the clip
// check and the summed loss from result slot k in one copy and one wait; it
// returns the ranges' bytes (each at an 8-byte boundary) and the loss, or
// the clip check's error (a flat bound: only the norms can fail) when check
// is set.
func (net *DeviceNet) readChecked(k, n int, check bool, ranges ...hostRange) ([]byte, float64, error) {
	if err := net.io.queueBack(k, append(ranges, hostRange{net.bad, flagsAndLoss})...); err != nil {
		return nil, 0, err
	}
	b, err := net.io.wait(k)
	if err != nil {
		return nil, 0, err
	}
	var off int64
	for _, r := range ranges {
		off += (r.bytes + 7) &^ 7
	}
	bad, _, loss := parseBack(b[off:])
	if check {
		if err := checkFlags(bad, int32(n), n); err != nil {
			return nil, 0, err
		}
	}
	if n == 0 {
		loss = 0
	}
	return b[:off], float64(loss), nil
}

// checkFlags turns the clip check's flags into the step's error.
func checkFlags(bad, badBound int32, n int) error {
	if int(bad) < n {
		return fmt.Errorf("cuda: sample %d has a gradient norm² that is negative or not finite; the loss is not finite", bad)
	}
	if int(badBound) < n {
		return fmt.Errorf("cuda: sample %d has a clip bound that is not > 0", badBound)
	}
	return nil
}

// The phases of a step, in order (Step composes them; a DP-FERMI step,
// fermi.go, puts its own output gradient and W's share of the norms between
// them).

// lossGrad sets each sample's loss (in the loss buffer) and its gradient
// with respect to the logits (into dz, n×logits) and queues the summed loss
// as a 1×n·n×1 product (lossSum reads it).
func (net *DeviceNet) lossGrad(dz DevicePtr, n int) error {
	d, L := net.dev, len(net.layers)
	var err error
	if k := net.sizes[L]; k == 1 {
		err = launch1(d, "fairdp_sigmoid_bce", n, Ptr(net.loss), Ptr(dz), Ptr(net.a[L]), Ptr(net.labels), Int(n))
	} else {
		err = launch1(d, "fairdp_softmax_ce", n, Ptr(net.loss), Ptr(dz), Ptr(net.a[L]), Ptr(net.labels), Int(n), Int(k))
	}
	if err != nil {
		return err
	}
	return d.Sgemm(NoTrans, NoTrans, 1, 1, n, 1, net.loss, 1, net.ones, max(n, 1), 0, net.sum, 1)
}

// backward back-propagates g[len] (∂L/∂logits) through the layers; the
// first layer's input gradient is not needed.
func (net *DeviceNet) backward(n int) error {
	for l := len(net.layers) - 1; l >= 0; l-- {
		din := net.g[l]
		if l == 0 {
			din = 0
		}
		if err := net.layers[l].backward(din, net.g[l+1], net.a[l], net.a[l+1], n); err != nil {
			return err
		}
	}
	return nil
}

// sqNorms sets sq to the joint per-sample squared gradient norms over all
// layers (from the taps of the last backward).
func (net *DeviceNet) sqNorms(n int) error {
	if err := launch1(net.dev, "fairdp_fill_u32", 2*n, Ptr(net.sq), U32(0), Int(2*n)); err != nil {
		return err
	}
	for l, layer := range net.layers {
		if err := layer.sqNorms(net.sq, net.a[l], net.g[l+1], n); err != nil {
			return err
		}
	}
	return nil
}

// queueClipFactors sets norms and the clip factors scale from sq, the
// clip check's flags reset to n first; nothing is read (the check comes
// back with the step's result, and the update kernels skip a refused step
// on the device).
func (net *DeviceNet) queueClipFactors(clip float64, n int) error {
	d := net.dev
	if err := launch1(d, "fairdp_fill_u32", 2, Ptr(net.bad), U32(uint32(n)), Int(2)); err != nil {
		return err
	}
	return launch1(d, "fairdp_clip_factors", n, Ptr(net.scale), Ptr(net.norms), Ptr(net.bad), Ptr(net.sq), Ptr(0), F64(clip), Int(n))
}

// release sets each layer's gradient to the sum of the last backward's
// per-sample gradients scaled by rowScale (n floats: the clip factors, or
// ones), then noises, scales and applies it, buffer k on stream k.
func (net *DeviceNet) release(rowScale DevicePtr, s DPSGDStep, n int) error {
	net.opt.dev, net.opt.steps, s.opt = net.dev, net.opt.steps+1, &net.opt
	var stream uint32
	var err error
	for l, layer := range net.layers {
		if err := layer.clipped(net.a[l], net.g[l+1], rowScale, net.ones, n); err != nil {
			return err
		}
		if stream, err = layer.release(s, stream); err != nil {
			return err
		}
	}
	return nil
}

// tf32Device is a Device whose GEMMs can use TF32 tensor cores (the
// Driver), or round their inputs to TF32 as those do (the Emulator, so that
// TF32's effect on results shows without a GPU).
type tf32Device interface{ SetTF32(on bool) error }

// SetTF32 makes the step's forward and backward GEMMs use TF32 tensor
// cores where the device has them (inputs rounded to TF32 on the emulated
// device). The
// GEMMs that form the released sums (a linear layer's clipped gradient, a
// convolution's clipped sum of its per-sample gradients, and every GEMM
// after a DP-FERMI step's host half) stay FP32: each sample's contribution
// to the sum is then the very FP32 values its norm was taken of (a
// linear layer's norm from its FP32 taps, a convolution's from its
// per-sample gradients), so the clip bound, and with it the receipt's
// sensitivity, holds as without TF32.
func (net *DeviceNet) SetTF32(on bool) { net.tf32 = on }

// math sets the device's GEMMs to TF32 (when on and asked for) or FP32.
func (net *DeviceNet) math(on bool) error {
	if d, ok := net.dev.(tf32Device); ok && net.tf32 {
		return d.SetTF32(on)
	}
	return nil
}

// Params copies the parameters to the host: each parameterised layer's
// weight then bias, in nn's layouts.
func (net *DeviceNet) Params() ([][]float32, error) {
	var out [][]float32
	for _, l := range net.layers {
		v, err := l.values()
		if err != nil {
			return nil, err
		}
		out = append(out, v...)
	}
	return out, nil
}

// DeviceBytes is the device memory the model holds: parameters, gradients
// and the batch buffers for the largest batch so far.
func (net *DeviceNet) DeviceBytes() int64 {
	b := net.bytes() + net.opt.bytes() + net.grp.bytes() + net.conv.bytes() + net.io.mem.bytes()
	for _, l := range net.layers {
		b += l.deviceBytes()
	}
	return b
}

// Close frees the model's device memory (not the device).
func (net *DeviceNet) Close() error {
	if net.released {
		return nil
	}
	net.released = true
	errs := []error{net.io.close(), net.freeFrom(0), net.opt.freeFrom(0), net.grp.freeFrom(0), net.conv.freeFrom(0)}
	for _, l := range net.layers {
		errs = append(errs, l.close())
	}
	return errors.Join(errs...)
}

// releaseBuffer noises grad (count values) on stream, then scales it and
// applies it to w with the net's optimizer (optState.update).
func releaseBuffer(d Device, w, grad DevicePtr, count int, s DPSGDStep, stream uint32) error {
	seed := s.Seed
	seed.Stream = stream
	if s.noiseAt != 0 {
		if err := launch1(d, "fairdp_add_gaussian_at", count/2+count%2, Ptr(grad), Int(count), Ptr(s.noiseAt),
			U32(seed.Key[0]), U32(seed.Key[1]), U32(seed.Nonce[0]), U32(seed.Nonce[1]), U32(seed.Stream)); err != nil {
			return err
		}
	} else if s.NoiseStd != 0 {
		if err := launch1(d, "fairdp_add_gaussian", count/2+count%2, Ptr(grad), Int(count), F64(s.NoiseStd),
			U32(seed.Key[0]), U32(seed.Key[1]), U32(seed.Nonce[0]), U32(seed.Nonce[1]), U32(seed.Stream)); err != nil {
			return err
		}
	}
	return s.opt.update(d, w, grad, count, s, stream)
}

// devLinear is nn.Linear on the device: y = x·W + b as one GEMM (row-major
// n×k host matrices are column-major k×n to cuBLAS) and the bias kernel.
type devLinear struct {
	dev          Device
	in, out      int
	w, b, gw, gb DevicePtr
}

func newDevLinear(dev Device, a *arena, in, out int, weight, bias []float32) (*devLinear, error) {
	if in < 1 || out < 1 || in > maxElems/1024 || out > maxElems/1024 {
		return nil, fmt.Errorf("cuda: linear layer %d→%d: sizes must be in 1..%d", in, out, maxElems/1024)
	}
	if len(weight) != in*out || len(bias) != out {
		return nil, fmt.Errorf("cuda: linear layer %d→%d: weight %d and bias %d values, want %d and %d", in, out, len(weight), len(bias), in*out, out)
	}
	var err error
	l := &devLinear{dev: dev, in: in, out: out}
	l.w, l.b, l.gw, l.gb = a.alloc(4*in*out, &err), a.alloc(4*out, &err), a.alloc(4*in*out, &err), a.alloc(4*out, &err)
	if err == nil {
		err = errors.Join(CopyIn(dev, l.w, weight), CopyIn(dev, l.b, bias))
	}
	return l, err
}

func (l *devLinear) inSize() int        { return l.in }
func (l *devLinear) outSize() int       { return l.out }
func (l *devLinear) grow(int) error     { return nil }
func (l *devLinear) deviceBytes() int64 { return 0 }   // in the net's arena
func (l *devLinear) close() error       { return nil } // the net's arena holds its memory
func (l *devLinear) values() ([][]float32, error) {
	w, b := make([]float32, l.in*l.out), make([]float32, l.out)
	return [][]float32{w, b}, errors.Join(CopyOut(l.dev, w, l.w), CopyOut(l.dev, b, l.b))
}

func (l *devLinear) forward(y, x DevicePtr, n int) error {
	if err := l.dev.Sgemm(NoTrans, NoTrans, l.out, n, l.in, 1, l.w, l.out, x, l.in, 0, y, l.out); err != nil {
		return err
	}
	return launch1(l.dev, "fairdp_bias_add", n*l.out, Ptr(y), Ptr(l.b), Int(n), Int(l.out), Int(1))
}

// backward: ∂L/∂x = ∂L/∂y · Wᵀ.
func (l *devLinear) backward(dx, dy, _, _ DevicePtr, n int) error {
	if dx == 0 {
		return nil
	}
	return l.dev.Sgemm(Trans, NoTrans, l.in, n, l.out, 1, l.w, l.out, dy, l.out, 0, dx, l.in)
}

func (l *devLinear) sqNorms(sq, x, dy DevicePtr, n int) error {
	if n == 0 {
		return nil
	}
	return l.dev.Launch("fairdp_linear_sqnorms", launchShape(n, true), D1(block), 0, Ptr(sq), Ptr(x), Ptr(dy),
		Int(n), Int(l.in), Int(l.out), Int(1))
}

// clipped: dy's rows scaled in place, then ∂W = xᵀ·dy and ∂b = dyᵀ·1.
func (l *devLinear) clipped(x, dy, scale, ones DevicePtr, n int) error {
	if err := launch1(l.dev, "fairdp_scale_rows", n*l.out, Ptr(dy), Ptr(dy), Ptr(scale), Int(n), Int(l.out)); err != nil {
		return err
	}
	if err := l.dev.Sgemm(NoTrans, Trans, l.out, l.in, n, 1, dy, l.out, x, l.in, 0, l.gw, l.out); err != nil {
		return err
	}
	return l.dev.Sgemm(NoTrans, NoTrans, l.out, 1, n, 1, dy, l.out, ones, max(n, 1), 0, l.gb, l.out)
}

func (l *devLinear) release(s DPSGDStep, stream uint32) (uint32, error) {
	if err := releaseBuffer(l.dev, l.w, l.gw, l.in*l.out, s, stream); err != nil {
		return 0, err
	}
	return stream + 2, releaseBuffer(l.dev, l.b, l.gb, l.out, s, stream+1)
}

// devConv adapts DeviceConv (which owns its memory and keeps the unfolded
// input between forward and the norms).
type devConv struct{ *DeviceConv }

func (c devConv) inSize() int        { return c.geom.InC * c.geom.InH * c.geom.InW }
func (c devConv) outSize() int       { return c.geom.OutC * c.geom.HW() }
func (c devConv) grow(n int) error   { return c.DeviceConv.grow(n) }
func (c devConv) deviceBytes() int64 { return c.bytesHeld() }
func (c devConv) close() error       { return c.Close() }
func (c devConv) values() ([][]float32, error) {
	w, b, err := c.Params()
	if !c.hasBias() {
		return [][]float32{w}, err
	}
	return [][]float32{w, b}, err
}
func (c devConv) forward(y, x DevicePtr, n int) error { return c.Forward(y, x, n) }
func (c devConv) backward(dx, dy, _, _ DevicePtr, n int) error {
	return c.Backward(dx, dy, n)
}
func (c devConv) sqNorms(sq, _, _ DevicePtr, n int) error { return c.SqNorms(sq, n) }
func (c devConv) clipped(_, _, scale, _ DevicePtr, n int) error {
	return c.ClippedGrad(scale, n)
}
func (c devConv) release(s DPSGDStep, stream uint32) (uint32, error) {
	return stream + 1, releaseBuffer(c.dev, c.wb, c.gwb, c.paramCount(), s, stream)
}

// devReLU is nn.ReLU on the device.
type devReLU struct {
	dev  Device
	size int
}

func (r devReLU) inSize() int                                   { return r.size }
func (r devReLU) outSize() int                                  { return r.size }
func (r devReLU) grow(int) error                                { return nil }
func (r devReLU) deviceBytes() int64                            { return 0 }
func (r devReLU) close() error                                  { return nil }
func (r devReLU) values() ([][]float32, error)                  { return nil, nil }
func (r devReLU) sqNorms(_, _, _ DevicePtr, _ int) error        { return nil }
func (r devReLU) clipped(_, _, _, _ DevicePtr, _ int) error     { return nil }
func (r devReLU) release(_ DPSGDStep, s uint32) (uint32, error) { return s, nil }
func (r devReLU) forward(y, x DevicePtr, n int) error {
	return launch1(r.dev, "fairdp_relu_forward", n*r.size, Ptr(y), Ptr(x), Int(n*r.size))
}

// backward gates dy by the output y, as nn.ReLU does.
func (r devReLU) backward(dx, dy, _, y DevicePtr, n int) error {
	if dx == 0 {
		return nil
	}
	return launch1(r.dev, "fairdp_relu_backward", n*r.size, Ptr(dx), Ptr(y), Ptr(dy), Int(n*r.size))
}

// devPool is nn.MaxPool2d on the device; the arg-max of the last forward is
// its own batch buffer.
type devPool struct {
	arena    // dev and the arg-max buffer
	g        PoolGeom
	arg      DevicePtr
	capacity int
}

func (p *devPool) inSize() int                                   { return p.g.C * p.g.H * p.g.W }
func (p *devPool) outSize() int                                  { oh, ow := p.g.OutHW(); return p.g.C * oh * ow }
func (p *devPool) close() error                                  { return p.freeFrom(0) }
func (p *devPool) deviceBytes() int64                            { return p.bytes() }
func (p *devPool) values() ([][]float32, error)                  { return nil, nil }
func (p *devPool) sqNorms(_, _, _ DevicePtr, _ int) error        { return nil }
func (p *devPool) clipped(_, _, _, _ DevicePtr, _ int) error     { return nil }
func (p *devPool) release(_ DPSGDStep, s uint32) (uint32, error) { return s, nil }

func (p *devPool) grow(n int) error {
	return p.regrow(0, &p.capacity, n, func(c int, err *error) { p.arg = p.alloc(4*c*p.outSize(), err) })
}

func (p *devPool) forward(y, x DevicePtr, n int) error {
	return launch1(p.dev, "fairdp_maxpool_forward", n*p.outSize(), Ptr(y), Ptr(p.arg), Ptr(x),
		Int(n*p.g.C), Int(p.g.H), Int(p.g.W), Int(p.g.K))
}

func (p *devPool) backward(dx, dy, _, _ DevicePtr, n int) error {
	if dx == 0 {
		return nil
	}
	return launch1(p.dev, "fairdp_maxpool_backward", n*p.inSize(), Ptr(dx), Ptr(dy), Ptr(p.arg),
		Int(n*p.g.C), Int(p.g.H), Int(p.g.W), Int(p.g.K))
}

// regrow makes a layer's batch buffers (its arena's allocations after keep)
// hold n samples: when n exceeds *capacity it waits for the device (a queued
// launch may still read the old buffers), frees them and has alloc make new
// ones for n + n/4 samples, so Poisson batch sizes settle quickly.
func (a *arena) regrow(keep int, capacity *int, n int, alloc func(c int, err *error)) error {
	if n <= *capacity {
		return nil
	}
	if err := a.dev.Synchronize(); err != nil {
		return err
	}
	*capacity = 0
	if err := a.freeFrom(keep); err != nil {
		return err
	}
	c := n + n/4
	var err error
	if alloc(c, &err); err != nil {
		return err
	}
	*capacity = c
	return nil
}

// devGroupNorm is nn.GroupNorm on the device. As on the CPU its tap is each
// sample's [∂γ | ∂β] (ps, n×2C, written by the backward kernel): the
// per-sample squared norms are ‖ps_i‖² (the linear norm kernel with a
// one-value input of ones: ‖1‖²·‖ps_i‖²), the clipped sum is psᵀ·scale,
// one GEMM into [∂γ | ∂β]. γ and β are one 2C buffer, noised as two.
type devGroupNorm struct {
	arena                    // dev, [γ | β] and its gradient, then the batch buffers
	g                        GroupGeom
	wb, gwb                  DevicePtr // [γ | β], 2C
	xhat, invStd, ps, onesIn DevicePtr // n×C·H·W, n×Groups doubles, n×2C, n ones
	capacity                 int
}

func newDevGroupNorm(dev Device, g GroupGeom, gamma, beta []float32) (*devGroupNorm, error) {
	if err := g.Validate(); err != nil {
		return nil, err
	}
	if err := checkDims("groupnorm", 2*g.C, g.H, g.W); err != nil {
		return nil, err
	}
	if len(gamma) != g.C || len(beta) != g.C {
		return nil, fmt.Errorf("cuda: group norm over %d channels: γ %d and β %d values, want %d each", g.C, len(gamma), len(beta), g.C)
	}
	l := &devGroupNorm{arena: arena{dev: dev}, g: g}
	var err error
	l.wb, l.gwb = l.alloc(8*g.C, &err), l.alloc(8*g.C, &err)
	if err == nil {
		err = errors.Join(CopyIn(dev, l.wb, gamma), CopyIn(dev, l.wb+DevicePtr(4*g.C), beta))
	}
	if err != nil {
		l.close()
		return nil, err
	}
	return l, nil
}

func (l *devGroupNorm) inSize() int        { return l.g.Size() }
func (l *devGroupNorm) outSize() int       { return l.g.Size() }
func (l *devGroupNorm) deviceBytes() int64 { return l.bytes() }
func (l *devGroupNorm) close() error       { return l.freeFrom(0) }
func (l *devGroupNorm) beta(p DevicePtr) DevicePtr {
	return p + DevicePtr(4*l.g.C)
}

func (l *devGroupNorm) values() ([][]float32, error) {
	gamma, beta := make([]float32, l.g.C), make([]float32, l.g.C)
	return [][]float32{gamma, beta}, errors.Join(CopyOut(l.dev, gamma, l.wb), CopyOut(l.dev, beta, l.beta(l.wb)))
}

func (l *devGroupNorm) grow(n int) error {
	if err := checkDims("groupnorm", n+n/4, 2*l.g.C, l.g.H, l.g.W); err != nil {
		return err
	}
	return l.regrow(2, &l.capacity, n, func(c int, err *error) {
		l.xhat, l.invStd = l.alloc(4*c*l.g.Size(), err), l.alloc(8*c*l.g.Groups, err)
		l.ps, l.onesIn = l.alloc(8*c*l.g.C, err), l.alloc(4*c, err)
		if *err == nil {
			*err = launch1(l.dev, "fairdp_fill_u32", c, Ptr(l.onesIn), U32(math.Float32bits(1)), Int(c))
		}
	})
}

func (l *devGroupNorm) forward(y, x DevicePtr, n int) error {
	if n == 0 {
		return nil
	}
	if err := l.grow(n); err != nil {
		return err
	}
	g := l.g
	return l.dev.Launch("fairdp_groupnorm_forward", launchShape(n*g.Groups, true), D1(block), 0, Ptr(y), Ptr(l.xhat),
		Ptr(l.invStd), Ptr(x), Ptr(l.wb), Ptr(l.beta(l.wb)), Int(n), Int(g.C), Int(g.H*g.W), Int(g.Groups), F64(g.Eps))
}

// backward writes the tap ps and, unless dx is 0, ∂L/∂x.
func (l *devGroupNorm) backward(dx, dy, _, _ DevicePtr, n int) error {
	if n == 0 {
		return nil
	}
	g := l.g
	return l.dev.Launch("fairdp_groupnorm_backward", launchShape(n*g.Groups, true), D1(block), 0, Ptr(dx), Ptr(l.ps),
		Ptr(dy), Ptr(l.xhat), Ptr(l.invStd), Ptr(l.wb), Int(n), Int(g.C), Int(g.H*g.W), Int(g.Groups))
}

func (l *devGroupNorm) sqNorms(sq, _, _ DevicePtr, n int) error {
	if n == 0 {
		return nil
	}
	return l.dev.Launch("fairdp_linear_sqnorms", launchShape(n, true), D1(block), 0, Ptr(sq), Ptr(l.onesIn), Ptr(l.ps),
		Int(n), Int(1), Int(2*l.g.C), Int(0))
}

// clipped: [∂γ | ∂β] (2C×1) = ps (column-major 2C×n) · scale (n×1).
func (l *devGroupNorm) clipped(_, _, scale, _ DevicePtr, n int) error {
	c2 := 2 * l.g.C
	if n == 0 {
		return launch1(l.dev, "fairdp_fill_u32", c2, Ptr(l.gwb), U32(0), Int(c2))
	}
	return l.dev.Sgemm(NoTrans, NoTrans, c2, 1, n, 1, l.ps, c2, scale, n, 0, l.gwb, c2)
}

func (l *devGroupNorm) release(s DPSGDStep, stream uint32) (uint32, error) {
	if err := releaseBuffer(l.dev, l.wb, l.gwb, l.g.C, s, stream); err != nil {
		return 0, err
	}
	return stream + 2, releaseBuffer(l.dev, l.beta(l.wb), l.beta(l.gwb), l.g.C, s, stream+1)
}
