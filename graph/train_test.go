//go:build !cuda

package graph_test

import (
	"context"
	"io"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	_ "github.com/fairdp/fairdp/dpsgdf"
	_ "github.com/fairdp/fairdp/fermi"
	_ "github.com/fairdp/fairdp/fermi/federated"
	"github.com/fairdp/fairdp/graph"
	"github.com/fairdp/fairdp/models"
	"github.com/fairdp/fairdp/trainer"
)

// TestLoweredTrainsLikeNative: a zoo model written as a Gorgonia graph and
// lowered trains exactly like the native model from the same seed under
// every private algorithm — DP-SGD, DPSGD-F, DP-FERMI with both privacy
// scopes and SteFFLe — in float64: the same final weights bit for bit, the
// same test metrics and the same receipt. (Small: 400 Adult records, one
// epoch.) SteFFLe's in-process silos rebuild the model from Config.Model,
// so there the lowered model must be a zoo architecture that Config names.
func TestLoweredTrainsLikeNative(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*trainer.Config)
	}{
		{"dpsgd", func(c *trainer.Config) { c.Algo = "dpsgd" }},
		{"dpsgdf", func(c *trainer.Config) { c.Algo = "dpsgdf" }},
		{"fermi-all", func(c *trainer.Config) { c.Algo, c.Fair.Scope = "fermi", "all" }},
		{"fermi-sensitive", func(c *trainer.Config) { c.Algo, c.Fair.Scope = "fermi", "sensitive" }},
		{"steffle", func(c *trainer.Config) { c.Algo, c.Fair.Scope, c.Optimizer = "steffle", "sensitive", "sgd" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seed := uint64(11)
			cfg := trainer.Defaults()
			cfg.DType, cfg.Epochs, cfg.Batch, cfg.Limit, cfg.Seed, cfg.Quiet = "float64", 1, 64, 400, &seed, true
			cfg.Privacy.Epsilon = 2
			// SteFFLe's silos build their own copy of the model from
			// Config.Model and Hidden (trainer.ModelSpec), whatever model
			// the job is given: name the same MLP.
			cfg.Model, cfg.Hidden = "mlp", []int{8}
			tc.edit(&cfg)
			train := func(m *models.Model[float64]) *trainer.Report {
				t.Helper()
				job, err := trainer.Prepare(cfg, trainer.PrepareOptions{Log: io.Discard}) // a fresh job: its generator is consumed by training
				if err != nil {
					t.Fatal(err)
				}
				rep, err := trainer.Train(context.Background(), withModel(job, m))
				if err != nil {
					t.Fatal(err)
				}
				return rep
			}
			job, err := trainer.Prepare(cfg, trainer.PrepareOptions{Log: io.Discard})
			if err != nil {
				t.Fatal(err)
			}
			spec := models.Spec{Arch: "mlp", InShape: []int{job.Train.Dim}, Classes: 2, Hidden: []int{8}}
			native, err := models.New[float64](spec, rand.New(rand.NewPCG(5, 6)))
			if err != nil {
				t.Fatal(err)
			}
			net, err := graph.MLP[float64](job.Train.Dim, []int{8}, 2, 32, rand.New(rand.NewPCG(5, 6)))
			if err != nil {
				t.Fatal(err)
			}
			lowered, err := graph.Lower[float64](net.Graph, net.Input, net.Output, graph.LowerOptions{})
			if err != nil {
				t.Fatal(err)
			}
			a, b := train(native), train(lowered.Model)
			for i, p := range native.Params() {
				if !slices.Equal(p.Value, lowered.Model.Params()[i].Value) {
					t.Errorf("parameter %d (%s) trained differently", i, p.Name)
				}
			}
			if !reflect.DeepEqual(a.Test, b.Test) || !reflect.DeepEqual(a.Privacy, b.Privacy) || a.Params != b.Params {
				t.Errorf("reports differ: test error %v vs %v, ε %v vs %v", a.Test.Error, b.Test.Error, a.Privacy.Epsilon, b.Privacy.Epsilon)
			}
			if a.Privacy.Epsilon == nil || *a.Privacy.Epsilon > 2 {
				t.Errorf("receipt ε %v, want ≤ 2", a.Privacy.Epsilon)
			}
			if err := lowered.WriteBack(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// withModel is job with the lowered model m in Job.Model, on a copy.
func withModel(job *trainer.Job, m trainer.AnyModel) *trainer.Job {
	j := *job
	j.Model = m
	return &j
}
