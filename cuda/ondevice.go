package cuda

import (
	"errors"
	"fmt"
	"sync"
)

// DeviceBackend implements Backend on any Device: each call copies its host
// slices into device buffers it keeps across calls (one per role, grown only
// when a call is larger, so the steady state allocates nothing), launches
// the kernels of kernels/*.cu and copies the results back. It is the code
// NewGPU runs on a GPU (Device = Driver) and the emulated-device tests run on
// the CPU (Device = Emulator), so those tests exercise exactly the launch
// configurations, argument lists and buffer layouts a GPU gets.
type DeviceBackend struct {
	mu     sync.Mutex
	dev    Device
	bufs   map[string]*devBuf
	closed bool
}

type devBuf struct {
	ptr   DevicePtr
	bytes int64
}

var _ Backend = (*DeviceBackend)(nil)

// NewDeviceBackend returns the Backend that runs on dev; closing it closes
// dev.
func NewDeviceBackend(dev Device) *DeviceBackend {
	return &DeviceBackend{dev: dev, bufs: map[string]*devBuf{}}
}

// Name implements Backend: the device's name.
func (g *DeviceBackend) Name() string { return g.dev.Name() }

// Device returns the device the backend runs on.
func (g *DeviceBackend) Device() Device { return g.dev }

// Close implements Backend: frees the buffers, then closes the device.
func (g *DeviceBackend) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil
	}
	g.closed = true
	var errs []error
	for role, b := range g.bufs {
		if err := g.dev.Free(b.ptr); err != nil {
			errs = append(errs, fmt.Errorf("free %s: %w", role, err))
		}
	}
	g.bufs = nil
	if err := g.dev.Close(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return fmt.Errorf("cuda: close %s: %w", g.dev.Name(), errors.Join(errs...))
	}
	return nil
}

// do runs fn, then waits for the device, so every asynchronous error of
// fn's launches is reported by the call that caused it.
func (g *DeviceBackend) do(fn func() error) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return errors.New("cuda: device backend used after Close")
	}
	err := fn()
	if serr := g.dev.Synchronize(); serr != nil && err == nil {
		err = serr
	}
	return err
}

// buf returns the device buffer of a role with room for bytes, growing it
// (by a quarter more than asked, so varying Poisson batch sizes settle
// quickly) only when it is too small.
func (g *DeviceBackend) buf(role string, bytes int64) (DevicePtr, error) {
	b := g.bufs[role]
	if b != nil && b.bytes >= bytes {
		return b.ptr, nil
	}
	if b != nil {
		// A launch queued before may still read the old buffer.
		if err := g.dev.Synchronize(); err != nil {
			return 0, err
		}
		if err := g.dev.Free(b.ptr); err != nil {
			return 0, fmt.Errorf("cuda: free %s: %w", role, err)
		}
		delete(g.bufs, role)
	}
	size := max(bytes+bytes/4, 256)
	ptr, err := g.dev.Alloc(size)
	if err != nil {
		return 0, fmt.Errorf("cuda: allocating %d bytes for %s: %w", size, role, err)
	}
	g.bufs[role] = &devBuf{ptr: ptr, bytes: size}
	return ptr, nil
}

// stage is one call's sequence of uploads, scratch buffers, launches and
// downloads; after the first error every later step does nothing and err
// keeps it, so each method reads as its kernels' argument lists.
type stage struct {
	g   *DeviceBackend
	err error
}

// put copies s into the role's buffer and returns it.
func put[E any](st *stage, role string, s []E) DevicePtr {
	ptr := st.scratch(role, byteSize(s))
	if st.err == nil {
		if err := CopyIn(st.g.dev, ptr, s); err != nil {
			st.err = fmt.Errorf("cuda: copy %s to the device: %w", role, err)
		}
	}
	return ptr
}

// get copies the first len(dst) elements of the role's buffer ptr into dst.
func get[E any](st *stage, dst []E, ptr DevicePtr, role string) {
	if st.err == nil {
		if err := CopyOut(st.g.dev, dst, ptr); err != nil {
			st.err = fmt.Errorf("cuda: copy %s to the host: %w", role, err)
		}
	}
}

// scratch returns the role's buffer with room for bytes.
func (st *stage) scratch(role string, bytes int64) DevicePtr {
	if st.err != nil {
		return 0
	}
	ptr, err := st.g.buf(role, bytes)
	st.err = err
	return ptr
}

// launch runs a kernel (see DeviceBackend.launch).
func (st *stage) launch(kernel string, units int, perBlock bool, args ...Arg) {
	if st.err == nil {
		st.err = st.g.launch(kernel, units, perBlock, args...)
	}
}

// run runs fn's steps (see do) and returns their first error.
func (g *DeviceBackend) run(fn func(st *stage)) error {
	return g.do(func() error {
		st := &stage{g: g}
		fn(st)
		return st.err
	})
}

// maxGrid caps the blocks of one launch; the kernels' grid-stride loops make
// any grid size correct.
const maxGrid = 1 << 16

// launchShape is the grid of a launch over units of work: one block per
// unit when perBlock (kernels that reduce within a block), else one thread
// per unit, in blocks of FAIRDP_BLOCK threads; capped at maxGrid.
func launchShape(units int, perBlock bool) Dim3 {
	blocks := units
	if !perBlock {
		blocks = (units + block - 1) / block
	}
	return D1(min(blocks, maxGrid))
}

// launch runs a kernel over units of work (see launchShape); no units, no
// launch.
func (g *DeviceBackend) launch(kernel string, units int, perBlock bool, args ...Arg) error {
	if units <= 0 {
		return nil
	}
	grid := launchShape(units, perBlock)
	if err := g.dev.Launch(kernel, grid, D1(block), 0, args...); err != nil {
		return fmt.Errorf("cuda: launch %s (%d blocks): %w", kernel, grid.X, err)
	}
	return nil
}

// LinearSqNorms implements Backend.
func (g *DeviceBackend) LinearSqNorms(sq []float64, a, b []float32, n, in, out int, bias bool) error {
	const fn = "LinearSqNorms"
	if err := checkLinear(fn, a, b, n, in, out); err != nil {
		return err
	}
	if err := checkLen(fn, "sq", sq, n); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	flag := 0
	if bias {
		flag = 1
	}
	return g.run(func(st *stage) {
		dsq, da, db := put(st, "sq", sq), put(st, "a", a), put(st, "b", b)
		st.launch("fairdp_linear_sqnorms", n, true, Ptr(dsq), Ptr(da), Ptr(db), Int(n), Int(in), Int(out), Int(flag))
		get(st, sq, dsq, "sq")
	})
}

// Im2col implements Backend.
func (g *DeviceBackend) Im2col(u, x []float32, geom ConvGeom, n int) error {
	if err := checkIm2col(u, x, geom, n); err != nil {
		return err
	}
	if len(u) == 0 {
		return nil
	}
	oh, ow := geom.OutHW()
	return g.run(func(st *stage) {
		dx, du := put(st, "x", x), st.scratch("u", byteSize(u))
		st.launch("fairdp_im2col", len(u), false, Ptr(du), Ptr(dx), Int(n), Int(geom.InC), Int(geom.InH), Int(geom.InW),
			Int(geom.K), Int(geom.Stride), Int(geom.Pad), Int(oh), Int(ow))
		get(st, u, du, "u")
	})
}

// Col2im implements Backend.
func (g *DeviceBackend) Col2im(dx, du []float32, geom ConvGeom, n int) error {
	if err := checkCol2im(dx, du, geom, n); err != nil {
		return err
	}
	if len(dx) == 0 {
		return nil
	}
	oh, ow := geom.OutHW()
	return g.run(func(st *stage) {
		ddu, ddx := put(st, "du", du), st.scratch("dx", byteSize(dx))
		st.launch("fairdp_col2im", len(dx), false, Ptr(ddx), Ptr(ddu), Int(n), Int(geom.InC), Int(geom.InH), Int(geom.InW),
			Int(geom.K), Int(geom.Stride), Int(geom.Pad), Int(oh), Int(ow))
		get(st, dx, ddx, "dx")
	})
}

// ConvSqNorms implements Backend.
func (g *DeviceBackend) ConvSqNorms(sq []float64, u, b []float32, geom ConvGeom, n int) error {
	const fn = "ConvSqNorms"
	if err := checkConv(fn, u, b, geom, n); err != nil {
		return err
	}
	if err := checkLen(fn, "sq", sq, n); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	kk, hw := geom.CKK()+1, geom.HW()
	return g.run(func(st *stage) {
		dsq, du, db := put(st, "sq", sq), put(st, "u", u), put(st, "b", b)
		dpart := st.scratch("part", int64(n)*int64(geom.OutC)*8)
		st.launch("fairdp_conv_sqnorms_part", convNormUnits(n, geom.OutC), true, Ptr(dpart), Ptr(du), Ptr(db), Int(n), Int(geom.OutC), Int(kk), Int(hw))
		st.launch("fairdp_rows_sum_add", n, false, Ptr(dsq), Ptr(dpart), Int(n), Int(geom.OutC))
		get(st, sq, dsq, "sq")
	})
}

// ClipFactors implements Backend.
func (g *DeviceBackend) ClipFactors(scale []float32, norms, sq, bounds []float64, flat float64) error {
	if err := checkClip(scale, norms, sq, bounds); err != nil {
		return err
	}
	n := len(sq)
	if n == 0 {
		return nil
	}
	bad := []int32{int32(n), int32(n)}
	err := g.run(func(st *stage) {
		dsq := put(st, "sq", sq)
		var dbounds DevicePtr // null: the flat bound
		if bounds != nil {
			dbounds = put(st, "bounds", bounds)
		}
		dbad, dnorms, dscale := put(st, "bad", bad), put(st, "norms", norms), put(st, "scale", scale)
		st.launch("fairdp_clip_factors", n, false, Ptr(dscale), Ptr(dnorms), Ptr(dbad), Ptr(dsq), Ptr(dbounds), F64(flat), Int(n))
		get(st, scale, dscale, "scale")
		get(st, norms, dnorms, "norms")
		get(st, bad, dbad, "bad")
	})
	if err != nil {
		return err
	}
	return clipError(sq, bounds, flat, int(bad[0]), int(bad[1]))
}

// ScaleRows implements Backend.
func (g *DeviceBackend) ScaleRows(dst, b, scale []float32, rowLen int) error {
	if err := checkScaleRows(dst, b, scale, rowLen); err != nil {
		return err
	}
	if len(b) == 0 {
		return nil
	}
	return g.run(func(st *stage) {
		db, ds := put(st, "b", b), put(st, "scale", scale)
		st.launch("fairdp_scale_rows", len(b), false, Ptr(db), Ptr(db), Ptr(ds), Int(len(scale)), Int(rowLen))
		get(st, dst, db, "b")
	})
}

// LinearClippedGrad implements Backend.
func (g *DeviceBackend) LinearClippedGrad(dw, db, a, b, scale []float32, n, in, out int) error {
	if err := checkLinearGrad("LinearClippedGrad", dw, db, a, b, scale, n, in, out); err != nil {
		return err
	}
	rows := in
	if db != nil {
		rows++
	}
	return g.run(func(st *stage) {
		ddw := put(st, "dw", dw)
		var ddb DevicePtr // null: a layer without bias
		if db != nil {
			ddb = put(st, "db", db)
		}
		da, dbp, ds := put(st, "a", a), put(st, "b", b), put(st, "scale", scale)
		st.launch("fairdp_linear_clipped_grad", rows*out, false, Ptr(ddw), Ptr(ddb), Ptr(da), Ptr(dbp), Ptr(ds), Int(n), Int(in), Int(out))
		get(st, dw, ddw, "dw")
		get(st, db, ddb, "db")
	})
}

// ConvClippedGrad implements Backend.
func (g *DeviceBackend) ConvClippedGrad(dw, db, u, b, scale []float32, geom ConvGeom, n int) error {
	if err := checkConvGrad("ConvClippedGrad", dw, db, u, b, scale, geom, n); err != nil {
		return err
	}
	kk, hw := geom.CKK()+1, geom.HW()
	return g.run(func(st *stage) {
		ddw, ddb := put(st, "dw", dw), put(st, "db", db)
		du, dbp, ds := put(st, "u", u), put(st, "b", b), put(st, "scale", scale)
		st.launch("fairdp_conv_clipped_grad", geom.OutC*kk, false, Ptr(ddw), Ptr(ddb), Ptr(du), Ptr(dbp), Ptr(ds),
			Int(n), Int(geom.OutC), Int(kk), Int(hw))
		get(st, dw, ddw, "dw")
		get(st, db, ddb, "db")
	})
}

// AddGaussian implements Backend.
func (g *DeviceBackend) AddGaussian(dst []float32, std float64, seed NoiseSeed) error {
	if err := checkNoise(std); err != nil {
		return err
	}
	if err := checkCount("AddGaussian", "dst", len(dst), len(dst)); err != nil {
		return err
	}
	if std == 0 || len(dst) == 0 {
		return nil
	}
	return g.run(func(st *stage) {
		d := put(st, "noise", dst)
		st.launch("fairdp_add_gaussian", len(dst)/2+len(dst)%2, false, Ptr(d), Int(len(dst)), F64(std),
			U32(seed.Key[0]), U32(seed.Key[1]), U32(seed.Nonce[0]), U32(seed.Nonce[1]), U32(seed.Stream))
		get(st, dst, d, "noise")
	})
}

// BiasAdd implements Backend.
func (g *DeviceBackend) BiasAdd(y, bias []float32, n, channels, spatial int) error {
	if err := checkBias("BiasAdd", y, bias, n, channels, spatial); err != nil {
		return err
	}
	if len(y) == 0 {
		return nil
	}
	return g.run(func(st *stage) {
		dy, dbias := put(st, "y", y), put(st, "bias", bias)
		st.launch("fairdp_bias_add", len(y), false, Ptr(dy), Ptr(dbias), Int(n), Int(channels), Int(spatial))
		get(st, y, dy, "y")
	})
}

// ReLUForward implements Backend.
func (g *DeviceBackend) ReLUForward(y, x []float32) error {
	if err := checkLen("ReLUForward", "y", y, len(x)); err != nil {
		return err
	}
	if len(x) == 0 {
		return nil
	}
	return g.run(func(st *stage) {
		dx, dy := put(st, "x", x), st.scratch("y", byteSize(y))
		st.launch("fairdp_relu_forward", len(x), false, Ptr(dy), Ptr(dx), Int(len(x)))
		get(st, y, dy, "y")
	})
}

// ReLUBackward implements Backend.
func (g *DeviceBackend) ReLUBackward(dx, y, dy []float32) error {
	if err := checkReLUBackward(dx, y, dy); err != nil {
		return err
	}
	if len(dy) == 0 {
		return nil
	}
	return g.run(func(st *stage) {
		dyp, ddy, ddx := put(st, "y", y), put(st, "dy", dy), st.scratch("dx", byteSize(dx))
		st.launch("fairdp_relu_backward", len(dy), false, Ptr(ddx), Ptr(dyp), Ptr(ddy), Int(len(dy)))
		get(st, dx, ddx, "dx")
	})
}

// MaxPoolForward implements Backend.
func (g *DeviceBackend) MaxPoolForward(y []float32, arg []int32, x []float32, geom PoolGeom, n int) error {
	if err := checkPool("MaxPoolForward", geom, n, len(x), len(y), len(arg)); err != nil {
		return err
	}
	if len(y) == 0 {
		return nil
	}
	return g.run(func(st *stage) {
		dx, dy, darg := put(st, "x", x), st.scratch("y", byteSize(y)), st.scratch("arg", byteSize(arg))
		st.launch("fairdp_maxpool_forward", len(y), false, Ptr(dy), Ptr(darg), Ptr(dx),
			Int(n*geom.C), Int(geom.H), Int(geom.W), Int(geom.K))
		get(st, y, dy, "y")
		get(st, arg, darg, "arg")
	})
}

// MaxPoolBackward implements Backend.
func (g *DeviceBackend) MaxPoolBackward(dx, dy []float32, arg []int32, geom PoolGeom, n int) error {
	if err := checkPool("MaxPoolBackward", geom, n, len(dx), len(dy), len(arg)); err != nil {
		return err
	}
	if len(dx) == 0 {
		return nil
	}
	return g.run(func(st *stage) {
		ddy, darg, ddx := put(st, "dy", dy), put(st, "arg", arg), st.scratch("dx", byteSize(dx))
		st.launch("fairdp_maxpool_backward", len(dx), false, Ptr(ddx), Ptr(ddy), Ptr(darg),
			Int(n*geom.C), Int(geom.H), Int(geom.W), Int(geom.K))
		get(st, dx, ddx, "dx")
	})
}

// GroupNormForward implements Backend.
func (g *DeviceBackend) GroupNormForward(y, xhat []float32, invStd []float64, x, gamma, beta []float32, geom GroupGeom, n int) error {
	if err := checkGroupNormForward(y, xhat, invStd, x, gamma, beta, geom, n); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	return g.run(func(st *stage) {
		dx, dg, db := put(st, "x", x), put(st, "gamma", gamma), put(st, "beta", beta)
		dy, dxh, dinv := st.scratch("y", byteSize(y)), st.scratch("xhat", byteSize(xhat)), st.scratch("invStd", byteSize(invStd))
		st.launch("fairdp_groupnorm_forward", n*geom.Groups, true, Ptr(dy), Ptr(dxh), Ptr(dinv), Ptr(dx), Ptr(dg), Ptr(db),
			Int(n), Int(geom.C), Int(geom.H*geom.W), Int(geom.Groups), F64(geom.Eps))
		get(st, y, dy, "y")
		get(st, xhat, dxh, "xhat")
		get(st, invStd, dinv, "invStd")
	})
}

// GroupNormBackward implements Backend.
func (g *DeviceBackend) GroupNormBackward(dx, ps, dy, xhat []float32, invStd []float64, gamma []float32, geom GroupGeom, n int) error {
	if err := checkGroupNormBackward(dx, ps, dy, xhat, invStd, gamma, geom, n); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	return g.run(func(st *stage) {
		ddy, dxh, dinv, dg := put(st, "dy", dy), put(st, "xhat", xhat), put(st, "invStd", invStd), put(st, "gamma", gamma)
		dps, ddx := st.scratch("ps", byteSize(ps)), DevicePtr(0)
		if dx != nil {
			ddx = st.scratch("dx", byteSize(dx))
		}
		st.launch("fairdp_groupnorm_backward", n*geom.Groups, true, Ptr(ddx), Ptr(dps), Ptr(ddy), Ptr(dxh), Ptr(dinv), Ptr(dg),
			Int(n), Int(geom.C), Int(geom.H*geom.W), Int(geom.Groups))
		get(st, ps, dps, "ps")
		if dx != nil {
			get(st, dx, ddx, "dx")
		}
	})
}
