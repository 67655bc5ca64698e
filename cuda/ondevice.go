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

// upload copies s into the role's buffer and returns it.
func upload[E any](g *DeviceBackend, role string, s []E) (DevicePtr, error) {
	ptr, err := g.buf(role, byteSize(s))
	if err != nil {
		return 0, err
	}
	if err := CopyIn(g.dev, ptr, s); err != nil {
		return 0, fmt.Errorf("cuda: copy %s to the device: %w", role, err)
	}
	return ptr, nil
}

// download copies the first len(dst) elements of ptr into dst.
func download[E any](g *DeviceBackend, dst []E, ptr DevicePtr, role string) error {
	if err := CopyOut(g.dev, dst, ptr); err != nil {
		return fmt.Errorf("cuda: copy %s to the host: %w", role, err)
	}
	return nil
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
	return g.do(func() error {
		dsq, err := upload(g, "sq", sq)
		if err != nil {
			return err
		}
		da, err := upload(g, "a", a)
		if err != nil {
			return err
		}
		db, err := upload(g, "b", b)
		if err != nil {
			return err
		}
		flag := 0
		if bias {
			flag = 1
		}
		if err := g.launch("fairdp_linear_sqnorms", n, true, Ptr(dsq), Ptr(da), Ptr(db),
			Int(n), Int(in), Int(out), Int(flag)); err != nil {
			return err
		}
		return download(g, sq, dsq, "sq")
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
	return g.do(func() error {
		dx, err := upload(g, "x", x)
		if err != nil {
			return err
		}
		du, err := g.buf("u", byteSize(u))
		if err != nil {
			return err
		}
		if err := g.launch("fairdp_im2col", len(u), false, Ptr(du), Ptr(dx), Int(n), Int(geom.InC),
			Int(geom.InH), Int(geom.InW), Int(geom.K), Int(geom.Stride), Int(geom.Pad),
			Int(oh), Int(ow)); err != nil {
			return err
		}
		return download(g, u, du, "u")
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
	return g.do(func() error {
		dsq, err := upload(g, "sq", sq)
		if err != nil {
			return err
		}
		du, err := upload(g, "u", u)
		if err != nil {
			return err
		}
		db, err := upload(g, "b", b)
		if err != nil {
			return err
		}
		dpart, err := g.buf("part", int64(n)*int64(geom.OutC)*8)
		if err != nil {
			return err
		}
		if err := g.launch("fairdp_conv_sqnorms_part", n*geom.OutC, true, Ptr(dpart), Ptr(du), Ptr(db),
			Int(n), Int(geom.OutC), Int(kk), Int(hw)); err != nil {
			return err
		}
		if err := g.launch("fairdp_rows_sum_add", n, false, Ptr(dsq), Ptr(dpart), Int(n), Int(geom.OutC)); err != nil {
			return err
		}
		return download(g, sq, dsq, "sq")
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
	err := g.do(func() error {
		dsq, err := upload(g, "sq", sq)
		if err != nil {
			return err
		}
		var dbounds DevicePtr
		if bounds != nil {
			if dbounds, err = upload(g, "bounds", bounds); err != nil {
				return err
			}
		}
		dbad, err := upload(g, "bad", bad)
		if err != nil {
			return err
		}
		dnorms, err := upload(g, "norms", norms)
		if err != nil {
			return err
		}
		dscale, err := upload(g, "scale", scale)
		if err != nil {
			return err
		}
		if err := g.launch("fairdp_clip_factors", n, false, Ptr(dscale), Ptr(dnorms), Ptr(dbad),
			Ptr(dsq), Ptr(dbounds), F64(flat), Int(n)); err != nil {
			return err
		}
		if err := download(g, scale, dscale, "scale"); err != nil {
			return err
		}
		if err := download(g, norms, dnorms, "norms"); err != nil {
			return err
		}
		return download(g, bad, dbad, "bad")
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
	return g.do(func() error {
		dbp, err := upload(g, "b", b)
		if err != nil {
			return err
		}
		ds, err := upload(g, "scale", scale)
		if err != nil {
			return err
		}
		if err := g.launch("fairdp_scale_rows", len(b), false, Ptr(dbp), Ptr(dbp), Ptr(ds),
			Int(len(scale)), Int(rowLen)); err != nil {
			return err
		}
		return download(g, dst, dbp, "b")
	})
}

// LinearClippedGrad implements Backend.
func (g *DeviceBackend) LinearClippedGrad(dw, db, a, b, scale []float32, n, in, out int) error {
	if err := checkLinearGrad("LinearClippedGrad", dw, db, a, b, scale, n, in, out); err != nil {
		return err
	}
	return g.do(func() error {
		ddw, err := upload(g, "dw", dw)
		if err != nil {
			return err
		}
		var ddb DevicePtr
		if db != nil {
			if ddb, err = upload(g, "db", db); err != nil {
				return err
			}
		}
		da, err := upload(g, "a", a)
		if err != nil {
			return err
		}
		dbp, err := upload(g, "b", b)
		if err != nil {
			return err
		}
		ds, err := upload(g, "scale", scale)
		if err != nil {
			return err
		}
		rows := in
		if db != nil {
			rows++
		}
		if err := g.launch("fairdp_linear_clipped_grad", rows*out, false, Ptr(ddw), Ptr(ddb), Ptr(da),
			Ptr(dbp), Ptr(ds), Int(n), Int(in), Int(out)); err != nil {
			return err
		}
		if err := download(g, dw, ddw, "dw"); err != nil {
			return err
		}
		return download(g, db, ddb, "db")
	})
}

// ConvClippedGrad implements Backend.
func (g *DeviceBackend) ConvClippedGrad(dw, db, u, b, scale []float32, geom ConvGeom, n int) error {
	if err := checkConvGrad("ConvClippedGrad", dw, db, u, b, scale, geom, n); err != nil {
		return err
	}
	kk, hw := geom.CKK()+1, geom.HW()
	return g.do(func() error {
		ddw, err := upload(g, "dw", dw)
		if err != nil {
			return err
		}
		ddb, err := upload(g, "db", db)
		if err != nil {
			return err
		}
		du, err := upload(g, "u", u)
		if err != nil {
			return err
		}
		dbp, err := upload(g, "b", b)
		if err != nil {
			return err
		}
		ds, err := upload(g, "scale", scale)
		if err != nil {
			return err
		}
		if err := g.launch("fairdp_conv_clipped_grad", geom.OutC*kk, false, Ptr(ddw), Ptr(ddb), Ptr(du),
			Ptr(dbp), Ptr(ds), Int(n), Int(geom.OutC), Int(kk), Int(hw)); err != nil {
			return err
		}
		if err := download(g, dw, ddw, "dw"); err != nil {
			return err
		}
		return download(g, db, ddb, "db")
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
	return g.do(func() error {
		d, err := upload(g, "noise", dst)
		if err != nil {
			return err
		}
		pairs := len(dst)/2 + len(dst)%2
		if err := g.launch("fairdp_add_gaussian", pairs, false, Ptr(d), Int(len(dst)), F64(std),
			U32(seed.Key[0]), U32(seed.Key[1]), U32(seed.Nonce[0]), U32(seed.Nonce[1]),
			U32(seed.Stream)); err != nil {
			return err
		}
		return download(g, dst, d, "noise")
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
	return g.do(func() error {
		dy, err := upload(g, "y", y)
		if err != nil {
			return err
		}
		dbias, err := upload(g, "bias", bias)
		if err != nil {
			return err
		}
		if err := g.launch("fairdp_bias_add", len(y), false, Ptr(dy), Ptr(dbias), Int(n),
			Int(channels), Int(spatial)); err != nil {
			return err
		}
		return download(g, y, dy, "y")
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
	return g.do(func() error {
		dx, err := upload(g, "x", x)
		if err != nil {
			return err
		}
		dy, err := g.buf("y", byteSize(y))
		if err != nil {
			return err
		}
		if err := g.launch("fairdp_relu_forward", len(x), false, Ptr(dy), Ptr(dx), Int(len(x))); err != nil {
			return err
		}
		return download(g, y, dy, "y")
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
	return g.do(func() error {
		dyp, err := upload(g, "y", y)
		if err != nil {
			return err
		}
		ddy, err := upload(g, "dy", dy)
		if err != nil {
			return err
		}
		ddx, err := g.buf("dx", byteSize(dx))
		if err != nil {
			return err
		}
		if err := g.launch("fairdp_relu_backward", len(dy), false, Ptr(ddx), Ptr(dyp), Ptr(ddy), Int(len(dy))); err != nil {
			return err
		}
		return download(g, dx, ddx, "dx")
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
	return g.do(func() error {
		dx, err := upload(g, "x", x)
		if err != nil {
			return err
		}
		dy, err := g.buf("y", byteSize(y))
		if err != nil {
			return err
		}
		darg, err := g.buf("arg", byteSize(arg))
		if err != nil {
			return err
		}
		if err := g.launch("fairdp_maxpool_forward", len(y), false, Ptr(dy), Ptr(darg), Ptr(dx),
			Int(n*geom.C), Int(geom.H), Int(geom.W), Int(geom.K)); err != nil {
			return err
		}
		if err := download(g, y, dy, "y"); err != nil {
			return err
		}
		return download(g, arg, darg, "arg")
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
	return g.do(func() error {
		ddy, err := upload(g, "dy", dy)
		if err != nil {
			return err
		}
		darg, err := upload(g, "arg", arg)
		if err != nil {
			return err
		}
		ddx, err := g.buf("dx", byteSize(dx))
		if err != nil {
			return err
		}
		if err := g.launch("fairdp_maxpool_backward", len(dx), false, Ptr(ddx), Ptr(ddy), Ptr(darg),
			Int(n*geom.C), Int(geom.H), Int(geom.W), Int(geom.K)); err != nil {
			return err
		}
		return download(g, dx, ddx, "dx")
	})
}
