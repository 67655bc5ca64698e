package federated

import (
	"fmt"
	"math"

	"github.com/fairdp/fairdp/nn"
	"github.com/fairdp/fairdp/trainer"
)

// The SteFFLe authors' public code trains with a step-decayed η_θ and reports
// test metrics averaged over checkpoints instead of the last iterate's
// (bench/results/steffle.md, "Authors' protocol"). Both are options here, off
// by default, so that runs can follow that protocol (preset
// steffle-credit-authors) without changing what the algorithm computes.

// StepDecay is a step-decay schedule of the server's θ step size: η_θ is
// multiplied by Factor after every Every rounds, so round r steps with
// η_θ·Factor^⌊(r−1)/Every⌋. The zero value (and Factor 1) is a constant
// step.
type StepDecay struct {
	Factor float64 // in (0, 1]; 0 or 1: no decay
	Every  int     // rounds between two decays (≥ 1 when Factor is set)
}

// Scale is the multiplier of η_θ in round (1-based).
func (d StepDecay) Scale(round int) float64 {
	if d.Factor == 0 || d.Factor == 1 || d.Every <= 0 || round < 1 {
		return 1
	}
	return math.Pow(d.Factor, float64((round-1)/d.Every))
}

// Validate reports a factor outside [0, 1] or a decay without a step,
// naming ServerConfig's fields.
func (d StepDecay) Validate() error {
	var errs trainer.FieldErrors
	if !(d.Factor >= 0 && d.Factor <= 1) {
		errs = append(errs, trainer.FieldError{Field: "ServerConfig.Decay.Factor", Msg: fmt.Sprintf("must be in (0,1], or 0 for none (got %v)", d.Factor)})
	}
	if d.Every < 0 || d.Factor != 0 && d.Factor != 1 && d.Every == 0 {
		errs = append(errs, trainer.FieldError{Field: "ServerConfig.Decay.Every", Msg: fmt.Sprintf("must be ≥ 1 round when Decay.Factor is set (got %d)", d.Every)})
	}
	if len(errs) == 0 {
		return nil
	}
	return errs
}

// scaleStep rewrites the aggregated θ gradients g so that the optimizer's
// plain SGD step θ ← θ − η(g' + wd·θ) becomes θ ← θ − f·η(g + wd·θ), the
// step with the decayed rate f·η: g' = f·g + (f−1)·wd·θ. Both the
// in-process Steffle (whose step the trainer's optimizer takes with
// Config.LR) and Server (its own optimizer) go through here, so the two
// stay identical bit for bit.
func scaleStep[T nn.Float](params []*nn.Param[T], f, weightDecay float64) {
	ft, extra := T(f), T((f-1)*weightDecay)
	for _, p := range params {
		for i := range p.Grad {
			p.Grad[i] = ft*p.Grad[i] + extra*p.Value[i]
		}
	}
}

// Checkpoint is the test metrics of the model after Epoch epochs.
type Checkpoint struct {
	Epoch       int     `json:"epoch"`
	Error       float64 `json:"test_error"`
	DPViolation float64 `json:"test_dp_violation"`
	EOViolation float64 `json:"test_eo_violation"`
}

// CheckpointAverage is the mean of the test metrics over the checkpoints
// taken at Epochs: the number the SteFFLe authors' code reports for a run
// (their mean over checkpoints every 10 epochs from epoch 20).
type CheckpointAverage struct {
	Epochs      []int   `json:"epochs"`
	Error       float64 `json:"test_error"`
	DPViolation float64 `json:"test_dp_violation"`
	EOViolation float64 `json:"test_eo_violation"`
}

// AverageCheckpoints is the plain mean of cs's metrics (zero for none).
func AverageCheckpoints(cs []Checkpoint) CheckpointAverage {
	var a CheckpointAverage
	for _, c := range cs {
		a.Epochs = append(a.Epochs, c.Epoch)
		a.Error += c.Error
		a.DPViolation += c.DPViolation
		a.EOViolation += c.EOViolation
	}
	if n := float64(len(cs)); n > 0 {
		a.Error, a.DPViolation, a.EOViolation = a.Error/n, a.DPViolation/n, a.EOViolation/n
	}
	return a
}

// CheckpointEpochs lists the epochs at which a run of epochs epochs is
// evaluated for the average: every every-th epoch (every, 2·every, …) from
// epoch from on. every = 0 means none.
func CheckpointEpochs(every, from, epochs int) []int {
	var out []int
	if every <= 0 {
		return nil
	}
	for e := every; e <= epochs; e += every {
		if e >= from {
			out = append(out, e)
		}
	}
	return out
}

// protocol is the schedule and the checkpoint epochs of set for a run of
// epochs epochs with roundsPerEpoch rounds each, or a FieldError naming
// the setting that leaves no checkpoint to average.
func protocol(set Settings, epochs, roundsPerEpoch int) (StepDecay, []int, error) {
	decay := StepDecay{Factor: set.LRDecay, Every: set.LRDecayEvery * roundsPerEpoch}
	at := CheckpointEpochs(set.AverageEvery, set.AverageFrom, epochs)
	if set.AverageEvery > 0 && len(at) == 0 {
		return StepDecay{}, nil, trainer.FieldErrors{{Field: "Federation.AverageFrom", Msg: fmt.Sprintf(
			"leaves no checkpoint to average: every %d epochs from epoch %d, but the run has Epochs %d", set.AverageEvery, set.AverageFrom, epochs)}}
	}
	return decay, at, nil
}
