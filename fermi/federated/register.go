package federated

import (
	"github.com/fairdp/fairdp/nn"
	"github.com/fairdp/fairdp/trainer"
)

// init makes SteFFLe available as --algo steffle (the federation comes from
// the job's Config.Federation, e.g. `fairdp train --algo steffle --silos N
// --heterogeneity h`) and registers
// the paper's Credit-card setting as the preset steffle-credit.
func init() {
	trainer.Register(Name, construct[float32], construct[float64])
	trainer.RegisterPreset("steffle-credit", creditPreset)
	trainer.RegisterPreset("steffle-credit-authors", creditAuthorsPreset)
}

func construct[T nn.Float](job *trainer.Job) (trainer.Algorithm[T], error) {
	a, err := New[T](job, job.Cfg.Federation)
	if err != nil {
		return nil, err
	}
	return a, nil
}

// creditPreset is the SteFFLe paper's setting: Credit card,
// logistic regression, batch 256, 60 epochs, ε = 1 per silo, plain SGD,
// sensitive attributes private, N = 3 split by age. Measured choices
// (bench/results/steffle.md): η_θ = 0.05, as the central fermi presets,
// because the paper's 0.005 leaves even non-private SGD unconverged after
// 60 epochs (.195 vs .186 error); C = 0.5, because with --scope sensitive
// the clip covers only the s-dependent terms and the old C = 5 multiplied
// the noise by 10 for nothing; λ = 4, the smallest λ that lowers the
// violation at N = 3 on 15 seeds (Credit is already nearly fair).
func creditPreset(c *trainer.Config) {
	c.Algo, c.Dataset, c.Model = Name, "credit", "logistic"
	c.Epochs, c.Batch, c.LR, c.Optimizer, c.Momentum = 60, 256, 0.05, trainer.OptimizerSGD, 0
	c.TrainFrac = 0.75
	c.Privacy.Epsilon, c.Privacy.Delta, c.Privacy.Clip, c.Privacy.Sigma = 1, 0, 0.5, 0
	c.Privacy.Sampling = "poisson"
	c.Fair.Lambda, c.Fair.Fairness, c.Fair.Scope = 4, "dp", "sensitive"
	c.Federation.Silos, c.Federation.Heterogeneity, c.Federation.SiloAttribute = 3, 0, "age"
	c.Fair.LRW, c.Fair.Radius, c.Fair.Calibration = 0.01, 5, "accountant"
}

// creditAuthorsPreset is steffle-credit under the protocol of the SteFFLe
// authors' public code (bench/results/steffle.md, "Authors' protocol";
// bench/results/steffle_authors_code.md): δ = 1/n² of all n records, η_θ
// decayed in steps, test metrics averaged over the checkpoints every 10
// epochs from epoch 20 (the last iterate's stay in the report's test
// block). The code's decay rate and step are not published: ×0.5 every
// 20 epochs is this preset's choice. For N = 1 the code runs 15 epochs
// and evaluates every 3: give Epochs 15, Federation.AverageEvery 3,
// AverageFrom 6 and LRDecayEvery 5 (the same fractions of the run).
//
// The noise is calibrated by the accountant, not by the paper's closed
// form (Theorem 6): since a sensitive-scope round is charged without
// amplification by sampling (its exact s-independent terms show which
// records were sampled), Theorem 6's σ at ε = 1 spends ε ≈ 15.8 per silo
// by PLD, and raising ε does not help (σ shrinks with it); under scope
// all it spends 1.27. A preset that is refused at its own ε is of no use,
// so only the calibration departs from the code; Fair.Calibration paper
// stays available where the accountant certifies it.
func creditAuthorsPreset(c *trainer.Config) {
	creditPreset(c)
	c.Fair.Lambda = AuthorsLambda
	c.Federation.TotalDelta = true
	c.Federation.LRDecay, c.Federation.LRDecayEvery = 0.5, 20
	c.Federation.AverageEvery, c.Federation.AverageFrom = 10, 20
}

// AuthorsLambda is steffle-credit-authors' λ, the authors' code's default.
// It was chosen when sensitive-scope rounds were still (wrongly) charged
// with amplification by sampling, as the largest of the paper's grid
// {0, 0.25, 0.5, 1, 1.5, 2} at which the RDP accountant then certified
// Theorem 6's noise (bench/results/steffle.md).
const AuthorsLambda = 0.5
