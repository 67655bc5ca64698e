package cuda

import (
	"errors"
	"fmt"
	"math"
	"unsafe"
)

// Device is the seam between fairdp's device code and whatever executes it:
// memory, copies, kernel launches by name, cuBLAS-style GEMM and
// synchronisation. Two implementations exist: Driver (build tag `cuda`) runs
// the embedded PTX on an NVIDIA GPU through gorgonia.org/cu and cuBLAS, and
// Emulator (build tag `cudaemu`, never in a product build) compiles the same
// kernels/*.cu sources for the CPU and serves GEMMs from the CPU BLAS. Code
// written against Device (DeviceBackend, DeviceNet and the trainer's
// device-resident step) therefore runs unchanged on both, and CI exercises it
// on the emulator.
//
// Launches and copies may be asynchronous (queued on one stream, in order);
// errors of queued work may surface only at Synchronize. A Device is not safe
// for concurrent use.
type Device interface {
	// Name says which device this is ("cuda:0 <GPU name> …", "emulated …").
	Name() string
	// Alloc returns bytes (> 0) of device memory, aligned to 256 bytes.
	Alloc(bytes int64) (DevicePtr, error)
	// Free releases memory returned by Alloc.
	Free(p DevicePtr) error
	// CopyToDevice copies bytes from host memory at src to dst.
	CopyToDevice(dst DevicePtr, src unsafe.Pointer, bytes int64) error
	// CopyToHost copies bytes from src to host memory at dst; the copy has
	// completed when the call returns.
	CopyToHost(dst unsafe.Pointer, src DevicePtr, bytes int64) error
	// Launch runs the extern "C" kernel of that name (one of kernels/*.cu)
	// over grid×block threads with sharedBytes of dynamic shared memory.
	// args are the kernel's parameters in order, one 8-byte slot each (Ptr,
	// Int, U32, F64): the driver reads each parameter's own size from the
	// slot's low bytes.
	Launch(kernel string, grid, block Dim3, sharedBytes int, args ...Arg) error
	// Sgemm computes C = alpha·op(A)·op(B) + beta·C on float32 matrices with
	// cuBLAS's semantics: column-major storage, C m×n with leading dimension
	// ldc ≥ max(1, m), op(A) m×k, op(B) k×n; lda is the leading dimension of A
	// as stored (≥ rows of A as stored).
	Sgemm(ta, tb Transpose, m, n, k int, alpha float32, a DevicePtr, lda int, b DevicePtr, ldb int,
		beta float32, c DevicePtr, ldc int) error
	// Dgemm is Sgemm on float64 matrices.
	Dgemm(ta, tb Transpose, m, n, k int, alpha float64, a DevicePtr, lda int, b DevicePtr, ldb int,
		beta float64, c DevicePtr, ldc int) error
	// SgemmStrided is batch Sgemms in one call (cublasSgemmStridedBatched):
	// product i reads A at a + 4·i·strideA, B at b + 4·i·strideB and writes
	// C at c + 4·i·strideC (strides in elements; 0 shares the operand).
	SgemmStrided(ta, tb Transpose, m, n, k int, alpha float32, a DevicePtr, lda int, strideA int64,
		b DevicePtr, ldb int, strideB int64, beta float32, c DevicePtr, ldc int, strideC int64, batch int) error
	// Synchronize waits for all queued work, on both streams, and returns
	// its first error.
	Synchronize() error

	// The asynchronous half (cuMemHostAlloc, cuMemcpy*Async, cuEvent*): what
	// lets the host issue step t+1 while step t runs. A Device has two
	// streams: ComputeStream, where every launch, GEMM and the copies above
	// are queued, and CopyStream, for uploads that overlap the computation;
	// events order them.

	// HostAlloc returns bytes (> 0) of page-locked host memory
	// (cuMemHostAlloc), which the device reads and writes by DMA, so that an
	// asynchronous copy neither stages the data nor waits; it lies outside
	// Go's heap.
	HostAlloc(bytes int64) (unsafe.Pointer, error)
	// HostFree releases memory returned by HostAlloc.
	HostFree(p unsafe.Pointer) error
	// CopyToDeviceAsync queues a copy of bytes from src, inside one HostAlloc
	// block, to dst on stream s; src must not change until the copy is done
	// (an event recorded after it has completed).
	CopyToDeviceAsync(dst DevicePtr, src unsafe.Pointer, bytes int64, s Stream) error
	// CopyToHostAsync queues a copy of bytes from src to dst, inside one
	// HostAlloc block, on ComputeStream; dst holds the data once an event
	// recorded after it has completed.
	CopyToHostAsync(dst unsafe.Pointer, src DevicePtr, bytes int64) error
	// NewEvent creates an event (cuEventCreate, timing disabled).
	NewEvent() (Event, error)
	// FreeEvent destroys e.
	FreeEvent(e Event) error
	// Record queues e on stream s: it completes when the work queued on s
	// before it has.
	Record(e Event, s Stream) error
	// WaitEvent makes the work queued on s after this call wait for e's
	// last Record (cuStreamWaitEvent); the host does not wait.
	WaitEvent(s Stream, e Event) error
	// EventSynchronize makes the host wait for e's last Record.
	EventSynchronize(e Event) error
	// Close releases the device; it must not be used after.
	Close() error
}

// Stream is one of a Device's two queues of work.
type Stream int

const (
	// ComputeStream runs launches, GEMMs and the synchronous-API copies.
	ComputeStream Stream = 0
	// CopyStream runs uploads that overlap the computation.
	CopyStream Stream = 1
)

func (s Stream) valid() bool { return s == ComputeStream || s == CopyStream }

// Event is a marker in a stream's work (a CUevent on a GPU).
type Event uintptr

// threadBound is a Device whose calls run on one locked OS thread (the
// Driver: the CUDA context is current there). Do runs fn on that thread,
// and the calls fn makes go to the driver directly instead of one hop to
// the thread each.
type threadBound interface {
	Do(fn func() error) error
}

// onDevice runs fn, on d's thread when d has one (threadBound).
func onDevice(d Device, fn func() error) error {
	if t, ok := d.(threadBound); ok {
		return t.Do(fn)
	}
	return fn()
}

// DevicePtr is an address in a Device's memory; 0 is the null pointer
// (kernels read a null optional argument as "absent"). Offsets within an
// allocation are addresses too (p + bytes).
type DevicePtr uintptr

// Dim3 is a grid or block shape. Y and Z of 0 count as 1 (as CUDA's dim3
// defaults them); X must be ≥ 1, as the driver rejects an empty launch.
type Dim3 struct{ X, Y, Z int }

// D1 is the one-dimensional shape x×1×1 that every fairdp kernel uses.
func D1(x int) Dim3 { return Dim3{X: x, Y: 1, Z: 1} }

// norm returns d with zero Y and Z set to 1.
func (d Dim3) norm() Dim3 {
	if d.Y == 0 {
		d.Y = 1
	}
	if d.Z == 0 {
		d.Z = 1
	}
	return d
}

// count is the number of threads or blocks in d.
func (d Dim3) count() int64 { d = d.norm(); return int64(d.X) * int64(d.Y) * int64(d.Z) }

// checkLaunch rejects shapes the CUDA driver rejects on every current GPU
// (block at most 1024 threads, 1024×1024×64; grid at most 2³¹-1×65535×65535),
// so that the emulator refuses what the hardware would.
func checkLaunch(kernel string, grid, block Dim3) error {
	g, b := grid.norm(), block.norm()
	if g.X < 1 || g.Y < 1 || g.Z < 1 || b.X < 1 || b.Y < 1 || b.Z < 1 {
		return fmt.Errorf("cuda: launch %s: grid %v or block %v has a component < 1", kernel, grid, block)
	}
	if b.count() > 1024 || b.X > 1024 || b.Y > 1024 || b.Z > 64 {
		return fmt.Errorf("cuda: launch %s: block %v exceeds 1024 threads (1024×1024×64)", kernel, block)
	}
	if g.X > math.MaxInt32 || g.Y > 65535 || g.Z > 65535 {
		return fmt.Errorf("cuda: launch %s: grid %v exceeds 2³¹-1×65535×65535", kernel, grid)
	}
	return nil
}

// Transpose selects op(X) = X or Xᵀ in Sgemm and Dgemm.
type Transpose bool

const (
	NoTrans Transpose = false
	Trans   Transpose = true
)

// stored returns the shape of X as stored when op(X) is rows×cols.
func (t Transpose) stored(rows, cols int) (int, int) {
	if t {
		return cols, rows
	}
	return rows, cols
}

func (t Transpose) String() string {
	if t {
		return "T"
	}
	return "N"
}

// Arg is one kernel parameter in the 8-byte slot that cuLaunchKernel reads
// (cu.Function.Launch copies 8 bytes per parameter; the parameter's own
// size is taken from the low bytes, little-endian).
type Arg uint64

// Ptr is a pointer parameter.
func Ptr(p DevicePtr) Arg { return Arg(p) }

// Int is an int (32-bit) parameter.
func Int(v int) Arg { return Arg(uint32(int32(v))) }

// U32 is an unsigned (32-bit) parameter.
func U32(v uint32) Arg { return Arg(v) }

// F64 is a double parameter.
func F64(v float64) Arg { return Arg(math.Float64bits(v)) }

// F32 is a float parameter.
func F32(v float32) Arg { return Arg(math.Float32bits(v)) }

// checkGemm validates a GEMM call as cuBLAS does (CUBLAS_STATUS_INVALID_VALUE
// for negative sizes or too small leading dimensions) and returns the number
// of elements each operand spans from its base pointer, column-major.
func checkGemm(ta, tb Transpose, m, n, k, lda, ldb, ldc int) (spanA, spanB, spanC int64, err error) {
	if m < 0 || n < 0 || k < 0 {
		return 0, 0, 0, fmt.Errorf("cuda: gemm sizes m=%d n=%d k=%d must be ≥ 0", m, n, k)
	}
	rowsA, colsA := ta.stored(m, k)
	rowsB, colsB := tb.stored(k, n)
	if lda < max(1, rowsA) || ldb < max(1, rowsB) || ldc < max(1, m) {
		return 0, 0, 0, fmt.Errorf("cuda: gemm %v%v m=%d n=%d k=%d: leading dimensions lda=%d ldb=%d ldc=%d below the stored rows %d, %d, %d",
			ta, tb, m, n, k, lda, ldb, ldc, max(1, rowsA), max(1, rowsB), max(1, m))
	}
	span := func(rows, cols, ld int) int64 {
		if rows == 0 || cols == 0 {
			return 0
		}
		return int64(cols-1)*int64(ld) + int64(rows)
	}
	return span(rowsA, colsA, lda), span(rowsB, colsB, ldb), span(m, n, ldc), nil
}

// checkStrided validates the batch and strides of a strided GEMM.
func checkStrided(strideA, strideB, strideC int64, batch int) error {
	if batch < 0 || strideA < 0 || strideB < 0 || strideC < 0 {
		return fmt.Errorf("cuda: strided gemm: batch %d and strides %d, %d, %d must be ≥ 0", batch, strideA, strideB, strideC)
	}
	return nil
}

func byteSize[E any](s []E) int64 {
	var z E
	return int64(len(s)) * int64(unsafe.Sizeof(z))
}

// CopyIn copies the host slice src to dst on d.
func CopyIn[E any](d Device, dst DevicePtr, src []E) error {
	if len(src) == 0 {
		return nil
	}
	return d.CopyToDevice(dst, unsafe.Pointer(&src[0]), byteSize(src))
}

// CopyOut copies len(dst) elements from src on d into the host slice dst.
func CopyOut[E any](d Device, dst []E, src DevicePtr) error {
	if len(dst) == 0 {
		return nil
	}
	return d.CopyToHost(unsafe.Pointer(&dst[0]), src, byteSize(dst))
}

// arena is the device memory a device-resident model owns, in allocation
// order: parameters first, then per-batch buffers that are freed from a
// mark and reallocated when a larger batch comes.
type arena struct {
	dev   Device
	owned []DevicePtr
	sizes []int64
}

// alloc allocates bytes (at least 4); after the first error (kept in *err)
// it does nothing and returns 0.
func (a *arena) alloc(bytes int, err *error) DevicePtr {
	if *err != nil {
		return 0
	}
	size := int64(max(bytes, 4))
	p, e := a.dev.Alloc(size)
	if e != nil {
		*err = e
		return 0
	}
	a.owned, a.sizes = append(a.owned, p), append(a.sizes, size)
	return p
}

// mark is the number of allocations so far.
func (a *arena) mark() int { return len(a.owned) }

// bytes is the device memory the arena holds.
func (a *arena) bytes() int64 {
	var b int64
	for _, s := range a.sizes {
		b += s
	}
	return b
}

// freeFrom frees the allocations made after mark.
func (a *arena) freeFrom(mark int) error {
	var errs []error
	for _, p := range a.owned[mark:] {
		errs = append(errs, a.dev.Free(p))
	}
	a.owned, a.sizes = a.owned[:mark], a.sizes[:mark]
	return errors.Join(errs...)
}
