//go:build cudaemu || cuda

package main

import (
	"path/filepath"
	"strings"
	"testing"

	"fairdp/cuda"
	"fairdp/cuda/cudatest"
	"fairdp/models"
)

// TestOnDeviceTrainCommand: `fairdp train --device cuda` on the emulated
// device (a cudaemu build, FAIRDP_DEVICE=emu) or GPU 0 (a cuda build; no
// device: skipped, or failed under FAIRDP_REQUIRE_DEVICE=1) writes the
// results contract, says in the receipt that the noise came from Philox on
// the device, names the device as the report's backend, and writes a
// checkpoint that eval reads.
func TestOnDeviceTrainCommand(t *testing.T) {
	cudatest.UseDevice(t)
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
	backend, _ := v["backend"].(string)
	want := "cuda: emulated device"
	if cuda.Available() { // a GPU
		want = "cuda: "
	}
	if !strings.HasPrefix(backend, want) {
		t.Errorf("report backend %q, want it to start with %q", backend, want)
	}
	if note, _ := v["privacy"].(map[string]any)["note"].(string); !strings.Contains(note, "Philox4x32-10") || strings.Contains(note, "CSPRNG stream") {
		t.Errorf("seeded device run's receipt note %q: want Philox keyed from the seeded stream, no CSPRNG claim", note)
	}
	if _, meta, err := models.LoadFile(filepath.Join(dir, "model.ckpt")); err != nil || meta.Info["backend"] != backend {
		t.Errorf("checkpoint: %v, backend %q", err, meta.Info["backend"])
	}
}
