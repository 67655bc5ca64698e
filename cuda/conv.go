package cuda

import "fmt"

// DeviceConv is a convolution layer whose parameters and per-batch buffers
// live on a Device, the building block of a device-resident CNN: forward as
// Im2col + a strided-batched GEMM (one product per sample) against [W | b]
// (the unfolded input's last row of ones carries the bias), backward to the
// input as a strided-batched GEMM and Col2im, per-sample squared gradient norms from the same
// unfolded input and backprop (fairdp_conv_sqnorms_part, rows_sum_add), and
// the clipped sum Σ_i c_i·B_i·U_iᵀ as rows scaled by the clip factors and a
// GEMM per sample accumulated into the gradient. Nothing is copied to the
// host; the caller owns x, y, dy and dx.
//
// Layout: nn.Conv2d's. The device keeps [W | b] as one outC×(ckk+1)
// row-major matrix (a row-major r×c matrix is a column-major c×r one to
// cuBLAS), and the gradient likewise.
type DeviceConv struct {
	arena    // dev and the layer's allocations
	geom     ConvGeom
	wb, gwb  DevicePtr // outC×(ckk+1)
	u, du    DevicePtr // batch buffers: n×(ckk+1)×hw, n×ckk×hw
	part     DevicePtr // n×outC doubles
	capacity int
}

// NewDeviceConv allocates the layer on dev with nn.Conv2d's weight
// (outC×ckk) and bias (outC).
func NewDeviceConv(dev Device, g ConvGeom, weight, bias []float32) (*DeviceConv, error) {
	if err := g.Validate(); err != nil {
		return nil, err
	}
	kk := g.CKK() + 1
	if err := checkDims("NewDeviceConv", g.OutC, kk, 1024); err != nil {
		return nil, err
	}
	if len(weight) != g.OutC*g.CKK() || len(bias) != g.OutC {
		return nil, fmt.Errorf("cuda: DeviceConv: weight %d and bias %d values, want %d and %d", len(weight), len(bias), g.OutC*g.CKK(), g.OutC)
	}
	c := &DeviceConv{arena: arena{dev: dev}, geom: g}
	wb := make([]float32, g.OutC*kk)
	for o := range g.OutC {
		copy(wb[o*kk:], weight[o*g.CKK():(o+1)*g.CKK()])
		wb[o*kk+kk-1] = bias[o]
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

// grow makes the batch buffers hold n samples.
func (c *DeviceConv) grow(n int) error {
	if n <= c.capacity {
		return nil
	}
	if err := c.dev.Synchronize(); err != nil {
		return err
	}
	c.capacity = 0
	if err := c.freeFrom(2); err != nil { // [W | b] and its gradient stay
		return err
	}
	g := c.geom
	capN := n + n/4
	if err := checkDims("DeviceConv", capN, g.CKK()+1, g.HW()); err != nil {
		return err
	}
	var err error
	c.u = c.alloc(4*capN*(g.CKK()+1)*g.HW(), &err)
	c.du = c.alloc(4*capN*g.CKK()*g.HW(), &err)
	c.part = c.alloc(8*capN*g.OutC, &err)
	if err != nil {
		return err
	}
	c.capacity = capN
	return nil
}

// Forward sets y (n×outC×hw on the device) from x (n×inC×inH×inW) and
// keeps the unfolded input for Backward, SqNorms and ClippedGrad.
func (c *DeviceConv) Forward(y, x DevicePtr, n int) error {
	if err := c.grow(n); err != nil {
		return err
	}
	g, d := c.geom, c.dev
	oh, ow := g.OutHW()
	kk, hw := g.CKK()+1, g.HW()
	if err := launch1(d, "fairdp_im2col", n*kk*hw, Ptr(c.u), Ptr(x), Int(n), Int(g.InC), Int(g.InH), Int(g.InW),
		Int(g.K), Int(g.Stride), Int(g.Pad), Int(oh), Int(ow)); err != nil {
		return err
	}
	// Y_iᵀ (hw×outC) = U_iᵀ (hw×kk) · [W | b]ᵀ (kk×outC), every sample in one call.
	return d.SgemmStrided(NoTrans, NoTrans, hw, g.OutC, kk, 1, c.u, hw, int64(kk*hw), c.wb, kk, 0, 0,
		y, hw, int64(g.OutC*hw), n)
}

// sample is the address of sample i's block of per floats in buffer p.
func (c *DeviceConv) sample(p DevicePtr, i, per int) DevicePtr { return p + DevicePtr(4*i*per) }

// Backward sets dx (n×inC×inH×inW) = ∂L/∂x from dy (n×outC×hw): dU_i =
// Wᵀ·B_i, folded by Col2im. dx may be 0 (the first layer needs none).
func (c *DeviceConv) Backward(dx, dy DevicePtr, n int) error {
	if dx == 0 || n == 0 {
		return nil
	}
	g, d := c.geom, c.dev
	kk, ckk, hw := g.CKK()+1, g.CKK(), g.HW()
	oh, ow := g.OutHW()
	// dU_iᵀ (hw×ckk) = B_iᵀ (hw×outC) · W (outC×ckk), W being [W | b] without
	// its last column; every sample in one call.
	if err := d.SgemmStrided(NoTrans, Trans, hw, ckk, g.OutC, 1, dy, hw, int64(g.OutC*hw), c.wb, kk, 0, 0,
		c.du, hw, int64(ckk*hw), n); err != nil {
		return err
	}
	return launch1(d, "fairdp_col2im", n*g.InC*g.InH*g.InW, Ptr(dx), Ptr(c.du), Int(n), Int(g.InC), Int(g.InH),
		Int(g.InW), Int(g.K), Int(g.Stride), Int(g.Pad), Int(oh), Int(ow))
}

// SqNorms adds each sample's ‖[∂W | ∂b]_i‖² to sq (n doubles on the device)
// from the unfolded input of Forward and the backprop dy.
func (c *DeviceConv) SqNorms(sq, dy DevicePtr, n int) error {
	if n == 0 {
		return nil
	}
	g, d := c.geom, c.dev
	if err := d.Launch("fairdp_conv_sqnorms_part", launchShape(convNormUnits(n, g.OutC), true), D1(block), 0, Ptr(c.part), Ptr(c.u), Ptr(dy),
		Int(n), Int(g.OutC), Int(g.CKK()+1), Int(g.HW())); err != nil {
		return err
	}
	return launch1(d, "fairdp_rows_sum_add", n, Ptr(sq), Ptr(c.part), Int(n), Int(g.OutC))
}

// ClippedGrad sets the gradient to Σ_i scale_i·B_i·U_iᵀ: dy's rows are
// scaled in place by the clip factors (n floats on the device), then one
// GEMM per sample accumulates.
func (c *DeviceConv) ClippedGrad(dy, scale DevicePtr, n int) error {
	g, d := c.geom, c.dev
	kk, hw := g.CKK()+1, g.HW()
	if n == 0 {
		return launch1(d, "fairdp_fill_u32", g.OutC*kk, Ptr(c.gwb), U32(0), Int(g.OutC*kk))
	}
	if err := launch1(d, "fairdp_scale_rows", n*g.OutC*hw, Ptr(dy), Ptr(dy), Ptr(scale), Int(n), Int(g.OutC*hw)); err != nil {
		return err
	}
	for i := range n {
		beta := float32(1)
		if i == 0 {
			beta = 0
		}
		// [∂W | ∂b]ᵀ (kk×outC) += U_i (kk×hw) · B_iᵀ (hw×outC)
		if err := d.Sgemm(Trans, NoTrans, kk, g.OutC, hw, 1, c.sample(c.u, i, kk*hw), hw, c.sample(dy, i, g.OutC*hw), hw,
			beta, c.gwb, kk); err != nil {
			return err
		}
	}
	return nil
}

// Grads copies the gradient to the host as nn.Conv2d's weight and bias
// gradients.
func (c *DeviceConv) Grads() (dw, db []float32, err error) { return c.split(c.gwb) }

// Params copies the weight and bias to the host.
func (c *DeviceConv) Params() (w, b []float32, err error) { return c.split(c.wb) }

func (c *DeviceConv) split(p DevicePtr) ([]float32, []float32, error) {
	g := c.geom
	kk := g.CKK() + 1
	all := make([]float32, g.OutC*kk)
	if err := CopyOut(c.dev, all, p); err != nil {
		return nil, nil, err
	}
	w, b := make([]float32, g.OutC*g.CKK()), make([]float32, g.OutC)
	for o := range g.OutC {
		copy(w[o*g.CKK():], all[o*kk:o*kk+g.CKK()])
		b[o] = all[o*kk+kk-1]
	}
	return w, b, nil
}

// Close frees the layer's device memory.
func (c *DeviceConv) Close() error { return c.freeFrom(0) }

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
