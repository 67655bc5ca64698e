package dpsgdf

import (
	"context"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/dpops/accounting"
	"github.com/fairdp/fairdp/loaders"
	"github.com/fairdp/fairdp/models"
	"github.com/fairdp/fairdp/nn"
	"github.com/fairdp/fairdp/trainer"
)

// synthData is a small 3-group binary task with features in [-1, 1]: the
// label is the sign of a group-specific direction, and group 2 is a
// minority (10 %) whose direction differs from the others'.
func synthData(r *rand.Rand, n int) *loaders.Dataset {
	const dim = 4
	d := &loaders.Dataset{Name: "synth", Dim: dim, X: make([]float64, n*dim),
		Labels: make([]int, n), Groups: make([]int, n),
		LabelNames: []string{"neg", "pos"}, GroupNames: []string{"a", "b", "minority"}}
	dirs := [][]float64{{1, 1, 0, 0}, {1, 0.5, 0, 0}, {-1, 0, 1, 1}}
	for i := range n {
		g := 0
		switch u := r.Float64(); {
		case u < 0.1:
			g = 2
		case u < 0.55:
			g = 1
		}
		var s float64
		for j := range dim {
			x := 2*r.Float64() - 1
			d.X[i*dim+j] = x
			s += x * dirs[g][j]
		}
		d.Groups[i] = g
		if s > 0 {
			d.Labels[i] = 1
		}
	}
	return d
}

// synthJob is a prepared trainer job on synthData: logistic regression,
// plain SGD, batch 32, σ2 = 1, C0 = 1, 2 epochs.
func synthJob(t testing.TB, seed uint64, mutate func(*trainer.Config)) *trainer.Job {
	t.Helper()
	cfg := trainer.Defaults()
	cfg.Seed, cfg.Quiet, cfg.Epochs, cfg.Batch, cfg.LR, cfg.Optimizer = &seed, true, 2, 32, 0.5, "sgd"
	cfg.Privacy.Sigma, cfg.Privacy.Clip = 1, 1
	if mutate != nil {
		mutate(&cfg)
	}
	r, src := dpops.NewRand(&seed)
	data := src.Derive("data")
	return &trainer.Job{Cfg: cfg, Train: synthData(data, 600), Test: synthData(data, 300), Rand: r, Source: src, Log: io.Discard}
}

func exactCounts(v float64) (float64, error) { return v, nil }

func run[T nn.Float](t *testing.T, job *trainer.Job, alg trainer.Algorithm[T]) (*trainer.Report, *models.Model[T]) {
	t.Helper()
	rep, m, err := trainer.Run(context.Background(), job, alg)
	if err != nil {
		t.Fatal(err)
	}
	return rep, m.(*models.Model[T])
}

// sameParams requires bit-identical parameters.
func sameParams[T nn.Float](t *testing.T, what string, got, want *models.Model[T]) {
	t.Helper()
	gp, wp := got.Params(), want.Params()
	for i := range wp {
		for j := range wp[i].Value {
			if gp[i].Value[j] != wp[i].Value[j] {
				t.Fatalf("%s: parameter %d[%d] = %v, DP-SGD has %v", what, i, j, gp[i].Value[j], wp[i].Value[j])
			}
		}
	}
}

// dpsgdOf is the trainer's DP-SGD with job's settings, as `--algo dpsgd`
// builds it: the reference DPSGD-F's policies are checked against.
func dpsgdOf[T nn.Float](job *trainer.Job) (*trainer.DPSGD[T], error) {
	p := job.Cfg.Privacy
	return trainer.NewDPSGDFrom[T](trainer.DPSGDOptions{Records: job.Train.N(), Batch: job.Cfg.Batch, Epochs: job.Cfg.Epochs,
		Clip: p.Clip, Sigma: p.Sigma, Epsilon: p.Epsilon, Delta: p.Delta, AllowLargeDelta: p.AllowLargeDelta,
		Sampling: trainer.Sampling(p.Sampling), Seed: job.Cfg.Seed, Accountant: p.Accountant}, job.Source)
}

// TestNoClippingReducesToDPSGD is the acceptance test: when no
// sample is clipped (C0 = 3 bounds every logistic gradient here:
// ‖g‖ ≤ |p−y|·‖(x, 1)‖ ≤ √5 for x ∈ [-1, 1]⁴) and the counts are exact,
// every C^k equals C0 and DPSGD-F gives the same model as the trainer's
// DP-SGD bit for bit (same sampler, same gradient noise stream).
func TestNoClippingReducesToDPSGD(t *testing.T) {
	job := synthJob(t, 3, func(c *trainer.Config) { c.Privacy.Clip = 3 })
	ref, err := dpsgdOf[float64](job)
	if err != nil {
		t.Fatal(err)
	}
	refRep, refModel := run[float64](t, job, ref)

	alg, err := NewForJob[float64](job, Adaptive)
	if err != nil {
		t.Fatal(err)
	}
	alg.noisyCount = exactCounts
	rep, m := run[float64](t, job, alg)
	for e, row := range alg.History() {
		for k, c := range row {
			if c != 3 {
				t.Errorf("epoch %d: mean C^%d = %v, want C0 = 3", e+1, k, c)
			}
		}
	}
	sameParams(t, "DPSGD-F without clipping", m, refModel)
	if rep.Test.Accuracy != refRep.Test.Accuracy {
		t.Errorf("test accuracy %v, DP-SGD %v", rep.Test.Accuracy, refRep.Test.Accuracy)
	}
}

// TestFlatIsDPSGD: the Flat policy is the trainer's DP-SGD (the same
// code since dpsgdf builds on trainer.DPSGD); this holds the translation
// of this package's Config and job (σ, δ, sampling, noise stream) to it:
// bit for bit, with clipping active, and the same single mechanism.
func TestFlatIsDPSGD(t *testing.T) {
	job := synthJob(t, 4, func(c *trainer.Config) { c.Privacy.Clip = 0.3 })
	ref, err := dpsgdOf[float32](job)
	if err != nil {
		t.Fatal(err)
	}
	refRep, refModel := run[float32](t, job, ref)
	alg, err := NewForJob[float32](job, Flat)
	if err != nil {
		t.Fatal(err)
	}
	rep, m := run[float32](t, job, alg)
	sameParams(t, "Flat", m, refModel)
	if *rep.Privacy.Epsilon != *refRep.Privacy.Epsilon || len(rep.Privacy.Mechanisms) != 1 {
		t.Errorf("Flat receipt ε %v (%d mechanisms), DP-SGD ε %v", *rep.Privacy.Epsilon, len(rep.Privacy.Mechanisms), *refRep.Privacy.Epsilon)
	}
}

// stepModel is a fresh logistic model for the synthetic data.
func stepModel(t *testing.T, job *trainer.Job) *models.Model[float64] {
	m, err := models.New[float64](trainer.ModelSpec(job.Cfg, job.Train), rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// batchOf gathers the given records of job.Train into a batch.
func batchOf(job *trainer.Job, idx []int) trainer.Batch[float64] {
	d := job.Train
	b := trainer.Batch[float64]{Idx: idx, X: make([]float64, len(idx)*d.Dim)}
	d.FillFloat64(idx, b.X)
	for _, i := range idx {
		b.Labels = append(b.Labels, d.Labels[i])
		b.Groups = append(b.Groups, d.Groups[i])
	}
	return b
}

func finiteGrads(t *testing.T, what string, m *models.Model[float64]) {
	t.Helper()
	nonzero := 0
	for _, p := range m.Params() {
		for _, g := range p.Grad {
			if math.IsNaN(g) || math.IsInf(g, 0) {
				t.Fatalf("%s: gradient %v", what, g)
			}
			if g != 0 {
				nonzero++
			}
		}
	}
	if nonzero == 0 {
		t.Errorf("%s: no noise reached the gradient", what)
	}
}

// TestDivisionGuards: an empty batch and a batch from one group only must
// give finite bounds and weights (C^k = C0 for the empty and absent groups
// with exact counts), finite noised gradients, and a charge of both
// releases: Xu, Du and Wu 2021 do not say how they guard the divisions by
// noisy counts, so fairdp's guards are tested here. The expectations are
// GuardC0's (the bound C0 for an absent group), so the job names it; the
// other guards' bounds are TestCountGuardBounds'.
func TestDivisionGuards(t *testing.T) {
	job := synthJob(t, 5, func(c *trainer.Config) { c.Privacy.Clip, c.Fair.CountGuard = 0.05, string(GuardC0) })
	var onlyGroup0 []int
	for i, g := range job.Train.Groups {
		if g == 0 && len(onlyGroup0) < 20 {
			onlyGroup0 = append(onlyGroup0, i)
		}
	}
	for _, tc := range []struct {
		name   string
		policy Policy
		exact  bool
		idx    []int
		want   []float64 // nil: only check ≥ C0 (Adaptive) / > 0 and finite
	}{
		{"dpsgdf empty batch, exact counts", Adaptive, true, []int{}, []float64{0.05, 0.05, 0.05}},
		{"dpsgdf empty batch, noisy counts", Adaptive, false, []int{}, nil},
		{"dpsgdf one group, noisy counts", Adaptive, false, onlyGroup0, nil},
		// Every sample of group 0 clipped at C0 = 0.05: fraction 1 of 20,
		// m/b = 20/32, so C^0 = 0.05·(1 + 32/20); groups 1, 2 are absent.
		{"dpsgdf one group, exact counts", Adaptive, true, onlyGroup0, []float64{0.05 * (1 + 32.0/20), 0.05, 0.05}},
		// θ^k = (32/3)/max(1, b^k): 32/60 for the 20 records of group 0,
		// 32/3 for the absent groups (count 0 → 1).
		{"naive one group, exact counts", Naive, true, onlyGroup0, []float64{32.0 / 60, 32.0 / 3, 32.0 / 3}},
		{"naive empty batch, noisy counts", Naive, false, []int{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			alg, err := NewForJob[float64](job, tc.policy)
			if err != nil {
				t.Fatal(err)
			}
			if tc.exact {
				alg.noisyCount = exactCounts
			}
			m := stepModel(t, job)
			if _, err := alg.Step(m, batchOf(job, tc.idx)); err != nil {
				t.Fatal(err)
			}
			finiteGrads(t, tc.name, m)
			got := alg.LastBounds()
			for k, v := range got {
				if math.IsNaN(v) || math.IsInf(v, 0) || !(v > 0) || (tc.policy == Adaptive && v < 0.05) {
					t.Errorf("group %d: %v", k, v)
				}
				if tc.want != nil && math.Abs(v-tc.want[k]) > 1e-12 {
					t.Errorf("group %d: %v, want %v", k, v, tc.want[k])
				}
			}
			h := alg.core.Charges()
			if len(h) != 1 || h[0].Steps != 1 || len(h[0].Parts) != 2 {
				t.Errorf("the counts and the gradient sum must be charged once, jointly: %+v", h)
			}
		})
	}
}

// TestCountNoise: the released counts carry N(0, σ1²) with σ1 =
// CountNoiseRatio·σ2 (here 10·0.5 = 5). 4,000 draws: the sample standard
// deviation has standard error 5/√8000 ≈ 0.056 and the mean 5/√4000 ≈ 0.079;
// the tolerances are 4 standard errors.
func TestCountNoise(t *testing.T) {
	job := synthJob(t, 6, func(c *trainer.Config) { c.Privacy.Sigma = 0.5 })
	alg, err := NewForJob[float64](job, Adaptive)
	if err != nil {
		t.Fatal(err)
	}
	if alg.CountSigma() != 5 {
		t.Fatalf("σ1 = %v, want 10·0.5", alg.CountSigma())
	}
	const n = 4000
	counts := make([]float64, n)
	if err := alg.release(counts[:0:0]); err != nil {
		t.Fatal(err)
	}
	for i := range counts {
		counts[i] = 3
	}
	for lo := 0; lo < n; lo += 3 {
		if err := alg.release(counts[lo:min(n, lo+3)]); err != nil {
			t.Fatal(err)
		}
	}
	var sum, sq float64
	for _, c := range counts {
		sum += c - 3
		sq += (c - 3) * (c - 3)
	}
	mean := sum / n
	sd := math.Sqrt(sq/n - mean*mean)
	if math.Abs(mean) > 4*5/math.Sqrt(n) || math.Abs(sd-5) > 4*5/math.Sqrt(2*n) {
		t.Errorf("count noise mean %.3f, sd %.3f; want 0 and 5", mean, sd)
	}
}

// TestMNISTPresetEpsilon checks the charge at the unbalanced-MNIST settings
// of Xu, Du and Wu 2021 (σ2 = 0.8 on gradients plus σ1 = 8 on counts,
// 60 epochs, δ = 1e-6: ε ≈ 5.90 gradients alone, ≈ 5.91 both) and the
// classic value 6.550 behind the paper's Table 1 ε. fairdp's Poisson sampler
// runs round(1/q) = 213 steps per epoch for q = 256/54,649, so 12,780 steps
// rather than the paper's 12,808 (60·n/b) or 12,840 (q = 1/214); the
// differences are below the tolerance (0.05). The steps run through Step on empty batches, the code
// path training uses, so this checks what a run actually charges.
func TestMNISTPresetEpsilon(t *testing.T) {
	seed := uint64(1)
	_, src := dpops.NewRand(&seed)
	digits := []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}
	m, err := models.New[float32](models.Spec{Arch: "logistic", InShape: []int{1}, Classes: 2}, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		policy            Policy
		accountant        string
		improved, classic float64 // improved 0: the PLD ε of the step, computed below
		mechanisms        int
	}{
		// The counts (σ1 = 8) and the gradients (σ2 =
		// 0.8) share each Poisson sample, so they are one subsampled
		// Gaussian with σ_eff = 0.7960: ε = 5.987 at the paper's 12,808
		// steps, 5.981 at our 60·213 = 12,780 (the additive charge, 5.91,
		// understated it).
		{Adaptive, accounting.AccountantRDP, 5.981, 6.624, 1},
		{Flat, accounting.AccountantRDP, 5.90, 6.55, 1},
		// The default accountant, PLD: the same mechanisms, whose ε the
		// PLD accountant states on its own (about 8 % below RDP's).
		{Adaptive, "", 0, 6.624, 1},
		{Flat, "", 0, 6.55, 1},
	} {
		cfg := Config{Policy: tc.policy, Clip: 1, Sigma: 0.8, Delta: 1e-6, CountNoiseRatio: 10, Batch: 256,
			Epochs: 60, Groups: digits, Accountant: tc.accountant}
		a, err := New[float32](cfg, 54649, src)
		if err != nil {
			t.Fatal(err)
		}
		steps := 60 * a.core.StepsPerEpoch()
		if steps != 12780 {
			t.Fatalf("steps = %d, want 60·213", steps)
		}
		for range steps {
			if _, err := a.Step(m, trainer.Batch[float32]{Idx: []int{}}); err != nil {
				t.Fatal(err)
			}
		}
		if tc.improved == 0 {
			sigma := 0.8
			if tc.policy == Adaptive {
				sigma = accounting.JointSigma(8, 0.8)
			}
			step := accounting.SubsampledGaussian(256.0/54649, sigma, 1, "")
			step.Steps = steps
			if tc.improved, err = accounting.PLDEpsilon([]accounting.Mechanism{step}, 1e-6, accounting.PLDOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		eps, classic := a.Epsilon()
		t.Logf("%s %s: ε = %.4f (%s), %.4f (classic)", tc.policy, tc.accountant, eps, tc.accountant, classic)
		if pe, pc := a.PlannedEpsilon(); math.Abs(pe-eps) > 1e-9 || math.Abs(pc-classic) > 1e-9 {
			t.Errorf("%s: planned ε %.10f / %.10f, spent %.10f / %.10f", tc.policy, pe, pc, eps, classic)
		}
		if math.Abs(eps-tc.improved) > 0.01 || math.Abs(classic-tc.classic) > 0.01 {
			t.Errorf("%s: ε = %.4f / classic %.4f, want %.3f / %.3f ± 0.01 (Xu, Du and Wu 2021 settings)",
				tc.policy, eps, classic, tc.improved, tc.classic)
		}
		r, err := a.Receipt()
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Mechanisms) != tc.mechanisms || r.Mechanisms[0].Steps != steps {
			t.Errorf("%s: receipt mechanisms %+v", tc.policy, r.Mechanisms)
		}
		if tc.policy == Adaptive {
			m := r.Mechanisms[0]
			if len(m.Parts) != 2 || m.Parts[0].NoiseMultiplier != 8 || m.Parts[0].Sensitivity != 1 ||
				m.Parts[1].NoiseMultiplier != 0.8 || math.Abs(m.NoiseMultiplier-0.7960297521679913) > 1e-12 {
				t.Errorf("step charged as %+v, want the joint of σ1 = 8 (sensitivity 1) and σ2 = 0.8, σ_eff 0.79603", m)
			}
		}

		// Calibration counts both releases: asking for the ε just spent
		// gives back σ2 = 0.8.
		cfg.Sigma, cfg.Epsilon = 0, eps
		c, err := New[float32](cfg, 54649, src)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(c.Sigma()-0.8) > 1e-6 {
			t.Errorf("%s: calibrated σ2 = %.8f for ε = %.6f, want 0.8", tc.policy, c.Sigma(), eps)
		}
	}
}

// TestStepErrors: bad groups in a batch are errors naming the record.
func TestStepErrors(t *testing.T) {
	job := synthJob(t, 7, nil)
	alg, err := NewForJob[float64](job, Adaptive)
	if err != nil {
		t.Fatal(err)
	}
	b := batchOf(job, []int{0, 1, 2})
	b.Groups[1] = 3
	_, err = alg.Step(stepModel(t, job), b)
	if err == nil || !strings.Contains(err.Error(), "training record 1 (batch position 1) has group 3, want 0..2") {
		t.Errorf("group out of range: %v", err)
	}
}

// TestConfigErrors: every bad setting is reported, by flag name.
func TestConfigErrors(t *testing.T) {
	good := Config{Policy: Adaptive, Clip: 1, Sigma: 1, CountNoiseRatio: 10, Batch: 10, Epochs: 1, Groups: []string{"a"}}
	tests := []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"policy", func(c *Config) { c.Policy = "fair" }, `policy "fair"`},
		{"batch", func(c *Config) { c.Batch = 200 }, "Batch 200 must be between 1 and the 100 training records"},
		{"clip", func(c *Config) { c.Clip = 0 }, "Privacy.Clip must be a finite number > 0 (got 0)"},
		{"sigma", func(c *Config) { c.Sigma = -1 }, "Privacy.Sigma must be a finite number ≥ 0 (got -1)"},
		{"no privacy", func(c *Config) { c.Sigma, c.Epsilon = 0, math.Inf(1) }, "Privacy.Epsilon must be finite and > 0, or Privacy.Sigma given"},
		{"ratio", func(c *Config) { c.CountNoiseRatio = 0 }, "Fair.CountNoiseRatio 0"},
		{"delta", func(c *Config) { c.Delta = 1 }, "Privacy.Delta must be in [0,1) (got 1)"},
		{"sampling", func(c *Config) { c.Sampling = "fixed" }, `Privacy.Sampling "fixed"`},
		{"groups", func(c *Config) { c.Groups = nil }, "no groups"},
	}
	seed := uint64(1)
	_, src := dpops.NewRand(&seed)
	for _, tc := range tests {
		c := good
		tc.mutate(&c)
		_, err := New[float32](c, 100, src)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want it to contain %q", tc.name, err, tc.want)
		}
	}
	if _, err := New[float32](good, 100, src); err != nil {
		t.Errorf("good config: %v", err)
	}
	// A given σ is used as given; trainer.Train holds it to a finite
	// --epsilon with PlannedRunEpsilon, the whole run's ε (count releases
	// included) at the run's δ.
	for _, eps := range []float64{0.5, 1000} {
		job := synthJob(t, 8, func(c *trainer.Config) { c.Privacy.Epsilon = eps })
		a, err := NewForJob[float32](job, Adaptive)
		if err != nil {
			t.Fatal(err)
		}
		planned, delta, err := a.PlannedRunEpsilon()
		improved, _ := a.PlannedEpsilon()
		if err != nil || a.Sigma() != 1 || planned != improved || delta != a.cfg.Delta {
			t.Errorf("--sigma 1 with --epsilon %v: σ2 = %v, planned (%v, %v, %v), want (%v, %v, nil)", eps, a.Sigma(), planned, delta, err, improved, a.cfg.Delta)
		}
	}
}
