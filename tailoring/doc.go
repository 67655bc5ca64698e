// Package tailoring is group-aware privacy-budget tailoring for linear and
// logistic regression (Alabi and Wiggins, "Privacy Budget Tailoring in
// Private Data Analysis", TMLR 2023).
//
// Why: with one budget spread evenly, the Gaussian noise of a private fit is
// the same for every group, but a small group's statistics are sums over
// few records, so the same noise ruins them first. Tailoring spends the
// budget where it is needed: stage 1 estimates, privately, how badly a
// common fit serves each group (its standard error), and stage 2 gives each
// group a share of the budget proportional to its squared standard error.
//
//   - Stage 1 (EstimateStandardErrors, τ-zCDP): a pooled DP OLS fit by noisy
//     sufficient statistics, then each group's noisy clipped residual sum
//     S_k, s_k = sqrt(S_k/n_k) normalised so that Σ s_k² = 1; uniform
//     s_k = 1/√K when the noisy XᵀX is not positive definite or an S_k ≤ 0.
//     τ is cut into K+1 equal parts: one for the fit (half XᵀX, half XᵀY),
//     one for each S_k.
//   - Stage 2 (Train, μ-zCDP): T iterations of projected gradient descent on
//     the Lagrangian h = Σ_k ℓ_k + G·[g ≥ 0]·g, g = max_k ℓ_k − η (bounded
//     group loss), where every group releases its clipped gradient sum and
//     clipped loss sum at budget μ s_k²/(2T) each; β ∈ [−5, 5]^P. ℓ_k is a
//     group's mean loss or its loss sum (Objective, below).
//   - TrainOLS is the unconstrained OLS variant (the paper's Algorithm 3):
//     each group releases its own sufficient statistics with budget μ s_k².
//   - DPNoSE (Method) is the baseline without the group-aware split.
//   - RunTrials is the Monte Carlo evaluation behind the CLI and the bench.
//     Its Summary is computed from every trial, so publishing it releases
//     them all: ReleaseReceipt charges each trial its fit's budget and
//     composes them (and several summaries, e.g. a ρ sweep of both
//     methods, together), the receipt Run writes into report.json.
//   - Tune is private random search over stage 1's share and stage 2's
//     movement (step × iterations) in the manner of Papernot and Steinke
//     2022 (Theorem 2): K fits at the zCDP budget ρ_t that PlanTune
//     (accounting.PlanTuning) calibrates so that the whole search spends
//     at most a target ε, each scored by stage 2's own objective on the
//     noisy per-group loss sums of the training records, the best one
//     published with the search's RDP receipt; `fairdp train --algo
//     tailoring|dpnose --tune` calls it.
//   - Run (Prepare, then Finish) is the whole pipeline from a
//     trainer.Config (its Tailoring settings): data (synthetic with
//     SyntheticBounds, or a CSV with public bounds), the trials at every ρ,
//     and a trainer.Report with extra.tailoring (ReportExtra); `fairdp
//     train --algo tailoring|dpnose` and the bench call it. The ρ values
//     run through trainer.Sweep; a comparison of several ρ with an output
//     directory appends each finished ρ's summaries (exact, as JSON; the
//     training-split statistics only with Config.ReportTrainStats) to the
//     resumable, fsynced trainer.SweepLog RhoLogName there, its
//     settings checked by trainer.CheckSweepSettings (sweep.json), so a
//     killed run started again with the same flags skips the finished ρ
//     and gives the same results (every trial draws from its own stream,
//     named by its method, ρ and index, whatever ran before), and one with other
//     settings is refused. Prepare reads the Config's privacy settings
//     once (the clip into Options.GradClip, δ resolved into
//     ReportExtra.Delta); Finish takes them from there, never from the
//     report's record of the configuration, which it only writes.
//
// Choices this implementation makes where the paper leaves room, each
// visible in Options or the receipt:
//
//   - The paper reads ℓ_k two ways, and Options.Objective picks one.
//     GroupMeans (default; Algorithm 2, line 10): ℓ_k is group k's mean
//     loss, the noisy sum divided by the public n_k, so f = Σ_k ℓ_k weighs
//     groups equally and η is in units of a group's mean loss. GroupSums
//     (the synthetic study's definition ℓ_k = Σ_{i ≤ n_k} loss_i, f = Σ_k ℓ_k,
//     g = max_k ℓ_k): f weighs every record equally, which is ordinary
//     regression when the constraint is off, η is in units of a loss sum
//     (the paper's g has η = 0), and the step is divided by N = Σ_k n_k so
//     that LR keeps its meaning. The two differ only after the releases:
//     they cost the same.
//   - θ₁ (the paper: arbitrary) is 0, or stage 1's released β̃ with
//     Options.WarmStart.
//   - The group losses are only needed for the constraint: with it off
//     (G = 0) none is released and the gradient gets the whole μ s_k²/T.
//   - DPNoSE spends the same total ρ as DPSE, all of it in stage 2 (it has
//     no stage 1); Options.BaselineStageTwoOnly compares at equal stage-2
//     budget instead.
//   - Charges add up by sequential composition, as if every release touched
//     every record, although groups are disjoint: conservative.
//   - Model PerGroup fits one coefficient block per group, where a group's
//     accuracy depends on its own budget share only; Pooled (default) fits
//     one β, the paper's setting.
package tailoring
