package nn

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/fairdp/fairdp/backend"
)

// Layers split their batch work (im2col chunks, pooling, element-wise ops,
// row blocks of products) over a small pool of long-lived goroutines. The
// pool is package-wide so several models in one process share the cores
// instead of multiplying goroutines, and a job whose helpers are all busy is
// simply run by its caller: parallelism never blocks and never deadlocks,
// even when jobs nest.

// ranger is one parallel job: run handles units [lo, hi) as participant
// worker (0 ≤ worker < the participant count passed to parallelFor).
// Layers implement it themselves, switching on the operation they are
// running; a pointer in an interface does not allocate, so neither does
// submitting a job.
type ranger interface {
	run(worker, lo, hi int)
}

type job struct {
	r               ranger
	n, grain, parts int
	ids             atomic.Int32
	wg              sync.WaitGroup
}

var workerPool struct {
	mu      sync.Mutex
	workers atomic.Int32
	helpers int
	ch      chan *job
	free    chan *job
}

func init() {
	SetWorkers(runtime.GOMAXPROCS(0))
	workerPool.ch = make(chan *job)
	workerPool.free = make(chan *job, 64)
}

// SetWorkers sets how many goroutines (the caller included) each layer
// operation may use; n < 1 means 1. The default is GOMAXPROCS at start-up.
//
// It also sets the threads of one product (package gemm's and, in the
// openblas build, OpenBLAS's; backend.SetThreads) to NumCPU/n, at least 1:
// the layers hand each worker its own GEMMs, and
// measured on the 2-core reference machine two workers with single-threaded
// BLAS beat one worker with two BLAS threads (which leaves im2col, pooling
// and element-wise work on one core), while two workers each driving two BLAS
// threads oversubscribe the cores and are the slowest of the three.
func SetWorkers(n int) {
	if n < 1 {
		n = 1
	}
	workerPool.workers.Store(int32(n))
	backend.SetThreads(max(1, runtime.NumCPU()/n))
}

// Workers reports the number of goroutines layer operations use.
func Workers() int { return int(workerPool.workers.Load()) }

func startHelpers(n int) {
	workerPool.mu.Lock()
	defer workerPool.mu.Unlock()
	for ; workerPool.helpers < n; workerPool.helpers++ {
		go func() {
			for j := range workerPool.ch {
				j.work()
				j.wg.Done()
			}
		}()
	}
}

// parallelFor runs r over units [0, n) in chunks of grain units split
// among up to parts participants (parts ≤ Workers()). It returns when all
// units are done.
//
// Participant p always gets the same contiguous run of chunks, whichever
// goroutine runs it and whenever it arrives: layers accumulate gradients
// and norms per participant and add the partials in participant order, so
// a fixed split makes every sum, and with it a seeded run, bit-reproducible.
// (Chunks used to be handed out dynamically, so which partial a chunk
// landed in depended on scheduling and the last bits of conv gradients
// varied from run to run.) A goroutine that finds no helper free simply
// runs the remaining participants itself.
func parallelFor(r ranger, n, grain, parts int) {
	if n <= 0 {
		return
	}
	if grain < 1 {
		grain = 1
	}
	chunks := (n + grain - 1) / grain
	parts = min(parts, chunks)
	if parts <= 1 {
		for lo := 0; lo < n; lo += grain {
			r.run(0, lo, min(lo+grain, n))
		}
		return
	}
	startHelpers(parts - 1)
	var j *job
	select {
	case j = <-workerPool.free:
	default:
		j = new(job)
	}
	j.r, j.n, j.grain, j.parts = r, n, grain, parts
	j.ids.Store(0)
	j.wg.Add(parts - 1)
	for h := 0; h < parts-1; h++ {
		select {
		case workerPool.ch <- j:
		default: // every helper is busy (another job): do the work here
			j.wg.Done()
		}
	}
	j.work()
	j.wg.Wait()
	j.r = nil
	select {
	case workerPool.free <- j:
	default:
	}
}

// work claims participants until none is left and runs each one's chunks:
// participant p owns chunks [p·chunks/parts, (p+1)·chunks/parts).
func (j *job) work() {
	chunks := (j.n + j.grain - 1) / j.grain
	for {
		p := int(j.ids.Add(1)) - 1
		if p >= j.parts {
			return
		}
		for c := p * chunks / j.parts; c < (p+1)*chunks/j.parts; c++ {
			lo := c * j.grain
			j.r.run(p, lo, min(lo+j.grain, j.n))
		}
	}
}

// Job sizes are estimated in nanoseconds of one core's work. Waking a
// helper costs a few microseconds, so a job gets one more participant per
// helperNs of work and tiny jobs stay on the caller.
const macsPerNs = 40 // single-threaded BLAS multiply-adds per ns (≈ 80 GFLOP/s)

// helperNs is the work that justifies waking one helper (a variable so
// tests can set it to 0 and force every job onto every worker).
var helperNs = 20000

// partsFor is how many participants a job of about ns nanoseconds deserves.
func partsFor(ns int) int {
	w := Workers()
	if helperNs > 0 && ns/helperNs+1 < w {
		return ns/helperNs + 1
	}
	return w
}

// gemmNs estimates the time of a product with the given multiply-adds.
func gemmNs(macs int) int { return macs / macsPerNs }

// parallelRows runs r over n rows of about nsPerRow each in one contiguous
// block per participant: the fewest, largest BLAS calls.
func parallelRows(r ranger, n, nsPerRow int) {
	parts := partsFor(n * nsPerRow)
	parallelFor(r, n, (n+parts-1)/parts, parts)
}

// grow returns s with length n, reusing its storage when large enough.
// Buffers grow with the batch and are never shrunk, so steady-state steps do
// not allocate.
func grow[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]T, n, n+n/8)
}
