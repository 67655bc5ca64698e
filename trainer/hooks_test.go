package trainer

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/fairdp/fairdp/dpops/accounting"
)

// hookedSGD is SGD with every hook set, recording the calls.
type hookedSGD struct {
	SGD[float32]
	calls []string
}

func (a *hookedSGD) Hooks() Hooks[float32] {
	rec := func(s string) { a.calls = append(a.calls, s) }
	return Hooks[float32]{
		OnStart: func(exact bool) { rec(fmt.Sprintf("start(%v)", exact)) },
		OnEpoch: func() map[string]any { rec("epoch"); return map[string]any{"k": len(a.calls)} },
		OnEnd: func(m Model[float32], job *Job, rep *Report) error {
			rec("end")
			rep.Extra = map[string]any{"hooks": "end"}
			return nil
		},
		NotCovered: func() []accounting.NotCovered { rec("not_covered"); return nil },
		Resident: &Resident[float32]{
			Sync:  func(Model[float32]) error { rec("sync"); return nil },
			Close: func() error { rec("close"); return nil },
		},
	}
}

// Run calls an algorithm's hooks in the order Hooks documents: OnStart
// once with whether exact statistics may be released, Sync then OnEpoch
// after every epoch, Close then OnEnd after the last; NotCovered only for a
// private run. With Resident set it applies no optimizer (the device
// updates the parameters), so the host model's parameters do not move.
func TestRunCallsHooksInOrder(t *testing.T) {
	seed := uint64(3)
	cfg := Defaults()
	cfg.Algo, cfg.Epochs, cfg.Seed, cfg.Quiet, cfg.Limit = "sgd", 2, &seed, true, 300
	job, err := Prepare(cfg, PrepareOptions{Log: &bytes.Buffer{}})
	if err != nil {
		t.Fatal(err)
	}
	alg := &hookedSGD{SGD: SGD[float32]{BatchSize: 32}}
	rep, m, err := Run[float32](t.Context(), job, alg)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"start(true)", "sync", "epoch", "sync", "epoch", "close", "end"}
	if got := alg.calls[:min(len(alg.calls), len(want))]; !slices.Equal(got, want) {
		t.Errorf("hook calls %v, want %v (then at most a second close)", alg.calls, want)
	}
	if rest := alg.calls[min(len(alg.calls), len(want)):]; len(rest) > 1 || len(rest) == 1 && rest[0] != "close" {
		t.Errorf("after OnEnd: %v, want at most one more close", rest)
	}
	if rep.Extra["hooks"] != "end" {
		t.Errorf("report extra %v: OnEnd's result is not in the report", rep.Extra)
	}
	init, err := jobModel[float32](job, ModelSpec(cfg, job.Train)) // the same seeded initialisation
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range m.Params() {
		if !slices.Equal(p.Value, init.Params()[i].Value) {
			t.Fatalf("parameter block %d moved: Run applied its optimizer to a device-resident step", i)
		}
	}
}
