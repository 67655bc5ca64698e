package federated

import (
	"fairdp/nn"
	"fairdp/trainer"
)

// init makes SteFFLe available as --algo steffle (the federation comes from
// the job's Config.Federation, e.g. `fairdp train --algo steffle --silos N
// --heterogeneity h`) and registers
// the paper's Credit-card setting as the preset steffle-credit.
func init() {
	trainer.Register(Name, construct[float32], construct[float64])
	trainer.RegisterPreset("steffle-credit", creditPreset)
}

func construct[T nn.Float](job *trainer.Job) (trainer.Algorithm[T], error) {
	a, err := New[T](job, job.Cfg.Federation)
	if err != nil {
		return nil, err
	}
	return a, nil
}

// creditPreset is the paper's SteFFLe setting (REFERENCE §5): Credit card,
// logistic regression, batch 256, 60 epochs, ε = 1, plain SGD with DP-FERMI's
// tabular step sizes, sensitive attributes private.
func creditPreset(c *trainer.Config) {
	c.Algo, c.Dataset, c.Model = Name, "credit", "logistic"
	c.Epochs, c.Batch, c.LR, c.Optimizer, c.Momentum = 60, 256, 0.005, "sgd", 0
	c.TrainFrac = 0.75
	c.Privacy.Epsilon, c.Privacy.Delta, c.Privacy.Clip, c.Privacy.Sigma = 1, 0, 5, 0
	c.Privacy.Sampling = "poisson"
	c.Fair.Lambda, c.Fair.Fairness, c.Fair.Scope = 1, "dp", "sensitive"
	c.Fair.LRW, c.Fair.Radius, c.Fair.Calibration = 0.01, 5, "accountant"
}
