package accounting_test

import (
	"errors"
	"fmt"
	"os"

	"github.com/fairdp/fairdp/dpops/accounting"
)

// DPSGD with Poisson rate 0.04 and noise multiplier 1.5 for 2250 steps
// (Opacus's test_rdp_accountant: ε = 7.32911117143).
func ExampleRDP() {
	var acct accounting.RDP
	if err := acct.Step(accounting.SubsampledGaussian(0.04, 1.5, 1.0, "gradients"), 2250); err != nil {
		fmt.Println(err)
		return
	}
	eps, order := acct.Epsilon(1e-5)
	classic, _ := acct.EpsilonClassic(1e-5)
	fmt.Printf("ε = %.4f at order %g (classic conversion: %.4f)\n", eps, order, classic)
	// Output: ε = 7.3291 at order 3.9 (classic conversion: 8.0738)
}

// DPSGD-F composes two mechanisms per step: noisy group counts (σ1 = 8) and
// noisy gradients (σ2 = 0.8), at Xu, Du and Wu 2021's MNIST settings.
func ExampleRDP_Step() {
	var acct accounting.RDP
	counts := accounting.SubsampledGaussian(1.0/214, 8, 1, "group counts")
	grads := accounting.SubsampledGaussian(1.0/214, 0.8, 1, "gradients")
	for range 60 * 214 {
		_ = acct.Step(counts, 1)
		_ = acct.Step(grads, 1)
	}
	eps, _ := acct.Epsilon(1e-6)
	fmt.Printf("ε = %.2f\n", eps)
	// Output: ε = 5.91
}

func ExampleCalibrateSigma() {
	// Opacus's get_noise_multiplier (ε = 8, δ = 1e-5, q = 0.04, 2250 steps) ...
	sigma, err := accounting.CalibrateSigma(8, 1e-5, 0.04, 2250, accounting.WithEpsilonTolerance(0.01))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("Opacus search: σ = %.4f\n", sigma)
	// ... and the smallest σ that meets ε ≤ 8.
	sigma, _ = accounting.CalibrateSigma(8, 1e-5, 0.04, 2250)
	fmt.Printf("exact search:  σ = %.4f\n", sigma)
	// Output:
	// Opacus search: σ = 1.4160
	// exact search:  σ = 1.4158
}

// Privacy-budget tailoring charges each Gaussian release to a zCDP budget.
func ExampleZCDP() {
	stage1, _ := accounting.NewZCDP(0.4)
	_ = stage1.SpendGaussian(1, 2, "XᵀX")    // ρ = 1/8
	_ = stage1.SpendGaussian(1, 2, "XᵀY")    // ρ = 1/8
	err := stage1.SpendGaussian(1, 1, "S_k") // ρ = 1/2: too much
	fmt.Println(errors.Is(err, accounting.ErrBudgetExceeded))
	fmt.Printf("ρ = %.3f, remaining %.3f, ε(δ=1e-6) = %.3f\n", stage1.Rho(), stage1.Remaining(), stage1.Epsilon(1e-6))
	// Output:
	// true
	// ρ = 0.250, remaining 0.150, ε(δ=1e-6) = 3.542
}

// Jagielski et al.'s oracle learner spreads a total ε over T rounds.
func ExamplePerRoundEpsilon() {
	eps0, _ := accounting.PerRoundEpsilon(1, 1e-5, 100)
	fmt.Printf("per round ε0 = %.5f (basic composition would allow %.5f)\n", eps0, 0.01)
	// Output: per round ε0 = 0.02000 (basic composition would allow 0.01000)
}

func ExampleReceipt_WriteText() {
	var acct accounting.RDP
	_ = acct.Step(accounting.SubsampledGaussian(0.04, 1.5, 1.0, "gradients"), 2250)
	receipt, err := acct.Receipt(1e-5, accounting.RunInfo{Scope: accounting.ScopeAll, Sampling: accounting.SamplingPoisson})
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = receipt.WriteText(os.Stdout)
	// Output:
	// privacy: (ε = 7.329, δ = 1e-05)-DP [rdp accountant, balle2020 conversion, order 3.9]
	//   classic conversion: ε = 8.074
	//   subsampled-gaussian q=0.04 σ=1.5 sensitivity=1 ×2250 (gradients)
	//   scope: all; sampling: poisson; noise seeded from crypto/rand
}
