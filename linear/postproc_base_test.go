package linear

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/dpops/accounting"
	"github.com/fairdp/fairdp/trainer"
)

func privateBaseConfig() trainer.Config {
	cfg := trainer.Defaults()
	seed := uint64(5)
	cfg.Algo, cfg.Limit, cfg.Seed = "postproc", 3000, &seed
	cfg.Privacy.Epsilon = 2
	pc := PostprocDefaults()
	pc.Base, pc.BaseEpsilon = "objpert", 0.5
	return WithPostprocConfig(cfg, pc)
}

// editPostproc changes the post-processing settings c holds.
func editPostproc(c *trainer.Config, edit func(*PostprocConfig)) {
	pc := PostprocConfigOf(*c)
	edit(&pc)
	*c = WithPostprocConfig(*c, pc)
}

// TestPostProcPrivateBase: with Postproc.Base "objpert" the base is
// objective perturbation's model (same noise stream, same weights), and the
// one receipt protects whole records at the total ε: the base's share plus
// the cell counts' rest, with no "base classifier not private" caveat.
// Before the option the base was always fitted without privacy and the
// receipt covered the sensitive attribute only.
func TestPostProcPrivateBase(t *testing.T) {
	cfg := privateBaseConfig()
	d, err := LoadFairData(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, src := dpops.NewRand(cfg.Seed)
	want, err := ObjectivePerturbation(src.Derive("base"), d.Train.X, d.Train.N(), d.Train.Dim, d.Train.Label,
		ObjPertOptions{Epsilon: 0.5, RowBound: math.Sqrt(float64(d.Train.Dim))})
	if err != nil {
		t.Fatal(err)
	}
	if d.PrivateBase == nil || !slices.Equal(d.Base.W, append([]float64{want.Intercept}, want.Weights...)) {
		t.Fatalf("base weights are not objective perturbation's with the run's base noise")
	}
	rep, err := RunFair(context.Background(), d, cfg)
	if err != nil {
		t.Fatal(err)
	}
	rec := rep.Privacy
	if rec.Epsilon == nil || math.Abs(*rec.Epsilon-2) > 1e-12 || rec.Delta != 0 || rec.Scope != accounting.ScopeAll {
		t.Fatalf("receipt ε %v δ %v scope %q, want ε 2, δ 0, scope all", rec.Epsilon, rec.Delta, rec.Scope)
	}
	var eps []float64
	for _, m := range rec.Mechanisms {
		eps = append(eps, m.Epsilon)
	}
	if len(rec.Mechanisms) != 2 || rec.Mechanisms[1].Kind != accounting.KindLaplace || math.Abs(eps[0]-0.5) > 1e-12 || math.Abs(eps[1]-1.5) > 1e-12 {
		t.Fatalf("mechanisms %+v, want the base's ε 0.5 and the cell counts' Laplace ε 1.5", rec.Mechanisms)
	}
	var items []string
	for _, nc := range rec.NotCovered {
		items = append(items, nc.Item)
	}
	if slices.Contains(items, "base_classifier") || !slices.Contains(items, "exact_minimiser") {
		t.Errorf("not_covered %v: want exact_minimiser and no base_classifier caveat", items)
	}
	if res := FairExtra(rep); res.BaseTrain != nil || rep.Train != nil {
		t.Errorf("exact training statistics of a private run reported")
	}
	if !strings.Contains(rep.Model, "objective perturbation") {
		t.Errorf("model %q does not say the base is private", rep.Model)
	}
	// The non-private base keeps the paper's receipt.
	plain := privateBaseConfig()
	editPostproc(&plain, func(pc *PostprocConfig) { pc.Base, pc.BaseEpsilon = "", 0 })
	prep, err := RunPostproc(context.Background(), plain)
	if err != nil {
		t.Fatal(err)
	}
	if prep.Privacy.Scope != accounting.ScopeSensitive || *prep.Privacy.Epsilon != 2 {
		t.Errorf("non-private base: receipt scope %q ε %v, want sensitive and 2", prep.Privacy.Scope, *prep.Privacy.Epsilon)
	}
}

func TestPostProcPrivateBaseRefuses(t *testing.T) {
	for name, mutate := range map[string]func(c *trainer.Config){
		"unknown base":           func(c *trainer.Config) { editPostproc(c, func(pc *PostprocConfig) { pc.Base = "sgd" }) },
		"base ε not below total": func(c *trainer.Config) { editPostproc(c, func(pc *PostprocConfig) { pc.BaseEpsilon = 2 }) },
		"base ε zero":            func(c *trainer.Config) { editPostproc(c, func(pc *PostprocConfig) { pc.BaseEpsilon = 0 }) },
		"not private":            func(c *trainer.Config) { c.Privacy.Epsilon = math.Inf(1) },
		"quantile bins":          func(c *trainer.Config) { editPostproc(c, func(pc *PostprocConfig) { pc.Bins = 4 }) },
		"oracle":                 func(c *trainer.Config) { c.Algo = "oracle" },
		"base ε without a base":  func(c *trainer.Config) { editPostproc(c, func(pc *PostprocConfig) { pc.Base = "" }) },
	} {
		cfg := privateBaseConfig()
		mutate(&cfg)
		if _, err := LoadFairData(cfg); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
