package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/dpops"
)

// Benchmarks of the backend under test (FAIRDP_DEVICE=cuda on a GPU host,
// the emulated device with -tags cudaemu, the twins otherwise, which are
// references, not fairdp's CPU engine). Through Backend every call includes
// its host↔device copies, as the interface takes host slices; DeviceMLP's
// step does not. Sizes: the noise of the ≈1.6M-parameter VGG CNN; the ghost
// norms of a 4096→512 linear layer at batch 256; VGG's dominant convolution
// at 128×128, batch 64; device-resident DP-SGD steps of the MLP, the MNIST
// CNN and the VGG-like CNN.
//
//	make bench-gpu  # = FAIRDP_DEVICE=cuda go test -tags cuda -run '^$' -bench . -benchmem ./cuda

func BenchmarkAddGaussian1M6(b *testing.B) {
	be := backendUnderTest(b)
	dst := make([]float32, 1_600_000)
	seed := NoiseSeed{Key: [2]uint32{1, 2}}
	b.SetBytes(int64(4 * len(dst)))
	for i := 0; b.Loop(); i++ {
		seed.Nonce[0] = uint32(i)
		if err := be.AddGaussian(dst, 1, seed); err != nil {
			b.Fatal(err)
		}
	}
}

// dpops.AddGaussian (ChaCha8 + ziggurat) on the same buffer, for scale.
func BenchmarkDpopsAddGaussian1M6(b *testing.B) {
	dst := make([]float32, 1_600_000)
	r := rand.New(rand.NewPCG(1, 2))
	b.SetBytes(int64(4 * len(dst)))
	for b.Loop() {
		if err := dpops.AddGaussian(r, dst, 1); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLinearSqNorms(b *testing.B) {
	be := backendUnderTest(b)
	const n, in, out = 256, 4096, 512
	r := rand.New(rand.NewPCG(3, 4))
	a, g := randF32(r, n*in, 1), randF32(r, n*out, 1)
	sq := make([]float64, n)
	b.SetBytes(int64(4 * (len(a) + len(g))))
	for b.Loop() {
		if err := be.LinearSqNorms(sq, a, g, n, in, out, true); err != nil {
			b.Fatal(err)
		}
	}
}

// The dominant layer of the VGG-like model at 3×128×128, batch 64 (conv2,
// 32→32 channels, 3×3, 128×128 outputs): unfold, per-sample norms and the
// clipped sum, each call with its host↔device copies (the unfolded input is
// 1.2 GB). Too slow for the CPU twin; `make bench-gpu` on a GPU host.
func BenchmarkVGGConv2ClipStep(b *testing.B) {
	be := backendUnderTest(b)
	if _, ok := be.(CPU); ok {
		b.Skip("the CPU twin would take minutes per iteration; run on a device (make bench-gpu)")
	}
	const n = 64
	g := ConvGeom{InC: 32, InH: 128, InW: 128, OutC: 32, K: 3, Stride: 1, Pad: 1}
	r := rand.New(rand.NewPCG(5, 6))
	c := &ConvTaps{X: randF32(r, n*g.InC*g.InH*g.InW, 1), B: randF32(r, n*g.OutC*g.HW(), 1), Geom: g,
		GradW: make([]float32, g.OutC*g.CKK()), GradB: make([]float32, g.OutC)}
	clip := NewClipper(be)
	for b.Loop() {
		if _, err := clip.Clip(n, dpops.Flat(1), c); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
}

// Device-resident steps of the benchmark model shapes, plain (no clip, no
// noise: the trainer's --algo sgd on the device) and DP-SGD, at batch 64 and
// 256: logistic regression on Adult's 108 features, an Adult-sized MLP
// (108 → 64 → 32 → 1), the MNIST CNN (1×28×28) and the VGG-like CNN
// (3×128×128, 9 classes). Only the batch and labels are copied in, the
// loss and two flags out; samples/s and the model's device memory (MB) are
// reported. gpu-check.sh runs these on the GPU. VGG is skipped on an
// emulated device (minutes per step).
func BenchmarkDeviceNetStep(b *testing.B) {
	db, ok := backendUnderTest(b).(*DeviceBackend)
	if !ok {
		b.Skip("needs a device: -tags cudaemu, or a GPU with -tags cuda (make bench-gpu)")
	}
	for _, plan := range stepPlans() {
		for _, dp := range []bool{false, true} {
			for _, n := range []int{64, 256} {
				algo := map[bool]string{false: "plain", true: "dpsgd"}[dp]
				b.Run(fmt.Sprintf("%s/%s/b%d", plan.name, algo, n), func(b *testing.B) {
					dev := db.Device()
					if plan.name == "vgg" && strings.Contains(dev.Name(), "emulated") {
						b.Skip("minutes per step on the emulated device")
					}
					net, x, y := benchNet(b, dev, plan, n)
					net.SetTF32(os.Getenv("FAIRDP_BENCH_TF32") == "1")
					noise := rand.New(rand.NewPCG(9, 10))
					step := DPSGDStep{Clip: math.MaxFloat64, Scale: 1.0 / float64(n), LR: 0.01}
					// One step before the timed ones: it sizes the batch buffers and
					// warms cuBLAS and the driver's JIT (b.Loop starts the timer).
					if _, err := net.Step(x, y, step); err != nil {
						b.Fatal(err)
					}
					// As the trainer issues them (TrainerDevice.Step): step t's
					// result is read once step t+1 is queued.
					var pending *Pending
					for b.Loop() {
						if dp {
							step = DPSGDStep{Clip: 1, NoiseStd: 1, Scale: 1.0 / float64(n), LR: 0.01, Seed: NewNoiseSeed(noise)}
						}
						p, err := net.StepAsync(x, y, step)
						if err == nil && pending != nil {
							_, err = pending.Wait()
						}
						if err != nil {
							b.Fatal(err)
						}
						pending = p
					}
					if _, err := pending.Wait(); err != nil {
						b.Fatal(err)
					}
					b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
					b.ReportMetric(float64(net.DeviceBytes())/1e6, "device-MB")
				})
			}
		}
	}
}
