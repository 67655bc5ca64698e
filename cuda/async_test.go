package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/fairdp/fairdp/devstep"
)

// asyncBatches are batches of changing sizes (growing the buffers twice,
// and an empty one) for an MLP with in inputs.
func asyncBatches(r *rand.Rand, in int) (xs [][]float32, ys [][]int32) {
	for _, n := range []int{7, 7, 20, 0, 3, 33, 5} {
		x, y := mlpBatch(r, n, in, 2)
		xs, ys = append(xs, x), append(ys, y)
	}
	return xs, ys
}

// Issuing step t+1 before reading step t's result (the trainer's order,
// TrainerDevice.Step) changes nothing: the losses and the parameters after
// every step are those of the synchronous Step, bit for bit. This is what
// the pinned, double-buffered uploads and the read-back slots must keep:
// step t+1's upload may not overwrite step t's input before step t has
// read it, nor its result slot before the host has.
func TestStepAsyncMatchesStep(t *testing.T) {
	dev := deviceUnderTest(t)
	sizes := []int{9, 6, 1}
	r := rand.New(rand.NewPCG(81, 82))
	_, syncNet := newTestMLP(t, dev, rand.New(rand.NewPCG(1, 2)), sizes)
	_, asyncNet := newTestMLP(t, dev, rand.New(rand.NewPCG(1, 2)), sizes)
	must(t, syncNet.SetOptimizer(Optimizer{Kind: "adam", Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}))
	must(t, asyncNet.SetOptimizer(Optimizer{Kind: "adam", Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}))
	xs, ys := asyncBatches(r, sizes[0])
	var seeds []NoiseSeed
	var want []float64
	for i := range xs {
		seeds = append(seeds, NewNoiseSeed(r))
		l, err := syncNet.Step(xs[i], ys[i], DPSGDStep{Clip: 0.5, NoiseStd: 0.3, Scale: 0.1, LR: 0.01, Seed: seeds[i]})
		must(t, err)
		want = append(want, l)
	}
	var pending *Pending
	var got []float64
	for i := range xs {
		p, err := asyncNet.StepAsync(xs[i], ys[i], DPSGDStep{Clip: 0.5, NoiseStd: 0.3, Scale: 0.1, LR: 0.01, Seed: seeds[i]})
		must(t, err)
		if pending != nil {
			l, err := pending.Wait()
			must(t, err)
			got = append(got, l)
		}
		pending = p
	}
	l, err := pending.Wait()
	must(t, err)
	got = append(got, l)
	sameSteps(t, "issued ahead", got, want, asyncNet, syncNet)
}

// sameSteps checks that the losses and the parameters of net (run one way)
// equal those of ref (step by step), bit for bit.
func sameSteps(t *testing.T, how string, got, want []float64, net, ref *DeviceNet) {
	t.Helper()
	for i := range want {
		if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
			t.Errorf("step %d: loss %v %s, %v step by step", i, got[i], how, want[i])
		}
	}
	a, err := net.Params()
	must(t, err)
	b, err := ref.Params()
	must(t, err)
	for k := range b {
		sameBits32(t, fmt.Sprintf("parameter %d", k), a[k], b[k])
	}
}

// Two slots: a third step issued before the first's result was read would
// overwrite its slot, and is refused; reading a result twice is refused.
func TestStepAsyncRefusesAThirdStep(t *testing.T) {
	dev := deviceUnderTest(t)
	r := rand.New(rand.NewPCG(83, 84))
	_, net := newTestMLP(t, dev, r, []int{4, 1})
	x, y := mlpBatch(r, 5, 4, 2)
	s := DPSGDStep{Clip: 1, Scale: 0.2, LR: 0.1}
	p1, err := net.StepAsync(x, y, s)
	must(t, err)
	p2, err := net.StepAsync(x, y, s)
	must(t, err)
	_, err = net.StepAsync(x, y, s)
	wantErr(t, err, "before the result of the step two before it was read")
	_, err = p1.Wait()
	must(t, err)
	_, err = net.io.wait(p1.slot)
	wantErr(t, err, "a result read twice")
	p3, err := net.StepAsync(x, y, s)
	must(t, err)
	for _, p := range []*Pending{p2, p3} {
		if _, err := p.Wait(); err != nil {
			t.Fatal(err)
		}
	}
}

// A refused step (a non-finite gradient) read late says so, and its
// update was skipped on the device, as the synchronous Step's.
func TestStepAsyncRefusedStep(t *testing.T) {
	dev := deviceUnderTest(t)
	r := rand.New(rand.NewPCG(85, 86))
	cpu, net := newTestMLP(t, dev, r, []int{5, 4, 1})
	x, y := mlpBatch(r, 3, 5, 2)
	x[7] = float32(math.Inf(1))
	p, err := net.StepAsync(x, y, DPSGDStep{Clip: 1, NoiseStd: 1, Scale: 1, LR: 1, Seed: NewNoiseSeed(r)})
	must(t, err)
	_, err = p.Wait()
	wantErr(t, err, "sample 1 has a gradient norm² that is negative or not finite")
	got, err := net.Params()
	must(t, err)
	for k, v := range cpu.values() {
		sameBits32(t, fmt.Sprintf("parameter %d after a refused step", k), got[k], v)
	}
}

// The trainer's device hands each step's loss over one step late and the
// last at Flush: the same losses, bit for bit, as synchronous steps, and
// the same parameters.
func TestTrainerDeviceLossIsOneStepLate(t *testing.T) {
	dev := deviceUnderTest(t)
	sizes := []int{9, 6, 1}
	r := rand.New(rand.NewPCG(87, 88))
	_, syncNet := newTestMLP(t, dev, rand.New(rand.NewPCG(3, 4)), sizes)
	_, net := newTestMLP(t, dev, rand.New(rand.NewPCG(3, 4)), sizes)
	td := &TrainerDevice{dev: dev, net: net, lr: 0.05}
	xs, ys := asyncBatches(r, sizes[0])
	noiseA, noiseB := rand.New(rand.NewPCG(5, 6)), rand.New(rand.NewPCG(5, 6))
	var want, got []float64
	for i := range xs {
		l, err := syncNet.Step(xs[i], ys[i], DPSGDStep{Clip: 1, NoiseStd: 0.5, Scale: 0.1, LR: 0.05, Seed: NewNoiseSeed(noiseA)})
		must(t, err)
		want = append(want, l)
		prev, err := td.Step(xs[i], ys[i], devstep.DPSGD{Clip: 1, NoiseStd: 0.5, Scale: 0.1, Noise: noiseB})
		must(t, err)
		if i == 0 && prev != 0 {
			t.Errorf("first step returned %v, want 0 (nothing before it)", prev)
		}
		if i > 0 {
			got = append(got, prev)
		}
	}
	last, err := td.Flush()
	must(t, err)
	got = append(got, last)
	if again, err := td.Flush(); err != nil || again != 0 {
		t.Errorf("a second Flush: %v, %v; want 0, nil", again, err)
	}
	sameSteps(t, "handed over late", got, want, net, syncNet)
}

// The synchronous devices' pinned memory and events are checked as a
// driver would check them, and more: an asynchronous copy needs pinned
// host memory, and an event must be recorded before anything waits on it.
func TestHostQueueChecks(t *testing.T) {
	dev := deviceUnderTest(t)
	if _, ok := dev.(interface {
		checkPinned(string, unsafe.Pointer, int64) error
	}); !ok {
		t.Skip("a driver's own checks differ (a GPU stages pageable memory and returns at once for an event never recorded)")
	}
	p, err := dev.Alloc(64)
	must(t, err)
	defer dev.Free(p)
	pageable := make([]byte, 16)
	h, err := dev.HostAlloc(32)
	must(t, err)
	wantErr(t, dev.CopyToDeviceAsync(p, unsafe.Pointer(&pageable[0]), 16, CopyStream), "HostAlloc")
	wantErr(t, dev.CopyToHostAsync(unsafe.Add(h, 24), p, 16), "HostAlloc")
	must(t, dev.CopyToDeviceAsync(p, h, 32, CopyStream))
	must(t, dev.CopyToHostAsync(h, p, 32))
	e, err := dev.NewEvent()
	must(t, err)
	wantErr(t, dev.WaitEvent(ComputeStream, e), "never recorded")
	wantErr(t, dev.EventSynchronize(e), "never recorded")
	must(t, dev.Record(e, CopyStream))
	must(t, dev.WaitEvent(ComputeStream, e))
	must(t, dev.EventSynchronize(e))
	must(t, dev.FreeEvent(e))
	wantErr(t, dev.Record(e, ComputeStream), "not a live event")
	must(t, dev.HostFree(h))
	wantErr(t, dev.HostFree(h), "HostAlloc block")
	must(t, dev.Synchronize())
}
