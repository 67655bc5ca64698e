// Package fermi is DP-FERMI (Lowy et al. 2022): private fair
// learning by differentially private stochastic gradient descent-ascent on
// the ERMI min-max objective
//
//	min_θ max_W  L(θ) + λ (1/n) Σ_i ψ_i(θ, W)
//
// for demographic parity and equalized odds, with any number of classes and
// sensitive groups, on every fairdp model.
//
// Why a package of its own: ERMI needs a second player (the k×l matrix W,
// one per label for equalized odds) that ascends while the model descends,
// and a privacy scope that can cover either a record's whole contribution
// (--scope all) or only what depends on its sensitive attribute (--scope
// sensitive). Both change what a training step clips and noises, so DP-FERMI
// plugs into the trainer as its own Algorithm instead of being an option of
// DP-SGD.
//
// The parts:
//
//   - Regularizer holds W and the group frequencies and computes ψ_i, its
//     gradient with respect to W, and its gradient with respect to the
//     model's class probabilities split into the part that does not depend
//     on s_i and the part that does; LogitGrad carries the latter through
//     softmax or sigmoid to the logits, where the model's own Backward
//     takes over, so per-sample clipping works through the model's taps.
//     OptimalW is the closed-form maximiser (at W* the mean of ψ is ERMI).
//   - wBlock exposes W's per-sample gradients as a dpops.Tapped block, so
//     --scope all clips θ and W jointly under one accountant.
//   - DPFERMI is the trainer.Algorithm (--algo fermi): descent on θ through
//     the trainer's optimizer, projected ascent on W inside Step as
//     Algorithm 1 writes it, W + η_W[(λ/|B|) Σ_i ∇_Wψ_i + V_t] with the noise
//     V_t added after the λ scaling (DPFERMI.WNoise says how V_t and the
//     accountant's charge follow from that), Poisson
//     sampling, noise calibrated by the RDP accountant (default) or by the
//     paper's Theorem 3.3 (--calibration paper), and group frequencies
//     released with their own Gaussian noise and charged to the same
//     accountant unless --public-group-sizes. For speed a step
//     reads the batch's fairness terms from tables made once per step (W
//     is fixed within it: coefficients per matrix and group), runs a loop
//     specialised for a one-logit model (and for two groups under
//     demographic parity), and takes a one-logit models.Model's loss and
//     class probabilities from one pass (LossProbs, one exponential per
//     sample); fairness_test.go pins each against the per-sample
//     definitions (Coefficients, LogitGrad, GradW) bit for bit.
//   - DeviceStep and FinishDeviceStep (device.go) split a step for a model
//     that lives on a CUDA device (the trainer's Device "cuda",
//     cuda.DeviceFermi): DeviceStep says which terms the device clips and
//     which it sums exactly, with Step's weights, clip bound and θ noise;
//     FinishDeviceStep takes the batch's sums back and does the rest as Step
//     does (W's direction and V_t, the accountant, the ascent step), so the
//     calibration and accounting stay this package's.
//   - Presets fermi-adult, fermi-credit, fermi-parkinsons, fermi-utkface-cpu
//     and fermi-utkface-paper set the paper's hyper-parameters;
//     fermi-adult-eo is the equalized-odds setting that meets the EO
//     acceptance, violation ≤ 0.05 at error ≤ 0.24 (η_θ = 0.005, λ = 4;
//     bench/results/fermi.md).
package fermi
