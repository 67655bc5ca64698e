// Package linear is gonum-based linear and logistic regression, plain and
// private, and Jagielski et al.'s DP post-processing and DP oracle learner.
//
// Linear models are where the fairness–privacy trade-offs of fairdp's papers
// can be measured exactly: the non-private answer is known in closed form, so
// every private estimator here can be checked against it, and the noise each
// one adds can be traced to a line of the privacy receipt.
//
//   - regression.go: ordinary least squares (QR), ridge, the normal equations
//     (Cholesky), prediction, and the per-example losses (squared error and
//     logistic) with their derivatives.
//   - dpstats.go: DP linear regression by noisy sufficient statistics: rows
//     and targets clipped to explicit public bounds, Analyze-Gauss symmetric
//     noise on XᵀX and Gaussian noise on XᵀY, charged to a zCDP accountant.
//   - dpgd.go: per-example clipped loss and gradient sums (the building block
//     of every private optimiser here, including budget tailoring) and
//     full-batch DP gradient descent for linear and logistic loss with
//     projection on a box.
//   - synthetic.go: the grouped synthetic regression data of the budget
//     tailoring paper (K groups, Y = Xβ_k + N(0, σ_k²)).
//   - postproc.go, lp.go, oracle.go, costsensitive.go: Jagielski et al.'s DP
//     post-processing (Hardt et al.'s LP on noisy cells) and DP oracle
//     learner; grid.go is the LP's brute-force check (GridOptimum). The
//     oracle learner's OracleConfig.Fallback (our addition, off by default)
//     lets a noise-dominated round answer with a constant classifier, so
//     the private learner need not err far above the majority class.
//     The LP equalises error rates (--fairness eo, fpr) or positive rates
//     (dp: Hardt, Price and Srebro 2016's parity constraint, its rates
//     over both labels, so its slack is doubled). Post-processing's base
//     classifier may itself be private (postproc_base.go: Postproc.Base
//     "objpert" or "dpsgd", logistic regression by objective perturbation
//     or by trainer's DP-SGD): then the pipeline protects whole records,
//     one receipt composes the two budgets by basic composition
//     (composeBaseReceipt: (ε₁, δ₁) and ε₂ give (ε₁+ε₂, δ₁)), and more
//     than two bins are UniformBins (public edges), never quantiles of
//     the private scores.
//   - objpert.go, objpert_pipeline.go: private logistic regression by
//     objective perturbation (Chaudhuri, Monteleoni, Sarwate 2011,
//     Algorithm 2; pure ε-DP), rows clipped to a public norm bound with the
//     intercept feature counted, solved by the same Newton iteration as
//     FitLogistic; RunObjPert is `fairdp train --algo objpert`, writing a
//     zoo "logistic" checkpoint that `fairdp eval` scores. Its settings
//     are a trainer configuration section (objpert_config.go, report.json
//     key "objpert"). The same objective takes Gaussian noise instead
//     (MechanismGaussian, (ε, δ)-DP: Kifer, Smith, Thakurta 2012, Theorem
//     2's σ, GaussianObjPertSigma), whose norm grows like √d rather than
//     d, and an optional penalty on the feature weights alone (WeightL2, a
//     convex regulariser that costs no privacy).
//   - objpert_choice.go: the default mechanism (MechanismAuto), chosen by
//     ChooseObjPert from public facts only: the mechanism with the smaller
//     expected noise norm (ObjPertNoiseNorm: 2(d+1)/ε' pure, σ√(d+1)
//     Gaussian), Λ = DefaultObjPertL2 for both and no weight penalty.
//     The rule was checked on sweeps (bench/results/tabular.md, 2 seeds:
//     Λ at 2, 8, 32, 128 times the smallest; a weight penalty of 16–256
//     times the smallest Λ, or 0.03 and 0.1 times the expected noise over
//     n): 8 times was best on Communities at every ε and, for the Gaussian
//     mechanism, on the 15,000 × 100 table at ε ≥ 1 (at ε = 0.5, 128
//     times gave .109 against .123, both above the majority class's
//     .099). Every weight penalty cost 0.001–0.008 of error on Credit,
//     Dutch and a 3,750 × 20 table, and only 0.1 times the noise lifted
//     the 15,000 × 100 table at ε = 0.5 to the majority class (.0996
//     against .1219), so the default adds none.
//     objpert_regression.go is its least-squares twin for a schema with a
//     target: the residuals clipped smoothly (a pseudo-Huber loss with a
//     slope bounded by 1 and curvature 1/h, the conditions of Kifer, Smith
//     and Thakurta 2012, Theorem 2) on labels clipped to a public range;
//     scored by MSPE, its weights in the report (no checkpoint yet).
//   - pipeline.go: those two as the library calls the command line and the
//     bench run: LoadFairData (split, base classifier or external scores),
//     RunFair (one run, a trainer.Report with extra.jagielski), RunPostproc
//     (both, and the files); sweep.go is a sweep's sweep.csv row, written
//     through trainer's resumable sweep runner.
//
// Privacy spending goes through fairdp/dpops/accounting so that a result can
// carry its receipt; randomness comes from a caller-seeded *rand.Rand.
package linear
