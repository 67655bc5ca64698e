//go:build cudaemu || cuda

// The trainer on a device: the emulated device in a `cudaemu` test build
// (make test-gpu-emulated), GPU 0 in a `cuda` build (make test-gpu on a GPU
// host; without a usable device these tests skip, or fail under
// FAIRDP_REQUIRE_DEVICE=1).

package trainer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fairdp/cuda"
	"fairdp/cuda/cudatest"
	"fairdp/dpops"
	"fairdp/loaders"
	"fairdp/nn"
)

// philoxRelease is DeviceNet's release on the CPU: for each step a Philox
// key drawn from the run's noise stream as the device step draws it, the
// parameter buffers noised on streams 0, 1, … by the kernels' Go twin (a
// linear layer's weight then bias; a convolution's [W | b] rows as one
// buffer), then scaled. With it a CPU run adds exactly the device run's
// noise, so the two can be compared value for value.
func philoxRelease(t *testing.T) func(r *rand.Rand, params []*nn.Param[float32], std, scale float64) error {
	return func(r *rand.Rand, params []*nn.Param[float32], std, scale float64) error {
		seed := cuda.NewNoiseSeed(r)
		stream := uint32(0)
		for i := 0; i < len(params); i++ {
			p := params[i]
			s := seed
			s.Stream = stream
			stream++
			if len(p.Shape) != 4 { // a linear weight or bias: a buffer of its own
				if err := (cuda.CPU{}).AddGaussian(p.Grad, std, s); err != nil {
					return err
				}
				continue
			}
			b := params[i+1] // a convolution: weight and bias as [W | b] rows
			i++
			outC := len(b.Grad)
			ckk := len(p.Grad) / outC
			rows := make([]float32, 0, outC*(ckk+1))
			for o := range outC {
				rows = append(append(rows, p.Grad[o*ckk:(o+1)*ckk]...), b.Grad[o])
			}
			if err := (cuda.CPU{}).AddGaussian(rows, std, s); err != nil {
				return err
			}
			for o := range outC {
				copy(p.Grad[o*ckk:(o+1)*ckk], rows[o*(ckk+1):])
				b.Grad[o] = rows[o*(ckk+1)+ckk]
			}
		}
		for _, p := range params {
			for i := range p.Grad {
				p.Grad[i] *= float32(scale)
			}
		}
		return nil
	}
}

// deviceRun is one training run's outcome.
type deviceRun struct {
	rep    *Report
	params [][]float32
}

// runOn trains the job cfg and data describe (data nil: Prepare loads
// cfg.Dataset) with cfg.Algo on cfg.Device; a CPU DP-SGD run uses
// philoxRelease.
func runOn(t *testing.T, cfg Config, data *[2]*loaders.Dataset) deviceRun {
	t.Helper()
	var job *Job
	var err error
	if data == nil {
		if job, err = Prepare(cfg, &bytes.Buffer{}); err != nil {
			t.Fatal(err)
		}
	} else {
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		if err := CheckDevice(cfg.Device); err != nil {
			t.Fatal(err)
		}
		r, src := dpops.NewRand(cfg.Seed)
		job = &Job{Cfg: cfg, Train: data[0], Test: data[1], Rand: r, Source: src, Log: &bytes.Buffer{}}
	}
	alg, err := algorithms[cfg.Algo].f32(job)
	if err != nil {
		t.Fatal(err)
	}
	if dp, ok := alg.(*DPSGD[float32]); ok {
		dp.release = philoxRelease(t)
	}
	if cfg.Device == "cuda" {
		if alg, err = onDevice(job, alg); err != nil {
			t.Fatal(err)
		}
	}
	rep, m, err := Run(context.Background(), job, alg)
	if err != nil {
		t.Fatal(err)
	}
	var ps [][]float32
	for _, p := range m.Params() {
		ps = append(ps, append([]float32(nil), p.Value...))
	}
	return deviceRun{rep, ps}
}

// compareDeviceRuns checks that the device run equals the CPU run to 1e-4
// relative in every parameter, that their receipts differ only by the
// device's noise note (private runs) and that a second device run gives the
// same bits and the same receipt.
func compareDeviceRuns(t *testing.T, cfg Config, data *[2]*loaders.Dataset) {
	t.Helper()
	cudatest.UseDevice(t)
	cfg.Device = "cpu"
	cpu := runOn(t, cfg, data)
	cfg.Device = "cuda"
	dev := runOn(t, cfg, data)
	again := runOn(t, cfg, data)
	if len(dev.params) != len(cpu.params) {
		t.Fatalf("%d parameter blocks on the device, %d on the CPU", len(dev.params), len(cpu.params))
	}
	worst := 0.0
	for k := range cpu.params {
		for i, want := range cpu.params[k] {
			got := dev.params[k][i]
			d := math.Abs(float64(got-want)) / math.Max(1, math.Abs(float64(want)))
			worst = max(worst, d)
			if d > 1e-4 && !t.Failed() {
				t.Errorf("parameter block %d[%d]: device %v, CPU %v", k, i, got, want)
			}
			if math.Float32bits(got) != math.Float32bits(again.params[k][i]) && !t.Failed() {
				t.Errorf("parameter block %d[%d]: two device runs give %v and %v", k, i, got, again.params[k][i])
			}
		}
	}
	t.Logf("largest relative difference device vs CPU: %.3g", worst)
	want := cpu.rep.Privacy
	if want.Private() {
		want.AddNote(deviceNoiseNote(cfg.Seed != nil))
	}
	for _, r := range []*Report{dev.rep, again.rep} {
		got, _ := json.Marshal(r.Privacy)
		exp, _ := json.Marshal(want)
		if !bytes.Equal(got, exp) {
			t.Errorf("device receipt\n%s\nwant the CPU receipt with the noise note\n%s", got, exp)
		}
	}
	if dev.rep.Backend == cpu.rep.Backend {
		t.Errorf("device report's backend %q does not name the device", dev.rep.Backend)
	}
}

func deviceConfig(algo string) Config {
	cfg := Defaults()
	seed := uint64(11)
	cfg.Seed, cfg.Algo, cfg.Limit, cfg.Epochs, cfg.Batch = &seed, algo, 300, 1, 32
	cfg.Optimizer, cfg.LR, cfg.Quiet = "sgd", 0.1, true
	cfg.Privacy.Sigma = 1.1
	return cfg
}

// DP-SGD and SGD on embedded Adult (300 records, one epoch) on the
// emulated device agree with the CPU engine.
func TestOnDeviceAdultMatchesCPU(t *testing.T) {
	for _, tc := range []struct{ algo, model string }{{"dpsgd", "mlp"}, {"dpsgd", "logistic"}, {"sgd", "mlp"}} {
		t.Run(tc.algo+"/"+tc.model, func(t *testing.T) {
			cfg := deviceConfig(tc.algo)
			cfg.Model = tc.model
			compareDeviceRuns(t, cfg, nil)
		})
	}
}

// syntheticImages is a small c×h×w image set whose label (three classes)
// is which horizontal band of the image is brighter, with two groups.
func syntheticImages(n, c, h, w int, r *rand.Rand) *loaders.Dataset {
	size := c * h * w
	d := &loaders.Dataset{Name: "synthetic-images", C: c, H: h, W: w, Pix: make([]uint8, n*size),
		LabelNames: []string{"a", "b", "c"}, GroupNames: []string{"g0", "g1"}}
	for i := range n {
		y := r.IntN(3)
		for p := range size {
			v := r.IntN(128)
			if (p%(h*w))/w*3/h == y {
				v += 100
			}
			d.Pix[i*size+p] = uint8(v)
		}
		d.Labels, d.Groups = append(d.Labels, y), append(d.Groups, i%2)
	}
	return d
}

// DP-SGD on the MNIST CNN (three classes, one epoch) on the emulated
// device agrees with the CPU engine on 96 synthetic 16×16 images; with
// FAIRDP_FULL=1 also the VGG-like CNN on 64 3×16×16 images (half a
// minute) and the MNIST CNN on 2,000 28×28 images at batch 64 (minutes).
func TestOnDeviceCNNMatchesCPU(t *testing.T) {
	for _, tc := range []struct {
		model           string
		n, c, hw, batch int
		full            bool
	}{
		{"mnist-cnn", 96, 1, 16, 16, false},
		{"vgg", 64, 3, 16, 16, true},
		{"mnist-cnn", 2000, 1, 28, 64, true},
	} {
		t.Run(fmt.Sprintf("%s/%d×%d×%d×%d", tc.model, tc.n, tc.c, tc.hw, tc.hw), func(t *testing.T) {
			if tc.full && os.Getenv("FAIRDP_FULL") == "" {
				t.Skip("set FAIRDP_FULL=1 for the larger CNN runs (minutes on the emulator)")
			}
			r := rand.New(rand.NewPCG(5, uint64(tc.n)))
			data := [2]*loaders.Dataset{syntheticImages(tc.n, tc.c, tc.hw, tc.hw, r), syntheticImages(32, tc.c, tc.hw, tc.hw, r)}
			cfg := deviceConfig("dpsgd")
			cfg.Dataset, cfg.Model, cfg.Limit, cfg.Batch = "synthetic-images", tc.model, 0, tc.batch
			compareDeviceRuns(t, cfg, &data)
		})
	}
}

// DP-SGD on the MNIST CNN, one epoch at batch 64, on real MNIST images
// (testdata/mnist-sample: the first 2,000 training images) on the emulated
// device agrees with the CPU engine: parameters to 1e-4 relative, receipts
// identical but for the noise note, two device runs bit-identical. By
// default on the first 256 images; FAIRDP_FULL=1 runs the full
// 2,000 (minutes on the emulator; bench/results/cuda.md).
func TestOnDeviceMNISTMatchesCPU(t *testing.T) {
	n := 256
	if os.Getenv("FAIRDP_FULL") != "" {
		n = 2000
	}
	cfg := deviceConfig("dpsgd")
	cfg.Dataset, cfg.DataDir, cfg.Model, cfg.Limit, cfg.Batch = "mnist", "testdata/mnist-sample", "mnist-cnn", n, 64
	compareDeviceRuns(t, cfg, nil)
}

// vggGroupNormSpec is a small VGG-like network for 3×16×16 images with a
// GroupNorm on the input (the first layer: no input gradient) and after
// every convolution: pairs of 3×3 convolutions with padding 1, max-pools,
// two linear layers.
const vggGroupNormSpec = `{"arch": "vgg-groupnorm", "layers": [
	{"kind": "groupnorm", "c": 3, "h": 16, "w": 16, "groups": 1},
	{"kind": "conv2d", "c": 3, "h": 16, "w": 16, "out_c": 4, "k": 3, "stride": 1, "pad": 1},
	{"kind": "groupnorm", "c": 4, "h": 16, "w": 16, "groups": 2}, {"kind": "relu"},
	{"kind": "conv2d", "c": 4, "h": 16, "w": 16, "out_c": 4, "k": 3, "stride": 1, "pad": 1},
	{"kind": "groupnorm", "c": 4, "h": 16, "w": 16, "groups": 4}, {"kind": "relu"},
	{"kind": "maxpool2d", "c": 4, "h": 16, "w": 16, "k": 2},
	{"kind": "conv2d", "c": 4, "h": 8, "w": 8, "out_c": 8, "k": 3, "stride": 1, "pad": 1},
	{"kind": "groupnorm", "c": 8, "h": 8, "w": 8, "groups": 2}, {"kind": "relu"},
	{"kind": "maxpool2d", "c": 8, "h": 8, "w": 8, "k": 2},
	{"kind": "flatten"},
	{"kind": "linear", "in": 128, "out": 16}, {"kind": "relu"},
	{"kind": "linear", "in": 16, "out": 3}]}`

// DP-SGD and SGD on a VGG-like network with group norms (a model spec
// file) on the emulated device agree with the CPU engine on 96 synthetic
// 3×16×16 images.
func TestOnDeviceGroupNormMatchesCPU(t *testing.T) {
	spec := filepath.Join(t.TempDir(), "vgg-groupnorm.json")
	if err := os.WriteFile(spec, []byte(vggGroupNormSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, algo := range []string{"dpsgd", "sgd"} {
		t.Run(algo, func(t *testing.T) {
			r := rand.New(rand.NewPCG(7, 96))
			data := [2]*loaders.Dataset{syntheticImages(96, 3, 16, 16, r), syntheticImages(32, 3, 16, 16, r)}
			cfg := deviceConfig(algo)
			cfg.Dataset, cfg.ModelSpecFile, cfg.Limit, cfg.Batch = "synthetic-images", spec, 0, 16
			compareDeviceRuns(t, cfg, &data)
		})
	}
}

// An unseeded device run's receipt says the Philox keys came from the
// run's CSPRNG stream (and that Philox is not one); a seeded run's never
// mentions a CSPRNG.
func TestOnDeviceUnseededReceipt(t *testing.T) {
	cudatest.UseDevice(t)
	cfg := deviceConfig("dpsgd")
	cfg.Seed, cfg.Device = nil, "cuda"
	run := runOn(t, cfg, nil)
	if n := run.rep.Privacy.Note; !strings.Contains(n, "CSPRNG stream (ChaCha8 keyed from crypto/rand)") ||
		!strings.Contains(n, "not a cryptographically secure one") || run.rep.Privacy.Seeded {
		t.Errorf("unseeded device receipt: seeded %v, note %q", run.rep.Privacy.Seeded, n)
	}
	if n := deviceNoiseNote(true); strings.Contains(n, "CSPRNG") {
		t.Errorf("seeded note claims a CSPRNG: %q", n)
	}
}
