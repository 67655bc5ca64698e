package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestTrainTuneSteffle drives `fairdp train --algo steffle --tune` on 2,000
// records of the embedded Adult data: the report validates, its receipt is
// the search's (ε at most --epsilon for every silo, RDP by Papernot–Steinke
// Theorem 2, the worst silo's as the headline), extra.steffle's per-silo ε
// are the search's, and the chosen setting (λ included) is printed and in
// the config.
func TestTrainTuneSteffle(t *testing.T) {
	dir := t.TempDir()
	out, _, err := runCLI(t, "train", "--algo", "steffle", "--limit", "2000", "--seed", "5", "--epsilon", "2", "--tune",
		"--tune-trials", "3", "--out", dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"tune: chose --lr", "--lambda", "Theorem 2", "per silo: silo 0"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	doc := validateReport(t, dir, "steffle")
	priv := doc["privacy"].(map[string]any)
	eps, ok := priv["epsilon"].(float64)
	if !ok || eps > 2 || eps < 1.98 || priv["accountant"] != "rdp" {
		t.Errorf("receipt %v: want the search's ε ≤ 2 (calibrated to it) from the RDP accountant", priv)
	}
	extra := doc["extra"].(map[string]any)
	worst := 0.0
	for _, s := range extra["steffle"].(map[string]any)["per_silo"].([]any) {
		e := s.(map[string]any)["epsilon"].(float64)
		if e > 2 || !strings.Contains(fmt.Sprint(priv["note"]), fmt.Sprintf("ε = %.4g", e)) {
			t.Errorf("silo %v: ε %v, want the search's (≤ 2, in the note)", s.(map[string]any)["silo"], e)
		}
		worst = max(worst, e)
	}
	if worst != eps {
		t.Errorf("headline ε %v, worst silo %v", eps, worst)
	}
	chosen := extra["tune"].(map[string]any)["chosen"].(map[string]any)
	cfg := doc["config"].(map[string]any)
	if chosen["lr"] != cfg["lr"] || chosen["batch"] != cfg["batch"] || chosen["lambda"] != cfg["fair"].(map[string]any)["lambda"] {
		t.Errorf("config (lr %v, batch %v, fair %v) is not the chosen setting %v", cfg["lr"], cfg["batch"], cfg["fair"], chosen)
	}
}

// TestRemoteTuneRefused: --tune for silos in other processes is one line
// that names the in-process command.
func TestRemoteTuneRefused(t *testing.T) {
	for _, args := range [][]string{{"federate", "--silos", "127.0.0.1:1", "--tune"}, {"silo", "serve", "--tune"}} {
		_, _, err := runCLI(t, args...)
		if err == nil || !strings.Contains(err.Error(), "--tune is not available for silos in other processes") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: error %v", args, err)
		}
	}
}
