package fermi_test

import (
	"fmt"

	"github.com/fairdp/fairdp/fermi"
	"github.com/fairdp/fairdp/metrics"
)

// The regularizer's closed-form maximiser turns the mean of ψ into ERMI:
// four samples of two equal groups whose soft
// predictions differ by group (hand check: ERMI = .15²/.275 + .35²/.225 + .4²/.275 + .1²/.225 − 1).
func ExampleRegularizer() {
	probs := []float64{0.2, 0.8, 0.4, 0.6, 0.7, 0.3, 0.9, 0.1} // F(x_i) for 4 samples, 2 classes
	s := []int{0, 0, 1, 1}
	y := []int{1, 0, 0, 0}
	reg, err := fermi.NewRegularizer(2, 2, false, []float64{0.5, 0.5})
	if err != nil {
		panic(err)
	}
	copy(reg.W, reg.OptimalW(probs, s, y))
	mean := 0.0
	for i := range s {
		mean += reg.Psi(probs[2*i:2*i+2], s[i], y[i]) / 4
	}
	fmt.Printf("mean ψ at W* = %.4f, ERMI = %.4f\n", mean, metrics.ERMIDemographicParity(probs, s, 2, 2))
	// Output: mean ψ at W* = 0.2525, ERMI = 0.2525
}

// Theorem 3.3's noise (Lowy et al. 2022) for the paper's Adult run.
func ExamplePaperSigmas() {
	n := 33916
	sigmaTheta, sigmaW, err := fermi.PaperSigmas(n, 0.3249, 6800, 5, 5, 1, 1/float64(n*n))
	if err != nil {
		panic(err)
	}
	fmt.Printf("σ_θ = %.3f, σ_W = %.4f\n", sigmaTheta, sigmaW)
	// Output: σ_θ = 1.948, σ_W = 0.0779
}
