// Package devstep is the vocabulary the training loop and a device share
// for a step that runs resident on the device: plain descriptions of a
// DP-SGD step (flat or group-wise clip) and of a DP-FERMI step, and the sums
// a DP-FERMI step brings back. It holds no code that runs a step.
//
// Why it exists: the loop (package trainer) and the algorithms (package
// fermi) must not import the device code (package cuda), and package cuda,
// which sits below them, must not import the loop. trainer.Device is the
// interface the loop sees; for cuda's type to satisfy it without either
// package naming the other, the values the interface's methods exchange
// must live in a package below both: this one. Layers and the optimizer
// need no type here, because the device takes nn's own (nn.Layer,
// nn.Optimizer) and reads them as package nn describes them.
//
// DP-FERMI's plan and sums are the device's own types (cuda.FermiStep is
// FermiStep): plain data both sides read. DP-SGD's step is not: cuda's
// DPSGDStep carries a device noise key and device-private state, so the
// device converts DPSGD into it at the start of a step
// (cuda/loopdevice.go). The noise key is not part of a description: the
// step carries the run's noise stream and the device draws its key from
// it, so that the draws happen in the order the CPU step makes them.
package devstep
