//go:build cudaemu || cuda

package fermi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/fairdp/fairdp/cuda"
	"github.com/fairdp/fairdp/cuda/cudatest"
	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/loaders"
	"github.com/fairdp/fairdp/models"
	"github.com/fairdp/fairdp/nn"
	"github.com/fairdp/fairdp/trainer"
)

// deviceRun is one DP-FERMI run's report and trained parameters.
type deviceRun struct {
	rep    *trainer.Report
	params [][]float32
}

// runFermiOn trains DP-FERMI as cfg says on cfg.Device, on data (nil: the
// data set cfg names, as trainer.Prepare loads it). On the CPU θ's noise is
// the device's Philox noise drawn by its Go twin (cuda.ReleaseTwin, keyed
// from the run's noise stream as the device step keys it), so the two runs
// can be compared value for value; on the device the run goes through
// trainer.Train, the path of `fairdp train --device cuda`, with the zoo
// model Run would build passed in Job.Model so its parameters can be read.
func runFermiOn(t *testing.T, cfg trainer.Config, data *[2]*loaders.Dataset) deviceRun {
	t.Helper()
	var job *trainer.Job
	var err error
	if data == nil {
		if job, err = trainer.Prepare(cfg, trainer.PrepareOptions{Log: io.Discard}); err != nil {
			t.Fatal(err)
		}
	} else {
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		r, src := dpops.NewRand(cfg.Seed)
		job = &trainer.Job{Cfg: cfg, Train: data[0], Test: data[1], Rand: r, Source: src, Log: io.Discard}
	}
	var rep *trainer.Report
	var m trainer.Model[float32]
	if cfg.Device == "cpu" {
		a, err := New[float32](job)
		if err != nil {
			t.Fatal(err)
		}
		a.thetaNoise = func(r *rand.Rand, params []*nn.Param[float32], std, scale float64) error {
			return cuda.ReleaseTwin(cuda.NewNoiseSeed(r), params, std, scale)
		}
		if rep, m, err = trainer.Run[float32](context.Background(), job, a); err != nil {
			t.Fatal(err)
		}
	} else {
		if m, err = models.New[float32](trainer.ModelSpec(cfg, job.Train), job.Source.Derive("init")); err != nil {
			t.Fatal(err)
		}
		job.Model = m
		if rep, err = trainer.Train(context.Background(), job); err != nil {
			t.Fatal(err)
		}
	}
	var ps [][]float32
	for _, p := range m.Params() {
		ps = append(ps, append([]float32(nil), p.Value...))
	}
	return deviceRun{rep, ps}
}

// compareFermiRuns checks that DP-FERMI on the emulated device gives the
// CPU run's parameters and W to 1e-4 relative, the CPU run's receipt (with
// the device's noise note and which noise was the host's when noise was
// added), and the same bits and receipt when run again.
func compareFermiRuns(t *testing.T, cfg trainer.Config, data *[2]*loaders.Dataset) {
	t.Helper()
	cudatest.UseDevice(t)
	var runs [3]deviceRun // on the CPU, on the device, on the device again
	for i, device := range []string{"cpu", "cuda", "cuda"} {
		cfg.Device = trainer.DeviceKind(device)
		runs[i] = runFermiOn(t, cfg, data)
	}
	cpu, dev, again := runs[0], runs[1], runs[2]
	if len(dev.params) != len(cpu.params) {
		t.Fatalf("%d parameter blocks on the device, %d on the CPU", len(dev.params), len(cpu.params))
	}
	worst := 0.0
	near := func(what string, got, want float64) {
		d := math.Abs(got-want) / math.Max(1, math.Abs(want))
		worst = max(worst, d)
		if d > 1e-4 && !t.Failed() {
			t.Errorf("%s: device %v, CPU %v", what, got, want)
		}
	}
	for k := range cpu.params {
		for i, want := range cpu.params[k] {
			got := dev.params[k][i]
			near("parameter", float64(got), float64(want))
			if math.Float32bits(got) != math.Float32bits(again.params[k][i]) && !t.Failed() {
				t.Errorf("parameter block %d[%d]: two device runs give %v and %v", k, i, got, again.params[k][i])
			}
		}
	}
	extra := func(r deviceRun) *Result { return ResultOf(r.rep) }
	cw, dw, aw := extra(cpu).W, extra(dev).W, extra(again).W
	for i := range cw {
		near("W", dw[i], cw[i])
		if dw[i] != aw[i] {
			t.Errorf("W[%d]: two device runs give %v and %v", i, dw[i], aw[i])
		}
	}
	near("test ERMI", extra(dev).ERMI, extra(cpu).ERMI)
	t.Logf("largest relative difference device vs CPU: %.3g (‖W‖ = %.3g)", worst, math.Sqrt(dot(cw, cw)))
	if dot(cw, cw) == 0 && cfg.Fair.Lambda > 0 {
		t.Error("W stayed 0: the comparison does not exercise the regularizer")
	}
	want := cpu.rep.Privacy
	if want.Private() {
		want.AddNote(trainer.DeviceNoiseNote(cfg.Seed != nil))
		want.AddNote(hostNoiseNote)
	}
	exp, _ := json.Marshal(want)
	for _, r := range []deviceRun{dev, again} {
		if got, _ := json.Marshal(r.rep.Privacy); !bytes.Equal(got, exp) {
			t.Errorf("device receipt\n%s\nwant the CPU receipt with the device's noise note\n%s", got, exp)
		}
	}
	if dev.rep.Backend == cpu.rep.Backend {
		t.Errorf("device report's backend %q does not name the device", dev.rep.Backend)
	}
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// deviceConfig is a short seeded DP-FERMI run on 400 Adult records (two
// epochs, plain SGD; the table below adds momentum and Adam).
func deviceConfig(model, scope string) trainer.Config {
	cfg := trainer.Defaults()
	seed := uint64(23)
	cfg.Seed, cfg.Quiet, cfg.Model, cfg.Limit, cfg.Epochs, cfg.Batch = &seed, true, model, 400, 2, 32
	cfg.Optimizer, cfg.LR, cfg.Fair.LRW = "sgd", 0.05, 0.05
	cfg.Fair.Scope = scope
	if scope == "sensitive" {
		// A fixed noise multiplier: charged without amplification by
		// sampling (q = 1), this scope's calibrated σ at ε = 1 is about 100
		// times the subsampled one, and noise that large amplifies the
		// last-bit differences between the device and the CPU beyond the
		// comparison's 1e-4. What is compared is the step, not σ.
		cfg.Privacy.Epsilon, cfg.Privacy.Sigma = math.Inf(1), 3
	}
	return cfg
}

// DP-FERMI on Adult (400 records, two epochs) on the emulated device
// agrees with the CPU engine: both scopes, the paper's calibration (W not
// clipped), λ = 0, a run that is not private, Adam, momentum with weight
// decay, logistic model and MLP.
func TestOnDeviceFermiAdultMatchesCPU(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cfg    trainer.Config
		mutate func(*trainer.Config)
	}{
		{"all/logistic", deviceConfig("logistic", "all"), nil},
		{"sensitive/mlp", deviceConfig("mlp", "sensitive"), nil},
		{"sensitive/paper/logistic", deviceConfig("logistic", "sensitive"), func(c *trainer.Config) {
			// λ = 0.05: Theorem 3.3's noise spends more than ε = 1 at larger λ
			// under --scope sensitive, whose steps get no amplification.
			c.Fair.Calibration, c.Privacy.Clip, c.Fair.Radius, c.Fair.Lambda = "paper", 5, 10, 0.05
			c.Privacy.Epsilon, c.Privacy.Sigma = 1, 0 // Theorem 3.3's noise for ε = 1
		}},
		{"sensitive/lambda 0/logistic", deviceConfig("logistic", "sensitive"), func(c *trainer.Config) { c.Fair.Lambda = 0 }},
		{"not private/mlp", deviceConfig("mlp", "all"), func(c *trainer.Config) { c.Privacy.Epsilon = math.Inf(1) }},
		{"adam/sensitive/mlp", deviceConfig("mlp", "sensitive"), func(c *trainer.Config) { c.Optimizer, c.LR = "adam", 0.01 }},
		{"momentum+decay/all/logistic", deviceConfig("logistic", "all"), func(c *trainer.Config) {
			c.Momentum, c.Fair.WeightDecay = 0.9, 1e-3
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.mutate != nil {
				tc.mutate(&tc.cfg)
			}
			compareFermiRuns(t, tc.cfg, nil)
		})
	}
}

// bandImages is n c×h×w images in two groups whose label (three classes)
// is the brighter third of the rows; group 1's images are brighter overall
// and lean to class 2, so the predictions differ by group.
func bandImages(n, c, h, w int, r *rand.Rand) *loaders.Dataset {
	size := c * h * w
	d := &loaders.Dataset{Name: "band-images", C: c, H: h, W: w, Pix: make([]uint8, n*size),
		LabelNames: []string{"top", "middle", "bottom"}, GroupNames: []string{"g0", "g1"}}
	for i := range n {
		g := i % 2
		y := r.IntN(3)
		if g == 1 && r.IntN(2) == 0 {
			y = 2
		}
		for p := range size {
			row := (p % (h * w)) / w
			v := r.IntN(100) + 40*g
			if row*3/h == y {
				v += 90
			}
			d.Pix[i*size+p] = uint8(v)
		}
		d.Labels, d.Groups = append(d.Labels, y), append(d.Groups, g)
	}
	return d
}

// DP-FERMI on the MNIST CNN (softmax over three classes, 16×16 images) on
// the emulated device agrees with the CPU engine: --scope all with
// equalized odds (one W per label) and --scope sensitive, whose second
// backward pass runs through the convolutions and pools again. λ = 1: at
// the default λ = 10 W sits on its ball's boundary and the regulariser
// amplifies the last-bit differences of --scope sensitive's combined
// backward pass (1e-7 after the first step) to 2e-4 within 12 steps.
func TestOnDeviceFermiCNNMatchesCPU(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	data := [2]*loaders.Dataset{bandImages(48, 1, 16, 16, r), bandImages(32, 1, 16, 16, r)}
	for _, tc := range []struct{ scope, fairness string }{{"all", "eo"}, {"sensitive", "dp"}} {
		t.Run(tc.scope+"/"+tc.fairness, func(t *testing.T) {
			cfg := deviceConfig("mnist-cnn", tc.scope)
			cfg.Dataset, cfg.Limit, cfg.Batch, cfg.Fair.Fairness, cfg.Fair.Lambda = "band-images", 0, 16, tc.fairness, 1
			compareFermiRuns(t, cfg, &data)
		})
	}
}
