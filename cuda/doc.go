// Package cuda holds fairdp's GPU code: the kernels for the hot paths of
// private training, the seam they run behind, an emulated device that runs
// them on the CPU, and their CPU twins.
//
// Why it exists: on a GPU host the per-sample work of DP-SGD (squared norms
// of every sample's gradient from the layers' taps, clip factors, the clipped
// sum and the Gaussian noise over every parameter) should run where the
// activations already are. The kernels live in kernels/*.cu, are compiled by
// nvcc to PTX for sm_70, sm_80 and sm_90 (`make ptx`; the PTX in ptx/ is
// committed) and are loaded through gorgonia.org/cu when fairdp is built with
// the build tag `cuda`.
//
// The shape of the package:
//   - Device is the seam: allocate, free, copy host↔device, launch a kernel
//     by name (grid, block, shared memory, 8-byte argument slots), GEMM with
//     cuBLAS's column-major semantics, synchronise. Driver (tag `cuda`) is
//     an NVIDIA GPU through gorgonia.org/cu and cuBLAS; Emulator (tag
//     `cudaemu`, never in a product build) compiles the same kernels/*.cu
//     sources for the CPU with the system C++ compiler and emu/cuda_shim.h,
//     runs each block's threads as fibers meeting at a real barrier
//     (emu/runtime.h) and serves GEMMs from the CPU BLAS.
//   - Backend is the kernel-level interface on host slices (the GPU stages
//     them through device buffers kept across calls): CPU is the twin every
//     build has, DeviceBackend runs the kernels on any Device (NewGPU is
//     DeviceBackend on a Driver). Clipper composes a Backend into dpops'
//     clip-and-sum step.
//   - DeviceNet is a device-resident classifier (linear, convolution, ReLU,
//     max-pool and group-norm layers; sigmoid or softmax cross-entropy:
//     fairdp's logistic model, MLP, MNIST CNN and VGG-like CNN, with or
//     without group norms, NewDeviceMLP for the first two) whose DP-SGD step uploads only the batch: parameters,
//     activations, taps, norms, gradients and the optimizer's state
//     (Optimizer: plain SGD, momentum or Adam, nn's conventions) stay on the
//     device. A step's clip is flat, or a group policy's (GroupClip: DPSGD-F,
//     Naive): the device counts each group's norms above and at most the
//     threshold and, given the counts' noise the policy drew before the step
//     (DeviceRule), releases the noisy counts and computes the bounds, the
//     weights and the noise std itself (fairdp_group_rule, package dpsgdf's
//     maths operation for operation); the released counts come back with the
//     step's result to the policy's own code, whose rule must agree bit for
//     bit. (A policy with no DeviceRule gets the counts mid-step and returns
//     a bound and a weight per group.) DeviceConv is its convolution
//     layer (forward, input gradient, per-sample gradients by one
//     strided-batched GEMM, their norms and clipped sum; the unfolded input
//     in a scratch the net's convolutions share, walked in chunks; with or
//     without a bias). A step is one closure on the driver's thread that
//     waits for none of its own work: its batch goes up from pinned,
//     double-buffered memory on a copy stream, its clip check and loss come
//     back asynchronously (StepAsync, Pending; the trainer reads step t's
//     once step t+1 is queued), and the clip check guards the update
//     kernels on the device (async.go). DPSGD-F and Naive wait for nothing
//     either; a DP-FERMI step's sums come back with its result and its host
//     half (W's ascent) runs when that is read, before the next step is
//     planned. A step's small inputs (groups, count noise, W) go up with its
//     batch. SetTF32 puts the forward and backward GEMMs on TF32 tensor
//     cores, the released sums staying FP32; the emulated device rounds
//     the GEMMs' inputs to TF32 then (RoundTF32), so its effect on results
//     shows without a GPU.
//   - DeviceFermi runs DP-FERMI's steps (package fermi; Lowy et al. 2022) on a
//     DeviceNet: kernels/ermi.cu computes the ERMI regularizer's per-sample
//     gradients with respect to the logits and to the small matrix W from
//     the logits the forward pass left on the device, W's share of the joint
//     per-sample norms, and the per-batch sums W's step needs (FermiSums);
//     package fermi plans each step (FermiStep: which terms are clipped,
//     which summed exactly, with what weights and noise) and takes W's step
//     and the accountant's charge on the host. DeviceNet's step is split
//     into phases (loss gradient, backward, norms, clip factors, release)
//     that DeviceFermi composes with its kernels.
//   - ReleaseTwin is DeviceNet's release (Philox noise on its parameter
//     buffers, then the scale) on nn's parameters on the CPU, so that a CPU
//     run with the device's noise can be compared with a device run value
//     for value.
//
// No GPU is available where fairdp is developed and tested. Each kernel has
// a twin, a method of CPU with the same contract that performs the same IEEE
// operations in the same order (reductions included), so that kernel and twin
// agree bit for bit; the tests check every twin against fairdp's own CPU path
// (nn's layers, dpops.Clipper, brute-force per-sample gradients) and Philox
// against Random123's published vectors. The same tests run the kernels'
// own code: `make test-gpu-emulated` (part of `make test`) on the emulated
// device, `make test-gpu` on a GPU host (FAIRDP_DEVICE=cuda), each comparing
// with the twins bit for bit.
//
// Without the tag `cuda`, Available is false and Check says how to get a
// CUDA build. With the tag on a machine without a usable device, Check names
// the missing device and the driver's error; gorgonia.org/cu's own start-up
// check (which would exit the program) is defused in cuinit.c.
//
// TrainerDevice is how the trainer gets its device for Config.Device
// "cuda": it implements trainer.Device (Load a model's nn layers and nn
// optimizer as a DeviceNet; Step; FermiStep through a DeviceFermi; Params;
// Close) on the device OpenDevice opens (GPU 0 in a `cuda` build; the
// emulated device in a `cudaemu` test build when FAIRDP_DEVICE=emu asks for
// it). This package does not import the trainer, and the trainer and the
// algorithms do not import this package: TrainerDevice satisfies
// trainer.Device structurally, the step descriptions it takes are package
// devstep's (converted to this package's DPSGDStep and FermiStep, whose
// noise key it draws from the run's stream the description carries), and
// the binary registers it (cmd/fairdp/register_cuda.go, only in builds with
// the tag cuda or cudaemu: trainer.RegisterDevice(trainer.DeviceCUDA, CheckDevice,
// OpenTrainerDevice)). So the default binary links none of this package,
// and a newcomer reading the loop sees one interface, not CUDA.
//
// The `cuda` build loads cuBLAS at run time (cublas_dl.c: libcublas.so.13,
// .12 or .11, or FAIRDP_CUBLAS) and links only the driver's libcuda.so.1.
// stubdriver/ builds a stand-in libcuda.so.1 and libcublas.so.12 over the
// emulator, so `make test-gpu-driver` (part of `make test`) runs the cuda
// build's real driver path and its whole on-device suite without a GPU.
//
// What is not done here: SteFFLe on the device, evaluation on
// the device; see bench/results/cuda.md. Nothing in this package has run on
// a GPU.
package cuda
