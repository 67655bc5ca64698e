//go:build !cuda

package graph_test

import (
	"context"
	"io"
	"slices"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/fairdp/fairdp/graph"
	"github.com/fairdp/fairdp/nn"
	"github.com/fairdp/fairdp/trainer"
)

// TestExampleConvnetTrainsPrivately: Gorgonia's examples/convnet (v0.9.18;
// three Conv2d without a bias, Dropout, two Mul, SoftMax, built as the
// example builds it, in float32 as its -dtype float32 runs it) lowered
// trains with DP-SGD for one epoch on the MNIST sample
// (trainer/testdata/mnist-sample: 2,000 training images), with a receipt
// within the budget, and its trained weights are written back into the
// example's learnable nodes.
func TestExampleConvnetTrainsPrivately(t *testing.T) {
	g, x, out, learnables := graph.ConvnetExample(t, 100, tensor.Float32)
	trainExamplePrivately[float32](t, g, x, out, learnables, "float32")
}

// TestExampleResNetTrainsPrivately: examples/resnet (scaled down to 2, 3
// and 4 channels, on the sample's 28×28 images), lowered to Residual
// joins, trains the same way in float64 (the example's default -dtype).
func TestExampleResNetTrainsPrivately(t *testing.T) {
	g, x, out, learnables := graph.ResNetExample(t, 100, 28)
	trainExamplePrivately[float64](t, g, x, out, learnables, "float64")
}

// trainExamplePrivately lowers an example's graph, trains it with DP-SGD
// for one epoch on the MNIST sample (ε ≤ 3) and writes the weights back.
func trainExamplePrivately[T nn.Float](t *testing.T, g *G.ExprGraph, x, out *G.Node, learnables G.Nodes, dtype string) {
	t.Helper()
	l, err := graph.Lower[T](g, x, out, graph.LowerOptions{Arch: "gorgonia-example", DropoutSeed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Params) != len(learnables) {
		t.Fatalf("%d parameter blocks, the example has %d learnables", len(l.Params), len(learnables))
	}
	seed := uint64(31)
	cfg := trainer.Defaults()
	cfg.Algo, cfg.Dataset, cfg.DataDir, cfg.DType = "dpsgd", "mnist", "../trainer/testdata/mnist-sample", trainer.DType(dtype)
	cfg.Epochs, cfg.Batch, cfg.Seed, cfg.Quiet = 1, 100, &seed, true
	cfg.Privacy.Epsilon = 3
	job, err := trainer.Prepare(cfg, trainer.PrepareOptions{Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if job.Train.N() != 2000 {
		t.Fatalf("%d training records, want the sample's 2,000", job.Train.N())
	}
	before := slices.Clone(l.Model.Params()[0].Value)
	rep, err := trainer.Train(context.Background(), withModel(job, l.Model))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Privacy.Epsilon == nil || *rep.Privacy.Epsilon > 3 || rep.Params != l.Model.NumParams() {
		t.Errorf("receipt ε %v (want ≤ 3), %d parameters in the report, the model has %d", rep.Privacy.Epsilon, rep.Params, l.Model.NumParams())
	}
	t.Logf("one private epoch: test error %v, ε %v (the examples draw their initial weights from the global math/rand)", rep.Test.Error, *rep.Privacy.Epsilon)
	if slices.Equal(before, l.Model.Params()[0].Value) {
		t.Fatal("training left the first convolution unchanged")
	}
	if err := l.WriteBack(); err != nil {
		t.Fatal(err)
	}
	for i, n := range learnables {
		if got := n.Value().Data().([]T); !slices.Equal(got, l.Model.Params()[i].Value) {
			t.Errorf("learnable %s does not hold the trained weights", n.Name())
		}
	}
}
