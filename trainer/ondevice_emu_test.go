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

	"github.com/fairdp/fairdp/cuda"
	"github.com/fairdp/fairdp/cuda/cudatest"
	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/loaders"
	"github.com/fairdp/fairdp/nn"
)

// philoxRelease is cuda.ReleaseTwin keyed for every step from the run's
// noise stream as the device step keys it: a CPU run then adds exactly the
// device run's noise, so the two can be compared value for value.
func philoxRelease(*testing.T) func(r *rand.Rand, params []*nn.Param[float32], std, scale float64) error {
	return func(r *rand.Rand, params []*nn.Param[float32], std, scale float64) error {
		return cuda.ReleaseTwin(cuda.NewNoiseSeed(r), params, std, scale)
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
		if job, err = Prepare(cfg, PrepareOptions{Log: &bytes.Buffer{}}); err != nil {
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
	if dp, ok := alg.(dpsgdBased); ok {
		dp.Core().release = philoxRelease(t)
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
// device's noise note (private runs), that the algorithm's report extras
// (DPSGD-F's per-group bounds, Naive's weights: functions of the noisy
// per-group counts) are the same, and that a second device run gives the
// same bits, receipt and extras.
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
	wantExtra, _ := json.Marshal(cpu.rep.Extra)
	for _, r := range []*Report{dev.rep, again.rep} {
		if got, _ := json.Marshal(r.Extra); !bytes.Equal(got, wantExtra) {
			t.Errorf("device report's extra\n%s\nwant the CPU run's\n%s", got, wantExtra)
		}
	}
	if dev.rep.Backend == cpu.rep.Backend {
		t.Errorf("device report's backend %q does not name the device", dev.rep.Backend)
	}
}

func deviceConfig(algo AlgoName) Config {
	cfg := Defaults()
	seed := uint64(11)
	cfg.Seed, cfg.Algo, cfg.Limit, cfg.Epochs, cfg.Batch = &seed, algo, 300, 1, 32
	cfg.Optimizer, cfg.LR, cfg.Quiet = "sgd", 0.1, true
	cfg.Privacy.Sigma, cfg.Privacy.Epsilon = 1.1, math.Inf(1) // σ uncapped
	return cfg
}

// DP-SGD and SGD on embedded Adult (300 records, one epoch) on the
// emulated device agree with the CPU engine.
func TestOnDeviceAdultMatchesCPU(t *testing.T) {
	for _, tc := range []struct{ algo, model string }{{"dpsgd", "mlp"}, {"dpsgd", "logistic"}, {"sgd", "mlp"}} {
		t.Run(tc.algo+"/"+tc.model, func(t *testing.T) {
			cfg := deviceConfig(AlgoName(tc.algo))
			cfg.Model = tc.model
			compareDeviceRuns(t, cfg, nil)
		})
	}
}

// DPSGD-F and Naive (a clip policy: the device counts, the CPU policy
// decides) and DP-SGD and SGD with momentum, Adam and weight decay on
// embedded Adult (300 records, one epoch, groups by sex) on the emulated
// device agree with the CPU engine, logistic model and MLP. The data is
// loaded once for all of them.
func TestOnDevicePoliciesAndOptimizersMatchCPU(t *testing.T) {
	job, err := Prepare(deviceConfig("dpsgdf"), PrepareOptions{Log: &bytes.Buffer{}})
	if err != nil {
		t.Fatal(err)
	}
	data := [2]*loaders.Dataset{job.Train, job.Test}
	for _, tc := range []struct {
		algo, model, optimizer string
		momentum, decay        float64
	}{
		{"dpsgdf", "logistic", "sgd", 0, 0},
		{"dpsgdf", "mlp", "sgd", 0, 0},
		{"naive", "logistic", "sgd", 0, 0},
		{"naive", "mlp", "sgd", 0, 0},
		{"dpsgd", "logistic", "sgd", 0.9, 0},
		{"dpsgd", "mlp", "sgd", 0.9, 1e-3},
		{"dpsgd", "logistic", "adam", 0, 0},
		{"dpsgd", "mlp", "adam", 0, 1e-3},
		{"dpsgdf", "mlp", "adam", 0, 0},
		{"naive", "mlp", "sgd", 0.5, 0},
		{"sgd", "mlp", "adam", 0, 0},
	} {
		name := fmt.Sprintf("%s/%s/%s,momentum=%v,decay=%v", tc.algo, tc.model, tc.optimizer, tc.momentum, tc.decay)
		t.Run(name, func(t *testing.T) {
			cfg := deviceConfig(AlgoName(tc.algo))
			cfg.Model, cfg.Optimizer, cfg.Momentum, cfg.Fair.WeightDecay = tc.model, OptimizerName(tc.optimizer), tc.momentum, tc.decay
			if tc.optimizer == "adam" {
				cfg.LR = 0.01
			}
			compareDeviceRuns(t, cfg, &data)
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
// device agrees with the CPU engine on 96 synthetic 16×16 images, and
// DPSGD-F with Adam on 48 of them; with FAIRDP_FULL=1 also the VGG-like
// CNN on 64 3×16×16 images (half a minute) and the MNIST CNN on 2,000
// 28×28 images at batch 64 (minutes).
func TestOnDeviceCNNMatchesCPU(t *testing.T) {
	for _, tc := range []struct {
		model, algo, optimizer string
		n, c, hw, batch        int
		full                   bool
	}{
		{"mnist-cnn", "dpsgd", "sgd", 96, 1, 16, 16, false},
		{"mnist-cnn", "dpsgdf", "adam", 48, 1, 16, 16, false},
		{"vgg", "dpsgd", "sgd", 64, 3, 16, 16, true},
		{"mnist-cnn", "dpsgd", "sgd", 2000, 1, 28, 64, true},
	} {
		t.Run(fmt.Sprintf("%s/%s/%s/%d×%d×%d×%d", tc.model, tc.algo, tc.optimizer, tc.n, tc.c, tc.hw, tc.hw), func(t *testing.T) {
			if tc.full && os.Getenv("FAIRDP_FULL") == "" {
				t.Skip("set FAIRDP_FULL=1 for the larger CNN runs (minutes on the emulator)")
			}
			r := rand.New(rand.NewPCG(5, uint64(tc.n)))
			data := [2]*loaders.Dataset{syntheticImages(tc.n, tc.c, tc.hw, tc.hw, r), syntheticImages(32, tc.c, tc.hw, tc.hw, r)}
			cfg := deviceConfig(AlgoName(tc.algo))
			cfg.Dataset, cfg.Model, cfg.Limit, cfg.Batch, cfg.Optimizer = "synthetic-images", tc.model, 0, tc.batch, OptimizerName(tc.optimizer)
			if tc.optimizer == "adam" {
				cfg.LR = 0.01
			}
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
			cfg := deviceConfig(AlgoName(algo))
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
	// The receipt says the sampler is a truncated textbook
	// one; the bound is Box–Muller's largest draw, u1 = 2⁻⁵³.
	bound := fmt.Sprintf("truncated at ±%.3gσ", math.Sqrt(-2*math.Log(0x1p-53)))
	if n := run.rep.Privacy.Note; !strings.Contains(n, bound) || !strings.Contains(n, "not hardened") {
		t.Errorf("device receipt note lacks %q: %q", bound, n)
	}
}
