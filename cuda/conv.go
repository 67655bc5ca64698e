package cuda

import (
	"errors"
	"fmt"
	"math"
)

// DeviceConv is a convolution layer whose parameters and per-batch buffers
// live on a Device, the building block of a device-resident CNN.
//
//   - Forward: Im2col + a strided-batched GEMM (one product per sample)
//     against [W | b] (the unfolded input's last row of ones carries the
//     bias).
//   - Backward: the unfolded input is rebuilt, then one strided-batched GEMM
//     gives every sample's gradient G_i = B_i·U_iᵀ (outC×(ckk+1), B_i the
//     backprop) and, when the input gradient is wanted, another gives
//     dU_i = Wᵀ·B_i, folded by Col2im.
//   - SqNorms: ‖G_i‖², the FP32 per-sample gradients' squares summed in
//     FP64 (fairdp_linear_sqnorms with a one-value input of ones).
//   - ClippedGrad: Σ_i c_i·G_i as one GEMM of the per-sample gradients
//     against the clip factors.
//
// Why this shape (Goodfellow 2015's per-sample gradients, materialised as in
// Opacus, Yousefpour et al. 2021): a convolution's per-sample gradient is
// small (outC×(ckk+1) values) while its unfolded input is large
// ((ckk+1)×outH·outW per sample: 19 MB for a 32-channel 3×3 layer at
// 128×128). So the unfolded input and its gradient are not kept for the
// batch: they live in a scratch of at most convScratchBytes (shared by the
// convolutions of a DeviceNet) and the batch goes through it in chunks;
// only the per-sample gradients are kept from the backward pass to the
// release. The norm is taken of the very values the clipped sum adds, so
// each clipped contribution's norm is the clip bound up to one rounding.
// Nothing is copied to the host; the caller owns x, y, dy and dx, and x must
// still hold the last Forward's input when Backward runs.
//
// Layout: nn.Conv2d's. The device keeps [W | b] as one outC×(ckk+1)
// row-major matrix (a row-major r×c matrix is a column-major c×r one to
// cuBLAS), and the gradient and each per-sample gradient likewise. A
// convolution without a bias (nn.NewConv2dNoBias; Gorgonia's and
// PyTorch's bias=False) keeps W alone, outC×ckk: the products take the
// unfolded input's first ckk rows (not its ones row), so the per-sample
// gradients, their norms, the clipped sum and the noise cover W alone, the
// parameters the model has.
type DeviceConv struct {
	arena              // dev and the layer's allocations
	geom     ConvGeom  //
	kk       int       // columns of the parameter matrix: ckk+1, or ckk without a bias
	wb, gwb  DevicePtr // outC×kk
	gs, ones DevicePtr // batch buffers: n per-sample gradients, n ones
	x        DevicePtr // the last Forward's input
	scratch  *convScratch
	own      bool // scratch is the layer's own (not a net's, shared)
	capacity int
}

// convScratchBytes bounds a convolution's unfolded input and its gradient
// for one chunk of samples (a chunk holds at least one sample, so one
// sample's unfolding may exceed it). 1 GiB keeps the VGG-like CNN's largest
// layer (32 channels at 128×128, 38 MB per sample) at 28 samples a chunk;
// tests lower it to exercise chunking.
var convScratchBytes int64 = 1 << 30

// convScratch is the device memory where convolutions unfold a chunk of
// their input (u) and where the input gradient's unfolding lands (du); one
// per DeviceNet, shared by its convolutions, which run one at a time.
type convScratch struct {
	arena
	u, du DevicePtr
	size  [2]int64 // bytes of u and du
}

// ensure makes u and du hold at least bu and bdu bytes. Growing waits for
// the device (a queued launch may still read the old buffers).
func (s *convScratch) ensure(bu, bdu int64) error {
	if bu <= s.size[0] && bdu <= s.size[1] {
		return nil
	}
	if err := s.dev.Synchronize(); err != nil {
		return err
	}
	bu, bdu = max(bu, s.size[0]), max(bdu, s.size[1])
	s.size = [2]int64{}
	if err := s.freeFrom(0); err != nil {
		return err
	}
	var err error
	s.u, s.du = s.alloc(int(bu), &err), s.alloc(int(bdu), &err)
	if err != nil {
		return err
	}
	s.size = [2]int64{bu, bdu}
	return nil
}

// NewDeviceConv allocates the layer on dev with nn.Conv2d's weight
// (outC×ckk) and bias (outC; nil for a convolution without one).
func NewDeviceConv(dev Device, g ConvGeom, weight, bias []float32) (*DeviceConv, error) {
	if err := g.Validate(); err != nil {
		return nil, err
	}
	kk := g.CKK()
	if bias != nil {
		kk++
	}
	if err := checkDims("NewDeviceConv", g.OutC, g.CKK()+1, 1024); err != nil {
		return nil, err
	}
	if len(weight) != g.OutC*g.CKK() || bias != nil && len(bias) != g.OutC {
		return nil, fmt.Errorf("cuda: DeviceConv: weight %d and bias %d values, want %d and %d (or no bias)", len(weight), len(bias), g.OutC*g.CKK(), g.OutC)
	}
	c := &DeviceConv{arena: arena{dev: dev}, geom: g, kk: kk, scratch: &convScratch{arena: arena{dev: dev}}, own: true}
	wb := make([]float32, g.OutC*kk)
	for o := range g.OutC {
		copy(wb[o*kk:], weight[o*g.CKK():(o+1)*g.CKK()])
		if bias != nil {
			wb[o*kk+kk-1] = bias[o]
		}
	}
	var err error
	c.wb, c.gwb = c.alloc(4*len(wb), &err), c.alloc(4*len(wb), &err)
	if err == nil {
		err = CopyIn(dev, c.wb, wb)
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// share makes the layer use s (a net's scratch, shared) instead of its own.
func (c *DeviceConv) share(s *convScratch) error {
	err := c.scratch.freeFrom(0)
	c.scratch, c.own = s, false
	return err
}

// chunk is the number of samples one pass through the scratch takes.
func (c *DeviceConv) chunk() int {
	g := c.geom
	per := 4 * int64(2*g.CKK()+1) * int64(g.HW())
	return int(max(1, min(int64(c.capacity), convScratchBytes/per)))
}

// grow makes the batch buffers hold n samples and the scratch one chunk.
func (c *DeviceConv) grow(n int) error {
	g := c.geom
	kk, u, hw := c.kk, g.CKK()+1, g.HW() // parameter columns; unfolded rows (with the ones row)
	if n > c.capacity {
		capN := n + n/4
		if err := checkDims("DeviceConv", capN, g.OutC, kk); err != nil {
			return err
		}
		if err := c.regrow(2, &c.capacity, n, func(capN int, err *error) { // [W | b] and its gradient stay
			c.gs, c.ones = c.alloc(4*capN*g.OutC*kk, err), c.alloc(4*capN, err)
			if *err == nil {
				*err = launch1(c.dev, "fairdp_fill_u32", capN, Ptr(c.ones), U32(math.Float32bits(1)), Int(capN))
			}
		}); err != nil {
			return err
		}
	}
	m := int64(min(c.chunk(), max(n, 1)))
	if err := checkDims("DeviceConv", int(m), u, hw); err != nil {
		return err
	}
	return c.scratch.ensure(4*m*int64(u*hw), 4*m*int64(g.CKK()*hw))
}

// chunks calls f for each chunk [s, s+m) of the n samples.
func (c *DeviceConv) chunks(n int, f func(s, m int) error) error {
	step := c.chunk()
	for s := 0; s < n; s += step {
		if err := f(s, min(step, n-s)); err != nil {
			return err
		}
	}
	return nil
}

// unfold writes the unfolded input of samples [s, s+m) of x into the scratch.
func (c *DeviceConv) unfold(x DevicePtr, s, m int) error {
	g := c.geom
	oh, ow := g.OutHW()
	return launch1(c.dev, "fairdp_im2col", m*(g.CKK()+1)*g.HW(), Ptr(c.scratch.u), Ptr(c.sample(x, s, g.InC*g.InH*g.InW)),
		Int(m), Int(g.InC), Int(g.InH), Int(g.InW), Int(g.K), Int(g.Stride), Int(g.Pad), Int(oh), Int(ow))
}

// Forward sets y (n×outC×hw on the device) from x (n×inC×inH×inW).
func (c *DeviceConv) Forward(y, x DevicePtr, n int) error {
	if err := c.grow(n); err != nil {
		return err
	}
	c.x = x
	g, d := c.geom, c.dev
	kk, u, hw := c.kk, g.CKK()+1, g.HW()
	return c.chunks(n, func(s, m int) error {
		if err := c.unfold(x, s, m); err != nil {
			return err
		}
		// Y_iᵀ (hw×outC) = U_iᵀ (hw×kk) · [W | b]ᵀ (kk×outC), every sample of the chunk in one call
		// (without a bias, kk = ckk: the ones row is not read).
		return d.SgemmStrided(NoTrans, NoTrans, hw, g.OutC, kk, 1, c.scratch.u, hw, int64(u*hw), c.wb, kk, 0, 0,
			c.sample(y, s, g.OutC*hw), hw, int64(g.OutC*hw), m)
	})
}

// sample is the address of sample i's block of per floats in buffer p.
func (c *DeviceConv) sample(p DevicePtr, i, per int) DevicePtr { return p + DevicePtr(4*i*per) }

// Backward sets the per-sample gradients G_i = B_i·U_iᵀ from dy (n×outC×hw)
// and, unless dx is 0 (the first layer needs none), dx (n×inC×inH×inW) =
// ∂L/∂x: dU_i = Wᵀ·B_i, folded by Col2im. It reads the last Forward's input
// again.
func (c *DeviceConv) Backward(dx, dy DevicePtr, n int) error {
	if n == 0 {
		return nil
	}
	if n > c.capacity || c.x == 0 {
		return fmt.Errorf("cuda: DeviceConv.Backward of %d samples without a Forward of them", n)
	}
	g, d := c.geom, c.dev
	kk, ckk, u, hw := c.kk, g.CKK(), g.CKK()+1, g.HW()
	oh, ow := g.OutHW()
	return c.chunks(n, func(s, m int) error {
		if err := c.unfold(c.x, s, m); err != nil {
			return err
		}
		b := c.sample(dy, s, g.OutC*hw)
		// G_i (kk×outC, column-major: [∂W | ∂b]_i row-major) = U_i (kk×hw) · B_iᵀ (hw×outC).
		if err := d.SgemmStrided(Trans, NoTrans, kk, g.OutC, hw, 1, c.scratch.u, hw, int64(u*hw), b, hw, int64(g.OutC*hw),
			0, c.sample(c.gs, s, g.OutC*kk), kk, int64(g.OutC*kk), m); err != nil {
			return err
		}
		if dx == 0 {
			return nil
		}
		// dU_iᵀ (hw×ckk) = B_iᵀ (hw×outC) · W (outC×ckk), W being [W | b]
		// without its last column.
		if err := d.SgemmStrided(NoTrans, Trans, hw, ckk, g.OutC, 1, b, hw, int64(g.OutC*hw), c.wb, kk, 0, 0,
			c.scratch.du, hw, int64(ckk*hw), m); err != nil {
			return err
		}
		return launch1(d, "fairdp_col2im", m*g.InC*g.InH*g.InW, Ptr(c.sample(dx, s, g.InC*g.InH*g.InW)), Ptr(c.scratch.du),
			Int(m), Int(g.InC), Int(g.InH), Int(g.InW), Int(g.K), Int(g.Stride), Int(g.Pad), Int(oh), Int(ow))
	})
}

// SqNorms adds each sample's ‖[∂W | ∂b]_i‖² (from the last Backward) to sq
// (n doubles on the device).
func (c *DeviceConv) SqNorms(sq DevicePtr, n int) error {
	if n == 0 {
		return nil
	}
	return c.dev.Launch("fairdp_linear_sqnorms", launchShape(n, true), D1(block), 0, Ptr(sq), Ptr(c.ones), Ptr(c.gs),
		Int(n), Int(1), Int(c.geom.OutC*c.kk), Int(0))
}

// ClippedGrad sets the gradient to Σ_i scale_i·G_i (scale: n floats on the
// device) as one GEMM: the per-sample gradients, column-major
// outC·(ckk+1)×n, times scale.
func (c *DeviceConv) ClippedGrad(scale DevicePtr, n int) error {
	d := c.dev
	size := c.paramCount()
	if n == 0 {
		return launch1(d, "fairdp_fill_u32", size, Ptr(c.gwb), U32(0), Int(size))
	}
	return d.Sgemm(NoTrans, NoTrans, size, 1, n, 1, c.gs, size, scale, n, 0, c.gwb, size)
}

// paramCount is the number of parameters: outC·(ckk+1), or outC·ckk
// without a bias.
func (c *DeviceConv) paramCount() int { return c.geom.OutC * c.kk }

// Grads copies the gradient to the host as nn.Conv2d's weight and bias
// gradients (db nil without a bias).
func (c *DeviceConv) Grads() (dw, db []float32, err error) { return c.split(c.gwb) }

// Params copies the weight and bias (nil without one) to the host.
func (c *DeviceConv) Params() (w, b []float32, err error) { return c.split(c.wb) }

func (c *DeviceConv) split(p DevicePtr) ([]float32, []float32, error) {
	g, kk := c.geom, c.kk
	all := make([]float32, g.OutC*kk)
	if err := CopyOut(c.dev, all, p); err != nil {
		return nil, nil, err
	}
	if !c.hasBias() {
		return all, nil, nil
	}
	w, b := make([]float32, g.OutC*g.CKK()), make([]float32, g.OutC)
	for o := range g.OutC {
		copy(w[o*g.CKK():], all[o*kk:o*kk+g.CKK()])
		b[o] = all[o*kk+kk-1]
	}
	return w, b, nil
}

// hasBias says whether the layer has a bias.
func (c *DeviceConv) hasBias() bool { return c.kk > c.geom.CKK() }

// Close frees the layer's device memory (and its scratch, unless a net
// shares it).
func (c *DeviceConv) Close() error {
	err := c.freeFrom(0)
	if c.own {
		err = errors.Join(err, c.scratch.freeFrom(0))
	}
	return err
}

// bytesHeld is the device memory the layer holds, its own scratch included.
func (c *DeviceConv) bytesHeld() int64 {
	if c.own {
		return c.bytes() + c.scratch.bytes()
	}
	return c.bytes()
}

// convNormChannels is FAIRDP_CONV_TILE_O of dpops.cu: the output channels
// one block of fairdp_conv_sqnorms_part handles (any grid is correct: the
// kernel loops over its units; this one gives each unit its own block).
const convNormChannels = 8

// convNormUnits is the number of fairdp_conv_sqnorms_part's units: samples
// times tiles of output channels.
func convNormUnits(n, outC int) int { return n * ((outC + convNormChannels - 1) / convNormChannels) }

// launch1 runs an element-wise kernel over units, one thread per unit.
func launch1(d Device, kernel string, units int, args ...Arg) error {
	if units <= 0 {
		return nil
	}
	return d.Launch(kernel, launchShape(units, false), D1(block), 0, args...)
}
