package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/trainer"
)

// trainGroupCounts is the exact size of every sensitive group in the
// training split that `train --dataset adult --limit 800 --seed 2` uses,
// computed here from the same split.
func trainGroupCounts(t *testing.T) []int {
	t.Helper()
	seed := uint64(2)
	cfg := trainer.Defaults()
	cfg.Dataset, cfg.Limit, cfg.Seed, cfg.Quiet = "adult", 800, &seed, true
	job, err := trainer.Prepare(cfg, trainer.PrepareOptions{Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	counts := make([]int, len(job.Train.GroupNames))
	for _, g := range job.Train.Groups {
		counts[g]++
	}
	return counts
}

// containsCount reports whether text holds n as a whole number (not as
// digits of another number or of a decimal).
func containsCount(text string, n int) bool {
	return regexp.MustCompile(`(^|[^0-9.])` + strconv.Itoa(n) + `([^0-9.]|$)`).MatchString(text)
}

// TestPrivateRunsReleaseNoTrainingStatistics:
// for every private algorithm, report.json, metrics.jsonl and what is
// printed hold no exact per-group count of the training split, and the
// receipt's not_covered list names every release outside the guarantee.
// With --report-train-stats the statistics come back, marked NOT PRIVATE.
func TestPrivateRunsReleaseNoTrainingStatistics(t *testing.T) {
	counts := trainGroupCounts(t)
	data := []string{"--dataset", "adult", "--limit", "800", "--seed", "2"}
	common := []string{"test_evaluation", "record_count", "preprocessing"}
	for _, tc := range []struct {
		algo  string
		args  []string
		extra []string // not_covered items besides common
	}{
		{"dpsgd", []string{"--epsilon", "2", "--epochs", "1"}, nil},
		{"dpsgdf", []string{"--epsilon", "2", "--epochs", "1"}, nil},
		{"naive", []string{"--epsilon", "2", "--epochs", "1"}, nil},
		{"fermi", []string{"--epsilon", "2", "--epochs", "1"}, nil},
		{"fermi", []string{"--epsilon", "2", "--epochs", "1", "--scope", "sensitive", "--baseline"}, []string{"baseline"}},
		{"fermi", []string{"--epsilon", "2", "--epochs", "1", "--public-group-sizes"}, []string{"group_sizes"}},
		{"steffle", []string{"--epsilon", "2", "--epochs", "1", "--silos", "2"}, []string{"silo_record_counts"}},
		{"steffle", []string{"--epsilon", "2", "--epochs", "1", "--silos", "2", "--federation", "sensitive-silo", "--scope", "sensitive"},
			[]string{"silo_record_counts", "shipped_features"}},
		{"postproc", []string{"--epsilon", "2"}, []string{"base_classifier"}},
		{"oracle", []string{"--epsilon", "2", "--rounds", "5"}, nil},
	} {
		name := tc.algo + strings.Join(tc.args, "")
		t.Run(name, func(t *testing.T) {
			for _, stats := range []bool{false, true} {
				dir := t.TempDir()
				args := append(append([]string{"train", "--algo", tc.algo, "--out", dir}, tc.args...), data...)
				if stats {
					args = append(args, "--report-train-stats")
				}
				stdout, stderr, err := runCLI(t, args...)
				if err != nil {
					t.Fatalf("%v\n%s", err, stderr)
				}
				var files []string
				for _, f := range []string{"report.json", "metrics.jsonl"} {
					if b, err := os.ReadFile(filepath.Join(dir, f)); err == nil {
						files = append(files, string(b))
					}
				}
				all := stdout + strings.Join(files, "\n")
				for g, n := range counts {
					if found := containsCount(all, n); found != stats {
						t.Errorf("report-train-stats %v: exact training count %d of group %d found = %v", stats, n, g, found)
					}
				}
				if stats && !strings.Contains(stdout, "NOT PRIVATE") {
					t.Errorf("exact training statistics printed without the NOT PRIVATE mark:\n%s", stdout)
				}
				var rep struct {
					TrainNotPrivate bool `json:"train_not_private"`
					Privacy         struct {
						NotCovered []struct{ Item, Detail string } `json:"not_covered"`
					}
				}
				if err := json.Unmarshal([]byte(files[0]), &rep); err != nil {
					t.Fatal(err)
				}
				var items []string
				for _, n := range rep.Privacy.NotCovered {
					items = append(items, n.Item)
					if !strings.Contains(stdout, "not covered ("+n.Item+")") {
						t.Errorf("not_covered item %s is not printed", n.Item)
					}
				}
				want := append(slices.Clone(common), tc.extra...)
				if stats {
					want = append(want, "training_statistics")
				}
				for _, w := range want {
					if !slices.Contains(items, w) {
						t.Errorf("report-train-stats %v: not_covered %v lacks %q", stats, items, w)
					}
				}
				if rep.TrainNotPrivate != stats {
					t.Errorf("train_not_private = %v with report-train-stats %v", rep.TrainNotPrivate, stats)
				}
			}
		})
	}
}

// TestTailoringNotCovered: tailoring's receipt lists its own assumptions,
// and its report holds no exact training statistics unless asked.
func TestTailoringNotCovered(t *testing.T) {
	dir := t.TempDir()
	if _, stderr, err := runCLI(t, "train", "--algo", "tailoring", "--task", "regression", "--rho", "1", "--seed", "2",
		"--trials", "1", "--out", dir); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Train   *json.RawMessage
		Privacy struct {
			NotCovered []struct{ Item string } `json:"not_covered"`
		}
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	var items []string
	for _, n := range rep.Privacy.NotCovered {
		items = append(items, n.Item)
	}
	for _, w := range []string{"test_evaluation", "record_count", "group_sizes", "public_bounds"} {
		if !slices.Contains(items, w) {
			t.Errorf("not_covered %v lacks %q", items, w)
		}
	}
	if rep.Train != nil {
		t.Errorf("report.json holds exact training statistics: %s", *rep.Train)
	}
}
