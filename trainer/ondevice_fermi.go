package trainer

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/fairdp/fairdp/devstep"
	"github.com/fairdp/fairdp/dpops/accounting"
)

// ermiOnDevice is DP-FERMI (package fermi's DPFERMI, which the trainer
// cannot import) as the device needs it: besides the algorithm's own
// interfaces, DeviceStep plans each step's terms, clip bound and noise for
// the Device (Device.FermiStep), and FinishDeviceStep takes the batch's sums from the
// device and does the rest of the step on the host (W's ascent step with its
// noise, and the accountant), so that the privacy calibration and
// accounting stay DP-FERMI's own code.
type ermiOnDevice interface {
	Algorithm[float32]
	DeviceStep(n int) (devstep.FermiStep, error)
	// DeviceNoiseNote says which of the algorithm's noise the device
	// generated (after deviceNoiseNote in the receipt).
	DeviceNoiseNote() string
	FinishDeviceStep(s devstep.FermiSums, theta func(noise *rand.Rand) error) error
	// ChargeDeviceStep charges the accountant for a step when it is
	// issued (its host half comes a step later).
	ChargeDeviceStep() error
}

// fermiDeviceStep runs DP-FERMI (both scopes, both calibrations, private or
// not) on the device: the model's forward and backward passes, the ERMI
// regularizer's per-sample gradients (computed on the device from its
// logits), per-sample clipping, θ's Philox noise and the SGD update stay on
// the device; a step uploads the batch's inputs, labels and sensitive
// groups (and W, a few values) and brings back the loss and the small sums
// W's step needs (devstep.FermiSums). The host algorithm draws W's noise and
// the Philox key of θ's from the run's noise stream in the CPU step's order,
// so a seeded run samples the same batches and charges the same accountant
// as on the CPU.
type fermiDeviceStep struct {
	*deviceStep
	fermi  ermiOnDevice
	noised bool // the plan adds noise: the receipt says how it was made
}

func newFermiDeviceStep(d *deviceStep, f ermiOnDevice) (Algorithm[float32], error) {
	plan, err := f.DeviceStep(0)
	if err != nil {
		return nil, errors.Join(err, d.dev.Close())
	}
	return &fermiDeviceStep{deviceStep: d, fermi: f, noised: plan.NoiseStd > 0}, nil
}

// DeviceNoiseNote is the note a run on Device "cuda" that adds noise puts
// in its receipt: how the noise was generated (seeded: whether the run was).
func DeviceNoiseNote(seeded bool) string { return deviceNoiseNote(seeded) }

// Step implements Algorithm: one DP-FERMI step, the model's half on the
// device and W's on the host.
func (d *fermiDeviceStep) Step(m Model[float32], b Batch[float32]) (float64, error) {
	if err := d.prepare(m); err != nil {
		return 0, err
	}
	// The step before's host half (W's ascent) comes back with its result:
	// it must have run before this step is planned with W. Flush reads it
	// (the device has queued the step before whole) and gives its loss,
	// which is what Step returns.
	prev, err := d.dev.Flush()
	if err != nil {
		return 0, fmt.Errorf("the step before (a device step's host half comes back one step late): %w", err)
	}
	plan, err := d.fermi.DeviceStep(b.N())
	if err != nil {
		return 0, err
	}
	// θ's update is the optimizer's, on the device.
	if _, err := d.dev.FermiStep(b.X, d.batchLabels(b), b.Groups, plan, d.fermi.FinishDeviceStep); err != nil {
		return 0, err
	}
	return prev, d.fermi.ChargeDeviceStep()
}

// Receipt implements Algorithm: DP-FERMI's, with the notes on how the
// noise was generated when the run adds any: θ's on the device (Philox),
// W's and the group counts' on the host.
func (d *fermiDeviceStep) Receipt() (accounting.Receipt, error) {
	r, err := d.fermi.Receipt()
	if err == nil && d.noised {
		r.AddNote(deviceNoiseNote(d.seeded))
		r.AddNote(d.fermi.DeviceNoiseNote())
	}
	if err == nil && d.tf32 {
		r.AddNote(tf32Note)
	}
	return r, err
}
