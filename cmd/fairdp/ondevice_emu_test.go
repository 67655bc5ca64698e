//go:build cudaemu || cuda

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/cuda/cudatest"
	"github.com/fairdp/fairdp/dpsgdf"
	"github.com/fairdp/fairdp/models"
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
	if want := cudatest.BackendPrefix(); !strings.HasPrefix(backend, want) {
		t.Errorf("report backend %q, want it to start with %q", backend, want)
	}
	if note, _ := v["privacy"].(map[string]any)["note"].(string); !strings.Contains(note, "Philox4x32-10") || strings.Contains(note, "CSPRNG stream") {
		t.Errorf("seeded device run's receipt note %q: want Philox keyed from the seeded stream, no CSPRNG claim", note)
	}
	if _, meta, err := models.LoadFile(filepath.Join(dir, "model.ckpt")); err != nil || meta.Info["backend"] != backend {
		t.Errorf("checkpoint: %v, backend %q", err, meta.Info["backend"])
	}
}

// TestOnDeviceTrainCommandPolicies: `fairdp train --device cuda` runs
// DPSGD-F with Adam and Naive with momentum on the emulated device, and
// writes what those algorithms add on the CPU: the per-group series in
// report.json's extra, in every epoch's metrics.jsonl line, and the plot.
func TestOnDeviceTrainCommandPolicies(t *testing.T) {
	cudatest.UseDevice(t)
	for _, tc := range []struct {
		algo, key, plot string
		flags           []string
	}{
		{"dpsgdf", "clip_bounds", dpsgdf.BoundsPlot, []string{"--optimizer", "adam", "--lr", "0.01"}},
		{"naive", "group_weights", dpsgdf.WeightsPlot, []string{"--optimizer", "sgd", "--momentum", "0.9", "--lr", "0.05"}},
	} {
		t.Run(tc.algo, func(t *testing.T) {
			dir := t.TempDir()
			args := append([]string{"train", "--device", "cuda", "--algo", tc.algo, "--model", "mlp", "--limit", "300",
				"--epochs", "2", "--seed", "4", "--quiet", "--out", dir}, tc.flags...)
			if _, _, err := runCLI(t, args...); err != nil {
				t.Fatal(err)
			}
			v := validateReport(t, dir, tc.algo)
			if b, _ := v["backend"].(string); !strings.HasPrefix(b, cudatest.BackendPrefix()) {
				t.Errorf("report backend %q, want it to start with %q", b, cudatest.BackendPrefix())
			}
			extra, _ := v["extra"].(map[string]any)
			if series, _ := extra[tc.key].(map[string]any); len(series) < 2 {
				t.Errorf("report extra %s = %v, want a series per group", tc.key, extra[tc.key])
			}
			metrics, err := os.ReadFile(filepath.Join(dir, "metrics.jsonl"))
			if err != nil || strings.Count(string(metrics), `"`+tc.key+`"`) != 2 {
				t.Errorf("metrics.jsonl (%v) should carry %s in both epochs:\n%s", err, tc.key, metrics)
			}
			if _, err := os.Stat(filepath.Join(dir, tc.plot)); err != nil {
				t.Error(err)
			}
		})
	}
}
