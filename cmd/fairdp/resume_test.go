package main

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fairdp/fairdp/trainer"
)

// TestResumeCommand: `fairdp train --checkpoint D` refuses to overwrite a
// checkpoint without --resume, --resume with other settings names the
// flags, and --resume of a finished run writes the same report again.
func TestResumeCommand(t *testing.T) {
	ck, out1, out2 := t.TempDir(), t.TempDir(), t.TempDir()
	args := []string{"train", "--algo", "dpsgd", "--epochs", "2", "--limit", "2000", "--seed", "3", "--quiet", "--checkpoint", ck}
	if _, _, err := runCLI(t, append(args, "--out", out1)...); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runCLI(t, args...); err == nil || !strings.Contains(err.Error(), "--resume is needed") {
		t.Errorf("second run into the checkpoint: %v, want --resume is needed", err)
	}
	// The checkpointed run's --lr is the data-aware default (2,000 records at ε = 1).
	if _, _, err := runCLI(t, append(args, "--resume", "--lr", "0.1", "--epsilon", "3")...); err == nil ||
		!strings.Contains(err.Error(), "--lr is 0.03 in the run checkpointed") || !strings.Contains(err.Error(), "--epsilon is 1 in") {
		t.Errorf("resume with other settings: %v", err)
	}
	if _, _, err := runCLI(t, "train", "--resume"); err == nil || !strings.Contains(err.Error(), "--checkpoint") {
		t.Errorf("--resume alone: %v", err)
	}
	if _, _, err := runCLI(t, append(args, "--resume", "--out", out2)...); err != nil {
		t.Fatal(err)
	}
	a, b := reportOf(t, out1), reportOf(t, out2)
	a.Seconds, b.Seconds, a.Config.Out, b.Config.Out = 0, 0, "", ""
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Errorf("the finished run resumed wrote another report:\n%s\n%s", ja, jb)
	}
}

func reportOf(t *testing.T, dir string) *trainer.Report {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep trainer.Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	return &rep
}

// TestResumeAfterKill kills (SIGKILL) an unseeded `fairdp train
// --checkpoint D` inside its second epoch and reruns the same command with
// --resume: the run completes, and its receipt charges the interrupted
// epoch on top of the planned ones, so no spent budget is lost.
func TestResumeAfterKill(t *testing.T) {
	if args := os.Getenv("FAIRDP_TEST_TRAIN_ARGS"); args != "" {
		// The child: train until killed.
		if err := run(context.Background(), strings.Split(args, "\n"), os.Stdout, os.Stderr); err != nil {
			os.Exit(3)
		}
		os.Exit(0)
	}
	if testing.Short() {
		t.Skip("trains 3 epochs on Adult")
	}
	ck, out := t.TempDir(), t.TempDir()
	args := []string{"train", "--algo", "dpsgd", "--epochs", "3", "--batch", "32", "--quiet", "--checkpoint", ck, "--resume"}
	cmd := exec.Command(os.Args[0], "-test.run=^TestResumeAfterKill$")
	cmd.Env = append(os.Environ(), "FAIRDP_TEST_TRAIN_ARGS="+strings.Join(args, "\n"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var l struct {
			Started int `json:"started_epoch"`
		}
		raw, err := os.ReadFile(filepath.Join(ck, trainer.LedgerFile))
		if err == nil && json.Unmarshal(raw, &l) == nil && l.Started >= 2 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the child never started epoch 2")
		}
		time.Sleep(time.Millisecond)
	}
	cmd.Process.Kill()
	cmd.Wait()
	stdout, _, err := runCLI(t, append(args[:len(args):len(args)], "--out", out)...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout, "epoch 2 was interrupted") {
		t.Fatalf("the resume did not find epoch 2 interrupted (was the child killed after it?):\n%s", stdout)
	}
	rep := reportOf(t, out)
	spe := int(math.Round(float64(rep.TrainRecords) / 32))
	if got, want := rep.Privacy.Mechanisms[0].Steps, 4*spe; got != want {
		t.Errorf("receipt charges %d steps, want %d (3 epochs and the killed one of %d steps)", got, want, spe)
	}
	if !strings.Contains(rep.Privacy.Note, "interrupted epochs are charged") {
		t.Errorf("receipt note: %s", rep.Privacy.Note)
	}
}
