package dpsgdf_test

import (
	"fmt"

	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/dpsgdf"
)

// DPSGD-F for Adult's sexes at ε = 3: σ2 is calibrated so that the
// gradient release and the count release (σ1 = 10·σ2) together meet the
// target. Per step, the group whose gradients are clipped more often gets
// the larger bound.
func Example() {
	seed := uint64(1)
	_, src := dpops.NewRand(&seed)
	alg, err := dpsgdf.New[float32](dpsgdf.Config{
		Policy: dpsgdf.Adaptive, Clip: 0.5, Epsilon: 3, Delta: 1e-6, CountNoiseRatio: 10,
		Batch: 256, Epochs: 20, Groups: []string{"Male", "Female"},
	}, 36177, src)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("σ2 = %.3f, σ1 = %.2f\n", alg.Sigma(), alg.CountSigma())

	// Noisy counts of one step: 10 of 100 men and 30 of 50 women clipped.
	bounds, _ := dpsgdf.AdaptiveBounds(0.5, 256, []float64{10, 30}, []float64{90, 20})
	fmt.Printf("C^Male = %.2f, C^Female = %.2f\n", bounds[0], bounds[1])
	// Output:
	// σ2 = 0.907, σ1 = 9.07
	// C^Male = 0.82, C^Female = 2.42
}

// The paper compares the policies at one ε: with σ2 = 1 given, DPSGD-F
// also pays for its noisy counts, so on Adult's 36,177 training records it
// runs 19 epochs to DPSGD's 20.
func ExampleEqualEpsilonEpochs() {
	epochs, err := dpsgdf.EqualEpsilonEpochs(dpsgdf.Config{
		Policy: dpsgdf.Adaptive, Clip: 0.5, Sigma: 1, Delta: 1e-6, CountNoiseRatio: 10,
		Batch: 256, Epochs: 20, Groups: []string{"Male", "Female"},
	}, 36177)
	fmt.Println(epochs, err)
	// Output: 19 <nil>
}
