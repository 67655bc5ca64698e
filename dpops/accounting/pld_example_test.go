package accounting_test

import (
	"errors"
	"fmt"

	"github.com/fairdp/fairdp/dpops/accounting"
)

// ExamplePLD accounts 60 MNIST epochs of DPSGD (q = 256/60000, σ = 1,
// 14,040 steps) with the PLD accountant, falling back to RDP where PLD
// cannot bound the run.
func ExamplePLD() {
	var pld accounting.PLD
	_ = pld.Step(accounting.SubsampledGaussian(256.0/60000, 1.0, 1, "gradients"), 14040)
	eps, err := pld.Epsilon(1e-5)
	if errors.Is(err, accounting.ErrPLDRange) {
		var rdp accounting.RDP
		_ = rdp.Step(accounting.SubsampledGaussian(256.0/60000, 1.0, 1, "gradients"), 14040)
		eps, _ = rdp.Epsilon(1e-5)
		fmt.Println("PLD cannot bound this run:", err)
	}
	fmt.Printf("ε = %.4f\n", eps)
	// Output: ε = 2.8202
}
