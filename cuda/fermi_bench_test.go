package cuda

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// A device-resident DP-FERMI step (DeviceFermi, two groups, demographic
// parity) next to the DP-SGD step of the same model and batch, so one run
// gives the ratio: --scope all (one clipped pass, as DP-SGD plus the ERMI
// kernels) and --scope sensitive (a clipped and an exact pass: one more
// backward). Models: the Adult-sized MLP (batch 256) and the MNIST CNN
// (batch 64), as in BenchmarkDeviceNetStep; samples/s.
func BenchmarkDeviceFermiStep(b *testing.B) {
	db, ok := backendUnderTest(b).(*DeviceBackend)
	if !ok {
		b.Skip("needs a device: -tags cudaemu, or a GPU with -tags cuda (make bench-gpu)")
	}
	conv := func(outC, k int) ConvGeom { return ConvGeom{OutC: outC, K: k, Stride: 1} }
	for _, c := range []struct {
		plan  cnnPlan
		batch int
	}{
		{cnnPlan{name: "mlp", c: 108, h: 1, w: 1, hidden: []int{64, 32}, classes: 1}, 256},
		{cnnPlan{name: "mnist-cnn", c: 1, h: 28, w: 28, convs: []ConvGeom{conv(20, 5), conv(50, 5)}, pools: []int{2, 2},
			hidden: []int{500}, classes: 10}, 64},
	} {
		for _, algo := range []string{"dpsgd", "fermi-all", "fermi-sensitive"} {
			b.Run(c.plan.name+"/"+algo, func(b *testing.B) {
				dev := db.Device()
				if c.plan.name != "mlp" && strings.HasPrefix(dev.Name(), "emulated") && testing.Short() {
					b.Skip("slow on the emulated device with -short")
				}
				net, x, y := benchNet(b, dev, c.plan, c.batch)
				steps := NewDeviceFermi(net)
				defer steps.Close()
				n, l := c.batch, max(2, c.plan.classes)
				groups := make([]int, n)
				for i := range groups {
					groups[i] = i % 2
				}
				r := rand.New(rand.NewPCG(11, 12))
				s := FermiStep{Groups: 2, Classes: l, W: randF64(r, 2*l), InvSqrt: []float64{1.4, 1.4},
					Clip: 1, WWeight: 0.1, NoiseStd: 1, Scale: 1.0 / float64(n), LR: 0.01}
				if algo == "fermi-all" {
					s.Clipped = FermiPass{On: true, Loss: 1, Fair: 1, Part: FermiFull}
				} else {
					s.Clipped = FermiPass{On: true, Fair: 1, Part: FermiSensitive}
					s.Exact = FermiPass{On: true, Loss: 1.0 / float64(n), Fair: 1.0 / float64(n), Part: FermiNonSensitive}
				}
				noise := rand.New(rand.NewPCG(9, 10))
				var err error
				host := func(FermiSums) (NoiseSeed, error) { return NewNoiseSeed(noise), nil }
				for b.Loop() {
					if algo == "dpsgd" {
						_, err = net.Step(x, y, DPSGDStep{Clip: 1, NoiseStd: 1, Scale: 1.0 / float64(n), LR: 0.01, Seed: NewNoiseSeed(noise)})
					} else {
						_, err = steps.Step(x, y, groups, s, host)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
			})
		}
	}
}

// benchNet is the plan's model on dev (closed when the benchmark ends) and
// a batch of n random inputs with labels i mod classes.
func benchNet(b *testing.B, dev Device, plan cnnPlan, n int) (*DeviceNet, []float32, []int32) {
	r := rand.New(rand.NewPCG(7, 8))
	_, spec := plan.build(r)
	net, err := NewDeviceNet(dev, spec)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { net.Close() })
	x, y := randF32(r, n*plan.c*plan.h*plan.w, 1), make([]int32, n)
	for i := range y {
		y[i] = int32(i % max(2, plan.classes))
	}
	return net, x, y
}
