//go:build !cuda

// Not in the cuda build: these tests import package dpsgdf (the slow path),
// whose code would take the GPU bundle's cuda.test over the bundle's size
// limit; the emulated device runs them on the same kernel source.

package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/fairdp/fairdp/devstep"
	"github.com/fairdp/fairdp/dpsgdf"
)

// hostRule is a group policy's rule as package dpsgdf computes it
// (CountGuard.Bounds, NaiveWeights) on released counts: the slow path the
// device's fairdp_group_rule must equal bit for bit.
func hostRule(t *testing.T, r *DeviceRule, released []float64) GroupRule {
	t.Helper()
	k := len(released)
	if r.Policy == devstep.PolicyNaive {
		theta := dpsgdf.NaiveWeights(r.Batch, released)
		bounds := make([]float64, k)
		for g := range bounds {
			bounds[g] = r.C0
		}
		return GroupRule{Bounds: bounds, Weights: theta, NoiseStd: r.Sigma * (r.C0 * slices.Max(theta))}
	}
	k /= 2
	guard := []dpsgdf.CountGuard{dpsgdf.GuardC0, dpsgdf.GuardFloor, dpsgdf.GuardSmooth}[r.Guard]
	bounds, _, err := guard.Bounds(r.C0, r.Batch, r.Strength, released[:k], released[k:])
	must(t, err)
	ones := make([]float64, k)
	for g := range ones {
		ones[g] = 1
	}
	return GroupRule{Bounds: bounds, Weights: ones, NoiseStd: r.Sigma * slices.Max(bounds)}
}

// fairdp_group_rule gives dpsgdf's bounds, weights and noise std bit for
// bit, for DPSGD-F under each count guard and for Naive, on counts whose
// noise makes them negative, empties a group, leaves nothing clipped
// (every bound C0) or pushes a fraction outside [0, 1].
func TestGroupRuleKernelMatchesDPSGDF(t *testing.T) {
	dev := deviceUnderTest(t)
	r := rand.New(rand.NewPCG(91, 92))
	type rcase struct {
		policy, guard int
		k             int
		sigma1, b     float64
	}
	var cases []rcase
	for _, pg := range [][2]int{{0, 0}, {0, 1}, {0, 2}, {1, 0}} {
		for _, k := range []int{1, 2, 10} {
			for _, s1 := range []float64{0.5, 8, 40} {
				cases = append(cases, rcase{pg[0], pg[1], k, s1, float64(1 + r.IntN(64))})
			}
		}
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("policy=%d/guard=%d/K=%d/sigma1=%v", c.policy, c.guard, c.k, c.sigma1), func(t *testing.T) {
			rule := &DeviceRule{Policy: c.policy, Guard: c.guard, C0: 0.1 + r.Float64(), Batch: c.b, Strength: c.sigma1, Sigma: 0.3 + r.Float64()}
			nr := released(rule, c.k)
			dcounts, dnoise, dout := testBuf(t, dev, 8*c.k), testBuf(t, dev, 8*nr), testBuf(t, dev, 8*(4*c.k+1))
			for trial := range 40 {
				counts := make([]int32, 2*c.k)
				for j := range counts {
					if trial%4 != 0 { // every fourth trial: an empty batch
						counts[j] = int32(r.IntN(12))
					}
				}
				noise := make([]float64, nr)
				for j := range noise {
					noise[j] = c.sigma1 * r.NormFloat64()
				}
				rel := make([]float64, nr)
				for j := range rel {
					v := counts[j]
					if c.policy == devstep.PolicyNaive {
						v += counts[c.k+j]
					}
					rel[j] = float64(v) + noise[j]
				}
				must(t, CopyIn(dev, dcounts, counts))
				must(t, CopyIn(dev, dnoise, noise))
				must(t, dev.Launch("fairdp_group_rule", D1(1), D1(1), 0, Ptr(dout), Ptr(dcounts), Ptr(dnoise), Int(c.k), Int(rule.Policy),
					Int(rule.Guard), F64(rule.C0), F64(rule.Batch), F64(rule.Strength), F64(rule.Sigma)))
				out := make([]float64, 2*c.k+1+nr)
				must(t, CopyOut(dev, out, dout))
				for j := range rel {
					if math.Float64bits(out[2*c.k+1+j]) != math.Float64bits(rel[j]) {
						t.Fatalf("trial %d: released count %d is %v, want %v", trial, j, out[2*c.k+1+j], rel[j])
					}
				}
				if err := sameRule(hostRule(t, rule, rel), out[:c.k], out[c.k:2*c.k], out[2*c.k]); err != nil {
					t.Fatalf("trial %d (counts %v, noise %v): %v", trial, counts, noise, err)
				}
			}
		})
	}
}

// A step whose group rule runs on the device (GroupClip.OnDevice) gives the
// parameters of the same step with the rule on the host, bit for bit, for
// DPSGD-F and Naive; it waits for nothing of its own (the rule's released
// counts reach Done when the result is read, once per step), and a host
// rule that disagrees with the device's fails the step's Wait.
func TestDeviceRuleStepMatchesHostRule(t *testing.T) {
	dev := deviceUnderTest(t)
	for _, policy := range []int{devstep.PolicyAdaptive, devstep.PolicyNaive} {
		t.Run(fmt.Sprintf("policy=%d", policy), func(t *testing.T) {
			const k, sizes = 3, 14
			run := func(onDevice bool) ([][]float32, [][]float64) {
				r := rand.New(rand.NewPCG(93, 94))
				_, net := newTestMLP(t, dev, r, []int{sizes, 16, 1})
				noise, countNoise := rand.New(rand.NewPCG(95, 96)), rand.New(rand.NewPCG(97, 98))
				var seen [][]float64
				var pending *Pending
				for _, n := range []int{37, 1, 0, 64, 23} {
					x, y := mlpBatch(r, n, sizes, 2)
					groups := make([]int32, n)
					for i := range groups {
						groups[i] = int32(r.IntN(k))
					}
					rule := &DeviceRule{Policy: policy, Guard: devstep.GuardSmooth, C0: 0.5, Batch: 32, Strength: 2, Sigma: 0.9}
					rule.Noise = make([]float64, released(rule, k))
					for j := range rule.Noise {
						rule.Noise[j] = 2 * countNoise.NormFloat64()
					}
					rule.Done = func(rel []float64) (devstep.GroupRule, error) {
						seen = append(seen, rel)
						return devstep.GroupRule(hostRule(t, rule, rel)), nil
					}
					host := func(above, atMost []int32) (GroupRule, error) {
						rel := make([]float64, len(rule.Noise))
						for j := range rel {
							v := above[j%k]
							if policy == devstep.PolicyNaive {
								v += atMost[j]
							} else if j >= k {
								v = atMost[j-k]
							}
							rel[j] = float64(v) + rule.Noise[j]
						}
						seen = append(seen, rel)
						return hostRule(t, rule, rel), nil
					}
					s := DPSGDStep{Clip: 0.5, Scale: 1.0 / 32, LR: 0.05, Seed: NewNoiseSeed(noise),
						Group: &GroupClip{Groups: groups, Count: k, Rule: host}}
					if onDevice {
						s.Group.OnDevice = rule
					}
					p, err := net.StepAsync(x, y, s)
					must(t, err)
					if onDevice && p.done {
						t.Fatal("a step with its rule on the device read its result mid-step")
					}
					if pending != nil {
						_, err := pending.Wait()
						must(t, err)
					}
					pending = p
				}
				_, err := pending.Wait()
				must(t, err)
				got, err := net.Params()
				must(t, err)
				return got, seen
			}
			want, wantSeen := run(false)
			got, gotSeen := run(true)
			for j := range want {
				sameBits32(t, fmt.Sprintf("parameter %d", j), got[j], want[j])
			}
			if len(gotSeen) != len(wantSeen) {
				t.Fatalf("the device rule's Done ran %d times, the host rule %d", len(gotSeen), len(wantSeen))
			}
			for i := range wantSeen {
				if !slices.Equal(gotSeen[i], wantSeen[i]) {
					t.Errorf("step %d: the device released %v, the host %v", i, gotSeen[i], wantSeen[i])
				}
			}
		})
	}
	t.Run("disagreement", func(t *testing.T) {
		r := rand.New(rand.NewPCG(99, 100))
		_, net := newTestMLP(t, dev, r, []int{4, 1})
		x, y := mlpBatch(r, 5, 4, 2)
		rule := &DeviceRule{Policy: devstep.PolicyNaive, C0: 1, Batch: 5, Sigma: 1, Noise: make([]float64, 2),
			Done: func(rel []float64) (devstep.GroupRule, error) {
				return devstep.GroupRule{Bounds: []float64{1, 1}, Weights: []float64{1, 1}, NoiseStd: 1}, nil
			}}
		p, err := net.StepAsync(x, y, DPSGDStep{Clip: 1, Scale: 0.2, LR: 0.1,
			Group: &GroupClip{Groups: []int32{0, 1, 0, 1, 1}, Count: 2, OnDevice: rule}})
		must(t, err)
		_, err = p.Wait()
		wantErr(t, err, "is not the host's")
	})
}
