package trainer

import (
	"github.com/fairdp/fairdp/dpops/accounting"
	"github.com/fairdp/fairdp/nn"
)

// Hooks are what an algorithm adds to the loop beyond Sampler, Step and
// Receipt: named extension points in the manner of GoMLX's training loop
// (OnStart, OnEpoch, OnEnd), one struct so that the loop's whole contract
// is in Algorithm and this type. Every field is optional; the zero value
// adds nothing (plain SGD's). Run calls them in this order:
//
//	OnStart(exact)                  once, before the first step
//	Step … Step                     (Algorithm.Step)
//	Resident.Flush(), .Sync(m),     after each epoch's steps
//	OnEpoch()
//	Resident.Close(), OnEnd(m, …)   after the last epoch
//	NotCovered()                    while the receipt is completed
//
// Why a struct of functions and not optional interfaces found by type
// assertion: a reader of Run sees every hook in one place, an algorithm
// states in one method which it uses, and a wrapper (the device step)
// composes its host's hooks explicitly instead of forwarding every
// interface its host might implement.
type Hooks[T nn.Float] struct {
	// OnStart tells the algorithm whether the run may release exact
	// statistics of the training records in its epoch fields and results:
	// true when the run is not private or Config.ReportTrainStats asks.
	OnStart func(exact bool)
	// OnEpoch returns the fields metrics.jsonl adds under "algo" for the
	// epoch just ended (e.g. DPSGD-F's clip bounds); called once per epoch.
	OnEpoch func() map[string]any
	// OnEnd adds the algorithm's results to the report (plots, Extra)
	// after the last epoch, before the files are written.
	OnEnd func(m Model[T], job *Job, rep *Report) error
	// NotCovered lists what the algorithm releases or assumes beyond its
	// guarantee (e.g. DP-FERMI's public group sizes); Run adds it to a
	// private run's receipt.
	NotCovered func() []accounting.NotCovered
	// PlannedRunEpsilon says, before the first step, the ε (at the run's δ,
	// with the conversion its receipt uses) the whole run as configured
	// will spend. Train needs it to hold a given Privacy.Sigma to a finite
	// Privacy.Epsilon; a private algorithm without it cannot be given both.
	PlannedRunEpsilon func() (epsilon, delta float64, err error)
	// Resume saves and restores the algorithm's state between epochs; a
	// run with a checkpoint is refused without it.
	Resume Resumable
	// Resident is set when the step keeps the model's parameters on a
	// device and updates them there (the optimizer's update is part of its
	// step): Run then applies no optimizer, calls Sync before anything
	// reads the host model (each epoch's evaluation, the report) and Close
	// when the run ends.
	Resident *Resident[T]
}

// Resident is the part of Hooks of a step whose parameters live on a device.
type Resident[T nn.Float] struct {
	// Sync copies the parameters from the device into m.
	Sync func(m Model[T]) error
	// Close frees the device; it may be called more than once.
	Close func() error
	// Flush, when set, says the step's loss comes back one step late: each
	// Step returns the summed loss of the step before it (0 for an epoch's
	// first), and Flush waits for the last step and returns its loss. Run
	// calls it after each epoch's steps, before Sync, and applies its
	// per-step loss checks (divergence) to each loss when it arrives.
	Flush func() (lossSum float64, err error)
}
