package dpsgdf

import (
	"fmt"
	"math"

	"fairdp/dpops/accounting"
	"fairdp/nn"
	"fairdp/trainer"
)

func init() {
	trainer.Register(string(Adaptive), constructor[float32](Adaptive), constructor[float64](Adaptive))
	trainer.Register(string(Naive), constructor[float32](Naive), constructor[float64](Naive))
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
// from --clip, σ2 from --sigma (as the trainer's DP-SGD, a given σ wins over
// --epsilon) or calibrated to --epsilon, σ1 from --count-noise-ratio, the
// groups from the training set (the label for MNIST, the sensitive column
// for tabular data). When a given σ2 will spend more than a finite
// --epsilon, it says so on job.Log.
func NewForJob[T nn.Float](job *trainer.Job, p Policy) (*Algorithm[T], error) {
	c := job.Cfg
	pr := c.Privacy
	if c.Fair.Scope != accounting.ScopeAll {
		return nil, fmt.Errorf("%s protects each record's whole gradient: %w", p, trainer.FieldErrors{{Field: "Fair.Scope", Msg: fmt.Sprintf("must be all (got %q)", c.Fair.Scope)}})
	}
	if c.Fair.Calibration == "paper" {
		return nil, fmt.Errorf("%s: %w", p, trainer.FieldErrors{{Field: "Fair.Calibration", Msg: fmt.Sprintf("paper is DP-FERMI's closed form; %s calibrates with the RDP accountant", p)}})
	}
	cfg := Config{Policy: p, Clip: pr.Clip, Sigma: pr.Sigma, Epsilon: pr.Epsilon, Delta: pr.Delta, AllowLargeDelta: pr.AllowLargeDelta,
		CountNoiseRatio: c.Fair.CountNoiseRatio, Batch: c.Batch, Epochs: c.Epochs, Sampling: pr.Sampling,
		Groups: job.Train.GroupNames, Seed: c.Seed}
	a, err := New[T](cfg, job.Train.N(), job.Source)
	if err != nil {
		return nil, err
	}
	if pr.Sigma > 0 && !math.IsInf(pr.Epsilon, 1) && job.Log != nil {
		if eps, _ := a.PlannedEpsilon(); eps > pr.Epsilon {
			fmt.Fprintf(job.Log, "note: --sigma %v is used as given and the run will spend ε = %.4g (δ = %g), more than --epsilon %v; pass --sigma 0 to calibrate σ to --epsilon\n",
				pr.Sigma, eps, a.cfg.Delta, pr.Epsilon)
		}
	}
	return a, nil
}
