package nn_test

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/fairdp/fairdp/nn"
)

// Example runs one DP-SGD-style step through a small model by hand:
// forward, per-sample loss, backward to every layer's tap, per-sample
// gradient norms, clip factors, the clipped gradient sum and an SGD step.
func Example() {
	rng := rand.New(rand.NewPCG(1, 2))
	l1, act, l2 := nn.NewLinear[float64](3, 4), nn.NewTanh[float64](), nn.NewLinear[float64](4, 2)
	l1.Init(rng)
	l2.Init(rng)
	layers := []nn.Layer[float64]{l1, act, l2}
	var params []*nn.Param[float64]
	for _, l := range layers {
		params = append(params, l.Params()...)
	}

	x := []float64{1, 0, -1, 0.5, 2, 0, -1, -1, 1} // 3 samples × 3 features
	labels := []int{0, 1, 1}
	const batch, clip = 3, 0.5

	h := x
	for _, l := range layers {
		h = l.Forward(h, batch, true)
	}
	loss, d := make([]float64, batch), make([]float64, batch*2)
	nn.SoftmaxCrossEntropy(h, labels, 2, nil, loss, d)
	for i := len(layers) - 1; i >= 0; i-- {
		d = layers[i].Backward(d, i > 0)
	}
	norms := make([]float64, batch)
	for _, l := range layers {
		l.SqNorms(norms)
	}
	scale := make([]float64, batch)
	for i, n2 := range norms {
		scale[i] = math.Min(1, clip/math.Sqrt(n2)) / batch // clip, then average
	}
	nn.ZeroGrads(params)
	for _, l := range layers {
		l.ParamGrads(scale)
	}
	nn.NewSGD(0.1).Step(params)

	for i := range norms {
		fmt.Printf("sample %d: loss %.4f, ‖g‖ %.4f, clip factor %.4f\n", i, loss[i], math.Sqrt(norms[i]), scale[i]*batch)
	}
	// Output:
	// sample 0: loss 0.5196, ‖g‖ 0.8036, clip factor 0.6222
	// sample 1: loss 0.8604, ‖g‖ 1.2769, clip factor 0.3916
	// sample 2: loss 1.0389, ‖g‖ 1.3589, clip factor 0.3680
}
