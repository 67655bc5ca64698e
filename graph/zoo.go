//go:build !cuda

package graph

import (
	"fmt"
	"math/rand/v2"

	G "gorgonia.org/gorgonia"

	"github.com/fairdp/fairdp/models"
	"github.com/fairdp/fairdp/nn"
)

// Net is a network written as a Gorgonia graph, in the form Lower reads: an
// input node (batch first), the output node (the logits) and the learnable
// nodes, each an input node holding its current value.
type Net struct {
	Graph  *G.ExprGraph
	Input  *G.Node
	Output *G.Node
	// Learnables are the parameter nodes in the fairdp model's Params order.
	Learnables G.Nodes
}

// Build writes m as a Gorgonia graph for batches of batch samples, with
// m's current weights: the inverse of Lower (Lower of the result is m
// again, layer for layer and value for value). Every layer Export supports
// is supported. The graph has no loss: add one to train it in Gorgonia, or
// run it with a TapeMachine.
func Build[T nn.Float](m *models.Model[T], batch int) (*Net, error) {
	b, err := build(m, batch)
	if err != nil {
		return nil, fmt.Errorf("graph: Build: %w", err)
	}
	return &Net{Graph: b.g, Input: b.x, Output: b.cur, Learnables: b.params}, nil
}

// Zoo builds the zoo network spec names (models.Archs: logistic, mlp,
// mnist-cnn, vgg) as a Gorgonia graph, with the weights models.New draws
// from rng: with the same seed, Lower(Zoo(spec)) is models.New(spec) bit
// for bit, so a Gorgonia user starts from the same network the command line
// trains.
func Zoo[T nn.Float](spec models.Spec, batch int, rng *rand.Rand) (*Net, error) {
	if len(spec.Layers) > 0 {
		return nil, fmt.Errorf("graph: Zoo: spec %q lists its own layers; Zoo builds the zoo archs %v", spec.Arch, models.Archs)
	}
	m, err := models.New[T](spec, rng)
	if err != nil {
		return nil, fmt.Errorf("graph: Zoo: %w", err)
	}
	return Build(m, batch)
}

// Logistic is logistic regression on in features: one Mul and a bias, one
// logit for two classes, else one per class.
func Logistic[T nn.Float](in, classes, batch int, rng *rand.Rand) (*Net, error) {
	return Zoo[T](models.Spec{Arch: "logistic", InShape: []int{in}, Classes: classes}, batch, rng)
}

// MLP is the multi-layer perceptron with the given hidden widths, ReLU
// after each.
func MLP[T nn.Float](in int, hidden []int, classes, batch int, rng *rand.Rand) (*Net, error) {
	return Zoo[T](models.Spec{Arch: "mlp", InShape: []int{in}, Classes: classes, Hidden: hidden}, batch, rng)
}

// MNISTCNN is the classic 2-conv/2-linear MNIST CNN (DPSGD-F's 431K network) on
// c×h×w images (h, w ≥ 16): two 5×5 Conv2d with ReLU and 2×2 MaxPool2D, then
// dense 500 and the classes.
func MNISTCNN[T nn.Float](c, h, w, classes, batch int, rng *rand.Rand) (*Net, error) {
	return Zoo[T](models.Spec{Arch: "mnist-cnn", InShape: []int{c, h, w}, Classes: classes}, batch, rng)
}

// VGG is the VGG-like CNN of bench/RESULTS.md's peer figures on c×h×w images
// (h, w multiples of 16): six 3×3 padded Conv2d with ReLU and MaxPool2D 2, 2,
// 4, then dense 160, 64 and the classes.
func VGG[T nn.Float](c, h, w, classes, batch int, rng *rand.Rand) (*Net, error) {
	return Zoo[T](models.Spec{Arch: "vgg", InShape: []int{c, h, w}, Classes: classes}, batch, rng)
}
