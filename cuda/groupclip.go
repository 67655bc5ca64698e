package cuda

import (
	"fmt"
	"math"
	"slices"
	"unsafe"

	"github.com/fairdp/fairdp/devstep"
)

// GroupRule is how a step with a group clip policy clips: sample i of group
// g gets the factor Weights[g]·min(1, Bounds[g]/‖g_i‖), and the clipped sum
// gets noise of std NoiseStd (σ times the policy's sensitivity). DPSGD-F
// has per-group bounds and unit weights, Naive one bound and per-group
// weights (package dpsgdf; trainer.ClipPolicy computes them).
type GroupRule struct {
	Bounds, Weights []float64 // one per group
	NoiseStd        float64
}

// GroupClip is the part of a DPSGDStep that makes its clip group-wise.
type GroupClip struct {
	// Groups is each sample's group, in 0..Count-1 (one per label).
	Groups []int32
	// Count is the number of groups K.
	Count int
	// Rule is called once per step, also for an empty batch, with the
	// only statistics of the batch that leave the device: for each group
	// g, above[g] samples whose gradient norm exceeds DPSGDStep.Clip and
	// atMost[g] the others. What it returns sets every sample's factor and
	// the noise, replacing DPSGDStep.NoiseStd.
	Rule func(above, atMost []int32) (GroupRule, error)
	// OnDevice, when set, is the rule as data: the device computes the
	// released counts, bounds, weights and noise std itself
	// (fairdp_group_rule), the step waits for nothing, and what was
	// released comes back with the step's result to OnDevice.Done, whose
	// rule must agree bit for bit. Rule is then not called.
	OnDevice *DeviceRule
}

// DeviceRule is devstep's: a group policy's rule as data (DPSGD-F, Naive).
type DeviceRule = devstep.DeviceRule

// groupBuffers are the device buffers of a group-wise clip, in an arena of
// their own (sized by the batch and K, not by the model).
type groupBuffers struct {
	arena
	capacity, k int
	groups      DevicePtr // capacity int32
	counts      DevicePtr // 2k int32: above, then at most
	rule        DevicePtr // 2k float64: bounds, then weights
	// A rule on the device: out is fairdp_group_rule's (bounds, weights,
	// noise std, released counts: 4k+1 float64), and the batch's groups
	// and the counts' noise come up in the step's payload, at offsets
	// groupsAt and noiseAt of the input slot.
	out               DevicePtr
	pl                payload
	groupsAt, noiseAt int64
}

// check says what is wrong with a step's group clip for n samples.
func (g *GroupClip) check(n int) error {
	if (g.Rule == nil && g.OnDevice == nil) || g.Count < 1 || g.Count > maxElems/16 {
		return fmt.Errorf("cuda: GroupClip with %d groups and rule %v: want 1..%d groups and a rule", g.Count, g.Rule != nil, maxElems/16)
	}
	if len(g.Groups) != n {
		return fmt.Errorf("cuda: GroupClip: %d groups for %d samples", len(g.Groups), n)
	}
	for i, k := range g.Groups {
		if k < 0 || int(k) >= g.Count {
			return fmt.Errorf("cuda: GroupClip: sample %d has group %d, want 0..%d", i, k, g.Count-1)
		}
	}
	return nil
}

// grow makes the buffers hold n samples' groups and k groups' statistics.
func (b *groupBuffers) grow(n, k int) error {
	if n <= b.capacity && k == b.k {
		return nil
	}
	if err := b.dev.Synchronize(); err != nil {
		return err
	}
	b.capacity, b.k = 0, 0
	if err := b.freeFrom(0); err != nil {
		return err
	}
	c := max(n+n/4, 1)
	var err error
	b.groups, b.counts, b.rule = b.alloc(4*c, &err), b.alloc(8*k, &err), b.alloc(16*k, &err)
	b.out = b.alloc(8*(4*k+1), &err)
	if err != nil {
		return err
	}
	b.capacity, b.k = c, k
	return nil
}

// groupScales replaces the flat clip factors in net.scale by the group
// clip's: the per-group counts of norms above and at most threshold come
// back to the host, the rule turns them into bounds and weights, which go
// to the device, where each sample's factor is computed. The counts come
// back in one copy with the clip check (checked before the rule sees
// them) and the summed loss (the step's one wait). It returns the noise
// std the rule asks for and the loss.
func (net *DeviceNet) groupScales(g *GroupClip, threshold float64, n, slot int) (noiseStd, loss float64, err error) {
	d, b := net.dev, &net.grp
	b.dev = d
	if err := b.grow(n, g.Count); err != nil {
		return 0, 0, err
	}
	k := g.Count
	if err := launch1(d, "fairdp_fill_u32", 2*k, Ptr(b.counts), U32(0), Int(2*k)); err != nil {
		return 0, 0, err
	}
	if n > 0 {
		if err := CopyIn(d, b.groups, g.Groups); err != nil {
			return 0, 0, err
		}
		if err := launch1(d, "fairdp_group_counts", n, Ptr(b.counts), Ptr(net.norms), Ptr(b.groups), F64(threshold), Int(n), Int(k)); err != nil {
			return 0, 0, err
		}
	}
	back, loss, err := net.readChecked(slot, n, true, hostRange{b.counts, int64(8 * k)})
	if err != nil {
		return 0, 0, err
	}
	counts := append([]int32(nil), unsafe.Slice((*int32)(unsafe.Pointer(&back[0])), 2*k)...) // the pinned slot is reused
	rule, err := g.Rule(counts[:k], counts[k:])
	if err != nil {
		return 0, 0, err
	}
	if len(rule.Bounds) != k || len(rule.Weights) != k {
		return 0, 0, fmt.Errorf("cuda: group rule gave %d bounds and %d weights for %d groups", len(rule.Bounds), len(rule.Weights), k)
	}
	for j := range k {
		c, w := rule.Bounds[j], rule.Weights[j]
		if !(c > 0) || math.IsInf(c, 0) || !(w >= 0) || math.IsInf(w, 0) {
			return 0, 0, fmt.Errorf("cuda: group rule gave group %d bound %v and weight %v, want a finite bound > 0 and weight ≥ 0", j, c, w)
		}
	}
	if err := checkNoise(rule.NoiseStd); err != nil {
		return 0, 0, err
	}
	if err := CopyIn(d, b.rule, append(append(make([]float64, 0, 2*k), rule.Bounds...), rule.Weights...)); err != nil {
		return 0, 0, err
	}
	err = launch1(d, "fairdp_group_clip_factors", n, Ptr(net.scale), Ptr(net.norms), Ptr(b.groups), Ptr(b.rule), Int(n), Int(k))
	return rule.NoiseStd, loss, err
}

// pack lays out the payload of a step whose rule runs on the device: the
// batch's groups and the counts' noise.
func (b *groupBuffers) pack(g *GroupClip) []byte {
	b.pl.b = b.pl.b[:0]
	b.groupsAt = b.pl.int32s(g.Groups)
	b.noiseAt = b.pl.float64s(g.OnDevice.Noise)
	return b.pl.b
}

// released is how many counts a device rule releases for k groups.
func released(r *DeviceRule, k int) int {
	if r.Policy == devstep.PolicyNaive {
		return k
	}
	return 2 * k
}

// checkDeviceRule says what is wrong with a device rule for k groups.
func checkDeviceRule(r *DeviceRule, k int) error {
	ok := (r.Policy == devstep.PolicyAdaptive || r.Policy == devstep.PolicyNaive) &&
		r.Guard >= devstep.GuardC0 && r.Guard <= devstep.GuardSmooth && r.Done != nil &&
		r.C0 > 0 && finite(r.C0) && finite(r.Batch) && finite(r.Strength) && r.Sigma >= 0 && finite(r.Sigma)
	if !ok || len(r.Noise) != released(r, k) {
		return fmt.Errorf("cuda: DeviceRule policy %d, guard %d, C0 %v, batch %v, strength %v, σ %v, %d noise values for %d groups, Done %v: "+
			"want policy 0 or 1, guard 0..2, finite values, C0 > 0, σ ≥ 0, one noise value per released count and Done",
			r.Policy, r.Guard, r.C0, r.Batch, r.Strength, r.Sigma, len(r.Noise), k, r.Done != nil)
	}
	for _, v := range r.Noise {
		if !finite(v) {
			return fmt.Errorf("cuda: DeviceRule: count noise %v, want finite", v)
		}
	}
	return nil
}

// deviceRule replaces the flat clip factors in net.scale by the group
// clip's, its rule computed on the device from the counts there
// (fairdp_group_rule), so nothing is read mid-step: the released counts,
// bounds, weights and noise std come back with the step's result (the
// ranges it returns, read before the clip check and the loss), where p
// hands the released counts to the policy's own rule (OnDevice.Done) and
// checks that the device used what that rule gives, bit for bit. The
// batch's groups and the counts' noise came up with the batch (pack).
func (net *DeviceNet) deviceRule(g *GroupClip, threshold float64, n, slot int, p *Pending) ([]hostRange, error) {
	d, b, r := net.dev, &net.grp, g.OnDevice
	k := g.Count
	if err := checkDeviceRule(r, k); err != nil {
		return nil, err
	}
	b.dev = d
	if err := b.grow(n, k); err != nil {
		return nil, err
	}
	groups, noise := net.io.extra[slot]+DevicePtr(b.groupsAt), net.io.extra[slot]+DevicePtr(b.noiseAt)
	if err := launch1(d, "fairdp_fill_u32", 2*k, Ptr(b.counts), U32(0), Int(2*k)); err != nil {
		return nil, err
	}
	if n > 0 {
		if err := launch1(d, "fairdp_group_counts", n, Ptr(b.counts), Ptr(net.norms), Ptr(groups), F64(threshold), Int(n), Int(k)); err != nil {
			return nil, err
		}
	}
	if err := d.Launch("fairdp_group_rule", D1(1), D1(1), 0, Ptr(b.out), Ptr(b.counts), Ptr(noise), Int(k), Int(r.Policy),
		Int(r.Guard), F64(r.C0), F64(r.Batch), F64(r.Strength), F64(r.Sigma)); err != nil {
		return nil, err
	}
	if n > 0 {
		if err := launch1(d, "fairdp_group_clip_factors", n, Ptr(net.scale), Ptr(net.norms), Ptr(groups), Ptr(b.out), Int(n), Int(k)); err != nil {
			return nil, err
		}
	}
	vals := 2*k + 1 + released(r, k)
	p.head = (int64(8*vals) + 7) &^ 7
	p.after = func(head []byte, _ float64) error {
		out := unsafe.Slice((*float64)(unsafe.Pointer(&head[0])), vals)
		rel := append([]float64(nil), out[2*k+1:]...) // the pinned slot is reused
		host, err := r.Done(rel)
		if err != nil {
			return err
		}
		return sameRule(GroupRule(host), out[:k], out[k:2*k], out[2*k])
	}
	return []hostRange{{b.out, int64(8 * vals)}}, nil
}

// sameRule checks that the device's bounds, weights and noise std are the
// host rule's, bit for bit: the step was noised with the device's, and the
// receipt's sensitivity is the host's.
func sameRule(host GroupRule, bounds, weights []float64, std float64) error {
	bits := func(v []float64) []uint64 {
		u := make([]uint64, len(v))
		for i, x := range v {
			u[i] = math.Float64bits(x)
		}
		return u
	}
	if !slices.Equal(bits(host.Bounds), bits(bounds)) || !slices.Equal(bits(host.Weights), bits(weights)) ||
		math.Float64bits(host.NoiseStd) != math.Float64bits(std) {
		return fmt.Errorf("cuda: the device's group rule (bounds %v, weights %v, noise std %v) is not the host's (%v, %v, %v)",
			bounds, weights, std, host.Bounds, host.Weights, host.NoiseStd)
	}
	return nil
}
