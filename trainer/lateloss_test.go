package trainer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// lateSGD is SGD resident on a pretend device whose losses come back one
// step late (as package cuda's TrainerDevice hands them over): Step returns
// the step before's loss, Flush the last one's. scale multiplies the loss
// of step number blowUp (1-based, counted over the run; 0: none).
type lateSGD struct {
	SGD[float32]
	held    float64
	has     bool
	steps   int
	blowUp  int
	flushes int
	late    bool
	scale   float64
}

func (a *lateSGD) Step(m Model[float32], b Batch[float32]) (float64, error) {
	l, err := a.SGD.Step(m, b)
	if err != nil {
		return 0, err
	}
	a.steps++
	if a.steps == a.blowUp {
		l *= a.scale
	}
	if !a.late {
		return l, nil
	}
	prev := 0.0
	if a.has {
		prev = a.held
	}
	a.held, a.has = l, true
	return prev, nil
}

func (a *lateSGD) Hooks() Hooks[float32] {
	r := &Resident[float32]{Sync: func(Model[float32]) error { return nil }, Close: func() error { return nil }}
	if a.late {
		r.Flush = func() (float64, error) {
			a.flushes++
			l := a.held
			a.held, a.has = 0, false
			return l, nil
		}
	}
	return Hooks[float32]{Resident: r}
}

// trainLosses runs alg for two epochs and returns metrics.jsonl's train
// losses, or Run's error.
func trainLosses(t *testing.T, alg Algorithm[float32]) ([]float64, error) {
	t.Helper()
	seed := uint64(5)
	cfg := Defaults()
	cfg.Algo, cfg.Epochs, cfg.Seed, cfg.Quiet, cfg.Limit, cfg.Batch = "sgd", 2, &seed, true, 300, 32
	cfg.Out = t.TempDir()
	job, err := Prepare(cfg, PrepareOptions{Log: &bytes.Buffer{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Run[float32](t.Context(), job, alg); err != nil {
		return nil, err
	}
	f, err := os.Open(filepath.Join(cfg.Out, metricsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var losses []float64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var el EpochLog
		if err := json.Unmarshal(sc.Bytes(), &el); err != nil {
			t.Fatal(err)
		}
		if el.TrainLoss == nil {
			t.Fatalf("epoch %d: no train loss", el.Epoch)
		}
		losses = append(losses, *el.TrainLoss)
	}
	return losses, sc.Err()
}

// A step whose loss comes one step late (Resident.Flush) reports the same
// epoch losses as one whose loss comes at once: Run takes each loss when
// it arrives, the last at the epoch's Flush, and a divergence names the
// step whose loss diverged, not the one issued when it was found.
func TestRunTakesLateLosses(t *testing.T) {
	want, err := trainLosses(t, &lateSGD{SGD: SGD[float32]{BatchSize: 32}})
	if err != nil {
		t.Fatal(err)
	}
	late := &lateSGD{SGD: SGD[float32]{BatchSize: 32}, late: true}
	got, err := trainLosses(t, late)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || len(want) != 2 {
		t.Fatalf("epoch losses %v and %v, want two each", got, want)
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-12*math.Abs(want[i]) {
			t.Errorf("epoch %d: train loss %v with late losses, %v without", i+1, got[i], want[i])
		}
	}
	if late.flushes != 2 {
		t.Errorf("Flush called %d times, want once per epoch", late.flushes)
	}
	perEpoch := late.steps / 2
	for _, c := range []struct {
		late bool
		step int
	}{{false, 4}, {true, 4}, {true, perEpoch}} { // an epoch's last step: its loss comes at Flush
		_, err := trainLosses(t, &lateSGD{SGD: SGD[float32]{BatchSize: 32}, late: c.late, blowUp: c.step, scale: 1e9})
		if err == nil || !strings.Contains(err.Error(), "diverged") || !strings.Contains(err.Error(), "epoch 1 step "+strconv.Itoa(c.step)+":") {
			t.Errorf("late %v, loss of step %d blown up: error %v, want a divergence at epoch 1 step %d", c.late, c.step, err, c.step)
		}
	}
}

// TF32 is a setting of Device cuda's matrix products: asked for on the CPU
// it is refused by name, not ignored.
func TestTF32NeedsDeviceCuda(t *testing.T) {
	cfg := Defaults()
	cfg.TF32 = true
	err := cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), "TF32") {
		t.Errorf("TF32 with Device cpu: %v, want an error naming TF32", err)
	}
	cfg.Device, cfg.Algo, cfg.DType = "cuda", "dpsgd", "float32"
	if err := cfg.Validate(); err != nil && strings.Contains(err.Error(), "TF32") {
		t.Errorf("TF32 with Device cuda: %v", err)
	}
}
