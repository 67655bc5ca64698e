//go:build cuda

package cuda

/*
#cgo LDFLAGS: -ldl
#cgo linux CFLAGS: -I/usr/local/cuda/include
#cgo linux LDFLAGS: -L/usr/local/cuda/lib64 -L/usr/local/cuda/lib64/stubs
#include <stdlib.h>
#include <stdint.h>
#include <cuda.h>
#include "cublas_dl.h"
int fairdp_cuinit_result(void);
const char* fairdp_cuda_error_name(int code);
*/
import "C"

import (
	"embed"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"unsafe"

	"gorgonia.org/cu"
)

//go:embed ptx/*.ptx
var ptxFiles embed.FS

var probe struct {
	once sync.Once
	err  error
}

// Available reports whether a CUDA device can be used.
func Available() bool { return Check() == nil }

// Check says why the GPU backend cannot be used (nil when it can): the
// driver's initialisation failed (no NVIDIA kernel driver or no GPU) or it
// reports no device.
func Check() error {
	probe.once.Do(func() { probe.err = probeDriver() })
	return probe.err
}

func probeDriver() error {
	if code := int(C.fairdp_cuinit_result()); code != 0 {
		return fmt.Errorf("%w: no usable CUDA device: the NVIDIA driver failed to initialise (cuInit returned %s); "+
			"a GPU and its kernel driver (nvidia-smi lists it) are required for --device cuda", ErrUnavailable, resultName(code))
	}
	n, err := cu.NumDevices()
	if err != nil {
		return fmt.Errorf("%w: cuDeviceGetCount: %v", ErrUnavailable, err)
	}
	if n == 0 {
		return fmt.Errorf("%w: no CUDA device: the driver initialised but reports 0 GPUs", ErrUnavailable)
	}
	return loadCublas(os.Getenv(CublasEnv))
}

// CublasEnv names the environment variable that points fairdp at a cuBLAS
// library (a path to libcublas.so.N) when none of the sonames it tries is on
// the loader's path, e.g. the one inside a Python wheel.
const CublasEnv = "FAIRDP_CUBLAS"

// loadCublas loads cuBLAS at run time (cublas_dl.c): the library at path,
// or else libcublas.so.13, .12 and .11 in turn. The error names every
// library tried and how to fix it.
func loadCublas(path string) error {
	var msg [2048]C.char
	var cpath *C.char
	if path != "" {
		cpath = C.CString(path)
		defer C.free(unsafe.Pointer(cpath))
	}
	if C.fairdp_cublas_load(cpath, &msg[0], C.int(len(msg))) == 1 {
		return nil
	}
	if path != "" {
		return fmt.Errorf("%w: cuBLAS could not be loaded from %s=%s (%s); point it at a libcublas.so.N of CUDA 11, 12 or 13",
			ErrUnavailable, CublasEnv, path, C.GoString(&msg[0]))
	}
	return fmt.Errorf("%w: cuBLAS not found (%s); install CUDA's cuBLAS (libcublas.so.13, .12 or .11, e.g. the "+
		"libcublas-12-x package or the CUDA toolkit) or set %s to its path", ErrUnavailable, C.GoString(&msg[0]), CublasEnv)
}

func resultName(code int) string {
	if name := C.fairdp_cuda_error_name(C.int(code)); name != nil {
		return fmt.Sprintf("%d %s", code, C.GoString(name))
	}
	return fmt.Sprintf("%d", code)
}

// Driver is the Device of an NVIDIA GPU, through gorgonia.org/cu (driver
// API) and cuBLAS: its own context, one non-blocking stream that every copy,
// launch and GEMM is queued on, and the embedded PTX modules of the newest
// architecture the GPU supports. Every driver call runs on one goroutine
// locked to an OS thread with the context current, so callers may come from
// any goroutine (one at a time: a Device is not for concurrent use).
type Driver struct {
	name  string
	calls chan func()
	// inside is true on the locked thread while a Do closure runs: the
	// Device calls it makes go straight to the driver.
	inside bool
	hops   int // closures sent to the locked thread (for tests)
	ctx    cu.CUContext
	stream cu.Stream
	// copies is the second stream, for uploads that overlap the
	// computation (Device.CopyToDeviceAsync on CopyStream).
	copies cu.Stream
	// events are the CUevents NewEvent made, by handle.
	events    map[Event]C.CUevent
	nextEvent Event
	blas      unsafe.Pointer // cublasHandle_t
	mods      []cu.Module
	fns       map[string]cu.Function
	closed    bool
}

var _ Device = (*Driver)(nil)

// NewGPU opens device ordinal as a Backend: DeviceBackend on a Driver.
func NewGPU(ordinal int) (Backend, error) {
	d, err := NewDriver(ordinal)
	if err != nil {
		return nil, err
	}
	return NewDeviceBackend(d), nil
}

// NewDriver opens device ordinal: a context, a stream, a cuBLAS handle on
// that stream and the PTX modules.
func NewDriver(ordinal int) (*Driver, error) {
	if err := Check(); err != nil {
		return nil, err
	}
	d := &Driver{calls: make(chan func()), fns: map[string]cu.Function{}}
	go d.serve()
	if err := d.run(func() error { return d.open(ordinal) }); err != nil {
		d.run(d.release)
		close(d.calls)
		return nil, err
	}
	return d, nil
}

// serve runs the driver calls on one locked OS thread: a CUDA context is
// current per thread, and cuBLAS's handle belongs to it.
func (d *Driver) serve() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for f := range d.calls {
		f()
	}
}

// run executes fn on the driver's thread and returns its error.
func (d *Driver) run(fn func() error) error {
	if d.inside {
		return fn()
	}
	if d.closed {
		return errors.New("cuda: GPU device used after Close")
	}
	d.hops++
	done := make(chan error, 1)
	d.calls <- func() { done <- fn() }
	return <-done
}

func (d *Driver) open(ordinal int) error {
	n, err := cu.NumDevices()
	if err != nil {
		return fmt.Errorf("cuda: cuDeviceGetCount: %w", err)
	}
	if ordinal < 0 || ordinal >= n {
		return fmt.Errorf("%w: device cuda:%d requested, %d CUDA device(s) present", ErrUnavailable, ordinal, n)
	}
	dev, err := cu.GetDevice(ordinal)
	if err != nil {
		return fmt.Errorf("cuda: cuDeviceGet(%d): %w", ordinal, err)
	}
	name, err := dev.Name()
	if err != nil {
		return fmt.Errorf("cuda: cuDeviceGetName(%d): %w", ordinal, err)
	}
	major, minor, err := dev.ComputeCapability()
	if err != nil {
		return fmt.Errorf("cuda: compute capability of device %d: %w", ordinal, err)
	}
	arch, err := archFor(major, minor)
	if err != nil {
		return err
	}
	d.name = fmt.Sprintf("cuda:%d %s (sm_%d%d, PTX sm_%d, %s)", ordinal, name, major, minor, arch, C.GoString(C.fairdp_cublas_path()))
	if d.ctx, err = dev.MakeContext(cu.SchedAuto); err != nil {
		return fmt.Errorf("cuda: cuCtxCreate on device %d: %w", ordinal, err)
	}
	if d.stream, err = cu.MakeStream(cu.NonBlocking); err != nil {
		return fmt.Errorf("cuda: cuStreamCreate: %w", err)
	}
	if d.copies, err = cu.MakeStream(cu.NonBlocking); err != nil {
		return fmt.Errorf("cuda: cuStreamCreate (copies): %w", err)
	}
	var h unsafe.Pointer
	if st := C.fairdp_cublas_create(&h); st != 0 {
		return fmt.Errorf("cuda: cublasCreate: status %d", int(st))
	}
	d.blas = h
	if st := C.fairdp_cublas_set_stream(d.blas, unsafe.Pointer(d.stream.C())); st != 0 {
		return fmt.Errorf("cuda: cublasSetStream: status %d", int(st))
	}
	for module, kernels := range ptxModules {
		file := ptxName(module, arch)
		src, err := ptxFiles.ReadFile(file)
		if err != nil {
			return fmt.Errorf("cuda: embedded %s: %w", file, err)
		}
		mod, err := cu.LoadData(string(src))
		if err != nil {
			return fmt.Errorf("cuda: cuModuleLoadData(%s): %w (the driver may be older than CUDA 11.8's PTX ISA 7.8 needs)", file, err)
		}
		d.mods = append(d.mods, mod)
		for _, k := range kernels {
			fn, err := mod.Function(k)
			if err != nil {
				return fmt.Errorf("cuda: cuModuleGetFunction(%s, %s): %w", file, k, err)
			}
			d.fns[k] = fn
		}
	}
	return nil
}

// Name implements Device.
func (d *Driver) Name() string { return d.name }

// Close implements Device: releases the modules, cuBLAS, the stream and the
// context (memory still allocated goes with the context).
func (d *Driver) Close() error {
	if d.closed {
		return nil
	}
	err := d.run(d.release)
	d.closed = true
	close(d.calls)
	return err
}

// release frees everything that was created, returning the first error.
func (d *Driver) release() error {
	var errs []error
	if d.blas != nil {
		if st := C.fairdp_cublas_destroy(d.blas); st != 0 {
			errs = append(errs, fmt.Errorf("cublasDestroy: status %d", int(st)))
		}
		d.blas = nil
	}
	for _, m := range d.mods {
		if err := m.Unload(); err != nil {
			errs = append(errs, fmt.Errorf("cuModuleUnload: %w", err))
		}
	}
	d.mods = nil
	for _, s := range []cu.Stream{d.stream, d.copies} {
		if s != (cu.Stream{}) {
			if err := s.Destroy(); err != nil {
				errs = append(errs, fmt.Errorf("cuStreamDestroy: %w", err))
			}
		}
	}
	if d.ctx != (cu.CUContext{}) {
		if err := d.ctx.Destroy(); err != nil {
			errs = append(errs, fmt.Errorf("cuCtxDestroy: %w", err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("cuda: release: %w", errors.Join(errs...))
	}
	return nil
}

// Alloc implements Device (cuMemAlloc: 256-byte aligned, not zeroed).
func (d *Driver) Alloc(bytes int64) (DevicePtr, error) {
	if bytes <= 0 {
		return 0, fmt.Errorf("cuda: Alloc(%d): want > 0 bytes", bytes)
	}
	var p cu.DevicePtr
	err := d.run(func() (err error) {
		if p, err = cu.MemAlloc(bytes); err != nil {
			return fmt.Errorf("cuda: cuMemAlloc(%d): %w", bytes, err)
		}
		return nil
	})
	return DevicePtr(p), err
}

// Free implements Device.
func (d *Driver) Free(p DevicePtr) error {
	return d.run(func() error {
		if err := cu.MemFree(cu.DevicePtr(p)); err != nil {
			return fmt.Errorf("cuda: cuMemFree: %w", err)
		}
		return nil
	})
}

// CopyToDevice implements Device (queued on the stream; from pageable host
// memory the driver stages the data before the call returns).
func (d *Driver) CopyToDevice(dst DevicePtr, src unsafe.Pointer, bytes int64) error {
	return d.run(func() error {
		if err := cu.MemcpyHtoDAsync(cu.DevicePtr(dst), src, bytes, d.stream); err != nil {
			return fmt.Errorf("cuda: cuMemcpyHtoDAsync: %w", err)
		}
		return nil
	})
}

// CopyToHost implements Device: queued after the stream's work, then waited
// for, so dst holds the data when it returns.
func (d *Driver) CopyToHost(dst unsafe.Pointer, src DevicePtr, bytes int64) error {
	return d.run(func() error {
		if err := cu.MemcpyDtoHAsync(dst, cu.DevicePtr(src), bytes, d.stream); err != nil {
			return fmt.Errorf("cuda: cuMemcpyDtoHAsync: %w", err)
		}
		if err := d.stream.Synchronize(); err != nil {
			return fmt.Errorf("cuda: cuStreamSynchronize: %w", err)
		}
		return nil
	})
}

// Launch implements Device (cuLaunchKernel on the stream).
func (d *Driver) Launch(kernel string, grid, block Dim3, sharedBytes int, args ...Arg) error {
	fn, ok := d.fns[kernel]
	if !ok {
		return fmt.Errorf("cuda: kernel %s was not loaded", kernel)
	}
	if err := checkLaunch(kernel, grid, block); err != nil {
		return err
	}
	g, b := grid.norm(), block.norm()
	slots := make([]uint64, len(args))
	params := make([]unsafe.Pointer, len(args))
	for i := range args {
		slots[i] = uint64(args[i])
		params[i] = unsafe.Pointer(&slots[i])
	}
	return d.run(func() error {
		if err := fn.Launch(g.X, g.Y, g.Z, b.X, b.Y, b.Z, sharedBytes, d.stream, params); err != nil {
			return fmt.Errorf("cuda: cuLaunchKernel(%s, grid %v, block %v): %w", kernel, g, b, err)
		}
		return nil
	})
}

func flag(t Transpose) C.int {
	if t {
		return 1
	}
	return 0
}

// Sgemm implements Device (cublasSgemm on the stream).
func (d *Driver) Sgemm(ta, tb Transpose, m, n, k int, alpha float32, a DevicePtr, lda int, b DevicePtr, ldb int,
	beta float32, c DevicePtr, ldc int) error {
	if _, _, _, err := checkGemm(ta, tb, m, n, k, lda, ldb, ldc); err != nil {
		return err
	}
	return d.run(func() error {
		if st := C.fairdp_sgemm(d.blas, flag(ta), flag(tb), C.int(m), C.int(n), C.int(k), C.float(alpha), C.uintptr_t(a),
			C.int(lda), C.uintptr_t(b), C.int(ldb), C.float(beta), C.uintptr_t(c), C.int(ldc)); st != 0 {
			return fmt.Errorf("cuda: cublasSgemm: status %d", int(st))
		}
		return nil
	})
}

// Dgemm implements Device (cublasDgemm on the stream).
func (d *Driver) Dgemm(ta, tb Transpose, m, n, k int, alpha float64, a DevicePtr, lda int, b DevicePtr, ldb int,
	beta float64, c DevicePtr, ldc int) error {
	if _, _, _, err := checkGemm(ta, tb, m, n, k, lda, ldb, ldc); err != nil {
		return err
	}
	return d.run(func() error {
		if st := C.fairdp_dgemm(d.blas, flag(ta), flag(tb), C.int(m), C.int(n), C.int(k), C.double(alpha), C.uintptr_t(a),
			C.int(lda), C.uintptr_t(b), C.int(ldb), C.double(beta), C.uintptr_t(c), C.int(ldc)); st != 0 {
			return fmt.Errorf("cuda: cublasDgemm: status %d", int(st))
		}
		return nil
	})
}

// SgemmStrided implements Device (cublasSgemmStridedBatched on the stream).
func (d *Driver) SgemmStrided(ta, tb Transpose, m, n, k int, alpha float32, a DevicePtr, lda int, strideA int64,
	b DevicePtr, ldb int, strideB int64, beta float32, c DevicePtr, ldc int, strideC int64, batch int) error {
	if _, _, _, err := checkGemm(ta, tb, m, n, k, lda, ldb, ldc); err != nil {
		return err
	}
	if err := checkStrided(strideA, strideB, strideC, batch); err != nil {
		return err
	}
	if batch == 0 {
		return nil
	}
	return d.run(func() error {
		if st := C.fairdp_sgemm_strided(d.blas, flag(ta), flag(tb), C.int(m), C.int(n), C.int(k), C.float(alpha), C.uintptr_t(a),
			C.int(lda), C.longlong(strideA), C.uintptr_t(b), C.int(ldb), C.longlong(strideB), C.float(beta), C.uintptr_t(c),
			C.int(ldc), C.longlong(strideC), C.int(batch)); st != 0 {
			return fmt.Errorf("cuda: cublasSgemmStridedBatched: status %d", int(st))
		}
		return nil
	})
}

// Do runs fn on the driver's locked thread; the Device calls fn makes run
// there directly, with no hop through the channel each (17–69 µs a hop on
// two loaded cores, against well under a microsecond for the cgo call
// itself). A DeviceNet issues each step from one Do.
func (d *Driver) Do(fn func() error) error {
	if d.inside {
		return fn()
	}
	return d.run(func() error {
		d.inside = true
		defer func() { d.inside = false }()
		return fn()
	})
}

// Synchronize implements Device: waits for both streams.
func (d *Driver) Synchronize() error {
	return d.run(func() error {
		for _, s := range []cu.Stream{d.copies, d.stream} {
			if err := s.Synchronize(); err != nil {
				return fmt.Errorf("cuda: cuStreamSynchronize: %w", err)
			}
		}
		return nil
	})
}

// SetTF32 sets cuBLAS's math mode on the handle: TF32 tensor-core
// products (CUBLAS_TF32_TENSOR_OP_MATH: inputs rounded to 10-bit
// mantissas, FP32 accumulation) for the GEMMs queued after it, or the
// default FP32 (CUBLAS_DEFAULT_MATH). It applies in the host's order of
// calls, so a step can switch between its GEMMs without waiting.
func (d *Driver) SetTF32(on bool) error {
	mode := C.int(0)
	if on {
		mode = 3
	}
	return d.run(func() error {
		if st := C.fairdp_cublas_set_math_mode(d.blas, mode); st != 0 {
			return fmt.Errorf("cuda: cublasSetMathMode(%d): status %d", int(mode), int(st))
		}
		return nil
	})
}

// cstream is s as the driver API takes it.
func (d *Driver) cstream(s Stream) (C.CUstream, error) {
	switch s {
	case ComputeStream:
		return C.CUstream(unsafe.Pointer(d.stream.C())), nil
	case CopyStream:
		return C.CUstream(unsafe.Pointer(d.copies.C())), nil
	}
	return nil, fmt.Errorf("cuda: stream %d: not a stream", s)
}

// driverCall turns a CUresult into an error naming the call.
func driverCall(call string, r C.CUresult) error {
	if r != C.CUDA_SUCCESS {
		return fmt.Errorf("cuda: %s: %s", call, resultName(int(r)))
	}
	return nil
}

// HostAlloc implements Device (cuMemHostAlloc, portable: no flags).
func (d *Driver) HostAlloc(bytes int64) (unsafe.Pointer, error) {
	if bytes <= 0 {
		return nil, fmt.Errorf("cuda: HostAlloc(%d): want > 0 bytes", bytes)
	}
	var p unsafe.Pointer
	err := d.run(func() error { return driverCall("cuMemHostAlloc", C.cuMemHostAlloc(&p, C.size_t(bytes), 0)) })
	return p, err
}

// HostFree implements Device (cuMemFreeHost).
func (d *Driver) HostFree(p unsafe.Pointer) error {
	return d.run(func() error { return driverCall("cuMemFreeHost", C.cuMemFreeHost(p)) })
}

// CopyToDeviceAsync implements Device (cuMemcpyHtoDAsync on stream s).
func (d *Driver) CopyToDeviceAsync(dst DevicePtr, src unsafe.Pointer, bytes int64, s Stream) error {
	return d.run(func() error {
		cs, err := d.cstream(s)
		if err != nil {
			return err
		}
		return driverCall("cuMemcpyHtoDAsync", C.cuMemcpyHtoDAsync(C.CUdeviceptr(dst), src, C.size_t(bytes), cs))
	})
}

// CopyToHostAsync implements Device (cuMemcpyDtoHAsync on the compute
// stream; nothing waits).
func (d *Driver) CopyToHostAsync(dst unsafe.Pointer, src DevicePtr, bytes int64) error {
	return d.run(func() error {
		cs, _ := d.cstream(ComputeStream)
		return driverCall("cuMemcpyDtoHAsync", C.cuMemcpyDtoHAsync(dst, C.CUdeviceptr(src), C.size_t(bytes), cs))
	})
}

// NewEvent implements Device (cuEventCreate with timing disabled, the
// cheapest kind to record and wait on).
func (d *Driver) NewEvent() (Event, error) {
	var h Event
	err := d.run(func() error {
		var e C.CUevent
		if err := driverCall("cuEventCreate", C.cuEventCreate(&e, C.CU_EVENT_DISABLE_TIMING)); err != nil {
			return err
		}
		if d.events == nil {
			d.events = map[Event]C.CUevent{}
		}
		d.nextEvent++
		h = d.nextEvent
		d.events[h] = e
		return nil
	})
	return h, err
}

// cevent is the CUevent behind e (on the driver's thread).
func (d *Driver) cevent(e Event) (C.CUevent, error) {
	c, ok := d.events[e]
	if !ok {
		return nil, fmt.Errorf("cuda: event %d is not live", e)
	}
	return c, nil
}

// FreeEvent implements Device (cuEventDestroy).
func (d *Driver) FreeEvent(e Event) error {
	return d.run(func() error {
		c, err := d.cevent(e)
		if err != nil {
			return err
		}
		delete(d.events, e)
		return driverCall("cuEventDestroy", C.cuEventDestroy(c))
	})
}

// Record implements Device (cuEventRecord).
func (d *Driver) Record(e Event, s Stream) error {
	return d.onStreamEvent(s, e, func(cs C.CUstream, c C.CUevent) error {
		return driverCall("cuEventRecord", C.cuEventRecord(c, cs))
	})
}

// WaitEvent implements Device (cuStreamWaitEvent).
func (d *Driver) WaitEvent(s Stream, e Event) error {
	return d.onStreamEvent(s, e, func(cs C.CUstream, c C.CUevent) error {
		return driverCall("cuStreamWaitEvent", C.cuStreamWaitEvent(cs, c, 0))
	})
}

// onStreamEvent runs fn on the driver's thread with s and e as the driver
// API takes them.
func (d *Driver) onStreamEvent(s Stream, e Event, fn func(C.CUstream, C.CUevent) error) error {
	return d.run(func() error {
		cs, err := d.cstream(s)
		if err != nil {
			return err
		}
		c, err := d.cevent(e)
		if err != nil {
			return err
		}
		return fn(cs, c)
	})
}

// EventSynchronize implements Device (cuEventSynchronize).
func (d *Driver) EventSynchronize(e Event) error {
	return d.run(func() error {
		c, err := d.cevent(e)
		if err != nil {
			return err
		}
		return driverCall("cuEventSynchronize", C.cuEventSynchronize(c))
	})
}

func checkDevice() error { return Check() }

func openDevice() (Device, error) { return NewDriver(0) }
