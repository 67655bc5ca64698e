package cuda

import (
	"errors"
	"fmt"
	"math"
	"unsafe"
)

// stepIO is a DeviceNet's traffic with the host, arranged so that the host
// never waits for the step it has just issued (a GPU runs a small model's
// step in less time than the host takes to issue it):
//
//   - Uploads are double-buffered. Step t's batch and labels are copied by
//     the host into pinned staging buffer t mod 2 (cuMemHostAlloc) and
//     queued on the copy stream (cuMemcpyHtoDAsync) into device slot t mod
//     2, after an event that says step t-2's computation is done with that
//     slot; the compute stream waits for the upload's event. So the upload
//     of step t+1 runs while step t computes, and the host never stages
//     pageable memory.
//   - Results come back asynchronously: a step's clip check and summed
//     loss are queued (cuMemcpyDtoHAsync) into pinned result slot t mod 2
//     and an event is recorded; Pending.Wait waits for that event. The
//     trainer reads step t's result after it has issued step t+1
//     (TrainerDevice.Step), so the device always has work queued.
//
// A step whose host code needs values mid-step (a group clip without a
// DeviceRule: its counts; a DP-FERMI plan without a noise stream: its
// sums) reads them, with the clip check and the loss, in one copy and one
// wait. The trainer's steps need none: a group rule runs on the device and
// brings what it released back with the result (the head of a result
// slot, read by Pending.after), and DP-FERMI's host half runs when its
// step's result is read.
//
// The invariant that makes two slots enough: step t may be issued only
// once step t-2's result has been read (Pending.Wait), so everything of
// step t-2 (its upload, its computation, its read-back) is done; issuing
// step t otherwise is an error, not a race.
type stepIO struct {
	dev      Device
	capacity int               // samples the staging buffers and device slots hold
	xBytes   int64             // input bytes per sample
	stage    [2]unsafe.Pointer // pinned: inputs, then labels
	x, lab   [2]DevicePtr      // device slots (in the net's arena)
	upload   [2]Event          // recorded on the copy stream after slot k's upload
	used     [2]Event          // recorded on the compute stream after the step that read slot k
	usedOnce [2]bool           // used[k] has been recorded
	back     [2]unsafe.Pointer // pinned result slots
	backCap  int64             // bytes in each result slot
	backEv   [2]Event          // recorded after slot k's read-back
	owed     [2]bool           // slot k's result is queued and not yet read
	turn     int               // the slot of the next step
	ready    bool              // the events exist
	// A step's small inputs besides the batch (a group clip's groups and
	// count noise, DP-FERMI's groups, W and 1/√p̂) go up with it: packed
	// after the labels in the staging buffer and uploaded in one copy into
	// device slot extra[k] (in mem), extraCap bytes each.
	extra    [2]DevicePtr
	extraCap int64
	mem      arena
}

// init creates the events.
func (io *stepIO) init(dev Device) error {
	io.dev, io.mem.dev = dev, dev
	var errs []error
	for k := range 2 {
		for _, e := range []*Event{&io.upload[k], &io.used[k], &io.backEv[k]} {
			var err error
			*e, err = dev.NewEvent()
			errs = append(errs, err)
		}
	}
	io.ready = true
	return errors.Join(errs...)
}

// grow sizes the staging buffers for c samples of xBytes each (the net has
// synchronised the device before: nothing is in flight).
func (io *stepIO) grow(c int, xBytes int64) error {
	if c <= io.capacity && xBytes == io.xBytes && io.stage[0] != nil {
		return nil
	}
	if err := io.freeStage(); err != nil {
		return err
	}
	io.capacity, io.xBytes = 0, xBytes
	if err := io.allocStage(c); err != nil {
		return err
	}
	io.capacity = c
	io.usedOnce = [2]bool{}
	return nil
}

// allocStage allocates the two staging buffers for c samples and the
// extra payload.
func (io *stepIO) allocStage(c int) error {
	for k := range 2 {
		p, err := io.dev.HostAlloc(max(int64(c)*(io.xBytes+4)+io.extraCap, 8))
		if err != nil {
			return err
		}
		io.stage[k] = p
	}
	return nil
}

// growExtra makes room for an extra payload of b bytes: it waits for the
// device (an upload from the old staging buffers may be in flight), then
// makes both staging buffers and both device slots larger.
func (io *stepIO) growExtra(b int64) error {
	if err := io.dev.Synchronize(); err != nil {
		return err
	}
	if err := errors.Join(io.freeStage(), io.mem.freeFrom(0)); err != nil {
		return err
	}
	io.extraCap = (b + b/4 + 255) &^ 255
	var err error
	io.extra[0], io.extra[1] = io.mem.alloc(int(io.extraCap), &err), io.mem.alloc(int(io.extraCap), &err)
	if err == nil {
		err = io.allocStage(io.capacity)
	}
	io.usedOnce = [2]bool{}
	return err
}

// payload packs a step's extra inputs for put, each part at an 8-byte
// boundary; at says where a part lands in the device slot.
type payload struct{ b []byte }

// add appends bytes (n of them at p) and returns their offset.
func (pl *payload) add(p unsafe.Pointer, n int) int64 {
	off := (len(pl.b) + 7) &^ 7
	pl.b = append(pl.b[:len(pl.b)], make([]byte, off-len(pl.b))...)
	if n > 0 {
		pl.b = append(pl.b, unsafe.Slice((*byte)(p), n)...)
	}
	return int64(off)
}

func (pl *payload) int32s(v []int32) int64 {
	if len(v) == 0 {
		return pl.add(nil, 0)
	}
	return pl.add(unsafe.Pointer(&v[0]), 4*len(v))
}

func (pl *payload) float64s(v []float64) int64 {
	if len(v) == 0 {
		return pl.add(nil, 0)
	}
	return pl.add(unsafe.Pointer(&v[0]), 8*len(v))
}

func (io *stepIO) freeStage() error {
	var errs []error
	for k, p := range io.stage {
		if p != nil {
			errs = append(errs, io.dev.HostFree(p))
			io.stage[k] = nil
		}
	}
	return errors.Join(errs...)
}

// put uploads a batch and the step's extra payload (packed by payload,
// landing in extra[k]) into slot k: the host writes the staging buffer,
// the copy stream uploads it once the step that last read the slot is
// done, and the compute stream waits for the upload.
func (io *stepIO) put(k int, x []float32, labels []int32, extra []byte) error {
	if io.owed[k] {
		return errors.New("cuda: DeviceNet: a step was issued before the result of the step two before it was read (Pending.Wait)")
	}
	n := len(labels)
	xb, lb, eb := 4*int64(len(x)), 4*int64(n), int64(len(extra))
	if n > io.capacity || xb > int64(io.capacity)*io.xBytes {
		return fmt.Errorf("cuda: DeviceNet: a batch of %d samples in staging for %d", n, io.capacity)
	}
	if eb > io.extraCap {
		if err := io.growExtra(eb); err != nil {
			return err
		}
	}
	stage := io.stage[k]
	copy(unsafe.Slice((*float32)(stage), len(x)), x)
	labAt := unsafe.Add(stage, int(int64(io.capacity)*io.xBytes))
	copy(unsafe.Slice((*int32)(labAt), n), labels)
	extraAt := unsafe.Add(labAt, 4*io.capacity)
	copy(unsafe.Slice((*byte)(extraAt), eb), extra)
	d := io.dev
	if io.usedOnce[k] {
		if err := d.WaitEvent(CopyStream, io.used[k]); err != nil {
			return err
		}
	}
	if xb > 0 {
		if err := d.CopyToDeviceAsync(io.x[k], stage, xb, CopyStream); err != nil {
			return err
		}
	}
	if lb > 0 {
		if err := d.CopyToDeviceAsync(io.lab[k], labAt, lb, CopyStream); err != nil {
			return err
		}
	}
	if eb > 0 {
		if err := d.CopyToDeviceAsync(io.extra[k], extraAt, eb, CopyStream); err != nil {
			return err
		}
	}
	if err := d.Record(io.upload[k], CopyStream); err != nil {
		return err
	}
	return d.WaitEvent(ComputeStream, io.upload[k])
}

// done marks the end of a step's (or a forward pass's) work on slot k: the
// next upload into it waits for this point; the next step takes the other
// slot.
func (io *stepIO) done(k int) error {
	io.usedOnce[k] = true
	io.turn = 1 - k
	return io.dev.Record(io.used[k], ComputeStream)
}

// hostRange is a device range to read back.
type hostRange struct {
	src   DevicePtr
	bytes int64
}

// queueBack queues copies of the ranges, in order, into result slot k and
// records its event; wait reads them.
func (io *stepIO) queueBack(k int, ranges ...hostRange) error {
	var total int64
	for _, r := range ranges {
		total += (r.bytes + 7) &^ 7
	}
	if total > io.backCap {
		// Larger slots: the old ones may still be owed a copy.
		for j := range 2 {
			if io.owed[j] {
				return errors.New("cuda: DeviceNet: a read-back grew while a result was unread")
			}
		}
		var errs []error
		for j, p := range io.back {
			if p != nil {
				errs = append(errs, io.dev.HostFree(p))
				io.back[j] = nil
			}
		}
		if err := errors.Join(errs...); err != nil {
			return err
		}
		io.backCap = 0
		for j := range 2 {
			p, err := io.dev.HostAlloc(total)
			if err != nil {
				return err
			}
			io.back[j] = p
		}
		io.backCap = total
	}
	var off int64
	for _, r := range ranges {
		if r.bytes > 0 {
			if err := io.dev.CopyToHostAsync(unsafe.Add(io.back[k], int(off)), r.src, r.bytes); err != nil {
				return err
			}
		}
		off += (r.bytes + 7) &^ 7
	}
	io.owed[k] = true
	return io.dev.Record(io.backEv[k], ComputeStream)
}

// wait waits for result slot k and returns its bytes (valid until the slot
// is used again).
func (io *stepIO) wait(k int) ([]byte, error) {
	if !io.owed[k] {
		return nil, errors.New("cuda: DeviceNet: a result read twice")
	}
	io.owed[k] = false
	if err := io.dev.EventSynchronize(io.backEv[k]); err != nil {
		return nil, err
	}
	return unsafe.Slice((*byte)(io.back[k]), io.backCap), nil
}

// close frees the pinned memory and the events.
func (io *stepIO) close() error {
	if io.dev == nil {
		return nil
	}
	errs := []error{io.freeStage(), io.mem.freeFrom(0)}
	for j, p := range io.back {
		if p != nil {
			errs = append(errs, io.dev.HostFree(p))
			io.back[j] = nil
		}
	}
	if io.ready {
		for k := range 2 {
			for _, e := range []Event{io.upload[k], io.used[k], io.backEv[k]} {
				errs = append(errs, io.dev.FreeEvent(e))
			}
		}
		io.ready = false
	}
	return errors.Join(errs...)
}

// flagsAndLoss are a step's clip check (two int32 flags) and summed loss
// (a float32), as net.bad holds them and they come back.
const flagsAndLoss = 12

// parseBack reads the clip check and the loss at b.
func parseBack(b []byte) (bad, badBound int32, loss float32) {
	u := unsafe.Slice((*uint32)(unsafe.Pointer(&b[0])), 3)
	return int32(u[0]), int32(u[1]), math.Float32frombits(u[2])
}

// Pending is a step's result on its way back from the device: StepAsync
// returns it once the step is queued, and Wait returns the step's summed
// loss (or the error its clip check found) when the device has finished.
// The next step may be issued before Wait; the one after that only once
// Wait has returned.
type Pending struct {
	net  *DeviceNet
	slot int
	n    int
	// head is the bytes of the result slot before the clip check and the
	// loss (a group rule's values, DeviceNet.deviceRule; DP-FERMI's sums,
	// DeviceFermi.stepAsync), and after reads them, with the step's loss,
	// once the clip check has passed. unchecked: the step had no clip
	// check (a DP-FERMI step without a clipped pass).
	head      int64
	after     func(head []byte, loss float64) error
	unchecked bool
	// done: the result is known (a step that read it mid-step).
	done bool
	loss float64
	err  error
}

// Wait waits for the step and returns its summed loss before the update;
// a step whose clip check failed (a non-finite gradient) returns its error
// and changed no parameter and no optimizer state.
func (p *Pending) Wait() (float64, error) {
	if p.done {
		return p.loss, p.err
	}
	var loss float64
	err := onDevice(p.net.dev, func() (err error) {
		loss, err = p.wait()
		return err
	})
	return loss, err
}

// wait is Wait on the device's thread.
func (p *Pending) wait() (float64, error) {
	if p.done {
		return p.loss, p.err
	}
	p.done = true
	b, err := p.net.io.wait(p.slot)
	if err != nil {
		p.err = err
		return 0, err
	}
	bad, badBound, loss := parseBack(b[p.head:])
	if !p.unchecked {
		if err := checkFlags(bad, badBound, p.n); err != nil {
			p.net.opt.steps-- // the update kernels skipped the step
			p.err = err
			return 0, err
		}
	}
	if p.n > 0 {
		p.loss = float64(loss)
	}
	if p.after != nil {
		if err := p.after(b[:p.head], p.loss); err != nil {
			p.err = err
			return 0, err
		}
	}
	return p.loss, nil
}
