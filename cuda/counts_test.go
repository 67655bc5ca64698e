package cuda

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"syscall"
	"testing"
	"unsafe"

	"github.com/fairdp/fairdp/devstep"
)

// countDevice is a Device that counts what a step asks of a GPU without
// doing it: memory is host memory (so copies are real), launches and GEMMs
// are checked and counted but not run. A step's sequence of calls does not
// depend on the values it computes (the flags and sums it reads back are
// zeros here, which take the ordinary path), so the counts are those of a
// GPU run. Syncs are the calls that wait for the device: Synchronize and
// every CopyToHost (Driver.CopyToHost waits for its stream).
type countDevice struct {
	hostQueue
	mem                            map[DevicePtr][]byte
	launches, gemms, copies, syncs int
	// waits are EventSynchronize calls on events recorded before the step
	// began (an earlier step's result, read while this one runs); events
	// are Record and WaitEvent calls.
	waits, events int
	h2d, d2h      int64
	// recorded is the step (generation) each event was last recorded in.
	recorded   map[Event]int
	generation int
}

func newCountDevice() *countDevice { return &countDevice{mem: map[DevicePtr][]byte{}} }

func (c *countDevice) reset() {
	c.launches, c.gemms, c.copies, c.syncs, c.h2d, c.d2h = 0, 0, 0, 0, 0, 0
	c.waits, c.events = 0, 0
	c.generation++
}

func (c *countDevice) CopyToDeviceAsync(dst DevicePtr, src unsafe.Pointer, bytes int64, s Stream) error {
	if err := c.checkUpload(src, bytes, s); err != nil {
		return err
	}
	return c.CopyToDevice(dst, src, bytes)
}

// CopyToHostAsync is a copy, not a sync: nothing waits for it.
func (c *countDevice) CopyToHostAsync(dst unsafe.Pointer, src DevicePtr, bytes int64) error {
	if err := c.checkPinned("CopyToHostAsync", dst, bytes); err != nil {
		return err
	}
	c.copies++
	c.d2h += bytes
	h, err := c.host(src, bytes)
	copy(unsafe.Slice((*byte)(dst), bytes), h)
	return err
}

func (c *countDevice) Record(e Event, s Stream) error {
	c.events++
	if c.recorded == nil {
		c.recorded = map[Event]int{}
	}
	c.recorded[e] = c.generation
	return c.hostQueue.Record(e, s)
}

func (c *countDevice) WaitEvent(s Stream, e Event) error {
	c.events++
	return c.hostQueue.WaitEvent(s, e)
}

// EventSynchronize is a sync when it waits for work of this step, a wait
// when for an earlier step's (which runs while this one is queued).
func (c *countDevice) EventSynchronize(e Event) error {
	if c.recorded[e] == c.generation {
		c.syncs++
	} else {
		c.waits++
	}
	return c.hostQueue.EventSynchronize(e)
}

func (c *countDevice) Name() string { return "counting device (nothing runs)" }

func (c *countDevice) Alloc(bytes int64) (DevicePtr, error) {
	if bytes <= 0 {
		return 0, fmt.Errorf("cuda: Alloc(%d): want > 0 bytes", bytes)
	}
	// mmap: pages never touched (most of a big model's, as nothing runs) cost nothing.
	b, err := syscall.Mmap(-1, 0, int((bytes+255)&^255), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return 0, fmt.Errorf("cuda: Alloc(%d): %w", bytes, err)
	}
	p := DevicePtr(uintptr(unsafe.Pointer(&b[0])))
	c.mem[p] = b
	return p, nil
}

// host is device range [p, p+bytes) in the host memory behind it.
func (c *countDevice) host(p DevicePtr, bytes int64) ([]byte, error) {
	for base, b := range c.mem {
		if p >= base && int64(p-base)+bytes <= int64(len(b)) {
			return b[p-base : int64(p-base)+bytes], nil
		}
	}
	return nil, fmt.Errorf("cuda: %d bytes at %#x are not in an allocation", bytes, uintptr(p))
}

func (c *countDevice) Free(p DevicePtr) error {
	if _, ok := c.mem[p]; !ok {
		return fmt.Errorf("cuda: Free(%#x): not allocated", uintptr(p))
	}
	err := syscall.Munmap(c.mem[p])
	delete(c.mem, p)
	return err
}

func (c *countDevice) CopyToDevice(dst DevicePtr, src unsafe.Pointer, bytes int64) error {
	c.copies++
	c.h2d += bytes
	d, err := c.host(dst, bytes)
	copy(d, unsafe.Slice((*byte)(src), bytes))
	return err
}

func (c *countDevice) CopyToHost(dst unsafe.Pointer, src DevicePtr, bytes int64) error {
	c.syncs++ // the copy and the wait are one driver round trip each; counted as a sync, not a copy
	c.d2h += bytes
	h, err := c.host(src, bytes)
	copy(unsafe.Slice((*byte)(dst), bytes), h)
	return err
}

func (c *countDevice) Launch(kernel string, grid, block Dim3, sharedBytes int, args ...Arg) error {
	c.launches++
	if err := checkLaunch(kernel, grid, block); err != nil {
		return err
	}
	// The one kernel run here: it sets the sentinels (no bad sample) that
	// the step reads back, as a GPU would leave them.
	if kernel == "fairdp_fill_u32" && len(args) == 3 {
		h, err := c.host(DevicePtr(args[0]), 4*int64(int32(args[2])))
		if err != nil {
			return err
		}
		for i := range len(h) / 4 {
			binary.LittleEndian.PutUint32(h[4*i:], uint32(args[1]))
		}
	}
	return nil
}

func (c *countDevice) Sgemm(ta, tb Transpose, m, n, k int, alpha float32, a DevicePtr, lda int, b DevicePtr, ldb int,
	beta float32, cc DevicePtr, ldc int) error {
	c.gemms++
	_, _, _, err := checkGemm(ta, tb, m, n, k, lda, ldb, ldc)
	return err
}

func (c *countDevice) Dgemm(ta, tb Transpose, m, n, k int, alpha float64, a DevicePtr, lda int, b DevicePtr, ldb int,
	beta float64, cc DevicePtr, ldc int) error {
	c.gemms++
	_, _, _, err := checkGemm(ta, tb, m, n, k, lda, ldb, ldc)
	return err
}

func (c *countDevice) SgemmStrided(ta, tb Transpose, m, n, k int, alpha float32, a DevicePtr, lda int, strideA int64,
	b DevicePtr, ldb int, strideB int64, beta float32, cc DevicePtr, ldc int, strideC int64, batch int) error {
	c.gemms++
	if _, _, _, err := checkGemm(ta, tb, m, n, k, lda, ldb, ldc); err != nil {
		return err
	}
	return checkStrided(strideA, strideB, strideC, batch)
}

func (c *countDevice) Synchronize() error { c.syncs++; return nil }

func (c *countDevice) Close() error {
	for p := range c.mem {
		c.Free(p)
	}
	c.closeQueue()
	return nil
}

// TestGPUCounts prints, for the benchmark models under each algorithm the
// device runs (sgd, dpsgd, dpsgdf, fermi) at batch 64 and 256, one line of
// what one steady-state step (after a first step has sized the buffers)
// asks of the device:
//
//	MODEL ALGO BATCH calls=N syncs=N h2d_bytes=N d2h_bytes=N launches=N gemms=N waits=N events=N device_mb=N
//
// syncs are waits for the step's own work (the device idles until the host
// issues more); waits are waits for an earlier step's (the trainer reads
// step t's result once step t+1 is queued); events are cuEventRecord and
// cuStreamWaitEvent calls, which order the two streams and wait for nothing.
//
// It is a measurement (`make gpu-counts`), not a check: it runs only with
// FAIRDP_GPU_COUNTS=1. Nothing is computed, so it takes a second.
func TestGPUCounts(t *testing.T) {
	if os.Getenv("FAIRDP_GPU_COUNTS") != "1" {
		t.Skip("set FAIRDP_GPU_COUNTS=1 (make gpu-counts) to print the step counts")
	}
	for _, plan := range stepPlans() {
		for _, algo := range []string{"sgd", "dpsgd", "dpsgdf", "fermi"} {
			for _, n := range []int{64, 256} {
				dev, bytes, err := countStep(plan, algo, n)
				if err != nil {
					t.Fatalf("%s %s %d: %v", plan.name, algo, n, err)
				}
				fmt.Printf("%s %s %d calls=%d syncs=%d h2d_bytes=%d d2h_bytes=%d launches=%d gemms=%d waits=%d events=%d device_mb=%d\n",
					plan.name, algo, n, dev.calls(), dev.syncs, dev.h2d, dev.d2h, dev.launches, dev.gemms, dev.waits, dev.events, bytes>>20)
			}
		}
	}
}

// The goals of the host-side rework of the device step (a GPU runs a step
// of these models in a few milliseconds, so every call and every wait for
// the device counts): the MNIST CNN's DP-SGD step at batch 256 in at most
// 60 calls, the VGG-like CNN's at batch 64 in at most 150 calls, and no
// sync in a DP-SGD step (its result is read while the next step runs);
// DPSGD-F and DP-FERMI wait once, mid-step, for what their host code
// decides on. Before, they took 570 and 501 calls and 3 syncs each (a GEMM
// per sample for a convolution's clipped sum; the clip check, the loss and
// a Synchronize each waited), then 1 sync (the result at the step's end),
// and DPSGD-F and DP-FERMI 3 and 4.
func TestStepCallBudget(t *testing.T) {
	plans := map[string]cnnPlan{}
	for _, p := range stepPlans() {
		plans[p.name] = p
	}
	for _, c := range []struct {
		model        string
		n            int
		calls, syncs int
		algo         string
	}{{"mnist-cnn", 256, 60, 0, "dpsgd"}, {"vgg", 64, 150, 0, "dpsgd"}, {"logistic", 256, 20, 0, "dpsgd"},
		{"logistic", 256, 20, 0, "sgd"}, {"mnist-cnn", 64, 70, 0, "dpsgdf"}, {"mnist-cnn", 64, 75, 0, "fermi"}} {
		dev, _, err := countStep(plans[c.model], c.algo, c.n)
		if err != nil {
			t.Fatal(err)
		}
		if dev.calls() > c.calls || dev.syncs > c.syncs {
			t.Errorf("%s %s %d: %d calls and %d syncs, want ≤ %d and ≤ %d", c.model, c.algo, c.n, dev.calls(), dev.syncs, c.calls, c.syncs)
		}
		if dev.d2h > 0 && dev.syncs+dev.waits != 1 {
			t.Errorf("%s %s %d: %d syncs and %d waits for an earlier step, want one wait in all", c.model, c.algo, c.n, dev.syncs, dev.waits)
		}
	}
}

// calls is what a step asked of the device: launches, GEMMs, copies, syncs
// and waits (events are not counted: they queue no work and wait for none).
func (c *countDevice) calls() int { return c.launches + c.gemms + c.copies + c.syncs + c.waits }

// countStep builds plan's model on a counting device and counts its second
// step of algo at batch n (the first sizes the buffers), as the trainer
// runs it (TrainerDevice): sgd and dpsgd steps are issued asynchronously
// and the first step's result is read once the second is queued; it also
// returns the device memory the model then holds (DeviceNet.DeviceBytes).
func countStep(plan cnnPlan, algo string, n int) (*countDevice, int64, error) {
	dev := newCountDevice()
	defer dev.Close()
	r := rand.New(rand.NewPCG(7, 8))
	_, spec := plan.build(r)
	net, err := NewDeviceNet(dev, spec)
	if err != nil {
		return nil, 0, err
	}
	defer net.Close()
	x, y := make([]float32, n*plan.c*plan.h*plan.w), make([]int32, n)
	groups, groups32 := make([]int, n), make([]int32, n)
	for i := range y {
		y[i] = int32(i % max(2, plan.classes))
		groups[i], groups32[i] = i%2, int32(i%2)
	}
	noise := rand.New(rand.NewPCG(9, 10))
	fermi := NewDeviceFermi(net)
	defer fermi.Close()
	l := max(2, plan.classes)
	var pending *Pending
	step := func() error {
		var err error
		var p *Pending
		switch algo {
		case "sgd":
			p, err = net.StepAsync(x, y, DPSGDStep{Clip: math.MaxFloat64, Scale: 1.0 / float64(n), LR: 0.01})
		case "dpsgd":
			p, err = net.StepAsync(x, y, DPSGDStep{Clip: 1, NoiseStd: 1, Scale: 1.0 / float64(n), LR: 0.01, Seed: NewNoiseSeed(noise)})
		case "dpsgdf":
			// The rule on the device, as the trainer runs DPSGD-F and Naive;
			// nothing runs here, so the device's rule comes back as zeros.
			rule := &DeviceRule{C0: 1, Batch: float64(n), Strength: 1, Sigma: 1, Noise: make([]float64, 4),
				Done: func([]float64) (devstep.GroupRule, error) {
					return devstep.GroupRule{Bounds: make([]float64, 2), Weights: make([]float64, 2)}, nil
				}}
			p, err = net.StepAsync(x, y, DPSGDStep{Clip: 1, Scale: 1.0 / float64(n), LR: 0.01, Seed: NewNoiseSeed(noise),
				Group: &GroupClip{Groups: groups32, Count: 2, OnDevice: rule}})
		case "fermi":
			s := FermiStep{Groups: 2, Classes: l, W: make([]float64, 2*l), InvSqrt: []float64{1.4, 1.4},
				Clip: 1, WWeight: 0.1, NoiseStd: 1, Scale: 1.0 / float64(n), LR: 0.01,
				Clipped: FermiPass{On: true, Loss: 1, Fair: 1, Part: FermiFull}}
			// As the trainer runs it: θ's key drawn when the step is issued,
			// the host half when its result is read (before the next step).
			seed := NewNoiseSeed(noise)
			err = onDevice(dev, func() (err error) {
				p, err = fermi.stepAsync(x, y, groups, s, seed, func(FermiSums) error { return nil })
				return err
			})
		default:
			err = fmt.Errorf("algorithm %q", algo)
		}
		if err != nil {
			return err
		}
		if pending != nil {
			_, err = pending.Wait()
		}
		pending = p
		return err
	}
	if err := step(); err != nil {
		return nil, 0, err
	}
	dev.reset()
	if err := step(); err != nil {
		return nil, 0, err
	}
	if pending != nil {
		counted := *dev
		if _, err := pending.Wait(); err != nil {
			return nil, 0, err
		}
		return &counted, net.DeviceBytes(), nil
	}
	return dev, net.DeviceBytes(), nil
}

// stepPlans are the four models whose device step the benchmark times and
// make gpu-counts counts: the logistic model, an MLP, the MNIST CNN and the
// VGG-like CNN at 3×128×128, as the CPU benchmark table has them.
func stepPlans() []cnnPlan {
	conv := func(outC, k, pad int) ConvGeom { return ConvGeom{OutC: outC, K: k, Stride: 1, Pad: pad} }
	return []cnnPlan{
		{name: "logistic", c: 108, h: 1, w: 1, classes: 1},
		{name: "mlp", c: 108, h: 1, w: 1, hidden: []int{64, 32}, classes: 1},
		{name: "mnist-cnn", c: 1, h: 28, w: 28, convs: []ConvGeom{conv(20, 5, 0), conv(50, 5, 0)}, pools: []int{2, 2},
			hidden: []int{500}, classes: 10},
		{name: "vgg", c: 3, h: 128, w: 128, convs: []ConvGeom{conv(32, 3, 1), conv(32, 3, 1), conv(64, 3, 1), conv(64, 3, 1),
			conv(128, 3, 1), conv(128, 3, 1)}, pools: []int{1, 2, 1, 2, 1, 4}, hidden: []int{160, 64}, classes: 9},
	}
}
