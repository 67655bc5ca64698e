// Package dpsgdf trains with DPSGD, Naïve and DPSGD-F (Xu, Du and Wu 2021):
// one training loop with three clipping policies, for users
// whose DP-SGD model loses much more accuracy on a minority group than on
// the majority and who need the cost of privacy shared evenly.
//
// DP-SGD clips every per-sample gradient at one bound C0. Samples of a small
// or hard group have larger gradients, are clipped more often and lose more
// of their signal, so privacy costs that group more accuracy. DPSGD-F counts,
// per group and with Gaussian noise, how many gradients exceed C0 and raises
// the group's bound in proportion to its clipped fraction; the noise on the
// gradient sum grows with the largest bound. Naïve instead reweights each
// group by the inverse of its (noisy) share of the batch. Both noisy releases
// of a step (counts with σ1, gradients with σ2) are charged to one RDP
// accountant, and σ2 can be calibrated to a target ε accounting for both.
//
// There is one DP-SGD, the trainer's (trainer.DPSGD): an Algorithm here
// holds one and gives it a trainer.ClipPolicy for Naive and Adaptive, so
// sampling, the forward and backward pass, per-sample norms, the gradient
// noise, σ2's calibration and the accountant are that code; this package
// adds the noisy group counts, the bounds or weights, the joint mechanism
// of counts and gradients, and the per-group logs and plots.
//
// The paper does not say what a group whose noisy counts are ≤ 0 gets;
// at a realistic σ1 that choice decides a rare group's bound, so it is an
// option, Config.CountGuard: GuardC0 (the bound C0), GuardFloor
// (counts floored at 0, 0/0 read as wholly clipped) or GuardSmooth (the
// group's fraction shrunk towards the pooled one). Naïve's divisor guard
// is its own option, Config.NaiveGuard: NaiveGuardOne (counts below 1
// raised to 1) or NaiveGuardSmooth (σ1 pseudo-records at the even share
// b/K, so a group lost in the count noise cannot take the weight b/K).
// On tabular data the trainer's data-aware defaults (trainer.AdaptToData)
// run the smooth guards, and DPSGD-F with half the rule's clip as C0: with
// σ1 = 10·σ2 the counts of a batch are often mostly noise, and the old
// guards then threw the bounds, the weights and the gradient noise
// (docs/dpsgdf.md). Every guard reads only the released counts, so none
// changes ε; report.json records which ran. The policy
// reads a batch only through its per-group counts of clipped and unclipped
// gradients, so the same code decides when the trainer runs the step on a
// CUDA device (Core hands it the DP-SGD to run there). Flat is
// DP-SGD itself (no policy), kept so that the Table 1 reproduction runs all
// three variants from one Config.
//
// The package registers `--algo dpsgdf` and `--algo naive` with the trainer
// (DP-SGD is the trainer's `--algo dpsgd`), the presets `dpsgdf-mnist`,
// `dpsgdf-adult` and `dpsgdf-dutch` with the paper's settings, and the
// paper's tabular encodings as the built-in data sets `adult-dpsgdf` and
// `dutch-dpsgdf` (PaperSchema: numeric columns min-max scaled to [0, 1]),
// with `dutch35-dpsgdf`, a 35-feature variant of Dutch (the paper's count).
// EqualEpsilonEpochs is the paper's protocol of shortening DPSGD-F's and
// Naïve's runs until their ε equals DPSGD's.
package dpsgdf
