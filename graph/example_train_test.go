//go:build !cuda

package graph_test

import (
	"context"
	"io"
	"slices"
	"testing"

	"gorgonia.org/tensor"

	"fairdp/graph"
	"fairdp/trainer"
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
	l, err := graph.Lower[float32](g, x, out, graph.LowerOptions{Arch: "gorgonia-convnet", DropoutSeed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Params) != len(learnables) {
		t.Fatalf("%d parameter blocks, the example has %d learnables", len(l.Params), len(learnables))
	}
	seed := uint64(31)
	cfg := trainer.Defaults()
	cfg.Algo, cfg.Dataset, cfg.DataDir, cfg.DType = "dpsgd", "mnist", "../trainer/testdata/mnist-sample", "float32"
	cfg.Epochs, cfg.Batch, cfg.Seed, cfg.Quiet = 1, 100, &seed, true
	cfg.Privacy.Epsilon = 3
	job, err := trainer.Prepare(cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if job.Train.N() != 2000 {
		t.Fatalf("%d training records, want the sample's 2,000", job.Train.N())
	}
	before := slices.Clone(l.Model.Params()[0].Value)
	rep, err := trainer.TrainModel(context.Background(), job, l.Model)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Privacy.Epsilon == nil || *rep.Privacy.Epsilon > 3 || rep.Params != l.Model.NumParams() {
		t.Errorf("receipt ε %v (want ≤ 3), %d parameters in the report, the model has %d", rep.Privacy.Epsilon, rep.Params, l.Model.NumParams())
	}
	t.Logf("one private epoch: test error %v, ε %v", rep.Test.Error, *rep.Privacy.Epsilon)
	if slices.Equal(before, l.Model.Params()[0].Value) {
		t.Fatal("training left the first convolution unchanged")
	}
	if err := l.WriteBack(); err != nil {
		t.Fatal(err)
	}
	for i, n := range learnables {
		if got := n.Value().Data().([]float32); !slices.Equal(got, l.Model.Params()[i].Value) {
			t.Errorf("learnable %s does not hold the trained weights", n.Name())
		}
	}
}
