package cuda

import (
	"errors"
	"fmt"
	"math"
	"unsafe"

	"github.com/fairdp/fairdp/devstep"
)

// The parts of the ERMI regularizer ψ_i a FermiPass covers, with the values
// of devstep's, which package fermi plans with (kernels/ermi.cu reads them
// as ints).
const (
	FermiFull         = devstep.FermiFull         // every term of ψ_i
	FermiNonSensitive = devstep.FermiNonSensitive // the terms that do not depend on the sample's sensitive attribute
	FermiSensitive    = devstep.FermiSensitive    // the terms that do
)

// FermiPass, FermiStep and FermiSums are devstep's: package fermi plans a
// step (DPFERMI.DeviceStep) in the types the loop hands to a device
// (trainer.Device.FermiStep), and DeviceFermi runs it as planned. One
// definition, below both cuda and fermi, so that neither imports the other.
type (
	FermiPass = devstep.FermiPass
	FermiStep = devstep.FermiStep
	FermiSums = devstep.FermiSums
)

// DeviceFermi runs DP-FERMI's steps on a DeviceNet: the ERMI regularizer's
// gradients with respect to the logits and W are computed by the kernels of
// kernels/ermi.cu from the logits the net's forward pass left on the
// device, so a step uploads only the batch's inputs, labels and sensitive
// groups (and W, a few values) and brings back FermiSums.
type DeviceFermi struct {
	net *DeviceNet
	arena
	capacity   int
	width      int // k·l, for the sizes the buffers were made for
	mats       int
	groups     DevicePtr // n ints, in the step's input slot (payload)
	dl         DevicePtr // ∂ℓ_i/∂z, n×logits
	dzExact    DevicePtr // the Exact pass's output gradient when both passes are on
	wClip      DevicePtr // per-sample W gradients, n×width doubles, each pass
	wExact     DevicePtr
	psi        DevicePtr // n doubles
	w, inv     DevicePtr // W and 1/sqrt(p̂), in the step's input slot (payload)
	sums       DevicePtr // [WClipped | WExact | Σψ | clipped count]
	stepGroups []int32
	pl         payload   // the batch's groups, W and 1/sqrt(p̂), uploaded with it
	back       []float64 // the host's copy of sums
	released   bool
}

// NewDeviceFermi prepares DP-FERMI's steps on net (which it does not own).
func NewDeviceFermi(net *DeviceNet) *DeviceFermi {
	return &DeviceFermi{net: net, arena: arena{dev: net.dev}}
}

// Close frees the step's buffers (not the net).
func (f *DeviceFermi) Close() error {
	if f.released {
		return nil
	}
	f.released = true
	return f.freeFrom(0)
}

// grow sizes the buffers for n samples of s's shape.
func (f *DeviceFermi) grow(n int, s FermiStep) error {
	width, mats := s.Groups*s.Classes, s.Mats()
	if n <= f.capacity && width == f.width && mats == f.mats {
		return nil
	}
	if err := f.dev.Synchronize(); err != nil {
		return err
	}
	f.capacity = 0
	if err := f.freeFrom(0); err != nil {
		return err
	}
	c, out := n+n/4, f.net.sizes[len(f.net.sizes)-1]
	if err := checkDims("DeviceFermi", c, max(width, out)); err != nil {
		return err
	}
	var err error
	f.dl, f.dzExact = f.alloc(4*c*out, &err), f.alloc(4*c*out, &err)
	f.wClip, f.wExact, f.psi = f.alloc(8*c*width, &err), f.alloc(8*c*width, &err), f.alloc(8*c, &err)
	f.sums = f.alloc(8*(2*mats*width+2), &err)
	if err != nil {
		return err
	}
	f.capacity, f.width, f.mats = c, width, mats
	f.back = make([]float64, 2*mats*width+2)
	return nil
}

// check validates s for the net and the batch's labels and groups.
func (f *DeviceFermi) check(s FermiStep, labels []int32, groups []int) error {
	k, l, out := s.Groups, s.Classes, f.net.sizes[len(f.net.sizes)-1]
	switch {
	case k < 1 || l != f.net.classes():
		return fmt.Errorf("cuda: FermiStep has %d groups and %d classes; the net predicts %d classes", k, l, f.net.classes())
	case len(s.W) != s.Mats()*k*l || len(s.InvSqrt) != s.Mats()*k:
		return fmt.Errorf("cuda: FermiStep W has %d values and InvSqrt %d, want %d and %d", len(s.W), len(s.InvSqrt), s.Mats()*k*l, s.Mats()*k)
	case len(groups) != len(labels):
		return fmt.Errorf("cuda: DeviceFermi: %d groups for %d samples", len(groups), len(labels))
	case out != 1 && out != l:
		return fmt.Errorf("cuda: DeviceFermi: %d logits for %d classes", out, l)
	}
	for _, p := range []FermiPass{s.Clipped, s.Exact} {
		if p.On && (p.Part < FermiFull || p.Part > FermiSensitive || !finite(p.Loss) || !finite(p.Fair)) {
			return fmt.Errorf("cuda: FermiPass %+v: want Part 0, 1 or 2 and finite weights", p)
		}
	}
	if err := checkNoise(s.NoiseStd); err != nil {
		return err
	}
	if !(s.Scale >= 0) || !finite(s.Scale) || !(s.WWeight >= 0) || !finite(s.WWeight) || !(s.LR >= 0) ||
		(s.Clipped.On && (!(s.Clip > 0) || !finite(s.Clip))) {
		return fmt.Errorf("cuda: FermiStep Clip %v, WWeight %v, Scale %v, LR %v: want finite Clip > 0 and finite WWeight, Scale, LR ≥ 0",
			s.Clip, s.WWeight, s.Scale, s.LR)
	}
	for i, g := range groups {
		if g < 0 || g >= k {
			return fmt.Errorf("cuda: DeviceFermi: sample %d has group %d, want 0..%d", i, g, k-1)
		}
	}
	return nil
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// Step runs one DP-FERMI step on the batch x (n samples) with labels and
// sensitive groups. Once the batch's sums are on the host it calls host
// with them (the host's half of the step: W's ascent and the accountant),
// which returns the Philox key of θ's noise; then it releases θ's gradient
// and updates the parameters on the device. It returns Σ_i ℓ_i. An empty
// batch still adds noise and updates.
func (f *DeviceFermi) Step(x []float32, labels []int32, groups []int, s FermiStep, host func(FermiSums) (NoiseSeed, error)) (float64, error) {
	var loss float64
	err := onDevice(f.dev, func() (err error) {
		loss, err = f.step(x, labels, groups, s, host)
		return err
	})
	return loss, err
}

// step is Step, on the device's thread (host runs there too): the step
// waits mid-step for the sums, which the host turns into θ's noise key.
func (f *DeviceFermi) step(x []float32, labels []int32, groups []int, s FermiStep, host func(FermiSums) (NoiseSeed, error)) (float64, error) {
	n, slot, err := f.issue(x, labels, groups, s)
	if err != nil {
		return 0, err
	}
	// The sums, the clip check (checked before the host sees the sums, as
	// on the CPU; set only by the clipped pass) and the loss: one copy and
	// the step's one wait.
	raw, loss, err := f.net.readChecked(slot, n, s.Clipped.On, hostRange{f.sums, int64(8 * len(f.back))})
	if err != nil {
		return 0, err
	}
	sums := f.parseSums(raw, n, loss, s)
	seed, err := host(sums)
	if err != nil {
		return 0, err
	}
	// No wait at the end: the next step's read (or Params) comes after this
	// one's update on the stream.
	return sums.Loss, f.release(s, seed, n, slot, false)
}

// stepAsync queues a whole DP-FERMI step whose θ noise key (seed) the
// host drew when it issued it, and waits for nothing: the sums come back
// with the clip check and the loss into the step's result slot, queued
// before θ's release, and the Pending hands them to host when it is read
// (the host's half of the step, a step late: W's ascent, which the next
// step's W needs, so that one is planned only after this one's Pending
// was read). The clip check guards θ's update on the device, as a DP-SGD
// step's does.
func (f *DeviceFermi) stepAsync(x []float32, labels []int32, groups []int, s FermiStep, seed NoiseSeed, host func(FermiSums) error) (*Pending, error) {
	n, slot, err := f.issue(x, labels, groups, s)
	if err != nil {
		return nil, err
	}
	net := f.net
	head := int64(8 * len(f.back))
	if err := net.io.queueBack(slot, hostRange{f.sums, head}, hostRange{net.bad, flagsAndLoss}); err != nil {
		return nil, err
	}
	p := &Pending{net: net, slot: slot, n: n, head: head, unchecked: !s.Clipped.On}
	p.after = func(raw []byte, loss float64) error {
		return host(f.parseSums(raw, n, loss, s))
	}
	return p, f.release(s, seed, n, slot, s.Clipped.On)
}

// issue checks s, uploads the batch with its groups, W and 1/sqrt(p̂)
// (one pinned upload), and queues the step up to the sums the host needs.
func (f *DeviceFermi) issue(x []float32, labels []int32, groups []int, s FermiStep) (n, slot int, err error) {
	if f.released {
		return 0, 0, errors.New("cuda: DeviceFermi used after Close")
	}
	if err := f.check(s, labels, groups); err != nil {
		return 0, 0, err
	}
	net, d := f.net, f.dev
	f.stepGroups = f.stepGroups[:0]
	for _, g := range groups {
		f.stepGroups = append(f.stepGroups, int32(g))
	}
	f.pl.b = f.pl.b[:0]
	groupsAt, wAt, invAt := f.pl.int32s(f.stepGroups), f.pl.float64s(s.W), f.pl.float64s(s.InvSqrt)
	if n, slot, err = net.upload(x, labels, f.pl.b); err != nil {
		return 0, 0, err
	}
	if err := f.grow(n, s); err != nil {
		return 0, 0, err
	}
	in := net.io.extra[slot]
	f.groups, f.w, f.inv = in+DevicePtr(groupsAt), in+DevicePtr(wAt), in+DevicePtr(invAt)
	L := len(net.layers)
	// Every sum starts at zero, so a pass that is off brings back zeros.
	if err := launch1(d, "fairdp_fill_u32", 2*len(f.back), Ptr(f.sums), U32(0), Int(2*len(f.back))); err != nil {
		return 0, 0, err
	}
	if err := net.math(true); err != nil {
		return 0, 0, err
	}
	if err := net.forward(n); err != nil {
		return 0, 0, err
	}
	if err := net.lossGrad(f.dl, n); err != nil {
		return 0, 0, err
	}
	width, mats := f.width, f.mats
	wClip, wExact := f.sums, f.sums+DevicePtr(8*mats*width)
	psiSum := f.sums + DevicePtr(16*mats*width)
	psi := f.psi // ψ_i comes with the first pass that runs
	if s.Clipped.On {
		// The clipped pass: its output gradient, backward, the joint norms
		// with W's share, the clip factors and W's clipped sum.
		if err := f.grad(net.g[L], f.wClip, psi, s.Clipped, s, n); err != nil {
			return 0, 0, err
		}
		psi = 0
		if err := net.backward(n); err != nil {
			return 0, 0, err
		}
		if err := net.sqNorms(n); err != nil {
			return 0, 0, err
		}
		if s.WWeight > 0 {
			if err := launch1(d, "fairdp_fermi_w_sqnorms", n, Ptr(net.sq), Ptr(f.wClip), Int(n), Int(width), F64(s.WWeight*s.WWeight)); err != nil {
				return 0, 0, err
			}
		}
		if err := net.queueClipFactors(s.Clip, n); err != nil {
			return 0, 0, err
		}
		wScale := net.scale
		if s.WWeight == 0 {
			wScale = 0 // W is bounded by construction, not clipped
		}
		if err := f.sum(wClip, f.wClip, wScale, width, mats, n); err != nil {
			return 0, 0, err
		}
		if err := d.Launch("fairdp_count_above", D1(1), D1(block), 0, Ptr(psiSum+8), Ptr(net.norms), Int(n), F64(s.Clip)); err != nil {
			return 0, 0, err
		}
	}
	if s.Exact.On {
		// Both passes: the exact one's output gradient waits in its own
		// buffer until the clip factors are known.
		dz := net.g[L]
		if s.Clipped.On {
			dz = f.dzExact
		}
		if err := f.grad(dz, f.wExact, psi, s.Exact, s, n); err != nil {
			return 0, 0, err
		}
		psi = 0
		if err := f.sum(wExact, f.wExact, 0, width, mats, n); err != nil {
			return 0, 0, err
		}
	}
	if psi != 0 { // no pass ran: ψ alone
		if err := f.grad(f.dzExact, f.wExact, psi, FermiPass{}, s, n); err != nil {
			return 0, 0, err
		}
	}
	return n, slot, f.sum(psiSum, f.psi, 0, 1, 1, n)
}

// parseSums reads the sums of a step planned as s from raw (the result
// slot's bytes).
func (f *DeviceFermi) parseSums(raw []byte, n int, loss float64, s FermiStep) FermiSums {
	back, mats, width := f.back, s.Mats(), s.Groups*s.Classes
	copy(back, unsafe.Slice((*float64)(unsafe.Pointer(&raw[0])), len(back)))
	sums := FermiSums{N: n, Loss: loss, Psi: back[2*mats*width]}
	if s.Clipped.On {
		sums.WClipped, sums.Clipped = append([]float64(nil), back[:mats*width]...), int(back[2*mats*width+1])
	}
	if s.Exact.On {
		sums.WExact = append([]float64(nil), back[mats*width:2*mats*width]...)
	}
	return sums
}

// release queues θ's release and update with the noise key seed and ends
// the step's use of its input slot; guard makes the update kernels skip a
// step whose clip check failed (when nothing was read before).
func (f *DeviceFermi) release(s FermiStep, seed NoiseSeed, n, slot int, guard bool) error {
	net, d, L := f.net, f.dev, len(f.net.layers)
	// What follows forms the released sum (with both passes, another
	// backward of the combined output gradient): FP32 (SetTF32).
	if err := net.math(false); err != nil {
		return err
	}
	// θ's release: with one pass, that pass's per-sample gradients scaled by
	// the clip factors (or summed); with both, one more backward of the
	// combined output gradient Scale·c_i·dz_i + dz'_i, and the noise scaled
	// to match.
	rel := DPSGDStep{NoiseStd: s.NoiseStd, Scale: s.Scale, LR: s.LR, Seed: seed}
	if guard {
		rel.stop, rel.stopN = net.bad, n
	}
	rowScale := net.scale
	switch {
	case s.Clipped.On && s.Exact.On:
		if err := launch1(d, "fairdp_fermi_combine", n*net.sizes[L], Ptr(net.g[L]), Ptr(f.dzExact), Ptr(net.scale), Int(n), Int(net.sizes[L]), F64(s.Scale)); err != nil {
			return err
		}
		if err := net.backward(n); err != nil {
			return err
		}
		rel.NoiseStd, rel.Scale, rowScale = s.NoiseStd*s.Scale, 1, net.ones
	case s.Exact.On:
		if err := net.backward(n); err != nil {
			return err
		}
		rel.NoiseStd, rel.Scale, rowScale = s.NoiseStd*s.Scale, 1, net.ones
	case !s.Clipped.On: // neither pass: only noise
		if err := launch1(d, "fairdp_fill_u32", n*net.sizes[L], Ptr(net.g[L]), U32(0), Int(n*net.sizes[L])); err != nil {
			return err
		}
		if err := net.backward(n); err != nil {
			return err
		}
		rowScale = net.ones
	}
	if err := net.release(rowScale, rel, n); err != nil {
		return err
	}
	return net.io.done(slot)
}

// grad launches fairdp_fermi_grad for pass p (off: ψ only, no terms).
func (f *DeviceFermi) grad(dz, wrow, psi DevicePtr, p FermiPass, s FermiStep, n int) error {
	eo := 0
	if s.EqualizedOdds {
		eo = 1
	}
	part, lossW, fairW := p.Part, p.Loss, p.Fair
	if !p.On {
		part, lossW, fairW = FermiFull, 0, 0
	}
	return launch1(f.dev, "fairdp_fermi_grad", n, Ptr(dz), Ptr(wrow), Ptr(psi), Ptr(f.net.a[len(f.net.layers)]), Ptr(f.dl),
		Ptr(f.net.labels), Ptr(f.groups), Ptr(f.w), Ptr(f.inv), Int(n), Int(f.net.sizes[len(f.net.sizes)-1]),
		Int(s.Groups), Int(s.Classes), Int(eo), F64(lossW), F64(fairW), Int(part))
}

// sum launches fairdp_fermi_sums: dst = Σ_i scale_i·rows_i per matrix.
func (f *DeviceFermi) sum(dst, rows, scale DevicePtr, width, mats, n int) error {
	return f.dev.Launch("fairdp_fermi_sums", launchShape(mats*width, true), D1(block), 0, Ptr(dst), Ptr(rows), Ptr(scale),
		Ptr(f.net.labels), Int(n), Int(width), Int(mats))
}
