package dpsgdf

import (
	"fmt"
	"math"

	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/trainer"
)

// Preset is a named set of the paper's settings for `--preset`.
type Preset struct {
	Name  string
	Apply func(*trainer.Config)
}

// Paper settings shared by the presets (Xu, Du and Wu 2021).
const (
	paperBatch      = 256
	paperDelta      = 1e-6
	paperCountRatio = 10   // σ1 = 10·σ2
	paperTrainFrac  = 0.8  // 80/20 split of the tabular sets
	paperL2         = 0.01 // L2 regularisation of the logistic models
)

// Records of the tabular sets before the split (rows without missing cells).
const (
	adultRecords = 45222
	dutchRecords = 60420
)

// PaperLR is the paper's "lr 1/sqrt(T)" for the tabular sets as the
// constant rate 1/sqrt(T_total), T_total = epochs · round(train/batch) the
// number of Poisson steps of the whole run, with train = ⌊0.8·records⌋ the
// training split: the trainer's learning rate is constant.
func PaperLR(records, epochs, batch int) float64 {
	train := int(math.Floor(paperTrainFrac * float64(records)))
	steps := epochs * int(math.Round(float64(train)/float64(batch)))
	return 1 / math.Sqrt(float64(steps))
}

// Presets returns the paper's settings as named presets:
//
//   - dpsgdf-mnist: unbalanced MNIST (class 8 cut to 500 training images),
//     the 431K-parameter CNN, plain SGD with lr 0.01, batch 256, 60 epochs,
//     σ2 = 0.8, C0 = 1, δ = 1e-6, σ1 = 10·σ2 (no L2: the paper uses it for
//     the logistic models only);
//   - dpsgdf-adult, dpsgdf-dutch: the paper encodings (PaperSchema, data
//     sets adult-dpsgdf and dutch-dpsgdf: 45 and 37 features, numeric
//     columns min-max scaled to [0, 1] as in the paper), logistic
//     regression, L2 0.01 (as weight
//     decay), plain SGD with lr 1/sqrt(T) (PaperLR: 0.01883 for Adult's
//     2,820 steps, 0.01627 for Dutch's 3,780), batch 256, 20 epochs, σ2 = 1,
//     C0 = 0.5, δ = 1e-6, σ1 = 10·σ2, 80/20 split, group = sex.
//
// The presets leave the number of steps at the paper's epochs for every
// policy; the paper instead shortens DPSGD-F's and Naïve's runs so their ε
// (which also pays for the noisy counts) equals DPSGD's: EqualEpsilonEpochs
// gives that number of epochs.
func Presets() []Preset {
	return []Preset{
		{Name: "dpsgdf-mnist", Apply: func(c *trainer.Config) {
			paperCommon(c)
			c.Dataset, c.Model, c.LR, c.Epochs = "mnist-unbalanced", "mnist-cnn", 0.01, 60
			c.Privacy.Sigma, c.Privacy.Clip = 0.8, 1
		}},
		{Name: "dpsgdf-adult", Apply: func(c *trainer.Config) {
			paperTabular(c, "adult", adultRecords)
		}},
		{Name: "dpsgdf-dutch", Apply: func(c *trainer.Config) {
			paperTabular(c, "dutch", dutchRecords)
		}},
	}
}

func paperCommon(c *trainer.Config) {
	c.Algo = Name
	c.Batch = paperBatch
	c.Optimizer, c.Momentum = trainer.OptimizerSGD, 0
	c.TrainFrac = paperTrainFrac
	c.Privacy.Epsilon = math.Inf(1) // σ2 is given; ε is what the accountant reports
	c.Privacy.Delta = paperDelta
	c.Privacy.Sampling = "poisson"
	c.Fair.CountNoiseRatio = paperCountRatio
	c.Fair.WeightDecay = 0
	c.Fair.Scope = "all"
}

func paperTabular(c *trainer.Config, dataset string, records int) {
	paperCommon(c)
	c.Dataset, c.Model, c.Epochs = dataset+"-dpsgdf", "logistic", 20
	c.LR = PaperLR(records, c.Epochs, c.Batch)
	c.Privacy.Sigma, c.Privacy.Clip = 1, 0.5
	c.Fair.WeightDecay = paperL2
}

// EqualEpsilonEpochs is the paper's protocol for comparing the policies at
// one privacy level: with σ2 given, DPSGD-F and Naïve also pay for the
// noisy counts, so the paper shortens their runs until their ε equals
// DPSGD's. It returns the largest number of epochs, at most cfg.Epochs, at
// which cfg's policy spends no more ε (Balle et al. 2020 conversion, at
// cfg's δ) than DPSGD (Flat) with the same settings for cfg.Epochs epochs,
// on n training records. The trainer runs whole epochs, so the ε matched
// is at most DPSGD's, not equal. Flat, and a cfg whose σ2 is calibrated to
// an ε (Sigma 0), keep cfg.Epochs.
func EqualEpsilonEpochs(cfg Config, n int) (int, error) {
	if cfg.Policy == Flat || cfg.Sigma == 0 {
		return cfg.Epochs, nil
	}
	planned := func(c Config) (float64, error) {
		seed := uint64(0) // planning only: no noise is drawn
		_, src := dpops.NewRand(&seed)
		a, err := New[float64](c, n, src)
		if err != nil {
			return 0, err
		}
		eps, _ := a.PlannedEpsilon()
		return eps, nil
	}
	flat := cfg
	flat.Policy = Flat
	target, err := planned(flat)
	if err != nil {
		return 0, err
	}
	for e := cfg.Epochs; e >= 1; e-- {
		c := cfg
		c.Epochs = e
		eps, err := planned(c)
		if err != nil {
			return 0, err
		}
		if eps <= target {
			return e, nil
		}
	}
	return 0, fmt.Errorf("dpsgdf: even one epoch of %s spends more than DPSGD's ε %.4g over %d epochs", cfg.Policy, target, cfg.Epochs)
}
