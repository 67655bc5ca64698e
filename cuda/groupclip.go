package cuda

import (
	"fmt"
	"math"
	"unsafe"
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
}

// groupBuffers are the device buffers of a group-wise clip, in an arena of
// their own (sized by the batch and K, not by the model).
type groupBuffers struct {
	arena
	capacity, k int
	groups      DevicePtr // capacity int32
	counts      DevicePtr // 2k int32: above, then at most
	rule        DevicePtr // 2k float64: bounds, then weights
}

// check says what is wrong with a step's group clip for n samples.
func (g *GroupClip) check(n int) error {
	if g.Rule == nil || g.Count < 1 || g.Count > maxElems/16 {
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
