package trainer

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/models"
)

// TestNewPrivateRefusals: every bad option is refused before any data is
// read, with the PrivateOptions field named.
func TestNewPrivateRefusals(t *testing.T) {
	good := PrivateOptions{Dataset: "adult", Epsilon: 1}
	for _, tc := range []struct {
		field string
		edit  func(*PrivateOptions)
	}{
		{"Dataset", func(o *PrivateOptions) { o.Dataset = "" }},
		{"Epsilon", func(o *PrivateOptions) { o.Epsilon = 0 }},
		{"Epsilon", func(o *PrivateOptions) { o.Epsilon = math.Inf(1) }},
		{"Epsilon", func(o *PrivateOptions) { o.Epsilon = math.NaN() }},
		{"Delta", func(o *PrivateOptions) { o.Delta = 1 }},
		{"Clip", func(o *PrivateOptions) { o.Clip = -1 }},
		{"Sampling", func(o *PrivateOptions) { o.Sampling = "bootstrap" }},
		{"Method", func(o *PrivateOptions) { o.Method = nameOnly("sgd") }},
		{"Epochs", func(o *PrivateOptions) { o.Epochs = -1 }},
		{"Checkpoint", func(o *PrivateOptions) {
			o.Dataset, o.Data, o.Checkpoint.Dir = "", &Data{}, "ck"
		}},
		{"Checkpoint.Resume", func(o *PrivateOptions) { o.Checkpoint.Resume = true }},
		{"Batch", func(o *PrivateOptions) { o.Batch = -1 }},
		{"LR", func(o *PrivateOptions) { o.LR = math.NaN() }},
		{"Data", func(o *PrivateOptions) { o.Data = &Data{} }}, // with Dataset
		{"Spec", func(o *PrivateOptions) { o.Spec, o.Model = &models.Spec{}, "mlp" }},
		{"Limit", func(o *PrivateOptions) { o.Limit = -1 }},
	} {
		o := good
		tc.edit(&o)
		_, err := NewPrivate(o)
		var fe FieldErrors
		if !errors.As(err, &fe) || len(fe) == 0 || fe[0].Field != tc.field {
			t.Errorf("%s: %v, want a FieldError on %s", tc.field, err, tc.field)
		}
	}
}

// TestTrainPrivateRoutesIntoTheLoop: the options become the Config the run
// records, the run is private at the target, and a cancelled context
// stops it.
func TestTrainPrivateRoutesIntoTheLoop(t *testing.T) {
	seed := uint64(5)
	p, err := NewPrivate(PrivateOptions{Dataset: "adult", Limit: 800, Epsilon: 0.5, Clip: 2, Epochs: 1, Batch: 64,
		Sampling: SamplingShuffle, Seed: &seed})
	if err != nil {
		t.Fatal(err)
	}
	c := p.Config()
	if c.Algo != "dpsgd" || c.Privacy.Epsilon != 0.5 || c.Privacy.Clip != 2 || c.Privacy.Sampling != "shuffle" || c.Epochs != 1 || c.Batch != 64 {
		t.Errorf("config %+v does not carry the options", c)
	}
	m, err := models.New[float64](ModelSpec(c, p.Train), rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := TrainPrivate(context.Background(), p, Model[float64](m))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Config.DType != "float64" || !rep.Privacy.Private() || *rep.Privacy.Epsilon > 0.5+1e-9 || rep.Privacy.Sampling != "shuffle" {
		t.Errorf("report: dtype %s, receipt %+v", rep.Config.DType, rep.Privacy)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := TrainPrivate(ctx, p, Model[float64](m)); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: %v", err)
	}
	if _, err := TrainPrivate[float64](context.Background(), nil, m); err == nil || !strings.Contains(err.Error(), "NewPrivate") {
		t.Errorf("nil Private: %v", err)
	}
}
