package trainer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/dpops/accounting"
	"github.com/fairdp/fairdp/models"
	"github.com/fairdp/fairdp/trainer"
)

// ckptConfig is a short seeded run of algo on 3,000 Adult records.
func ckptConfig(algo, dtype string, seed uint64) trainer.Config {
	cfg := trainer.Defaults()
	cfg.Algo, cfg.DType, cfg.Epochs, cfg.Limit, cfg.Batch, cfg.Quiet = trainer.AlgoName(algo), trainer.DType(dtype), 3, 3000, 128, true
	cfg.Seed = &seed
	return cfg
}

// ckptRun trains cfg with a checkpoint in dir; hook runs after every step
// with the context's cancel function (cancel lets the epoch finish and
// stops before the next; an error ends the run at once, like a crash).
func ckptRun(t *testing.T, cfg trainer.Config, dir string, resume bool, hook func(epoch, step int, cancel func()) error) (*trainer.Report, error) {
	t.Helper()
	job, err := trainer.Prepare(cfg, trainer.PrepareOptions{Log: io.Discard, Checkpoint: trainer.CheckpointOptions{Dir: dir, Resume: resume}})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if hook != nil {
		defer trainer.SetStepHook(func(e, s int) error { return hook(e, s, cancel) })()
	}
	return trainer.Train(ctx, job)
}

// stopAfter is a ckptRun hook that stops the run between epoch and the
// next (spe: steps per epoch): it cancels during the epoch's last step.
func stopAfter(epoch, spe int) func(e, s int, cancel func()) error {
	return func(e, s int, cancel func()) error {
		if e == epoch && s == spe {
			cancel()
		}
		return nil
	}
}

// straightRun runs cfg uninterrupted (without a checkpoint, into out)
// and returns its report and the steps of its first epoch.
func straightRun(t *testing.T, cfg trainer.Config) (*trainer.Report, int) {
	t.Helper()
	spe := 0
	defer trainer.SetStepHook(func(e, s int) error {
		if e == 1 {
			spe = s
		}
		return nil
	})()
	job, err := trainer.Prepare(cfg, trainer.PrepareOptions{Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := trainer.Train(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	return rep, spe
}

// sameRun checks that two runs' outputs in a and b agree bit for bit:
// parameters and receipt of model.ckpt, report.json and metrics.jsonl
// apart from timings.
func sameRun(t *testing.T, a, b string) {
	t.Helper()
	ma, metaA, err := models.LoadFile(filepath.Join(a, "model.ckpt"))
	if err != nil {
		t.Fatal(err)
	}
	mb, metaB, err := models.LoadFile(filepath.Join(b, "model.ckpt"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(params(ma), params(mb)) {
		t.Error("the resumed run's parameters differ from the uninterrupted run's")
	}
	if !bytes.Equal(metaA.Privacy, metaB.Privacy) {
		t.Errorf("receipts differ:\n%s\n%s", metaA.Privacy, metaB.Privacy)
	}
	for _, f := range []string{"report.json", "metrics.jsonl"} {
		if x, y := withoutTimes(t, filepath.Join(a, f)), withoutTimes(t, filepath.Join(b, f)); x != y {
			i := 0
			for i < min(len(x), len(y)) && x[i] == y[i] {
				i++
			}
			t.Errorf("%s differs from byte %d: %.80q against %.80q", f, i, x[i:], y[i:])
		}
	}
}

func params(m any) any {
	switch m := m.(type) {
	case *models.Model[float32]:
		var v [][]float32
		for _, p := range m.Params() {
			v = append(v, p.Value)
		}
		return v
	case *models.Model[float64]:
		var v [][]float64
		for _, p := range m.Params() {
			v = append(v, p.Value)
		}
		return v
	}
	return nil
}

// withoutTimes is a JSON (or JSON lines) file with the timings and the
// output directory removed.
func withoutTimes(t *testing.T, path string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	dec := json.NewDecoder(bytes.NewReader(raw))
	for {
		var v map[string]any
		if err := dec.Decode(&v); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		delete(v, "seconds")
		delete(v, "samples_per_s")
		if c, ok := v["config"].(map[string]any); ok {
			delete(c, "out")
		}
		b, _ := json.Marshal(v)
		out = append(out, string(b))
	}
	return strings.Join(out, "\n")
}

// TestResumeBitIdentical: a seeded run stopped after epoch 1 (between
// epochs) or killed inside epoch 2, then resumed, ends exactly as the run
// that was never interrupted, for every resumable algorithm in float32 and
// float64, with Adam and with SGD momentum.
func TestResumeBitIdentical(t *testing.T) {
	cases := []struct {
		algo, dtype string
		mutate      func(*trainer.Config)
	}{
		{"sgd", "float32", nil},
		{"dpsgd", "float64", nil},
		{"dpsgd", "float32", func(c *trainer.Config) { c.Optimizer, c.Momentum, c.LR = "sgd", 0.9, 0.05 }},
		{"dpsgd", "float32", func(c *trainer.Config) { c.Privacy.Sampling = "shuffle" }},
		{"dpsgdf", "float32", nil},
		{"dpsgdf", "float64", nil},
		{"naive", "float32", nil},
		{"fermi", "float32", nil},
		{"fermi", "float64", func(c *trainer.Config) { c.Fair.Scope = "sensitive" }},
	}
	if testing.Short() {
		cases = cases[:2]
	}
	for _, c := range cases {
		cfg := ckptConfig(c.algo, c.dtype, 11)
		if c.mutate != nil {
			c.mutate(&cfg)
		}
		name := c.algo + "/" + c.dtype + "/" + string(cfg.Optimizer) + "/" + cfg.Privacy.Sampling
		t.Run(name, func(t *testing.T) {
			cfg.Out = t.TempDir()
			_, spe := straightRun(t, cfg)
			straight := cfg.Out

			// Stopped between epochs 1 and 2, then resumed.
			cfg.Out = t.TempDir()
			dir := t.TempDir()
			_, err := ckptRun(t, cfg, dir, false, stopAfter(1, spe))
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("stopped run: %v, want context.Canceled", err)
			}
			if _, err := ckptRun(t, cfg, dir, true, nil); err != nil {
				t.Fatal(err)
			}
			sameRun(t, straight, cfg.Out)

			// Killed inside epoch 2, then resumed: the seeded epoch is redone
			// with the same noise, and nothing more is charged.
			cfg.Out = t.TempDir()
			dir = t.TempDir()
			crash := errors.New("crash")
			_, err = ckptRun(t, cfg, dir, false, func(e, s int, _ func()) error {
				if e == 2 && s == spe/2 {
					return crash
				}
				return nil
			})
			if !errors.Is(err, crash) {
				t.Fatalf("crashed run: %v", err)
			}
			if _, err := ckptRun(t, cfg, dir, true, nil); err != nil {
				t.Fatal(err)
			}
			sameRun(t, straight, cfg.Out)
		})
	}
}

// steps is the number of steps the receipt's mechanisms of a step ran
// (the largest Steps: the per-step mechanism).
func steps(r accounting.Receipt) int {
	n := 0
	for _, m := range r.Mechanisms {
		n = max(n, m.Steps)
	}
	return n
}

// TestResumeUnseededChargesLostEpochs: an unseeded run's checkpoint holds
// no random stream and is readable by its owner only; every interrupted
// epoch attempt is charged in full once (a crash during epoch 1, two
// crashes during epoch 2, and a stop between epochs that charges nothing),
// and the receipt says so.
func TestResumeUnseededChargesLostEpochs(t *testing.T) {
	cfg := ckptConfig("dpsgd", "float32", 0)
	cfg.Seed = nil
	_, spe := straightRun(t, cfg)
	dir := t.TempDir()
	crash := errors.New("crash")
	crashAt := func(epoch int) func(e, s int, _ func()) error {
		return func(e, s int, _ func()) error {
			if e == epoch && s == 2 {
				return crash
			}
			return nil
		}
	}
	for _, at := range []int{1, 2, 2} {
		if _, err := ckptRun(t, cfg, dir, true, crashAt(at)); !errors.Is(err, crash) {
			t.Fatalf("crash in epoch %d: %v", at, err)
		}
	}
	_, err := ckptRun(t, cfg, dir, true, stopAfter(2, spe))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("stop between epochs: %v", err)
	}
	rep, err := ckptRun(t, cfg, dir, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := steps(rep.Privacy), (cfg.Epochs+3)*spe; got != want {
		t.Errorf("receipt charges %d steps, want %d (%d epochs and 3 interrupted ones of %d steps)", got, want, cfg.Epochs, spe)
	}
	notes := rep.Privacy.Note
	for _, want := range []string{"new crypto/rand keys", "interrupted epochs are charged"} {
		if !strings.Contains(notes, want) {
			t.Errorf("receipt note lacks %q: %s", want, notes)
		}
	}
	st, err := os.Stat(filepath.Join(dir, trainer.CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("checkpoint mode %v, want 0600", st.Mode().Perm())
	}
	if keys := trainer.CheckpointRandKeys(t, dir); len(keys) > 0 {
		t.Errorf("an unseeded checkpoint holds random stream state: %v", keys)
	}
	// The seeded run's checkpoint does hold them (the test can fail).
	seeded := ckptConfig("dpsgd", "float32", 3)
	seeded.Epochs = 1
	sdir := t.TempDir()
	if _, err := ckptRun(t, seeded, sdir, false, nil); err != nil {
		t.Fatal(err)
	}
	if keys := trainer.CheckpointRandKeys(t, sdir); len(keys) == 0 {
		t.Error("a seeded checkpoint holds no random stream state")
	}
	if eps := *rep.Privacy.Epsilon; !(eps > 0) || math.IsInf(eps, 0) {
		t.Errorf("ε = %v", eps)
	}
}

// TestResumeRefusals: a checkpoint is not overwritten without Resume, a
// resume with settings that change the training names each field, other
// data are refused, and an algorithm that cannot save its state is refused
// before it trains.
func TestResumeRefusals(t *testing.T) {
	cfg := ckptConfig("dpsgd", "float32", 5)
	cfg.Epochs = 1
	dir := t.TempDir()
	if _, err := ckptRun(t, cfg, dir, false, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ckptRun(t, cfg, dir, false, nil); err == nil || !strings.Contains(err.Error(), "Resume") {
		t.Errorf("a second run into the same directory: %v, want a refusal naming Resume", err)
	}
	held, err := trainer.Prepare(cfg, trainer.PrepareOptions{Log: io.Discard, Checkpoint: trainer.CheckpointOptions{Dir: dir, Resume: true}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ckptRun(t, cfg, dir, true, nil); err == nil || !strings.Contains(err.Error(), "in use by another run") {
		t.Errorf("two runs on one checkpoint at once: %v, want a refusal", err)
	}
	if _, err := trainer.Train(context.Background(), held); err != nil { // releases the lock
		t.Fatal(err)
	}
	changed := cfg
	changed.LR, changed.Privacy.Epsilon = 0.1, 3
	_, err = ckptRun(t, changed, dir, true, nil)
	var fe trainer.FieldErrors
	if !errors.As(err, &fe) || len(fe) != 2 || fe[0].Field != "LR" || fe[1].Field != "Privacy.Epsilon" {
		t.Errorf("changed LR and ε: %v, want FieldErrors naming LR and Privacy.Epsilon", err)
	}
	moved := cfg
	moved.Out, moved.Quiet = t.TempDir(), false
	if _, err := ckptRun(t, moved, dir, true, nil); err != nil {
		t.Errorf("a finished run resumed with another Out: %v", err)
	}
	base, bdir := cfg, t.TempDir()
	base.Baseline = true
	if rep, err := ckptRun(t, base, bdir, false, nil); err != nil || rep.Baseline == nil {
		t.Errorf("a checkpointed run with Baseline: %v", err)
	}
	if _, err := ckptRun(t, base, bdir, true, nil); err != nil {
		t.Errorf("resuming a run with Baseline (the baseline must not overwrite its checkpoint): %v", err)
	}
	other := cfg
	other.Limit = 2000
	if _, err := ckptRun(t, other, dir, true, nil); err == nil || !strings.Contains(err.Error(), "Limit") {
		t.Errorf("other Limit: %v", err)
	}
	st := ckptConfig("steffle", "float32", 5)
	st.Optimizer, st.Epochs = "sgd", 1
	if _, err := ckptRun(t, st, t.TempDir(), false, nil); err == nil || !strings.Contains(err.Error(), "Resumable") {
		t.Errorf("steffle: %v, want a refusal naming Resumable", err)
	}
	dev := cfg
	dev.Device = "cuda"
	if _, err := trainer.Prepare(dev, trainer.PrepareOptions{Log: io.Discard, Checkpoint: trainer.CheckpointOptions{Dir: t.TempDir()}}); err == nil {
		t.Error("a device run was checkpointed")
	}
}

// TestResumeCustomModel: a model of one's own (not a *models.Model) trains
// resumably: its parameters go into the checkpoint through Params, and a
// fresh instance given to the resumed run ends where the uninterrupted
// run's model does, bit for bit.
func TestResumeCustomModel(t *testing.T) {
	cfg := ckptConfig("dpsgd", "float64", 4)
	train := func(m *logistic, dir string, resume bool, hook func(e, s int, cancel func()) error) error {
		var job *trainer.Job
		var err error
		if dir == "" {
			job, err = trainer.Prepare(cfg, trainer.PrepareOptions{Log: io.Discard})
		} else {
			job, err = trainer.Prepare(cfg, trainer.PrepareOptions{Log: io.Discard, Checkpoint: trainer.CheckpointOptions{Dir: dir, Resume: resume}})
		}
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		if hook != nil {
			defer trainer.SetStepHook(func(e, s int) error { return hook(e, s, cancel) })()
		}
		_, err = trainer.Train(ctx, withModel(job, trainer.Model[float64](m)))
		return err
	}
	fresh := func() *logistic { return newLogistic(102, make([]float64, 102), 0.5) }
	straight := fresh()
	if err := train(straight, "", false, nil); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	err := train(fresh(), dir, false, func(e, s int, _ func()) error {
		if e == 2 && s == 3 {
			return errors.New("crash")
		}
		return nil
	})
	if err == nil {
		t.Fatal("the crash did not stop the run")
	}
	resumed := fresh()
	if err := train(resumed, dir, true, nil); err != nil {
		t.Fatal(err)
	}
	for i, p := range straight.Params() {
		if !reflect.DeepEqual(p.Value, resumed.Params()[i].Value) {
			t.Errorf("%s: resumed %v…, uninterrupted %v…", p.Name, resumed.Params()[i].Value[:2], p.Value[:2])
		}
	}
}
