package cuda

import (
	"fmt"
	"syscall"
	"unsafe"
)

// hostQueue is the asynchronous half of Device (pinned host memory and
// events) for a device whose work completes before each call returns (the
// Emulator, and the tests' counting device): nothing waits, but every call
// is checked as the CUDA driver checks it and more, so that code written
// for a GPU's two streams fails here when it misuses them:
//   - pinned memory is mmap'd pages outside Go's heap, and an asynchronous
//     copy's host side must lie inside one live HostAlloc block (a GPU
//     would silently stage pageable memory, losing the overlap);
//   - an event must be live to be recorded, waited on or freed, and a
//     WaitEvent or EventSynchronize on an event never recorded is refused
//     (CUDA returns at once there, which hides an ordering bug).
//
// What it cannot check is the ordering itself: with every call complete
// on return, a missing WaitEvent changes nothing here (see docs/gpu.md).
type hostQueue struct {
	pinned map[uintptr][]byte // base → the mapping
	events map[Event]bool     // live events → recorded at least once
	next   Event
}

// HostAlloc implements Device.HostAlloc.
func (q *hostQueue) HostAlloc(bytes int64) (unsafe.Pointer, error) {
	if bytes <= 0 {
		return nil, fmt.Errorf("cuda: HostAlloc(%d): want > 0 bytes", bytes)
	}
	b, err := syscall.Mmap(-1, 0, int(bytes), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return nil, fmt.Errorf("cuda: HostAlloc(%d): %w", bytes, err)
	}
	if q.pinned == nil {
		q.pinned = map[uintptr][]byte{}
	}
	p := unsafe.Pointer(&b[0])
	q.pinned[uintptr(p)] = b
	return p, nil
}

// HostFree implements Device.HostFree.
func (q *hostQueue) HostFree(p unsafe.Pointer) error {
	b, ok := q.pinned[uintptr(p)]
	if !ok {
		return fmt.Errorf("cuda: HostFree(%p): not the start of a live HostAlloc block", p)
	}
	delete(q.pinned, uintptr(p))
	return syscall.Munmap(b)
}

// checkPinned says whether [p, p+bytes) lies inside one live HostAlloc block.
func (q *hostQueue) checkPinned(call string, p unsafe.Pointer, bytes int64) error {
	for base, b := range q.pinned {
		if uintptr(p) >= base && int64(uintptr(p)-base)+bytes <= int64(len(b)) && bytes >= 0 {
			return nil
		}
	}
	return fmt.Errorf("cuda: %s: %d bytes of host memory at %p are not inside one HostAlloc block (an asynchronous copy needs pinned memory)", call, bytes, p)
}

// checkUpload checks an asynchronous upload's stream and pinned source.
func (q *hostQueue) checkUpload(src unsafe.Pointer, bytes int64, s Stream) error {
	if !s.valid() {
		return fmt.Errorf("cuda: CopyToDeviceAsync on stream %d: not a stream", s)
	}
	return q.checkPinned("CopyToDeviceAsync", src, bytes)
}

// NewEvent implements Device.NewEvent.
func (q *hostQueue) NewEvent() (Event, error) {
	if q.events == nil {
		q.events = map[Event]bool{}
	}
	q.next++
	q.events[q.next] = false
	return q.next, nil
}

// FreeEvent implements Device.FreeEvent.
func (q *hostQueue) FreeEvent(e Event) error {
	if _, ok := q.events[e]; !ok {
		return fmt.Errorf("cuda: FreeEvent(%d): not a live event", e)
	}
	delete(q.events, e)
	return nil
}

// Record implements Device.Record.
func (q *hostQueue) Record(e Event, s Stream) error {
	if _, ok := q.events[e]; !ok || !s.valid() {
		return fmt.Errorf("cuda: Record(%d, stream %d): not a live event or not a stream", e, s)
	}
	q.events[e] = true
	return nil
}

// WaitEvent implements Device.WaitEvent.
func (q *hostQueue) WaitEvent(s Stream, e Event) error {
	if !s.valid() {
		return fmt.Errorf("cuda: WaitEvent(stream %d): not a stream", s)
	}
	return q.recorded("WaitEvent", e)
}

// EventSynchronize implements Device.EventSynchronize.
func (q *hostQueue) EventSynchronize(e Event) error { return q.recorded("EventSynchronize", e) }

func (q *hostQueue) recorded(call string, e Event) error {
	rec, ok := q.events[e]
	if !ok {
		return fmt.Errorf("cuda: %s(%d): not a live event", call, e)
	}
	if !rec {
		return fmt.Errorf("cuda: %s(%d): the event was never recorded, so nothing orders it", call, e)
	}
	return nil
}

// closeQueue frees what is left.
func (q *hostQueue) closeQueue() {
	for _, b := range q.pinned {
		syscall.Munmap(b)
	}
	q.pinned, q.events = nil, nil
}
