package trainer

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestCheckOut, the library half of --out's guard: an output directory
// holding an earlier run's model or report is refused (naming the file),
// an empty, missing or unrelated one is not.
func TestCheckOut(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files []string
		want  string // the file named in the refusal; "" accepts
	}{
		{"missing dir", nil, ""},
		{"empty dir", []string{}, ""},
		{"unrelated files", []string{"notes.txt", metricsFile}, ""},
		{"a model", []string{modelFile}, modelFile},
		{"a report", []string{ReportFile}, ReportFile},
		{"both", []string{ReportFile, modelFile}, modelFile},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			if tc.files != nil {
				if err := os.Mkdir(dir, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			for _, f := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			err := CheckOut(dir)
			var fe FieldErrors
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (!errors.As(err, &fe) || fe[0].Field != "Out" || !bytes.Contains([]byte(err.Error()), []byte(tc.want))):
				t.Fatalf("error %v, want an Out refusal naming %s", err, tc.want)
			}
		})
	}
}

// TestStaleTempsRemoved: a
// run killed with SIGKILL leaves ".metrics.jsonl.tmpNNN" (and the like) in
// Config.Out and its checkpoint directory; the next run there removes
// those of its own files, and nothing else.
func TestStaleTempsRemoved(t *testing.T) {
	out, ckDir := t.TempDir(), t.TempDir()
	ours := map[string][]string{
		out:   {".metrics.jsonl.tmp123", ".model.ckpt.tmp9", ".report.json.tmp4242"},
		ckDir: {".training.ckpt.tmp77", ".ledger.json.tmp1"},
	}
	others := []string{".notes.txt.tmp5", ".metrics.jsonl.tmpx", "metrics.jsonl.tmp3", ".pareto.png.tmp8"}
	for dir, names := range ours {
		for _, n := range append(slices.Clone(names), others...) {
			if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	cfg := Defaults()
	seed := uint64(1)
	cfg.Seed, cfg.Algo, cfg.Limit, cfg.Epochs, cfg.Quiet, cfg.Out = &seed, "sgd", 300, 1, true, out
	job, err := Prepare(cfg, PrepareOptions{Log: &bytes.Buffer{}, Checkpoint: CheckpointOptions{Dir: ckDir}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Train(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	for dir, names := range ours {
		for _, n := range names {
			if _, err := os.Stat(filepath.Join(dir, n)); !os.IsNotExist(err) {
				t.Errorf("stale %s left in place (stat: %v)", n, err)
			}
		}
		for _, n := range others {
			if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
				t.Errorf("%s, not a temp of ours, was removed: %v", n, err)
			}
		}
	}
}
