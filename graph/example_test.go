//go:build !cuda

package graph_test

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/fairdp/fairdp/graph"
)

// A small Gorgonia CNN, as a Gorgonia user writes it, lowered to fairdp's
// layers: Conv2d's im2col expansion, Rectify, MaxPool2D and the flattening
// Reshape are recognised, and the SoftMax head goes into the loss.
func ExampleLower() {
	const batch = 8
	g := G.NewGraph()
	x := G.NewTensor(g, tensor.Float64, 4, G.WithShape(batch, 1, 12, 12), G.WithName("x"))
	filter := G.NewTensor(g, tensor.Float64, 4, G.WithShape(4, 1, 3, 3), G.WithName("filter"), G.WithInit(G.GlorotU(1)))
	bias := G.NewVector(g, tensor.Float64, G.WithShape(4), G.WithName("bias"), G.WithInit(G.Zeroes()))
	w := G.NewMatrix(g, tensor.Float64, G.WithShape(4*6*6, 3), G.WithName("w"), G.WithInit(G.GlorotU(1)))
	b := G.NewVector(g, tensor.Float64, G.WithShape(3), G.WithName("b"), G.WithInit(G.Zeroes()))

	c := G.Must(G.Conv2d(x, filter, tensor.Shape{3, 3}, []int{1, 1}, []int{1, 1}, []int{1, 1}))
	c = G.Must(G.Rectify(G.Must(G.BroadcastAdd(c, bias, nil, []byte{0, 2, 3}))))
	p := G.Must(G.MaxPool2D(c, tensor.Shape{2, 2}, []int{0, 0}, []int{2, 2}))
	flat := G.Must(G.Reshape(p, tensor.Shape{batch, 4 * 6 * 6}))
	probs := G.Must(G.SoftMax(G.Must(G.BroadcastAdd(G.Must(G.Mul(flat, w)), b, nil, []byte{0}))))

	lowered, err := graph.Lower[float64](g, x, probs, graph.LowerOptions{Arch: "my-cnn"})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, l := range lowered.Model.Layers {
		fmt.Println(l.Name())
	}
	fmt.Println("head:", lowered.Head, "parameters:", lowered.Model.NumParams())
	// Output:
	// Conv2d(1→4, 3x3, stride 1, pad 1, in 12x12)
	// ReLU
	// MaxPool2d(2, in 4x12x12)
	// Flatten
	// Linear(144→3)
	// head: softmax parameters: 475
}
