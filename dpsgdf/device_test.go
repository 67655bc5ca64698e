package dpsgdf

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/fairdp/fairdp/devstep"
	"github.com/fairdp/fairdp/dpops"
)

// DeviceRule's release rests on ScalarGaussian(r, v, 1, σ1) being
// v + ScalarGaussian(r, 0, 1, σ1), bit for bit, for integer counts v and
// σ1 in [2⁻⁹⁰⁰, 2⁵²] (the same draws from the same stream).
func TestDeviceReleaseIsScalarGaussian(t *testing.T) {
	for _, s1 := range []float64{minDeviceSigma1, 1e-9, 0.37, 8, 80, 1e6, maxDeviceSigma1} {
		for seed := range uint64(4) {
			r1 := rand.New(rand.NewChaCha8([32]byte{byte(seed)}))
			r2 := rand.New(rand.NewChaCha8([32]byte{byte(seed)}))
			for v := range 300 {
				want, err := dpops.ScalarGaussian(r1, float64(v), 1, s1)
				if err != nil {
					t.Fatal(err)
				}
				noise, err := dpops.ScalarGaussian(r2, 0, 1, s1)
				if err != nil {
					t.Fatal(err)
				}
				if got := float64(v) + noise; math.Float64bits(got) != math.Float64bits(want) {
					t.Fatalf("σ1 = %v, seed %d, count %d: %v + noise %v = %v, ScalarGaussian gives %v", s1, seed, v, v, noise, got, want)
				}
			}
		}
	}
}

// A policy's DeviceRule draws its counts' noise from the policy's stream
// in Rule's order, and its Done, given the counts released with that
// noise, decides as Rule does (bounds, weights, noise std, the epoch's
// statistics), for DPSGD-F under each guard and for Naïve: a seeded run
// on a device matches the CPU's. Outside σ1's range it leaves the rule to
// the host.
func TestDeviceRuleIsRule(t *testing.T) {
	groups := []string{"a", "b", "c"}
	for _, c := range []struct {
		policy Policy
		guard  CountGuard
	}{{Adaptive, GuardC0}, {Adaptive, GuardFloor}, {Adaptive, GuardSmooth}, {Naive, ""}} {
		t.Run(fmt.Sprintf("%s/%s", c.policy, c.guard), func(t *testing.T) {
			cfg := Config{Policy: c.policy, CountGuard: c.guard, Clip: 1, Sigma: 0.8, CountNoiseRatio: 3, Batch: 20, Epochs: 1, Groups: groups}
			seed := uint64(5)
			_, src := dpops.NewRand(&seed)
			cpu, err := New[float32](cfg, 1000, src)
			if err != nil {
				t.Fatal(err)
			}
			dev, err := New[float32](cfg, 1000, src)
			if err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(1, 2))
			for step := range 30 {
				above, atMost := make([]int, 3), make([]int, 3)
				for g := range 3 {
					if step%5 != 0 {
						above[g], atMost[g] = r.IntN(8), r.IntN(8)
					}
				}
				want, err := cpu.core.Policy.Rule(above, atMost)
				if err != nil {
					t.Fatal(err)
				}
				dr, err := groupPolicy[float32]{dev}.DeviceRule()
				if err != nil || dr == nil {
					t.Fatalf("DeviceRule: %v, %v", dr, err)
				}
				if dr.Policy != map[Policy]int{Adaptive: devstep.PolicyAdaptive, Naive: devstep.PolicyNaive}[c.policy] ||
					dr.C0 != cfg.Clip || dr.Batch != 20 || dr.Strength != dev.sigma1 || dr.Sigma != dev.cfg.Sigma {
					t.Fatalf("DeviceRule %+v for %+v", dr, cfg)
				}
				rel := slices.Clone(dr.Noise)
				for g := range 3 {
					if c.policy == Naive {
						rel[g] += float64(above[g] + atMost[g])
					} else {
						rel[g] += float64(above[g])
						rel[3+g] += float64(atMost[g])
					}
				}
				got, err := dr.Done(rel)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got.Bounds, want.Bounds) || !slices.Equal(got.Weights, want.Weights) || got.NoiseStd != cpu.cfg.Sigma*want.Sensitivity {
					t.Fatalf("step %d: Done gives %+v, Rule %+v", step, got, want)
				}
			}
			if fmt.Sprint(dev.stats) != fmt.Sprint(cpu.stats) || !slices.Equal(dev.LastBounds(), cpu.LastBounds()) {
				t.Errorf("statistics %+v, want Rule's %+v", dev.stats, cpu.stats)
			}
			dev.sigma1 = 2 * maxDeviceSigma1
			if dr, err := (groupPolicy[float32]{dev}).DeviceRule(); dr != nil || err != nil {
				t.Errorf("σ1 = %v: DeviceRule %v, %v, want nil: the host's rule", dev.sigma1, dr, err)
			}
		})
	}
}

// TestDeviceRuleLeavesNaiveSmoothToHost: the device kernel repeats only
// NaiveGuardOne's weights, so a Naïve run under another guard (the tabular
// default) must keep the host rule: DeviceRule offers none.
func TestDeviceRuleLeavesNaiveSmoothToHost(t *testing.T) {
	for _, c := range []struct {
		guard  NaiveGuard
		device bool
	}{{"", true}, {NaiveGuardOne, true}, {NaiveGuardSmooth, false}} {
		cfg := Config{Policy: Naive, NaiveGuard: c.guard, Clip: 1, Sigma: 0.8, CountNoiseRatio: 3, Batch: 20, Epochs: 1, Groups: []string{"a", "b"}}
		seed := uint64(5)
		_, src := dpops.NewRand(&seed)
		a, err := New[float32](cfg, 1000, src)
		if err != nil {
			t.Fatal(err)
		}
		dr, err := groupPolicy[float32]{a}.DeviceRule()
		if err != nil {
			t.Fatal(err)
		}
		if (dr != nil) != c.device {
			t.Errorf("naive guard %q: device rule offered %v, want %v", c.guard, dr != nil, c.device)
		}
	}
}
