//go:build cudaemu && !cuda

// Only on the emulated device (where TF32 is the emulator's rounding), and
// out of the GPU bundle's cuda.test: it imports the trainer and the models.

package cuda

import (
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"testing"

	"github.com/fairdp/fairdp/models"
	"github.com/fairdp/fairdp/trainer"
)

// firstNorms is the per-sample gradient norms of a first DP-SGD step (the
// model as built, the batch x, labels) on net, with the forward and
// backward GEMMs in TF32 or FP32.
func firstNorms(t *testing.T, net *DeviceNet, x []float32, labels []int32, tf32 bool) []float64 {
	t.Helper()
	n := len(labels)
	sq := make([]float64, n)
	net.SetTF32(tf32)
	must(t, onDevice(net.dev, func() error {
		_, slot, err := net.upload(x, labels, nil)
		if err != nil {
			return err
		}
		for _, f := range []func() error{
			func() error { return net.math(true) },
			func() error { return net.forward(n) },
			func() error { return net.lossGrad(net.g[len(net.layers)], n) },
			func() error { return net.backward(n) },
			func() error { return net.sqNorms(n) },
			func() error { return net.math(false) },
			func() error { return net.io.done(slot) },
		} {
			if err := f(); err != nil {
				return err
			}
		}
		return CopyOut(net.dev, sq, net.sq)
	}))
	for i, v := range sq {
		sq[i] = math.Sqrt(v)
	}
	return sq
}

// TestTF32NormsReport prints, for `FAIRDP_TF32_NORMS=1` on the emulated
// device (whose Sgemm rounds its inputs to TF32 when asked: RoundTF32),
// how far TF32 moves the per-sample gradient norms of a first DP-SGD step:
// the logistic model on the embedded Adult sample (the first 256 training
// records) and the MNIST CNN on the committed MNIST sample (the first 64
// images), each initialised from the seed-1 run's stream. bench/results/cuda.md
// records its output.
func TestTF32NormsReport(t *testing.T) {
	if os.Getenv("FAIRDP_TF32_NORMS") == "" {
		t.Skip("set FAIRDP_TF32_NORMS=1 to print TF32's effect on the first step's per-sample norms")
	}
	dev := deviceUnderTest(t)
	if _, ok := dev.(tf32Device); !ok {
		t.Skip("the device has no TF32 mode")
	}
	for _, c := range []struct {
		name, dataset, dir, model string
		batch                     int
	}{{"adult logistic", "adult", "", "logistic", 256}, {"mnist mnist-cnn", "mnist", "../trainer/testdata/mnist-sample", "mnist-cnn", 64}} {
		cfg := trainer.Defaults()
		seed := uint64(1)
		cfg.Seed, cfg.Algo, cfg.Dataset, cfg.DataDir, cfg.Model, cfg.Quiet = &seed, "dpsgd", c.dataset, c.dir, c.model, true
		cfg.Privacy.Epsilon = 8
		job, err := trainer.Prepare(cfg, trainer.PrepareOptions{Log: io.Discard})
		must(t, err)
		m, err := models.New[float32](trainer.ModelSpec(job.Cfg, job.Train), job.Rand)
		must(t, err)
		spec, err := netSpec(m.Layers, m.InSize())
		must(t, err)
		net, err := NewDeviceNet(dev, spec)
		must(t, err)
		idx := make([]int, c.batch)
		for i := range idx {
			idx[i] = i
		}
		x, labels := make([]float32, c.batch*m.InSize()), make([]int32, c.batch)
		job.Train.FillFloat32(idx, x)
		for i := range labels {
			labels[i] = int32(job.Train.Labels[i])
		}
		fp32, tf32 := firstNorms(t, net, x, labels, false), firstNorms(t, net, x, labels, true)
		var worst, sum float64
		for i := range fp32 {
			d := math.Abs(tf32[i]-fp32[i]) / fp32[i]
			worst, sum = max(worst, d), sum+d
		}
		fmt.Printf("%s batch %d: per-sample norm relative difference TF32 vs FP32: max %.3g, mean %.3g (norms %.4g..%.4g)\n",
			c.name, c.batch, worst, sum/float64(len(fp32)), slices.Min(fp32), slices.Max(fp32))
		must(t, net.Close())
	}
}
