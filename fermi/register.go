package fermi

import (
	"github.com/fairdp/fairdp/nn"
	"github.com/fairdp/fairdp/trainer"
)

// init makes DP-FERMI available as --algo fermi and registers the paper's
// settings as presets (Lowy et al. 2022, appendix F.2, and its reference code).
func init() {
	trainer.Register(Name, construct[float32], construct[float64])
	for name, apply := range Presets {
		trainer.RegisterPreset(name, apply)
	}
}

func construct[T nn.Float](job *trainer.Job) (trainer.Algorithm[T], error) {
	a, err := New[T](job)
	if err != nil {
		return nil, err
	}
	return a, nil
}

// tabular is the reference code's tabular setting: logistic regression,
// 200 epochs, batch 1024, plain SGD, η_W = 0.01, D = 5, 75/25 split,
// ε = 1, λ = 1, sensitive attributes private, δ = 1/n² — except η_θ =
// PresetLR instead of the paper's 0.005, which here leaves the non-private
// model unconverged after 200 epochs (Adult test error .169 instead of the
// .156 that SGD reaches), and the clip bound PresetClip.
func tabular(dataset string) func(*trainer.Config) {
	return func(c *trainer.Config) {
		c.Algo, c.Dataset, c.Model = Name, dataset, "logistic"
		c.Epochs, c.Batch, c.LR, c.Optimizer, c.Momentum = 200, 1024, PresetLR, trainer.OptimizerSGD, 0
		c.TrainFrac = 0.75
		c.Privacy.Epsilon, c.Privacy.Delta, c.Privacy.Clip, c.Privacy.Sigma = 1, 0, PresetClip, 0
		c.Privacy.Sampling = "poisson"
		c.Fair.Lambda, c.Fair.Fairness, c.Fair.Scope = 1, "dp", "sensitive"
		c.Fair.LRW, c.Fair.Radius, c.Fair.Calibration = 0.01, 5, "accountant"
	}
}

// adultEO is fermi-adult-eo, equalized odds on Adult (the acceptance "EO
// violation ≤ 0.05 at error ≤ 0.24" at ε = 1). It is fermi-adult except:
// η_θ = PaperLR, the paper's 0.005: with the presets' 0.05 the model
// converges further, the regulariser overshoots the true-positive-rate gap
// (women's TPR above men's) before it closes the false-positive-rate gap,
// and no λ gets the larger of the two below ≈ .052 even at ε = ∞; with
// 0.005 the gaps cross lower (bench/results/fermi.md, "Adult, equalized
// odds"). λ = 4: on the bench's split, ε = 1, mean EO violation .041 at
// test error .169 (λ = 3–5 all reach ≤ .05). Fairness eo conditions ψ on
// the label (one W per label). C, η_W, D, epochs and batch stay
// fermi-adult's: C and η_W barely move the result, D ≤ 1 weakens the
// regulariser, and fewer epochs or larger batches act like a smaller η_θ
// (the same page lists every setting tried).
func adultEO(c *trainer.Config) {
	tabular("adult")(c)
	c.LR, c.Fair.Fairness, c.Fair.Lambda = PaperLR, "eo", 4
}

// utkface is the image setting: the VGG-like CNN on UTKFace (9 age
// buckets, race as the sensitive attribute), batch 64, η_θ = 0.001,
// η_W = 0.005, ε = 100, with the paper's plain SGD or, for the few epochs
// of a CPU profile, Adam.
func utkface(size, epochs int, optimizer trainer.OptimizerName) func(*trainer.Config) {
	return func(c *trainer.Config) {
		c.Algo, c.Dataset, c.Model, c.ImageSize = Name, "utkface", "vgg", size
		c.Epochs, c.Batch, c.LR, c.Optimizer, c.Momentum = epochs, 64, 0.001, optimizer, 0
		c.TrainFrac = 0.75
		c.Privacy.Epsilon, c.Privacy.Delta, c.Privacy.Clip, c.Privacy.Sigma = 100, 0, PresetClip, 0
		c.Privacy.Sampling = "poisson"
		c.Fair.Lambda, c.Fair.Fairness, c.Fair.Scope = 1, "dp", "sensitive"
		c.Fair.LRW, c.Fair.Radius, c.Fair.Calibration = 0.005, 5, "accountant"
	}
}

// PresetClip is the per-sample clip bound C of the presets (the paper
// tunes L_θ in [1, 5] for its batch-level clipping). With --scope
// sensitive it bounds the s-dependent terms only, whose per-sample norm on
// Adult is about 0.3–0.5 (θ) plus at most C/2 for W (see
// DPFERMI.WWeight): 0.5 clips few samples and keeps the noise small.
// --scope all clips the whole loss gradient too and wants a larger C
// (2 on Adult).
const PresetClip = 0.5

// PresetLR is η_θ of the tabular presets (plain SGD).
const PresetLR = 0.05

// PaperLR is the DP-FERMI reference code's tabular η_θ, used by
// fermi-adult-eo.
const PaperLR = 0.005

// Presets are the --preset values this package registers. The CPU profile
// for images shrinks the resolution to 64×64 and trains 3 epochs with Adam;
// the paper profile (128×128, 150 epochs, SGD) is for GPU hosts.
var Presets = map[string]func(*trainer.Config){
	"fermi-adult":         tabular("adult"),
	"fermi-adult-eo":      adultEO,
	"fermi-credit":        tabular("credit"),
	"fermi-parkinsons":    tabular("parkinsons"),
	"fermi-utkface-cpu":   utkface(64, 3, trainer.OptimizerAdam),
	"fermi-utkface-paper": utkface(128, 150, trainer.OptimizerSGD),
}
