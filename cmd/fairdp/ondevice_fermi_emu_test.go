//go:build cudaemu || cuda

package main

import (
	"strings"
	"testing"

	"github.com/fairdp/fairdp/cuda/cudatest"
)

// TestOnDeviceFermiTrainCommand: `fairdp train --device cuda --algo fermi`
// (both scopes) on the emulated device writes the results contract with
// DP-FERMI's extra results, and the receipt says the θ noise came from
// Philox on the device.
func TestOnDeviceFermiTrainCommand(t *testing.T) {
	cudatest.UseDevice(t)
	for _, scope := range []string{"all", "sensitive"} {
		dir := t.TempDir()
		_, _, err := runCLI(t, "train", "--device", "cuda", "--algo", "fermi", "--scope", scope, "--optimizer", "sgd",
			"--lr", "0.05", "--model", "logistic", "--limit", "300", "--epochs", "1", "--seed", "4", "--quiet", "--out", dir)
		if err != nil {
			t.Fatal(err)
		}
		v := validateReport(t, dir, "fermi")
		if b, _ := v["backend"].(string); !strings.HasPrefix(b, cudatest.BackendPrefix()) {
			t.Errorf("--scope %s: report backend %q, want it to start with %q", scope, b, cudatest.BackendPrefix())
		}
		if note, _ := v["privacy"].(map[string]any)["note"].(string); !strings.Contains(note, "DP-FERMI") || !strings.Contains(note, "Philox4x32-10") {
			t.Errorf("--scope %s: receipt note %q, want DP-FERMI's note and the device's noise note", scope, note)
		}
		fermi, _ := v["extra"].(map[string]any)["fermi"].(map[string]any)
		if fermi["scope"] != scope || fermi["w"] == nil {
			t.Errorf("--scope %s: extra.fermi %v, want the scope and W", scope, fermi)
		}
	}
}
