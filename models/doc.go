// Package models is fairdp's model zoo: the sequential networks the papers
// train (binary and multinomial logistic regression, an MLP, the 431,080-
// parameter MNIST CNN of DPSGD-F and the 1.6M-parameter VGG-like CNN of
// DP-FERMI, in the layouts of bench/RESULTS.md's peer figures), built from
// package nn's layers.
//
// It exists so that every trainer builds, initialises, saves and reloads the
// same networks in the same way: a Spec names a network completely, New builds
// it with PyTorch's default initialisation, and a checkpoint stores the Spec,
// the raw parameters and the privacy receipt together, so a saved model can
// never be separated from the guarantee it was trained under.
//
// A network outside the zoo (any stack of nn layers, under an Arch name of
// one's own) is described by Spec.Layers (nn.LayerSpec, which every nn layer
// gives through Spec()), so it saves, loads and validates exactly like a zoo
// model; `fairdp train --model-spec FILE.json` builds one from such a file.
//
// A tabular zoo model ("logistic", "linear-regression") may carry a
// public row-norm bound (Spec.InputNormBound) that it applies to every row
// before its first layer: objective perturbation's weights are fitted on rows
// clipped to that bound, so its released model must score them clipped too.
// Checkpoints written before the field have none and load unchanged.
//
// *Model is the implementation of trainer.Model, the interface the training
// loop and every algorithm take. Its Forward and Backward save memory
// without changing a bit of any result: a ReLU before a max-pool runs after
// it, and ReLU, Tanh and max-pool work in buffers the layer before them
// disowns (nn.InPlace), which took the VGG-like DP-SGD step at batch 64 from
// 2.1 GB to under 1 GB (TestInPlaceMatchesLayerByLayer checks the bits).
// Probabilities and Predict read the logits of any such model (one sigmoid
// logit, or a softmax) the way fairdp's losses do.
//
// The benchmarks (bench_test.go, and the table `make bench` prints,
// benchtable_test.go) time the steps users run: the Step of trainer's SGD
// and DPSGD and of package fermi's DP-FERMI, built in the external test
// package (steps_test.go) because those packages import this one. The table
// times the three kinds of step of a model alternately in one process, so
// its ratios are measured in one run.
//
// Package graph (not this one, so the binary does not link Gorgonia)
// rebuilds any model as a Gorgonia expression graph with the same weights:
// the slow, independent path that proves the nn engine's logits and
// gradients.
package models
