//go:build cudaemu && !cuda

package cuda

/*
#cgo CXXFLAGS: -std=c++17 -O2 -pthread
#cgo LDFLAGS: -pthread
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

// fairdp_emu_map returns bytes of emulated device memory that end, after
// rounding up to 256, at an inaccessible page (and start after one), so a
// kernel that reads or writes past an allocation stops with SIGSEGV at the
// access instead of corrupting its neighbour. *mapping and *mapped are what
// munmap needs.
static void* fairdp_emu_map(size_t bytes, void** mapping, size_t* mapped) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t body = (bytes + 255) & ~(size_t)255;
    size_t span = (body + page - 1) / page * page;
    size_t total = span + 2 * page;
    char* m = (char*)mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
        return NULL;
    }
    if (mprotect(m, page, PROT_NONE) != 0 || mprotect(m + page + span, page, PROT_NONE) != 0) {
        munmap(m, total);
        return NULL;
    }
    *mapping = m;
    *mapped = total;
    return m + page + span - body;
}

static void fairdp_emu_unmap(void* mapping, size_t mapped) { munmap(mapping, mapped); }
int fairdp_emu_kernel_count(void);
const char* fairdp_emu_kernel_name(int i);
const char* fairdp_emu_kernel_kinds(int i);
int fairdp_emu_launch(int i, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                      const uint64_t* args, int workers, char* err, int errlen);
*/
import "C"

import (
	"cmp"
	"embed"
	"errors"
	"fmt"
	"os"
	"slices"
	"unsafe"

	"gonum.org/v1/gonum/blas"

	"github.com/fairdp/fairdp/backend"
)

// emulatorSources are the files emulator.cc includes from subdirectories.
// The go command hashes a cgo package's own directory but not headers it
// includes from elsewhere; embedding them makes every change to a kernel or
// to the shim rebuild the emulator instead of reusing a stale cached build.
//
//go:embed kernels/*.cu kernels/*.cuh emu/*.h emu/*.cu
var emulatorSources embed.FS

// Emulator is a Device that runs on the CPU: the kernels of kernels/*.cu
// compiled unchanged by the system C++ compiler (emulator.cc with
// emu/cuda_shim.h; see emu/runtime.h for the execution model), device
// memory in pages of its own, and GEMMs served by fairdp's CPU BLAS
// (backend.Implementation) with cuBLAS's column-major semantics. It checks
// what a GPU would not: every copy, GEMM operand and pointer parameter of a
// launch must lie inside one live allocation; each allocation ends (after
// rounding up to 256 bytes) at an inaccessible page, so a kernel that runs
// past it stops the process with SIGSEGV; and fresh allocations are filled
// with 0xFF bytes (NaN as float, -1 as int), so code that reads memory it
// never wrote shows up in the results. It exists for tests and is
// only in builds with the tag `cudaemu`, never in a product binary.
type Emulator struct {
	hostQueue // pinned memory and events: every call completes before it returns
	workers   int
	allocs    []emuAlloc // sorted by base
	kernels   map[string]emuKernel
	closed    bool
	tf32      bool // SetTF32: Sgemm's inputs rounded to TF32 first
}

type emuAlloc struct {
	base    DevicePtr
	bytes   int64
	p       unsafe.Pointer
	mapping unsafe.Pointer // for munmap
	mapped  C.size_t
}

type emuKernel struct {
	index int
	kinds string
}

var _ Device = (*Emulator)(nil)

// EmulatorOptions configures an Emulator.
type EmulatorOptions struct {
	// Workers is the number of OS threads that run blocks in parallel (the
	// threads of one block always share one OS thread); 0 means 2.
	Workers int
}

// NewEmulator returns an emulated device.
func NewEmulator(o EmulatorOptions) (*Emulator, error) {
	if o.Workers < 0 {
		return nil, fmt.Errorf("cuda: EmulatorOptions.Workers = %d, want ≥ 0", o.Workers)
	}
	e := &Emulator{workers: o.Workers, kernels: map[string]emuKernel{}}
	if e.workers == 0 {
		e.workers = 2
	}
	for i := range int(C.fairdp_emu_kernel_count()) {
		e.kernels[C.GoString(C.fairdp_emu_kernel_name(C.int(i)))] = emuKernel{index: i, kinds: C.GoString(C.fairdp_emu_kernel_kinds(C.int(i)))}
	}
	return e, nil
}

// emulatorKernels lists the kernels compiled into the emulator.
func emulatorKernels() []string {
	var names []string
	for i := range int(C.fairdp_emu_kernel_count()) {
		names = append(names, C.GoString(C.fairdp_emu_kernel_name(C.int(i))))
	}
	return names
}

// Name implements Device.
func (e *Emulator) Name() string {
	return fmt.Sprintf("emulated device (kernels/*.cu compiled for the CPU, %d worker threads, BLAS %s)", e.workers, backend.Name())
}

var errClosed = errors.New("cuda: emulated device used after Close")

// Alloc implements Device.
func (e *Emulator) Alloc(bytes int64) (DevicePtr, error) {
	if e.closed {
		return 0, errClosed
	}
	if bytes <= 0 {
		return 0, fmt.Errorf("cuda: Alloc(%d): want > 0 bytes", bytes)
	}
	var a emuAlloc
	p := C.fairdp_emu_map(C.size_t(bytes), &a.mapping, &a.mapped)
	if p == nil {
		return 0, fmt.Errorf("cuda: emulated device out of memory allocating %d bytes", bytes)
	}
	C.memset(p, 0xff, C.size_t((bytes+255)&^255))
	a.base, a.bytes, a.p = DevicePtr(uintptr(p)), bytes, p
	i, _ := slices.BinarySearchFunc(e.allocs, a.base, func(x emuAlloc, b DevicePtr) int { return cmp.Compare(x.base, b) })
	e.allocs = slices.Insert(e.allocs, i, a)
	return a.base, nil
}

// find returns the allocation holding [p, p+bytes).
func (e *Emulator) find(p DevicePtr, bytes int64) (emuAlloc, error) {
	i, found := slices.BinarySearchFunc(e.allocs, p, func(x emuAlloc, b DevicePtr) int { return cmp.Compare(x.base, b) })
	if !found {
		i--
	}
	if i >= 0 {
		a := e.allocs[i]
		off := int64(p - a.base)
		if off <= a.bytes && bytes >= 0 && bytes <= a.bytes-off {
			return a, nil
		}
		if off < a.bytes {
			return a, fmt.Errorf("cuda: %d bytes at %#x run past the end of the %d-byte allocation at %#x", bytes, uintptr(p), a.bytes, uintptr(a.base))
		}
	}
	return emuAlloc{}, fmt.Errorf("cuda: %#x is not in any live allocation of the emulated device", uintptr(p))
}

// host returns the host address of device range [p, p+bytes).
func (e *Emulator) host(p DevicePtr, bytes int64) (unsafe.Pointer, error) {
	if e.closed {
		return nil, errClosed
	}
	a, err := e.find(p, bytes)
	if err != nil {
		return nil, err
	}
	return unsafe.Add(a.p, uintptr(p-a.base)), nil
}

// Free implements Device.
func (e *Emulator) Free(p DevicePtr) error {
	if e.closed {
		return errClosed
	}
	i, found := slices.BinarySearchFunc(e.allocs, p, func(x emuAlloc, b DevicePtr) int { return cmp.Compare(x.base, b) })
	if !found {
		return fmt.Errorf("cuda: Free(%#x): not the start of a live allocation", uintptr(p))
	}
	C.fairdp_emu_unmap(e.allocs[i].mapping, e.allocs[i].mapped)
	e.allocs = slices.Delete(e.allocs, i, i+1)
	return nil
}

// CopyToDevice implements Device.
func (e *Emulator) CopyToDevice(dst DevicePtr, src unsafe.Pointer, bytes int64) error {
	d, err := e.host(dst, bytes)
	if err != nil {
		return err
	}
	copy(unsafe.Slice((*byte)(d), bytes), unsafe.Slice((*byte)(src), bytes))
	return nil
}

// CopyToHost implements Device.
func (e *Emulator) CopyToHost(dst unsafe.Pointer, src DevicePtr, bytes int64) error {
	s, err := e.host(src, bytes)
	if err != nil {
		return err
	}
	copy(unsafe.Slice((*byte)(dst), bytes), unsafe.Slice((*byte)(s), bytes))
	return nil
}

// CopyToDeviceAsync implements Device: the copy is done when it returns
// (either stream); src must be pinned (HostAlloc), as a GPU needs for the
// copy to overlap.
func (e *Emulator) CopyToDeviceAsync(dst DevicePtr, src unsafe.Pointer, bytes int64, s Stream) error {
	if err := e.checkUpload(src, bytes, s); err != nil {
		return err
	}
	return e.CopyToDevice(dst, src, bytes)
}

// CopyToHostAsync implements Device: the copy is done when it returns; dst
// must be pinned.
func (e *Emulator) CopyToHostAsync(dst unsafe.Pointer, src DevicePtr, bytes int64) error {
	if err := e.checkPinned("CopyToHostAsync", dst, bytes); err != nil {
		return err
	}
	return e.CopyToHost(dst, src, bytes)
}

// Launch implements Device: it runs the kernel to completion before it
// returns.
func (e *Emulator) Launch(kernel string, grid, block Dim3, sharedBytes int, args ...Arg) error {
	if e.closed {
		return errClosed
	}
	k, ok := e.kernels[kernel]
	if !ok {
		return fmt.Errorf("cuda: no kernel %s on the emulated device", kernel)
	}
	if err := checkLaunch(kernel, grid, block); err != nil {
		return err
	}
	if sharedBytes != 0 {
		return fmt.Errorf("cuda: launch %s: the emulated device has no dynamic shared memory (%d bytes asked); no fairdp kernel uses it", kernel, sharedBytes)
	}
	if len(args) != len(k.kinds) {
		return fmt.Errorf("cuda: launch %s: %d arguments, the kernel takes %d", kernel, len(args), len(k.kinds))
	}
	for i, kind := range k.kinds {
		if kind == 'p' && args[i] != 0 {
			if _, err := e.find(DevicePtr(args[i]), 0); err != nil {
				return fmt.Errorf("cuda: launch %s: pointer argument %d: %w", kernel, i, err)
			}
		}
	}
	g, b := grid.norm(), block.norm()
	slots := (*C.uint64_t)(C.malloc(C.size_t(8 * max(len(args), 1))))
	defer C.free(unsafe.Pointer(slots))
	copy(unsafe.Slice((*uint64)(unsafe.Pointer(slots)), len(args)), unsafe.Slice((*uint64)(unsafe.SliceData(args)), len(args)))
	var msg [512]C.char
	if C.fairdp_emu_launch(C.int(k.index), C.unsigned(g.X), C.unsigned(g.Y), C.unsigned(g.Z), C.unsigned(b.X), C.unsigned(b.Y),
		C.unsigned(b.Z), slots, C.int(e.workers), &msg[0], C.int(len(msg))) != 0 {
		return fmt.Errorf("cuda: launch %s on the emulated device: %s", kernel, C.GoString(&msg[0]))
	}
	return nil
}

// Sgemm implements Device with the CPU BLAS; with SetTF32 on, A and B
// are rounded to TF32 first (RoundTF32) and the products accumulate in
// FP32, as cuBLAS's TF32 tensor-core mode does.
func (e *Emulator) Sgemm(ta, tb Transpose, m, n, k int, alpha float32, a DevicePtr, lda int, b DevicePtr, ldb int,
	beta float32, c DevicePtr, ldc int) error {
	gemm := rowMajorGemm[float32](backend.Implementation().Sgemm)
	if e.tf32 {
		gemm = tf32Inputs(gemm)
	}
	return emuGemm(e, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, gemm)
}

// SetTF32 sets the emulated device's math mode as the Driver's sets
// cuBLAS's (CUBLAS_TF32_TENSOR_OP_MATH when on): Sgemm and SgemmStrided
// then round their inputs to TF32, so that a run with TF32 on the emulated
// device shows what the rounding does to a model's results (its speed
// needs a GPU). Dgemm is unaffected, as in cuBLAS.
func (e *Emulator) SetTF32(on bool) error {
	e.tf32 = on
	return nil
}

// tf32Inputs is gemm on copies of A and B rounded to TF32.
func tf32Inputs(gemm rowMajorGemm[float32]) rowMajorGemm[float32] {
	round := func(v []float32) []float32 {
		r := make([]float32, len(v))
		for i, x := range v {
			r[i] = RoundTF32(x)
		}
		return r
	}
	return func(tA, tB blas.Transpose, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
		gemm(tA, tB, m, n, k, alpha, round(a), lda, round(b), ldb, beta, c, ldc)
	}
}

// Dgemm implements Device with the CPU BLAS.
func (e *Emulator) Dgemm(ta, tb Transpose, m, n, k int, alpha float64, a DevicePtr, lda int, b DevicePtr, ldb int,
	beta float64, c DevicePtr, ldc int) error {
	return emuGemm(e, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, backend.Implementation().Dgemm)
}

// SgemmStrided implements Device: the products one after another.
func (e *Emulator) SgemmStrided(ta, tb Transpose, m, n, k int, alpha float32, a DevicePtr, lda int, strideA int64,
	b DevicePtr, ldb int, strideB int64, beta float32, c DevicePtr, ldc int, strideC int64, batch int) error {
	if err := checkStrided(strideA, strideB, strideC, batch); err != nil {
		return err
	}
	for i := range int64(batch) {
		if err := e.Sgemm(ta, tb, m, n, k, alpha, a+DevicePtr(4*i*strideA), lda, b+DevicePtr(4*i*strideB), ldb,
			beta, c+DevicePtr(4*i*strideC), ldc); err != nil {
			return fmt.Errorf("cuda: strided gemm, product %d: %w", i, err)
		}
	}
	return nil
}

// rowMajorGemm is gonum's (row-major) ?gemm.
type rowMajorGemm[E float32 | float64] func(tA, tB blas.Transpose, m, n, k int, alpha E, a []E, lda int, b []E, ldb int, beta E, c []E, ldc int)

// emuGemm serves a column-major GEMM with a row-major BLAS: column-major C
// (m×n, ldc) is row-major Cᵀ (n×m, ldc), and Cᵀ = op(B)ᵀ·op(A)ᵀ, where
// op(B)ᵀ is the row-major view of B's storage with the same transpose flag;
// so it is the row-major product with the operands swapped.
func emuGemm[E float32 | float64](e *Emulator, ta, tb Transpose, m, n, k int, alpha E, a DevicePtr, lda int,
	b DevicePtr, ldb int, beta E, c DevicePtr, ldc int, gemm rowMajorGemm[E]) (err error) {
	if e.closed {
		return errClosed
	}
	spanA, spanB, spanC, err := checkGemm(ta, tb, m, n, k, lda, ldb, ldc)
	if err != nil {
		return err
	}
	if m == 0 || n == 0 {
		return nil
	}
	var z E
	size := int64(unsafe.Sizeof(z))
	cs, err := emuSlice[E](e, c, spanC, size, "C")
	if err != nil {
		return err
	}
	if k == 0 || alpha == 0 {
		// cuBLAS reads neither A nor B; beta = 0 overwrites C (NaN included).
		for j := 0; j < n; j++ {
			col := cs[j*ldc : j*ldc+m]
			for i := range col {
				if beta == 0 {
					col[i] = 0
				} else {
					col[i] *= beta
				}
			}
		}
		return nil
	}
	as, err := emuSlice[E](e, a, spanA, size, "A")
	if err != nil {
		return err
	}
	bs, err := emuSlice[E](e, b, spanB, size, "B")
	if err != nil {
		return err
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("cuda: gemm on the emulated device: %v", r)
		}
	}()
	gemm(blasFlag(tb), blasFlag(ta), n, m, k, alpha, bs, ldb, as, lda, beta, cs, ldc)
	return nil
}

func blasFlag(t Transpose) blas.Transpose {
	if t {
		return blas.Trans
	}
	return blas.NoTrans
}

func emuSlice[E float32 | float64](e *Emulator, p DevicePtr, span, size int64, what string) ([]E, error) {
	h, err := e.host(p, span*size)
	if err != nil {
		return nil, fmt.Errorf("cuda: gemm operand %s: %w", what, err)
	}
	return unsafe.Slice((*E)(h), span), nil
}

// Synchronize implements Device: launches and copies are synchronous.
func (e *Emulator) Synchronize() error {
	if e.closed {
		return errClosed
	}
	return nil
}

// Close implements Device: frees every allocation still live.
func (e *Emulator) Close() error {
	if e.closed {
		return nil
	}
	for _, a := range e.allocs {
		C.fairdp_emu_unmap(a.mapping, a.mapped)
	}
	e.allocs = nil
	e.closeQueue()
	e.closed = true
	return nil
}

// Live returns the number of allocations not yet freed (tests check that
// code frees what it allocates).
func (e *Emulator) Live() int { return len(e.allocs) }

// checkDevice: a cudaemu build has no GPU driver; it trains on the emulated
// device only when FAIRDP_DEVICE=emu asks for it explicitly.
func checkDevice() error {
	if os.Getenv("FAIRDP_DEVICE") != "emu" {
		return fmt.Errorf("%w: this fairdp was built with the emulated device (build tag cudaemu, for tests) and no GPU driver; "+
			"set FAIRDP_DEVICE=emu to train on the emulation (the CUDA kernels run on the CPU, slowly: it is not a GPU), "+
			"or build with -tags cuda on a GPU host", ErrUnavailable)
	}
	return nil
}

func openDevice() (Device, error) { return NewEmulator(EmulatorOptions{}) }
