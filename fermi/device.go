package fermi

import (
	"errors"
	"math/rand/v2"
	"slices"

	"github.com/fairdp/fairdp/devstep"
	"github.com/fairdp/fairdp/dpops/accounting"
)

// DeviceStep plans one step of DP-FERMI for a model that lives on a CUDA
// device (trainer.Device.FermiStep; package cuda's DeviceFermi) on a
// batch of n samples: the terms Step clips and the terms it sums exactly,
// with the same weights, clip bound, W weight κ and θ noise, W as it is now.
// The device computes the model's half of the step and brings back
// devstep.FermiSums, which FinishDeviceStep turns into W's step exactly as Step
// does. A private plan carries the run's noise stream (Noise), from which
// the device draws θ's noise key when it issues the step, where Step
// draws it (before W's noise, which FinishDeviceStep draws); the device
// then runs the step without waiting for its host half, which comes a
// step later, before the next step is planned with W.
//
//   - Not private: one exact pass, mean loss plus λ·mean ψ (Step's
//     non-private branch).
//   - --scope all: one clipped pass, ℓ_i + λψ_i (Clipped), θ's noise
//     StdTheta, then 1/B.
//   - --scope sensitive: a clipped pass of the s-dependent terms (λ
//     inside unless lambdaAfterClip; off when λ = 0, as privateStep skips
//     it) scaled by thetaScale after its noise, and an exact pass of the
//     rest, loss/B plus λ/B times the terms without s.
func (a *DPFERMI[T]) DeviceStep(n int) (devstep.FermiStep, error) {
	if a.HardenedNoise {
		return devstep.FermiStep{}, errors.New("fermi: HardenedNoise has no device step (the device's noise is Philox)")
	}
	reg := a.Reg
	s := devstep.FermiStep{Groups: reg.Groups, Classes: reg.Classes, EqualizedOdds: reg.EqualizedOdds,
		W: slices.Clone(reg.W), InvSqrt: slices.Clone(reg.invSqrt), Clip: a.Clip, WWeight: a.WWeight, Scale: 1}
	if !a.Private {
		if n > 0 {
			s.Exact = devstep.FermiPass{On: true, Loss: float64(T(1) / T(n)), Fair: a.Lambda / float64(n), Part: devstep.FermiFull}
		}
		return s, nil
	}
	s.NoiseStd, s.Scale, s.Noise = a.StdTheta, a.thetaScale(), a.noise
	if a.Scope == accounting.ScopeAll {
		s.Clipped = devstep.FermiPass{On: true, Loss: 1, Fair: a.Lambda, Part: devstep.FermiFull}
		return s, nil
	}
	if a.Lambda > 0 {
		fair := a.Lambda
		if a.lambdaAfterClip() {
			fair = 1
		}
		s.Clipped = devstep.FermiPass{On: true, Fair: fair, Part: devstep.FermiSensitive}
	}
	inv := 1 / float64(a.Batch)
	s.Exact = devstep.FermiPass{On: true, Loss: float64(T(inv)), Fair: a.Lambda * inv, Part: devstep.FermiNonSensitive}
	return s, nil
}

// hostNoiseNote is what a device run's receipt adds to the device's noise
// note for DP-FERMI: not all of its noise came from the device.
const hostNoiseNote = "DP-FERMI on the device: only θ's noise was generated on the device; the noise on W's ascent " +
	"direction (V_t) and on the group counts was drawn on the host from the run's ChaCha8 stream, as on the CPU"

// DeviceNoiseNote is the receipt note a run on a device adds after the
// device's own noise note: which of DP-FERMI's noise the device generated.
func (a *DPFERMI[T]) DeviceNoiseNote() string { return hostNoiseNote }

// FinishDeviceStep is the host's half of a step DeviceStep planned, given
// the batch's sums from the device: the epoch statistics, then, as Step
// does, W's ascent direction (λ/B)·Σ_i c_i∇_Wψ_i + V_t (V_t drawn here
// from the run's noise stream), the exact terms for --scope sensitive and
// the projected ascent step on W. theta is called with the noise stream
// exactly where Step draws θ's noise (before V_t), and must draw from it
// what the device's θ noise needs (the device's noise key), unless the
// device drew that from the plan's Noise when it issued the step; it is
// not called in a run that is not private. The step's charge is
// ChargeDeviceStep's.
func (a *DPFERMI[T]) FinishDeviceStep(s devstep.FermiSums, theta func(noise *rand.Rand) error) error {
	clear(a.w.Grad)
	if s.N > 0 {
		a.psiSum += s.Psi
		a.seen += s.N
	}
	if !a.Private {
		if s.N > 0 && a.Lambda > 0 {
			for i, g := range s.WExact {
				a.w.Grad[i] = a.Lambda / float64(s.N) * g
			}
		}
		return a.ascend()
	}
	a.clipped += s.Clipped
	copy(a.w.Grad, s.WClipped)
	if err := theta(a.noise); err != nil {
		return err
	}
	if err := a.wDirection(); err != nil {
		return err
	}
	if a.Scope == accounting.ScopeSensitive && s.N > 0 && a.Lambda > 0 {
		inv := 1 / float64(a.Batch)
		for i, g := range s.WExact {
			a.w.Grad[i] += a.Lambda * inv * g
		}
	}
	return a.ascend()
}

// ChargeDeviceStep charges the accountant for one step on the device, when
// the step is issued (nothing in a run that is not private): its host half
// (FinishDeviceStep) comes back a step later, and a receipt read in
// between must not leave out a step already released. The charge is
// Step's, and no step releases anything else, so the ledger at the end is
// the CPU run's.
func (a *DPFERMI[T]) ChargeDeviceStep() error {
	if !a.Private {
		return nil
	}
	return a.acc.Step(a.StepMechanism(), 1)
}
