package dpsgdf

import (
	"github.com/fairdp/fairdp/devstep"
)

// deviceGuards are the count guards as a devstep.DeviceRule names them.
var deviceGuards = map[CountGuard]int{GuardC0: devstep.GuardC0, GuardFloor: devstep.GuardFloor, GuardSmooth: devstep.GuardSmooth}

// The count noise multipliers σ1 for which DeviceRule's release is
// dpops.ScalarGaussian's bit for bit (see DeviceRule).
const minDeviceSigma1, maxDeviceSigma1 = 0x1p-900, 0x1p52

// DeviceRule is the policy's rule as data, for a device that computes the
// step's released counts, bounds, weights and noise std itself from the
// counts it holds (trainer/ondevice.go hands it to the device instead of
// calling Rule with the counts mid-step; package cuda's fairdp_group_rule
// repeats CountGuard.Bounds and NaiveWeights operation for operation). The
// counts' noise is drawn here, before the step, from the policy's own
// stream and in Rule's order (the K clipped, then the K unclipped counts;
// Naïve's K sizes), so a seeded run releases what the CPU releases:
// dpops.ScalarGaussian(r, v, 1, σ1) is round(v/g)·g + k·g, k drawn from r
// independently of v and g the power of two ≥ 2σ1/2⁵⁷, so for σ1 ≤ 2⁵² (g
// ≤ 1) and an integer count v it is v + ScalarGaussian(r, 0, 1, σ1) in one
// rounding (TestDeviceReleaseIsScalarGaussian); for σ1 ≥ 2⁻⁹⁰⁰ v/g cannot
// overflow. Outside that range it returns nil: the host's Rule then runs.
//
// Done, called when the step's result comes back (a step later), is the
// policy's own decision (decide) on the counts the device released: its
// bookkeeping for the report, and the bounds, weights and noise std the
// device must have used (the device checks them bit for bit).
func (p groupPolicy[T]) DeviceRule() (*devstep.DeviceRule, error) {
	a := p.a
	if !(a.sigma1 >= minDeviceSigma1 && a.sigma1 <= maxDeviceSigma1) {
		return nil, nil
	}
	if a.cfg.Policy == Naive && a.cfg.NaiveGuard.orDefault() != NaiveGuardOne {
		// The device kernel repeats NaiveWeights (NaiveGuardOne) only;
		// another Naïve guard keeps the host rule and its mid-step wait.
		return nil, nil
	}
	k := len(a.cfg.Groups)
	r := &devstep.DeviceRule{Policy: devstep.PolicyAdaptive, Guard: deviceGuards[a.cfg.CountGuard.orDefault()],
		C0: a.cfg.Clip, Batch: float64(a.cfg.Batch), Strength: a.sigma1, Sigma: a.cfg.Sigma}
	if a.cfg.Policy == Naive {
		r.Policy, r.Guard, r.Noise = devstep.PolicyNaive, devstep.GuardC0, make([]float64, k)
		if err := a.release(r.Noise); err != nil {
			return nil, err
		}
	} else {
		r.Noise = make([]float64, 2*k)
		if err := a.release(r.Noise[:k]); err != nil {
			return nil, err
		}
		if err := a.release(r.Noise[k:]); err != nil {
			return nil, err
		}
	}
	r.Done = func(released []float64) (devstep.GroupRule, error) {
		if a.cfg.Policy == Naive {
			copy(a.sizes, released)
		} else {
			copy(a.clipped, released[:k])
			copy(a.unclipped, released[k:])
		}
		c, err := a.decide()
		return devstep.GroupRule{Bounds: c.Bounds, Weights: c.Weights, NoiseStd: a.cfg.Sigma * c.Sensitivity}, err
	}
	return r, nil
}
