package trainer

import (
	"bytes"
	"context"
	"io"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// barLines runs dpsgd (Poisson batches) with the progress bar drawn into a
// buffer as on a terminal, on a clock that advances one second per reading,
// and returns the bar's frames.
func barLines(t *testing.T, seed uint64, exact bool) []string {
	t.Helper()
	prevTTY, prevClock := isTerminal, progressClock
	defer func() { isTerminal, progressClock = prevTTY, prevClock }()
	clock := time.Unix(0, 0)
	isTerminal = func(io.Writer) bool { return true }
	progressClock = func() time.Time { clock = clock.Add(time.Second); return clock }
	cfg := Defaults()
	cfg.Seed, cfg.Algo, cfg.Limit, cfg.Epochs, cfg.Batch = &seed, "dpsgd", 400, 2, 16
	cfg.ReportTrainStats = exact
	split := uint64(1) // the same records, sampled differently
	cfg.SplitSeed = &split
	var log bytes.Buffer
	job, err := Prepare(cfg, PrepareOptions{Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Train(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	frames := regexp.MustCompile(`\[[#.]+\] \d+/\d+ steps  \d+ samples/s  ε=\S+`).FindAllString(log.String(), -1)
	if len(frames) < 10 {
		t.Fatalf("%d bar frames drawn:\n%q", len(frames), log.String())
	}
	return frames
}

// TestProgressBarHidesBatchSizes: the terminal bar of a
// private run showed samples/s from the exact Poisson batch sizes, so two
// runs on the same records with different sampling drew different bars.
// It now shows the expected batch size's rate: the frames are the same
// whatever the sampler drew, unless exact statistics were asked for.
func TestProgressBarHidesBatchSizes(t *testing.T) {
	for _, exact := range []bool{false, true} {
		a, b := barLines(t, 1, exact), barLines(t, 2, exact)
		if same := slices.Equal(a, b); same == exact {
			t.Errorf("ReportTrainStats %v: frames equal across samplings = %v\n%s\n%s", exact, same,
				strings.Join(a[:5], "\n"), strings.Join(b[:5], "\n"))
		}
	}
}

// TestDivergedErrorHidesLosses: the divergence error
// printed the exact batch losses of a private run; it now says only that
// the run diverged, unless exact statistics were asked for.
func TestDivergedErrorHidesLosses(t *testing.T) {
	for _, exact := range []bool{false, true} {
		seed := uint64(3)
		cfg := Defaults()
		cfg.Seed, cfg.Algo, cfg.Limit, cfg.Epochs, cfg.Quiet = &seed, "dpsgd", 400, 3, true
		cfg.Optimizer, cfg.LR, cfg.Privacy.Sigma, cfg.Privacy.Epsilon = "sgd", 1e12, 0.5, 1e9
		cfg.ReportTrainStats = exact
		job, err := Prepare(cfg, PrepareOptions{Log: &bytes.Buffer{}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = Train(context.Background(), job)
		if err == nil || !strings.Contains(err.Error(), "training diverged") {
			t.Fatalf("ReportTrainStats %v: error %v, want the run stopped as diverged", exact, err)
		}
		if shown := strings.Contains(err.Error(), "mean batch loss"); shown != exact {
			t.Errorf("ReportTrainStats %v: the losses shown = %v: %v", exact, shown, err)
		}
	}
}
