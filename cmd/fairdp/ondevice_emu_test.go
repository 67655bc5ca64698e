//go:build cudaemu && !cuda

package main

import (
	"path/filepath"
	"strings"
	"testing"

	"fairdp/models"
)

// TestOnDeviceTrainCommand: `fairdp train --device cuda` on the emulated
// device (FAIRDP_DEVICE=emu) writes the results contract, says in the
// receipt that the noise came from Philox on the device, names the device
// as the report's backend, and writes a checkpoint that eval reads.
func TestOnDeviceTrainCommand(t *testing.T) {
	t.Setenv("FAIRDP_DEVICE", "emu")
	dir := t.TempDir()
	out, _, err := runCLI(t, "train", "--device", "cuda", "--algo", "dpsgd", "--optimizer", "sgd", "--lr", "0.1",
		"--model", "mlp", "--limit", "300", "--epochs", "1", "--seed", "4", "--quiet", "--out", dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"device cuda", "Philox4x32-10", "report.json"} {
		if !strings.Contains(out, want) {
			t.Errorf("train output lacks %q:\n%s", want, out)
		}
	}
	v := validateReport(t, dir, "dpsgd")
	if b, _ := v["backend"].(string); !strings.HasPrefix(b, "cuda: emulated device") {
		t.Errorf("report backend %q, want the emulated device", b)
	}
	if note, _ := v["privacy"].(map[string]any)["note"].(string); !strings.Contains(note, "Philox4x32-10") || strings.Contains(note, "CSPRNG stream") {
		t.Errorf("seeded device run's receipt note %q: want Philox keyed from the seeded stream, no CSPRNG claim", note)
	}
	if _, meta, err := models.LoadFile(filepath.Join(dir, "model.ckpt")); err != nil || !strings.HasPrefix(meta.Info["backend"], "cuda: emulated device") {
		t.Errorf("checkpoint: %v, backend %q", err, meta.Info["backend"])
	}
}
