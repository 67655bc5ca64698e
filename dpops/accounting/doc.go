// Package accounting answers "how much privacy did this run spend?" for every
// fairdp trainer, and "how much noise does it need?" before a run starts.
//
// Three accountants cover the papers fairdp reproduces:
//
//   - RDP tracks the Rényi DP of Poisson-subsampled Gaussian mechanisms
//     (DPSGD, DPSGD-F, DP-FERMI) at a list of orders and converts it to
//     (ε, δ) with the conversion of Balle et al. 2020 (default) or the classic
//     one of Mironov 2017. Releases made on the SAME Poisson sample (DPSGD-F's
//     noisy counts and noisy gradient sum) are one mechanism, not two:
//     JointSubsampledGaussian charges them once with σ_eff = (Σ σ_i⁻²)^-½,
//     because adding their RDP as if independently sampled understates ε
//     (at DPSGD-F's MNIST settings, 5.921 instead of 5.987). Independently
//     sampled mechanisms add.
//   - ZCDP adds ρ for the Gaussian mechanisms of privacy-budget tailoring and
//     enforces a budget (stage 1 τ and stage 2 μ are separate budgets).
//   - Pure composes pure ε-DP Laplace releases (Jagielski et al.) by basic
//     or advanced composition.
//
// CalibrateSigma inverts the RDP accountant: the smallest noise multiplier
// whose ε stays within a target. A Receipt records what was spent, under
// which analysis, and what the analysis assumed (Poisson sampling, scope,
// seeding), so that a number is never separated from its caveats.
//
// The numerics follow Opacus and TF-Privacy (log-space sums, the two-series
// erfc formula for fractional orders) so that their published test vectors
// are reproduced to 1e-6 relative; the tests check them against those
// vectors (Opacus, TF-Privacy, dp_accounting, OpenDP) and against a numerical integration of the Rényi divergence itself.
package accounting
