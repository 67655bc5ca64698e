package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTrainTunePostproc drives `fairdp train --algo postproc --base dpsgd
// --tune` on 2,000 Adult records: it prints the trials' progress and the
// chosen setting, and writes report.json (the search's receipt at most
// --epsilon, extra.tune's chosen setting) and model.json as a plain run
// does. Before, --tune was refused for postproc.
func TestTrainTunePostproc(t *testing.T) {
	dir := t.TempDir()
	out, _, err := runCLI(t, "train", "--algo", "postproc", "--base", "dpsgd", "--fairness", "dp", "--limit", "2000", "--seed", "5",
		"--epsilon", "2", "--tune", "--tune-trials", "3", "--out", dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"tune: chose --base-epsilon", "done; ε spent", "Theorem 2", "expected over the classifier's coins"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Privacy struct {
			Epsilon  float64 `json:"epsilon"`
			Relation string  `json:"relation"`
		} `json:"privacy"`
		Extra struct {
			Tune struct {
				Trials int `json:"trials"`
				Chosen struct {
					Bins      int     `json:"bins"`
					BaseShare float64 `json:"base_share"`
				} `json:"chosen"`
			} `json:"tune"`
		} `json:"extra"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if !(doc.Privacy.Epsilon <= 2 && doc.Privacy.Epsilon > 1.9) || doc.Privacy.Relation != "add-remove" || doc.Extra.Tune.Trials < 1 ||
		doc.Extra.Tune.Chosen.Bins < 2 || doc.Extra.Tune.Chosen.BaseShare == 0 {
		t.Errorf("report: %+v", doc)
	}
	if _, err := os.Stat(filepath.Join(dir, "model.json")); err != nil {
		t.Error(err)
	}
}

// TestTrainTuneOracle drives `fairdp train --algo oracle --tune` on 2,000
// Adult records: it prints the chosen setting, and writes report.json (the
// search's receipt at most --epsilon, for the sensitive attribute under
// replace-one, extra.tune's chosen setting) and model.json as a plain run
// does. Before, --tune was refused for the oracle.
func TestTrainTuneOracle(t *testing.T) {
	dir := t.TempDir()
	out, _, err := runCLI(t, "train", "--algo", "oracle", "--limit", "2000", "--seed", "5", "--epsilon", "2", "--tune", "--tune-trials", "3",
		"--out", dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"tune: chose --rounds", "done; ε spent", "Theorem 2", "expected over the classifier's coins"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Privacy struct {
			Epsilon  float64 `json:"epsilon"`
			Relation string  `json:"relation"`
			Scope    string  `json:"scope"`
		} `json:"privacy"`
		Extra struct {
			Tune struct {
				Trials int `json:"trials"`
				Chosen struct {
					Rounds   int     `json:"rounds"`
					PerRound float64 `json:"per_round_epsilon"`
				} `json:"chosen"`
			} `json:"tune"`
		} `json:"extra"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if !(doc.Privacy.Epsilon <= 2 && doc.Privacy.Epsilon > 1.9) || doc.Privacy.Relation != "replace-one" || doc.Privacy.Scope != "sensitive" ||
		doc.Extra.Tune.Trials < 1 || doc.Extra.Tune.Chosen.Rounds < 1 || !(doc.Extra.Tune.Chosen.PerRound > 0) {
		t.Errorf("report: %+v", doc)
	}
	if _, err := os.Stat(filepath.Join(dir, "model.json")); err != nil {
		t.Error(err)
	}
}

// TestTrainTunePostprocErrors: what the pipeline's and the oracle's
// searches refuse, in one line naming the flag.
func TestTrainTunePostprocErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--algo", "postproc", "--tune"}, "--base must be objpert or dpsgd to tune"},
		{[]string{"--algo", "postproc", "--base", "objpert", "--base-epsilon", "0.5", "--tune"}, "--base-epsilon is chosen by the search"},
		{[]string{"--algo", "postproc", "--base", "objpert", "--fairness", "fpr", "--tune"}, "--fairness must be eo or dp to tune"},
		{[]string{"--algo", "postproc", "--base", "objpert", "--tune", "--tune-valid-frac", "0.2"}, "--tune-valid-frac is not taken by --algo postproc"},
		{[]string{"--algo", "postproc", "--base", "objpert", "--tune", "--tune-trials", "1"}, "--tune-trials must be a finite number > 1"},
		{[]string{"--algo", "postproc", "--base", "objpert", "--tune-trials", "3"}, "need --tune"},
		{[]string{"--algo", "oracle", "--tune", "--rounds", "20"}, "--rounds is what --algo oracle --tune chooses"},
		{[]string{"--algo", "oracle", "--tune", "--delta", "0"}, "--delta 0 (basic composition) cannot be tuned"},
		{[]string{"--algo", "oracle", "--tune", "--fairness", "fpr"}, "--fairness must be eo to tune the oracle"},
		{[]string{"--algo", "oracle", "--tune", "--epsilon", "inf"}, "--epsilon must be finite to tune"},
		{[]string{"--algo", "oracle", "--tune", "--tune-valid-frac", "0.2"}, "--tune-valid-frac is not taken by --algo oracle"},
	} {
		args := append([]string{"train", "--limit", "300", "--quiet", "--seed", "1", "--epsilon", "2"}, tc.args...)
		_, _, err := runCLI(t, args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: error %v, want one line containing %q", tc.args, err, tc.want)
		}
	}
}
