package linear

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/dpops/accounting"
	"github.com/fairdp/fairdp/trainer"
)

// TestTuneObjPert runs a search on Adult (2,000 records) with each
// mechanism and checks its report: the receipt's ε meets the target and
// covers the chosen trial's curve with its score composed by Theorem 2
// (recomputed here from the published choice, apart from the plan), the
// relation and the mechanisms are stated, extra.tune holds the choice and
// nothing of other trials, progress lines count the trials, and the
// checkpoint scores the test split as the report does.
func TestTuneObjPert(t *testing.T) {
	for _, mech := range []string{MechanismPure, MechanismGaussian} {
		t.Run(mech, func(t *testing.T) {
			cfg := objPertConfig(1)
			cfg.Out = t.TempDir()
			var log bytes.Buffer
			rep, err := TuneObjPert(context.Background(), cfg, ObjPertTuneOptions{Log: &log,
				Space: &ObjPertTuneSpace{Mechanisms: []string{mech}, L2Factors: []float64{6, 96}, WeightFactors: []float64{0, 384}}})
			if err != nil {
				t.Fatal(err)
			}
			res := ObjPertTuneResultOf(rep)
			if res == nil || res.Trials < 1 || res.Chosen.Mechanism != mech || !slices.Contains(res.Space.L2Factors, res.Chosen.L2Factor) {
				t.Fatalf("extra.tune %+v", res)
			}
			rc := rep.Privacy
			if rc.Epsilon == nil || *rc.Epsilon > 1 || *rc.Epsilon < 0.99 || rc.Accountant != accounting.AccountantRDP ||
				rc.Relation != accounting.RelationReplaceOne || !strings.Contains(rc.Note, "Papernot and Steinke 2022") {
				t.Fatalf("receipt %+v", rc)
			}
			n := rep.TrainRecords
			delta := rc.Delta
			if want := 1 / float64(n*n); math.Abs(delta-want) > 1e-12*want {
				t.Errorf("δ %v, want 1/n² = %v", delta, want)
			}
			// The chosen trial's curve, from what extra.tune publishes.
			orders := accounting.TuningOrders()
			var curve []float64
			c := res.Chosen
			// As a short decimal (trainer.ShortDecimal), which --l2 prints.
			if want := trainer.ShortDecimal(c.L2Factor * 0.25 / (float64(n) * math.Expm1(0.25))); c.L2 != want {
				t.Errorf("Λ %v, want K·c/(n(e^{ε/4}−1)) to 4 digits = %v", c.L2, want)
			}
			if mech == MechanismPure {
				curve = accounting.PureRDP(c.Epsilon, orders)
			} else {
				curve = ObjPertGaussianRDP(c.NoiseStd, math.Log1p(0.25/(float64(n)*c.L2)), orders)
			}
			for i, a := range orders {
				curve[i] += a / (2 * res.ScoreNoise * res.ScoreNoise)
			}
			law := accounting.TruncatedNegativeBinomial{Eta: res.Eta, Gamma: res.Gamma}
			eps, _, err := accounting.TunedEpsilon(law, orders, curve, delta)
			if err != nil {
				t.Fatal(err)
			}
			if eps > *rc.Epsilon*(1+1e-9) {
				t.Errorf("the chosen trial's search spends ε = %v, more than the receipt's %v", eps, *rc.Epsilon)
			}
			kinds := []string{}
			for _, m := range rc.Mechanisms {
				kinds = append(kinds, m.Kind)
			}
			wantKinds := []string{accounting.KindGaussian} // the score
			if mech == MechanismPure {
				wantKinds = []string{accounting.KindPureDP, accounting.KindGaussian}
			}
			if !slices.Equal(kinds, wantKinds) {
				t.Errorf("mechanisms %v, want %v", kinds, wantKinds)
			}
			// extra.tune says nothing of the trials not chosen.
			raw, err := json.Marshal(rep.Extra["tune"])
			if err != nil {
				t.Fatal(err)
			}
			var keys map[string]json.RawMessage
			if err := json.Unmarshal(raw, &keys); err != nil {
				t.Fatal(err)
			}
			for k := range keys {
				if !slices.Contains([]string{"trials", "mean_trials", "eta", "gamma", "trial_epsilon", "train_records", "validation_records",
					"held_out", "score_noise_std", "chosen", "chosen_noisy_validation_accuracy", "space", "mechanism_choice", "weight_choice"}, k) {
					t.Errorf("extra.tune has %q", k)
				}
			}
			if got := strings.Count(log.String(), "done; ε spent"); got != res.Trials {
				t.Errorf("%d progress lines for %d trials:\n%s", got, res.Trials, log.String())
			}
			if w := c.WeightFactor * 0.25 / (float64(n) * math.Expm1(0.25)); math.Abs(c.WeightL2-w) > 1e-12*math.Max(w, 1e-300) {
				t.Errorf("weight penalty %v, want %v", c.WeightL2, w)
			}
			if rep.Train != nil || ObjPertConfigOf(rep.Config).L2 != c.L2 || ObjPertConfigOf(rep.Config).WeightL2 != c.WeightL2 ||
				ObjPertConfigOf(rep.Config).Mechanism != mech {
				t.Errorf("train stats %v, config %+v", rep.Train, ObjPertConfigOf(rep.Config))
			}
			checkCheckpointScores(t, cfg, rep)
			// The same seed repeats the search.
			cfg.Out = ""
			again, err := TuneObjPert(context.Background(), cfg, ObjPertTuneOptions{
				Space: &ObjPertTuneSpace{Mechanisms: []string{mech}, L2Factors: []float64{6, 96}, WeightFactors: []float64{0, 384}}})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(again.Test, rep.Test) || !reflect.DeepEqual(ObjPertTuneResultOf(again), res) {
				t.Errorf("a seeded search did not repeat")
			}
		})
	}
}

// TestTuneObjPertDefaultSpace: the default space is ObjPertTuneFactors
// times the auto rule's K for the mechanism (each mechanism's when there
// are two), with no weight penalty; the fallback's rule holds the cases it
// was derived from (bench/results/tabular.md, "`--algo objpert --tune`
// with a data-aware space"), written out; and a default search on Adult
// publishes both reasons.
func TestTuneObjPertDefaultSpace(t *testing.T) {
	for _, tc := range []struct {
		mechs []string
		want  []float64
	}{
		{[]string{MechanismPure}, []float64{8, 16, 32}},
		{[]string{MechanismGaussian}, []float64{6, 12, 24}},
		{[]string{MechanismPure, MechanismGaussian}, []float64{6, 8, 12, 16, 24, 32}},
	} {
		s, _, err := objPertTuneSpace(&ObjPertTuneSpace{Mechanisms: tc.mechs}, ObjPertConfig{}, 1000, 5, 1, 1e-6)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(s.L2Factors, tc.want) || !slices.Equal(s.WeightFactors, []float64{0}) {
			t.Errorf("%v: space %+v, want K %v and no weight penalty", tc.mechs, s, tc.want)
		}
	}
	for _, tc := range []struct {
		name         string
		eps          float64
		n            int
		bound, sigma float64
		valid        int
		fallback     bool
	}{
		// The search's plans on the tables measured (ε_t and the score's
		// σ from their reports, seed 1).
		// ε_t·n/B² = 45, score noise .0037: the default loses to the majority.
		{"15,000 × 100 at ε = 0.5", 0.303, 15000, 10, 55, 15000, true},
		// 92: the default beats the majority (.0935 against .0990), a trial not.
		{"15,000 × 100 at ε = 1", 0.616, 15000, 10, 28, 15000, true},
		// 55, but the score's noise is .014 in accuracy.
		{"3,750 × 20 at ε = 0.5", 0.293, 3750, math.Sqrt(20), 52.2, 3750, false},
		// 96, noise .018.
		{"3,750 × 20 at ε = 1", 0.51, 3750, math.Sqrt(20), 69.3, 3750, false},
		// 38, noise .18.
		{"375 × 5 at ε = 1", 0.501, 375, math.Sqrt(5), 68.8, 375, false},
		// 879 (12 source columns, B = √12), noise .0017.
		{"Adult at ε = 0.5", 0.311, 33916, math.Sqrt(12), 57.3, 33916, false},
		// 315 (B² = 22), noise .0025.
		{"Credit at ε = 0.5", 0.308, 22500, math.Sqrt(22), 56.6, 22500, false},
		// At both limits.
		{"at the limits", 1, 10000, 10, 50, 10000, true},
		{"above the budget", 1.001, 10000, 10, 50, 10000, false},
		{"above the noise", 1, 10000, 10, 50.01, 10000, false},
	} {
		got, why := objPertFallback(tc.eps, tc.n, tc.bound, tc.sigma, tc.valid)
		if got != tc.fallback || why == "" {
			t.Errorf("%s: fallback %v (%q), want %v", tc.name, got, why, tc.fallback)
		}
	}
	rep, err := TuneObjPert(context.Background(), objPertConfig(1), ObjPertTuneOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res := ObjPertTuneResultOf(rep)
	if len(res.Space.Mechanisms) != 1 || res.MechanismChoice == "" || res.WeightChoice == "" ||
		!slices.Equal(res.Space.L2Factors, []float64{6, 12, 24}) || !slices.Equal(res.Space.WeightFactors, []float64{0}) {
		t.Errorf("space %+v, reasons %q, %q", res.Space, res.MechanismChoice, res.WeightChoice)
	}
}

// TestTuneObjPertNoFallbackOnSmallTable: on a 500-record table of 5
// features (375 training records) at ε = 1, a trial's ε_t·n/B² ≈ 38 is
// within the fallback's budget but the score's noise (about .18 in
// accuracy) cannot tell a model from the majority class, so no point of
// the default space may be the weight-penalised fallback: the search would
// choose it about as often as a model (the space before had it as half its points, and
// returned the majority class's error on such a table).
func TestTuneObjPertNoFallbackOnSmallTable(t *testing.T) {
	schema := wideTable(t, t.TempDir(), 500, 5, 0.5, 7)
	seed := uint64(1)
	cfg := trainer.Defaults()
	cfg.Algo, cfg.Dataset, cfg.Schema, cfg.DataDir, cfg.Seed = "objpert", strings.TrimSuffix(schema, ".schema.json")+".csv", schema, "", &seed
	cfg.Privacy.Epsilon = 1
	rep, err := TuneObjPert(context.Background(), cfg, ObjPertTuneOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res := ObjPertTuneResultOf(rep)
	// The rule's first test (ε_t·n/B² ≤ ObjPertFallbackBudget) holds here;
	// the score's noise is what excludes the fallback.
	if res.TrainRecords != 375 || !strings.Contains(res.WeightChoice, "cannot tell") {
		t.Fatalf("%d training records, weight choice %q", res.TrainRecords, res.WeightChoice)
	}
	for _, w := range res.Space.WeightFactors {
		if w != 0 {
			t.Errorf("the default space has the fallback's weight penalty %v on a table where the score cannot choose: %+v", w, res.Space)
		}
	}
	if res.Chosen.WeightL2 != 0 {
		t.Errorf("chose a weight penalty %v", res.Chosen.WeightL2)
	}
}

func TestTuneObjPertRefuses(t *testing.T) {
	for name, mutate := range map[string]func(c *trainer.Config, o *ObjPertTuneOptions){
		"ε inf": func(c *trainer.Config, _ *ObjPertTuneOptions) { c.Privacy.Epsilon = math.Inf(1) },
		"fixed Λ": func(c *trainer.Config, _ *ObjPertTuneOptions) {
			*c = WithObjPertConfig(*c, ObjPertConfig{Mechanism: MechanismAuto, L2: 0.01})
		},
		"KST": func(c *trainer.Config, _ *ObjPertTuneOptions) {
			*c = WithObjPertConfig(*c, ObjPertConfig{Calibration: CalibrationKST})
		},
		"sgd space": func(_ *trainer.Config, o *ObjPertTuneOptions) { o.Search.Space = &trainer.TuneSpace{} },
		"bad K":     func(_ *trainer.Config, o *ObjPertTuneOptions) { o.Space = &ObjPertTuneSpace{L2Factors: []float64{-1}} },
		"bad W": func(_ *trainer.Config, o *ObjPertTuneOptions) {
			o.Space = &ObjPertTuneSpace{WeightFactors: []float64{-1}}
		},
		"bad mechanism": func(_ *trainer.Config, o *ObjPertTuneOptions) {
			o.Space = &ObjPertTuneSpace{Mechanisms: []string{MechanismAuto}}
		},
		"tiny ε": func(c *trainer.Config, _ *ObjPertTuneOptions) { c.Privacy.Epsilon = 1e-6 },
		"regression": func(c *trainer.Config, _ *ObjPertTuneOptions) {
			*c = WithObjPertConfig(*c, ObjPertConfig{Mechanism: MechanismAuto, LabelRange: []float64{0, 1}})
		},
	} {
		cfg := objPertConfig(1)
		var o ObjPertTuneOptions
		mutate(&cfg, &o)
		if _, err := TuneObjPert(context.Background(), cfg, o); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestCheckObjPertTrial: a trial is held to its planned curve; one that
// spent more (a larger ε_t, a smaller σ, another calibration) is refused.
func TestCheckObjPertTrial(t *testing.T) {
	const n, dim = 300, 4
	r := rand.New(rand.NewPCG(1, 2))
	x := make([]float64, n*dim)
	label := make([]int, n)
	for i := range n {
		for j := range dim {
			x[i*dim+j] = r.NormFloat64()
		}
		if x[i*dim]+0.5*r.NormFloat64() > 0 {
			label[i] = 1
		}
	}
	orders := accounting.TuningOrders()
	const l2, delta = 0.01, 1e-6
	fit := func(opt ObjPertOptions) *ObjPertResult {
		opt.RowBound, opt.L2 = 2, l2
		res, err := ObjectivePerturbation(rand.New(rand.NewPCG(3, 4)), x, n, dim, label, opt)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	sigma, pureCurve, err := objPertTrialCurve(MechanismPure, l2, n, 0.3, delta, orders)
	if err != nil || sigma != 0.3 {
		t.Fatal(sigma, err)
	}
	sigma, gaussCurve, err := objPertTrialCurve(MechanismGaussian, l2, n, 0.3, delta, orders)
	if err != nil {
		t.Fatal(err)
	}
	gauss := fit(ObjPertOptions{Mechanism: MechanismGaussian, Calibration: CalibrationRDP, NoiseStd: sigma, Delta: delta})
	if e, _, _ := objPertRDPEpsilon(gauss.NoiseStd, gauss.JacobianEpsilon, delta); gauss.NoiseStd != sigma || gauss.Epsilon != e || e > 0.3 {
		t.Errorf("σ %v (want %v), ε %v (curve's %v, planned 0.3)", gauss.NoiseStd, sigma, gauss.Epsilon, e)
	}
	for _, c := range []struct {
		name    string
		res     *ObjPertResult
		planned []float64
		ok      bool
	}{
		{"pure as planned", fit(ObjPertOptions{Epsilon: 0.3, Calibration: CalibrationTight}), pureCurve, true},
		{"pure, larger ε", fit(ObjPertOptions{Epsilon: 0.31, Calibration: CalibrationTight}), pureCurve, false},
		{"Gaussian as planned", gauss, gaussCurve, true},
		{"Gaussian, smaller σ", fit(ObjPertOptions{Mechanism: MechanismGaussian, Calibration: CalibrationRDP, NoiseStd: sigma * 0.99, Delta: delta}), gaussCurve, false},
		{"Gaussian, profile", fit(ObjPertOptions{Epsilon: 0.3, Mechanism: MechanismGaussian, Calibration: CalibrationTight, Delta: delta}), gaussCurve, false},
		{"pure for a Gaussian plan", fit(ObjPertOptions{Epsilon: 0.3, Calibration: CalibrationTight}), gaussCurve, false},
	} {
		if err := checkObjPertTrial(c.res, n, orders, c.planned); (err == nil) != c.ok {
			t.Errorf("%s: error %v, want ok %v", c.name, err, c.ok)
		}
	}
	// A given σ comes with its own rules.
	for name, opt := range map[string]ObjPertOptions{
		"with ε":         {Epsilon: 1, Mechanism: MechanismGaussian, Calibration: CalibrationRDP, NoiseStd: 1, Delta: delta, L2: l2, RowBound: 1},
		"pure":           {Calibration: CalibrationRDP, NoiseStd: 1, Delta: delta, L2: l2, RowBound: 1},
		"profile":        {Mechanism: MechanismGaussian, Calibration: CalibrationProfile, NoiseStd: 1, Delta: delta, L2: l2, RowBound: 1},
		"no Λ":           {Mechanism: MechanismGaussian, Calibration: CalibrationRDP, NoiseStd: 1, Delta: delta, RowBound: 1},
		"no δ":           {Mechanism: MechanismGaussian, Calibration: CalibrationRDP, NoiseStd: 1, L2: l2, RowBound: 1},
		"negative noise": {Mechanism: MechanismGaussian, Calibration: CalibrationRDP, NoiseStd: -1, Delta: delta, L2: l2, RowBound: 1},
	} {
		if _, err := ObjectivePerturbation(r, x, n, dim, label, opt); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestCorrectPredictions: the search's count of correct predictions agrees
// with the released zoo model's error (which clips rows itself), with and
// without clipping at prediction.
func TestCorrectPredictions(t *testing.T) {
	cfg := objPertConfig(1)
	job, err := trainer.Prepare(cfg, trainer.PrepareOptions{Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	d := job.Train
	res, err := ObjectivePerturbation(rand.New(rand.NewPCG(1, 1)), d.X, d.N(), d.Dim, d.Labels,
		ObjPertOptions{Epsilon: 1, RowBound: 2, Calibration: CalibrationTight})
	if err != nil {
		t.Fatal(err)
	}
	for _, clip := range []bool{true, false} {
		m, err := linearModel(res, "logistic", clip)
		if err != nil {
			t.Fatal(err)
		}
		met, err := trainer.Evaluate(m, d)
		if err != nil {
			t.Fatal(err)
		}
		got := correctPredictions(res, d, clip)
		if want := (1 - met.Error) * float64(d.N()); math.Abs(float64(got)-want) > 1e-6 {
			t.Errorf("clip %v: %d correct, the model's error says %v", clip, got, want)
		}
	}
}

// TestObjPertTunable: trainer lists objpert among the algorithms that can
// be searched privately, for every caller's message.
func TestObjPertTunable(t *testing.T) {
	if !slices.Contains(trainer.Tunable(), ObjPertName) {
		t.Errorf("trainer.Tunable() = %v lacks %s", trainer.Tunable(), ObjPertName)
	}
}
