// Package graph connects fairdp models with Gorgonia expression graphs, the
// way Go users already describe networks.
//
// fairdp trains on its own layers (package nn: explicit forward and backward
// passes on BLAS, with the taps that per-sample clipping reads), because
// Gorgonia v0.9.18's VM is 4–5× slower on these models and would need
// per-sample gradient copies (README, nn/doc.go). Gorgonia's place is the
// front end and the independent reference:
//
//   - Export rebuilds a fairdp model as a Gorgonia graph for a fixed batch
//     size, with its current weights, so a trained model can be run by
//     Gorgonia's own TapeMachine, and so the tests can check the engine's
//     logits and every parameter gradient against Gorgonia's symbolic
//     differentiation (to 1e-9 in float64 for every zoo architecture).
//
// Only programs that import this package link Gorgonia: the fairdp binary
// does not. Importing it hands the BLAS chosen by package backend (OpenBLAS
// in the openblas build) to Gorgonia's tensor package.
//
// The package is left out of `cuda` builds: Gorgonia switches to its own
// CUDA ops under the same build tag and then needs cuDNN, which fairdp does
// not require.
package graph
