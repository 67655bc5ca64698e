package fermi_test

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/fairdp/fairdp/fermi"
	"github.com/fairdp/fairdp/trainer"
)

// TestResultKeysAndReadBack: extra.fermi, now a Result, has exactly the
// keys report.json had when it was a map, and a report read back from its
// JSON gives the same Result through ResultOf.
func TestResultKeysAndReadBack(t *testing.T) {
	seed := uint64(4)
	p, err := trainer.NewPrivate(trainer.PrivateOptions{Dataset: "adult", Limit: 600, Epsilon: 1, Epochs: 1, Batch: 64,
		Seed: &seed, Method: fermi.Method{Lambda: 1}})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := trainer.TrainPrivate[float64](context.Background(), p, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Extra map[string]map[string]any `json:"extra"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range doc.Extra["fermi"] {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := []string{"calibration", "clip", "fairness", "group_counts_sigma", "group_freq", "lambda", "lr_w", "noise_std_theta",
		"noise_std_w", "private", "radius", "scope", "sensitivity", "sigma", "test_ermi", "w", "w_noise_step", "w_sensitivity", "w_weight"}
	if !slices.Equal(keys, want) {
		t.Errorf("extra.fermi keys %v, want %v", keys, want)
	}
	var back trainer.Report
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	got, ran := fermi.ResultOf(&back), fermi.ResultOf(rep)
	if ran == nil || ran.Noise == nil || !reflect.DeepEqual(got, ran) {
		t.Errorf("read back %+v, the run's %+v", got, ran)
	}
}
