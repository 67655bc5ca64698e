package trainer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/dpops/accounting"
)

// searchWithTrials is a search of a seeded source whose K is at least
// min, with the seed it took (seeds 1, 2, … in turn).
func searchWithTrials(t *testing.T, min int, log io.Writer) (*Search[int], uint64) {
	t.Helper()
	for seed := uint64(1); seed < 200; seed++ {
		_, src := dpops.NewRand(&seed)
		s, err := NewSearch[int](SearchOptions{Source: src, Records: 1000, MeanTrials: 10, Log: log})
		if err != nil {
			t.Fatal(err)
		}
		if s.K >= min {
			return s, seed
		}
	}
	t.Fatalf("no seed below 200 gives K ≥ %d", min)
	return nil, 0
}

// TestNewSearchDrawsAsBefore: K, δ and the streams are what the searches
// computed for themselves before they shared the runner, recomputed here
// the slow way from the stream names: K from "tune/trials" under
// TNBWithMean(η, E[K]), δ 1/n², and the draws of "tune/choice",
// "tune/score" and "tune/coins".
func TestNewSearchDrawsAsBefore(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		_, src := dpops.NewRand(&seed)
		s, err := NewSearch[int](SearchOptions{Source: src, Records: 400, MeanTrials: 7, Eta: 0.5})
		if err != nil {
			t.Fatal(err)
		}
		law, err := accounting.TNBWithMean(0.5, 7)
		if err != nil {
			t.Fatal(err)
		}
		k, err := law.Sample(src.Derive("tune/trials"))
		if err != nil {
			t.Fatal(err)
		}
		if s.K != k || s.Law != law || s.MeanTrials != 7 {
			t.Errorf("seed %d: K = %d, law %+v, E[K] %v; want %d, %+v, 7", seed, s.K, s.Law, s.MeanTrials, k, law)
		}
		if want := accounting.DefaultDelta(400); s.Delta != want {
			t.Errorf("seed %d: δ = %v, want %v", seed, s.Delta, want)
		}
		for name, r := range map[string]interface{ Uint64() uint64 }{"tune/choice": s.Choose, "tune/score": s.ScoreNoise, "tune/coins": s.Coins} {
			if got, want := r.Uint64(), src.Derive(name).Uint64(); got != want {
				t.Errorf("seed %d: stream %s drew %d, want %d", seed, name, got, want)
			}
		}
	}
}

// TestSearchDelta: a given δ is kept; δ ≥ 1/n is refused unless allowed,
// as accounting.CheckDelta's error or, with DeltaField, as a field error.
func TestSearchDelta(t *testing.T) {
	_, src := dpops.NewRand(new(uint64))
	o := SearchOptions{Source: src, Records: 100, MeanTrials: 10}
	o.Delta = 1e-5
	if s, err := NewSearch[int](o); err != nil || s.Delta != 1e-5 {
		t.Fatalf("δ 1e-5: %v, %v", s, err)
	}
	o.Delta = 0.02
	_, err := NewSearch[int](o)
	var large *accounting.LargeDeltaError
	if !errors.As(err, &large) {
		t.Fatalf("δ 0.02 on 100 records: %v, want a LargeDeltaError", err)
	}
	o.DeltaField = "Privacy.Delta"
	_, err = NewSearch[int](o)
	var fe FieldErrors
	if !errors.As(err, &fe) || len(fe) != 1 || fe[0].Field != "Privacy.Delta" || !strings.Contains(fe[0].Msg, large.Error()) {
		t.Fatalf("δ 0.02 with DeltaField: %v", err)
	}
	o.AllowLargeDelta = true
	if _, err := NewSearch[int](o); err != nil {
		t.Fatalf("allowed δ 0.02: %v", err)
	}
}

// TestSearchRun: every one of the K trials runs, in order; the kept trial
// is the first of those with the highest score (ties keep the earlier);
// every trial writes one progress line; the summary states K and the law.
func TestSearchRun(t *testing.T) {
	var log bytes.Buffer
	s, _ := searchWithTrials(t, 5, &log)
	// Scores 0, 1, 2, 2, 1, then −5, −6, …: trials 2 and 3 tie for the best.
	score := func(i int) float64 {
		if i < 5 {
			return []float64{0, 1, 2, 2, 1}[i]
		}
		return -float64(i)
	}
	var ran []int
	err := s.Run(context.Background(), SearchProgress{Spent: 0.99, Target: 1}, func(i int) (int, float64, error) {
		ran = append(ran, i)
		return i, score(i), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(ran) != s.K {
		t.Fatalf("ran %d trials, K = %d", len(ran), s.K)
	}
	for i, v := range ran {
		if v != i {
			t.Fatalf("trials ran in order %v", ran)
		}
	}
	// The slow path: scan for the first maximum.
	want := 0
	for i := range s.K {
		if score(i) > score(want) {
			want = i
		}
	}
	if want != 2 {
		t.Fatalf("test scores: the first best is %d, want 2", want)
	}
	if got, sc := s.Best(); got != want || sc != score(want) {
		t.Errorf("kept trial %d (score %v), want %d (score %v)", got, sc, want, score(want))
	}
	lines := strings.Split(strings.TrimSuffix(log.String(), "\n"), "\n")
	if len(lines) != s.K {
		t.Fatalf("%d progress lines for K = %d:\n%s", len(lines), s.K, log.String())
	}
	if want := fmt.Sprintf("tune: trial 2 of %d done; ε spent: 0.99 of 1 (the search's bound holds whatever K is)", s.K); lines[1] != want {
		t.Errorf("progress line %q, want %q", lines[1], want)
	}
	sum := s.Summary(0.6, 900, 3.5)
	if sum != (TuneSearch{Trials: s.K, MeanTrials: 10, Eta: s.Law.Eta, Gamma: s.Law.Gamma, TrialEpsilon: 0.6, TrainRecords: 900, ScoreNoise: 3.5}) {
		t.Errorf("summary %+v", sum)
	}
}

// TestSearchRunKeepsFirstFailure: a search whose trials all scored −∞
// (failed) keeps the first, so that the caller reports a failure rather
// than nothing; a later finite score replaces it.
func TestSearchRunKeepsFirstFailure(t *testing.T) {
	for _, finite := range []bool{false, true} {
		s, _ := searchWithTrials(t, 3, nil)
		err := s.Run(context.Background(), SearchProgress{Per: "silo"}, func(i int) (int, float64, error) {
			if finite && i == 2 {
				return i, -1e300, nil
			}
			return i, math.Inf(-1), nil
		})
		if err != nil {
			t.Fatal(err)
		}
		want := 0
		if finite {
			want = 2
		}
		if got, _ := s.Best(); got != want {
			t.Errorf("finite score at trial 2 %v: kept %d, want %d", finite, got, want)
		}
	}
}

// TestSearchRunStops: a cancelled context stops the search before the
// next trial, with the context's error; a trial's error stops it with
// its trial number (from 1) and the error wrapped; either way no later
// trial runs.
func TestSearchRunStops(t *testing.T) {
	var log bytes.Buffer
	s, _ := searchWithTrials(t, 4, &log)
	ctx, cancel := context.WithCancel(context.Background())
	ran := 0
	err := s.Run(ctx, SearchProgress{Per: "silo"}, func(i int) (int, float64, error) {
		ran++
		if i == 1 {
			cancel()
		}
		return i, 0, nil
	})
	if !errors.Is(err, context.Canceled) || ran != 2 {
		t.Errorf("cancelled in trial 2: %v after %d trials", err, ran)
	}
	if !strings.Contains(log.String(), "trial 2 of") || !strings.Contains(log.String(), "ε spent per silo: ") {
		t.Errorf("progress lines:\n%s", log.String())
	}

	s, _ = searchWithTrials(t, 4, nil)
	boom := errors.New("boom")
	ran = 0
	err = s.Run(context.Background(), SearchProgress{}, func(i int) (int, float64, error) {
		ran++
		if i == 2 {
			return 0, 0, boom
		}
		return i, 0, nil
	})
	if !errors.Is(err, boom) || err.Error() != "tuning trial 3: boom" || ran != 3 {
		t.Errorf("trial 3 failed: %v after %d trials", err, ran)
	}
}
