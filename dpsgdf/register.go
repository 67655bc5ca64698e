package dpsgdf

import (
	"fmt"

	"github.com/fairdp/fairdp/dpops/accounting"
	"github.com/fairdp/fairdp/nn"
	"github.com/fairdp/fairdp/trainer"
)

func init() {
	trainer.Register(Name, constructor[float32](Adaptive), constructor[float64](Adaptive))
	trainer.Register(NaiveName, constructor[float32](Naive), constructor[float64](Naive))
	for _, p := range Presets() {
		trainer.RegisterPreset(p.Name, p.Apply)
	}
}

func constructor[T nn.Float](p Policy) trainer.Constructor[T] {
	return func(job *trainer.Job) (trainer.Algorithm[T], error) {
		return NewForJob[T](job, p)
	}
}

// NewForJob builds the policy's algorithm from a prepared trainer job: C0
// from --clip, σ2 from --sigma or calibrated to --epsilon, σ1 from
// --count-noise-ratio, DPSGD-F's count guard from Fair.CountGuard,
// Naïve's from Fair.NaiveGuard, the groups from the training set (the label for
// MNIST, the sensitive column for tabular data). A given σ2 with a finite
// --epsilon is held to it by trainer.Train (PlannedRunEpsilon).
func NewForJob[T nn.Float](job *trainer.Job, p Policy) (*Algorithm[T], error) {
	c := job.Cfg
	pr := c.Privacy
	if c.Fair.Scope != accounting.ScopeAll {
		return nil, fmt.Errorf("%s protects each record's whole gradient: %w", p, trainer.FieldErrors{{Field: "Fair.Scope", Msg: fmt.Sprintf("must be all (got %q)", c.Fair.Scope)}})
	}
	if c.Fair.Calibration == "paper" {
		return nil, fmt.Errorf("%s: %w", p, trainer.FieldErrors{{Field: "Fair.Calibration", Msg: fmt.Sprintf("paper is DP-FERMI's closed form; %s calibrates with the run's accountant (Privacy.Accountant)", p)}})
	}
	cfg := Config{Policy: p, Clip: pr.Clip, Sigma: pr.Sigma, Epsilon: pr.Epsilon, Delta: pr.Delta, AllowLargeDelta: pr.AllowLargeDelta,
		CountNoiseRatio: c.Fair.CountNoiseRatio, CountGuard: CountGuard(c.Fair.CountGuard),
		NaiveGuard: NaiveGuard(c.Fair.NaiveGuard), Batch: c.Batch, Epochs: c.Epochs, Sampling: pr.Sampling, Accountant: pr.Accountant,
		Groups: job.Train.GroupNames, Seed: c.Seed}
	a, err := New[T](cfg, job.Train.N(), job.Source)
	if err != nil {
		return nil, err
	}
	return a, nil
}
