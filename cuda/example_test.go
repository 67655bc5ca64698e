package cuda_test

import (
	"fmt"

	"github.com/fairdp/fairdp/cuda"
	"github.com/fairdp/fairdp/dpops"
)

// One private step of a linear layer with 2 inputs and 1 output on the
// backend chosen by --device: per-sample norms from the taps, clipping to
// C = 1, the clipped sum into the gradient buffers, then Gaussian noise
// (std 0 here, so the output is exact).
func ExampleClipper() {
	be, err := cuda.Open("cpu") // "cuda" on a GPU build and host
	if err != nil {
		fmt.Println(err)
		return
	}
	defer be.Close()
	layer := &cuda.LinearTaps{
		A:  []float32{3, 4, 0, 0}, // inputs of samples 0 and 1
		B:  []float32{1, 0.5},     // their backprops ∂L/∂z
		In: 2, Out: 1,
		GradW: make([]float32, 2), GradB: make([]float32, 1),
	}
	c := cuda.NewClipper(be)
	norms, err := c.Clip(2, dpops.Flat(1), layer)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := c.AddNoise(0, cuda.NoiseSeed{}, layer.GradW, layer.GradB); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("norms %.4f %.4f\n", norms[0], norms[1])
	fmt.Printf("clipped sum: weight %.4f %.4f, bias %.4f\n", layer.GradW[0], layer.GradW[1], layer.GradB[0])
	// Output:
	// norms 5.0990 0.5000
	// clipped sum: weight 0.5883 0.7845, bias 0.6961
}
