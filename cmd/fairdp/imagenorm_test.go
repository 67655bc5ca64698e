package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestImageNormFlags: --image-mean/--image-std reach the run (its data
// notes and report.json's config, which validates against the schema), a
// shuffled run's receipt states its bound (one Gaussian per epoch) with
// the Poisson figure marked as no guarantee, and a bad pair is refused
// naming the flags.
func TestImageNormFlags(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join("..", "..", "trainer", "testdata", "mnist-sample")
	out, _, err := runCLI(t, "train", "--algo", "dpsgd", "--dataset", "mnist", "--data-dir", data, "--model", "mlp",
		"--hidden", "8", "--limit", "300", "--epochs", "1", "--batch", "32", "--sigma", "1", "--epsilon", "inf",
		"--sampling", "shuffle", "--momentum", "0.5", "--optimizer", "sgd", "--lr", "0.01",
		"--image-mean", "0.1307", "--image-std", "0.3081", "--seed", "1", "--quiet", "--out", dir)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "NOT A GUARANTEE") || !strings.Contains(out, "one Gaussian per epoch") ||
		!strings.Contains(out, "(NOT a guarantee of this run)") {
		t.Errorf("a shuffled run's receipt must state its bound and mark the Poisson figure:\n%s", out)
	}
	rep := validateReport(t, dir, "dpsgd")
	cfg := rep["config"].(map[string]any)
	if m, ok := cfg["image_mean"].([]any); !ok || len(m) != 1 || m[0] != 0.1307 {
		t.Errorf("config.image_mean = %v", cfg["image_mean"])
	}
	if s, ok := cfg["image_std"].([]any); !ok || len(s) != 1 || s[0] != 0.3081 {
		t.Errorf("config.image_std = %v", cfg["image_std"])
	}
	_, _, err = runCLI(t, "train", "--dataset", "mnist", "--data-dir", data, "--image-mean", "0.1", "--image-std", "0")
	if err == nil || !strings.Contains(err.Error(), "--image-std must be positive") {
		t.Errorf("--image-std 0: %v", err)
	}
}
