package linear

import (
	"context"
	"fmt"
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
// `--algo objpert`'s default model (same noise stream, same weights), and the
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
	// `--algo objpert`'s default at the base's ε = 0.5 and δ = 1/n²: on
	// 2,250 Adult records of 102 features the auto rule picks the Gaussian
	// mechanism (before, the base was always the pure mechanism).
	n := d.Train.N()
	delta := 1 / float64(n*n)
	ch, err := ChooseObjPert(ObjPertFacts{N: n, D: d.Train.Dim, Epsilon: 0.5, Delta: delta, Curvature: LogisticCurvature, Calibration: CalibrationTight})
	if err != nil {
		t.Fatal(err)
	}
	if ch.Mechanism != MechanismGaussian {
		t.Fatalf("the auto rule picked %s", ch.Mechanism)
	}
	// The default B is √(source columns), counted from the encoded names.
	_, split := dpops.NewRand(cfg.Seed)
	tr, _, _, err := trainer.LoadData(cfg, split.Derive("data"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := ObjectivePerturbation(src.Derive("base"), d.Train.X, n, d.Train.Dim, d.Train.Label,
		ObjPertOptions{Epsilon: 0.5, RowBound: math.Sqrt(float64(columnsOfNames(tr.FeatureNames))), L2: ch.L2, Mechanism: MechanismGaussian, Delta: delta, Calibration: CalibrationTight})
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
	if rec.Epsilon == nil || math.Abs(*rec.Epsilon-2) > 1e-12 || rec.Delta != delta || rec.Scope != accounting.ScopeAll {
		t.Fatalf("receipt ε %v δ %v scope %q, want ε 2, δ %v, scope all", rec.Epsilon, rec.Delta, rec.Scope, delta)
	}
	// The Gaussian base lists no mechanisms (its cost is the theorem's, not
	// a Gaussian mechanism's), so the composed receipt lists none either.
	if len(rec.Mechanisms) != 0 || !strings.Contains(rec.Note, "ε = 0.5") || !strings.Contains(rec.Note, "ε = 1.5") {
		t.Fatalf("mechanisms %+v, note %q: want none, and the base's ε 0.5 and the cell counts' ε 1.5 named", rec.Mechanisms, rec.Note)
	}
	// objpert's base is private under replace-one, so the counts keep the
	// paper's L1 sensitivity 2 (a replaced record moves a count between
	// two cells), not the add-remove base's 1.
	if cells := FairExtra(rep).PostProcessing; cells == nil || cells.relation != "" || !strings.Contains(rec.Note, "Laplace(2/ε)") {
		t.Errorf("objpert base: cells' relation %v, note %q; want the paper's, Laplace(2/ε)", cells, rec.Note)
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
		"base ε negative":        func(c *trainer.Config) { editPostproc(c, func(pc *PostprocConfig) { pc.BaseEpsilon = -0.5 }) },
		"dpsgd for the oracle": func(c *trainer.Config) {
			c.Algo = "oracle"
			editPostproc(c, func(pc *PostprocConfig) { pc.Base = BaseDPSGD })
		},
		"dpsgd not private": func(c *trainer.Config) {
			c.Privacy.Epsilon = math.Inf(1)
			editPostproc(c, func(pc *PostprocConfig) { pc.Base = BaseDPSGD })
		},
		"dp for the oracle": func(c *trainer.Config) {
			c.Algo = "oracle"
			editPostproc(c, func(pc *PostprocConfig) { pc.Base, pc.BaseEpsilon, pc.Fairness = "", 0, "dp" })
		},
		"not private":           func(c *trainer.Config) { c.Privacy.Epsilon = math.Inf(1) },
		"oracle":                func(c *trainer.Config) { c.Algo = "oracle" },
		"base ε without a base": func(c *trainer.Config) { editPostproc(c, func(pc *PostprocConfig) { pc.Base = "" }) },
	} {
		cfg := privateBaseConfig()
		mutate(&cfg)
		if _, err := LoadFairData(cfg); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestPostProcDefaultBaseEpsilon: Postproc.BaseEpsilon 0 gives the base
// DefaultBaseEpsilon of the total (before it was refused), and the report's
// configuration records the share that ran, so --config repeats it.
func TestPostProcDefaultBaseEpsilon(t *testing.T) {
	cfg := privateBaseConfig()
	editPostproc(&cfg, func(pc *PostprocConfig) { pc.BaseEpsilon = 0 })
	rep, err := RunPostproc(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultBaseEpsilon(2)
	if got := PostprocConfigOf(rep.Config).BaseEpsilon; got != want || want <= 0 || want >= 2 {
		t.Errorf("report's base ε %v, want the default %v", got, want)
	}
	// The base is objpert's Gaussian default (no mechanism list), so the
	// split is read from the composed receipt's note.
	if note := rep.Privacy.Note; !strings.Contains(note, fmt.Sprintf("(ε = %.4g,", want)) || !strings.Contains(note, fmt.Sprintf("ε = %.4g-DP", 2-want)) {
		t.Errorf("receipt note %q, want the base's ε %v and the cells' %v", note, want, 2-want)
	}
}

// TestPostProcDPSGDBase: Postproc.Base "dpsgd" trains logistic regression
// by DP-SGD on the training split (the same weights as an independent
// DP-SGD run with the seed drawn from the run's base stream), and the one
// receipt is the basic composition of DP-SGD's (ε₁, δ₁) and the cell
// counts' pure ε₂: ε = ε₁ + ε₂, δ = δ₁, every mechanism listed, whole
// records protected.
func TestPostProcDPSGDBase(t *testing.T) {
	cfg := privateBaseConfig()
	editPostproc(&cfg, func(pc *PostprocConfig) { pc.Base, pc.BaseEpsilon, pc.Fairness = BaseDPSGD, 1, "dp" })
	d, err := LoadFairData(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b := d.BaseFit
	if b == nil || b.Method != BaseDPSGD || b.Report == nil || d.PrivateBase != nil {
		t.Fatalf("base %+v, want a DP-SGD fit", b)
	}
	// The independent run: the same records, options and seed.
	_, src := dpops.NewRand(cfg.Seed)
	seed := src.Derive("base").Uint64()
	rows := func(s *FairSplit) [][]float64 {
		out := make([][]float64, s.N())
		for i := range out {
			out[i] = slices.Clone(s.X[i*s.Dim : (i+1)*s.Dim])
		}
		return out
	}
	p, err := trainer.NewPrivate(trainer.PrivateOptions{Epsilon: 1, Seed: &seed, Model: "logistic",
		Data: &trainer.Data{Features: rows(d.Train), Labels: d.Train.Label, Groups: d.Train.Group, GroupNames: d.GroupNames,
			Test: &trainer.Data{Features: rows(d.Test), Labels: d.Test.Label, Groups: d.Test.Group}}})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := trainer.TrainPrivate[float64](context.Background(), p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if *ref.Privacy.Epsilon != *b.Receipt.Epsilon || ref.Test.Error != b.Report.Test.Error {
		t.Errorf("DP-SGD base: ε %v test error %v, an independent run %v and %v", *b.Receipt.Epsilon, b.Report.Test.Error,
			*ref.Privacy.Epsilon, ref.Test.Error)
	}
	if len(b.W) != d.Train.Dim+1 || !strings.Contains(b.Description, "DP-SGD") {
		t.Errorf("base weights %d for %d features, description %q", len(b.W), d.Train.Dim, b.Description)
	}

	rep, err := RunFair(context.Background(), d, cfg)
	if err != nil {
		t.Fatal(err)
	}
	rec, base := rep.Privacy, b.Receipt
	lp := 2 - 1.0
	if base.Delta <= 0 || *base.Epsilon > 1+1e-9 {
		t.Fatalf("DP-SGD receipt (%v, %v), want ε ≤ 1 and δ > 0", *base.Epsilon, base.Delta)
	}
	if rec.Epsilon == nil || math.Abs(*rec.Epsilon-(*base.Epsilon+lp)) > 1e-12 || rec.Delta != base.Delta ||
		rec.Scope != accounting.ScopeAll || rec.Conversion != accounting.ConversionBasic || !strings.Contains(rec.Accountant, "+pure") {
		t.Fatalf("receipt ε %v δ %v scope %q accountant %q conversion %q; want ε %v + %v, δ %v, scope all, basic composition",
			rec.Epsilon, rec.Delta, rec.Scope, rec.Accountant, rec.Conversion, *base.Epsilon, lp, base.Delta)
	}
	var kinds []string
	for _, m := range rec.Mechanisms {
		kinds = append(kinds, m.Kind)
	}
	if !slices.Equal(kinds, []string{accounting.KindSubsampledGaussian, accounting.KindLaplace}) {
		t.Errorf("mechanisms %v, want DP-SGD's subsampled Gaussian and the Laplace cell counts", kinds)
	} else if cells := rec.Mechanisms[1]; cells.Sensitivity != 1 || rec.Relation != accounting.RelationAddRemove ||
		!strings.Contains(rec.Note, "Laplace(1/ε)") {
		// Under the base's add-remove relation one record moves one count
		// by one: L1 sensitivity 1, half the paper's noise at the same ε.
		t.Errorf("cell counts' sensitivity %v, relation %q, note %q; want 1 under add-remove", cells.Sensitivity, rec.Relation, rec.Note)
	}
	if rep.Config.Privacy.Delta != base.Delta || PostprocConfigOf(rep.Config).BaseEpsilon != 1 {
		t.Errorf("report config δ %v base ε %v, want %v and 1", rep.Config.Privacy.Delta, PostprocConfigOf(rep.Config).BaseEpsilon, base.Delta)
	}
	for _, nc := range rec.NotCovered {
		if nc.Item == "base_classifier" {
			t.Errorf("private base reported as not covered: %v", nc.Detail)
		}
	}
	if res := FairExtra(rep); res.Failed || res.Fairness != "dp" || res.ExpectedTest == nil {
		t.Errorf("result %+v", res)
	}
}

// TestComposeBaseReceipt checks the composition on receipts built by hand:
// (ε₁, δ₁) and ε₂ give (ε₁ + ε₂, δ₁) (Dwork and Roth 2014, Theorem 3.16),
// computed here from the two numbers, not from an accountant; a base that
// lists no mechanisms (objective perturbation's Gaussian mechanism) gives a
// receipt that lists none, so a composer takes the stated (ε, δ).
func TestComposeBaseReceipt(t *testing.T) {
	pp := &PostProcessResult{acct: &accounting.Pure{}}
	if err := pp.acct.SpendLaplace(2, 2/0.8, "cells"); err != nil {
		t.Fatal(err)
	}
	e1 := 1.3
	for _, tc := range []struct {
		name  string
		base  accounting.Receipt
		mechs int
	}{
		{"pld", accounting.Receipt{Epsilon: &e1, Delta: 1e-6, Accountant: accounting.AccountantPLD, Sampling: "poisson",
			Relation: "add-remove", Mechanisms: []accounting.Mechanism{{Kind: accounting.KindSubsampledGaussian}}}, 2},
		{"no list", accounting.Receipt{Epsilon: &e1, Delta: 1e-7, Accountant: "theorem"}, 0},
	} {
		rec, err := composeBaseReceipt(&PrivateBaseFit{Receipt: tc.base, Description: tc.name}, pp, nil)
		if err != nil {
			t.Fatal(err)
		}
		if want := e1 + 0.8; rec.Epsilon == nil || math.Abs(*rec.Epsilon-want) > 1e-12 || rec.Delta != tc.base.Delta ||
			len(rec.Mechanisms) != tc.mechs || rec.Relation != tc.base.Relation {
			t.Errorf("%s: receipt %+v, want ε %v δ %v and %d mechanisms", tc.name, rec, want, tc.base.Delta, tc.mechs)
		}
	}
	if _, err := composeBaseReceipt(&PrivateBaseFit{Receipt: accounting.NotPrivate()}, pp, nil); err == nil {
		t.Error("a non-private base composed")
	}
}

// TestPostProcPrivateBaseBins: with a private base more than two bins are
// UniformBins (public edges j/K), never quantiles of the private scores;
// before, a private base refused them. A non-private base keeps quantiles.
func TestPostProcPrivateBaseBins(t *testing.T) {
	if _, err := UniformBins(1); err == nil {
		t.Error("UniformBins(1) accepted")
	}
	u, err := UniformBins(4)
	if err != nil || !slices.Equal(u.Edges, []float64{0.25, 0.5, 0.75}) {
		t.Fatalf("UniformBins(4) = %v, %v", u.Edges, err)
	}
	cfg := privateBaseConfig()
	editPostproc(&cfg, func(pc *PostprocConfig) { pc.Bins, pc.Fairness, pc.Gamma = 4, "dp", 0 })
	rep, err := RunPostproc(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	res := FairExtra(rep)
	if !slices.Equal(res.Bins, u.Edges) || res.PostProcessing.Cells.Bins != 4 || res.PostProcessing.Slack <= 0 {
		t.Errorf("private base, 4 bins: edges %v (want %v), slack %v", res.Bins, u.Edges, res.PostProcessing.Slack)
	}
	plain := privateBaseConfig()
	editPostproc(&plain, func(pc *PostprocConfig) { pc.Base, pc.BaseEpsilon, pc.Bins = "", 0, 4 })
	prep, err := RunPostproc(context.Background(), plain)
	if err != nil {
		t.Fatal(err)
	}
	if e := FairExtra(prep).Bins; slices.Equal(e, u.Edges) || len(e) != 3 {
		t.Errorf("non-private base, 4 bins: edges %v, want score quantiles", e)
	}
}

// TestDefaultPrivateBins: Bins 0 with a private base takes
// DefaultPrivateBins of the training records and the cells' ε (4 public
// bins from m·ε = PrivateBinsBudget, else 2), and the report records it.
func TestDefaultPrivateBins(t *testing.T) {
	if DefaultPrivateBins(33916, 0.5) != 4 || DefaultPrivateBins(1495, 0.5) != 2 || DefaultPrivateBins(4000, 1) != 4 || DefaultPrivateBins(3999, 1) != 2 {
		t.Error("DefaultPrivateBins does not follow m·ε ≥ PrivateBinsBudget")
	}
	cfg := privateBaseConfig() // ε 1.5 for the cells
	editPostproc(&cfg, func(pc *PostprocConfig) { pc.Bins = 0 })
	for _, tc := range []struct {
		limit, bins int
	}{{2000, 2}, {8000, 4}} { // Limit is the training records
		cfg.Limit = tc.limit
		rep, err := RunPostproc(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got := PostprocConfigOf(rep.Config).Bins; got != tc.bins || len(FairExtra(rep).Bins) != tc.bins-1 {
			t.Errorf("limit %d: bins %d (edges %v), want %d", tc.limit, got, FairExtra(rep).Bins, tc.bins)
		}
	}
	plain := privateBaseConfig()
	editPostproc(&plain, func(pc *PostprocConfig) { pc.Base, pc.BaseEpsilon, pc.Bins = "", 0, 0 })
	if _, err := LoadFairData(plain); err == nil {
		t.Error("Bins 0 without a private base accepted")
	}
}
