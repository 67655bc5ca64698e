package tailoring

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/dpops/accounting"
	"github.com/fairdp/fairdp/linear"
	"github.com/fairdp/fairdp/loaders"
	"gonum.org/v1/gonum/mat"
)

// threeGroups is a small grouped regression set: slopes 0, −4 and 4 with
// unit noise, sizes 400, 60, 120.
func threeGroups(t testing.TB, seed uint64) *loaders.Dataset {
	t.Helper()
	d, err := linear.Synthetic(rand.New(rand.NewPCG(seed, 99)), "three", []linear.SyntheticGroup{
		{Name: "big", N: 400, Slope: []float64{0}, NoiseStd: 1},
		{Name: "small", N: 60, Slope: []float64{-4}, NoiseStd: 1},
		{Name: "mid", N: 120, Slope: []float64{4}, NoiseStd: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func newData(t testing.TB, d *loaders.Dataset, loss linear.Loss) *Data {
	t.Helper()
	data, err := NewData(d, loss, true)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

var testBounds = linear.Bounds{XNorm: 4, Y: 15}

func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol*math.Max(1, math.Abs(want)) {
		t.Errorf("%s = %.15g, want %.15g (tolerance %g)", what, got, want, tol)
	}
}

func TestNormalise(t *testing.T) {
	for _, tc := range []struct {
		residuals []float64
		sizes     []int
		want      []float64
	}{
		// s_k² ∝ S_k/n_k (Alabi and Wiggins 2023).
		{[]float64{4, 9, 1}, []int{1, 1, 1}, []float64{0.5345224838248488, 0.8017837257372732, 0.2672612419124244}},
		{[]float64{10, 10}, []int{10, 1}, []float64{math.Sqrt(1.0 / 11), math.Sqrt(10.0 / 11)}},
		{[]float64{2, 2, 2, 2}, []int{5, 5, 5, 5}, []float64{0.5, 0.5, 0.5, 0.5}},
	} {
		got, ok := Normalise(tc.residuals, tc.sizes)
		if !ok {
			t.Fatalf("Normalise(%v, %v) failed", tc.residuals, tc.sizes)
		}
		for k := range got {
			near(t, fmt.Sprintf("Normalise(%v, %v)[%d]", tc.residuals, tc.sizes, k), got[k], tc.want[k], 1e-15)
		}
	}
	for _, bad := range [][]float64{{1, 0}, {1, -2}, {math.NaN(), 1}} {
		if s, ok := Normalise(bad, []int{1, 1}); ok || s != nil {
			t.Errorf("Normalise(%v) = %v, %v; want failure", bad, s, ok)
		}
	}
}

// TestSharesSumToOne: Σ s_k² = 1 for any positive residual sums.
func TestSharesSumToOne(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	for range 200 {
		k := 1 + r.IntN(8)
		res := make([]float64, k)
		sizes := make([]int, k)
		for i := range res {
			res[i] = math.Exp(10 * r.NormFloat64())
			sizes[i] = 1 + r.IntN(10000)
		}
		s, ok := Normalise(res, sizes)
		if !ok {
			t.Fatalf("Normalise(%v) failed", res)
		}
		sum := 0.0
		for _, v := range s {
			sum += v * v
		}
		near(t, "Σ s_k²", sum, 1, 1e-12)
	}
	sum := 0.0
	for _, v := range Uniform(7) {
		sum += v * v
	}
	near(t, "Σ uniform s_k²", sum, 1, 1e-15)
}

// TestStageOneSpendsExactlyTau: τ in K+1 equal parts, the first halved
// between XᵀX and XᵀY (Alabi and Wiggins 2023, Algorithm 1).
func TestStageOneSpendsExactlyTau(t *testing.T) {
	d := newData(t, threeGroups(t, 1), linear.Squared)
	o := DefaultOptions(10, testBounds)
	const tau = 2.0
	acct, _ := accounting.NewZCDP(tau)
	se, err := EstimateStandardErrors(rand.New(rand.NewPCG(1, 2)), d, o, tau, acct)
	if err != nil {
		t.Fatal(err)
	}
	if se.Fallback != "" {
		t.Fatalf("unexpected fallback: %s", se.Fallback)
	}
	near(t, "stage-1 ρ", acct.Rho(), tau, 1e-14)
	want := map[string]float64{"XᵀX stage 1": 0.25, "XᵀY stage 1": 0.25,
		"stage 1 residuals big": 0.5, "stage 1 residuals small": 0.5, "stage 1 residuals mid": 0.5}
	spends := acct.Spends()
	if len(spends) != len(want) {
		t.Fatalf("spends %+v, want %d releases", spends, len(want))
	}
	for _, m := range spends {
		near(t, "ρ of "+m.Protects, m.Rho, want[m.Protects], 1e-14)
	}
	sum := 0.0
	for _, s := range se.S {
		sum += s * s
	}
	near(t, "Σ s_k²", sum, 1, 1e-12)
}

// TestStageOneMatchesNoiselessPath: with a huge τ the shares are those of
// the noiseless computation: OLS (QR) on the clipped data, clipped squared
// residuals, per-group means, normalised.
func TestStageOneMatchesNoiselessPath(t *testing.T) {
	ds := threeGroups(t, 2)
	d := newData(t, ds, linear.Squared)
	o := DefaultOptions(1, testBounds)
	acct, _ := accounting.NewZCDP(1e24)
	se, err := EstimateStandardErrors(rand.New(rand.NewPCG(3, 4)), d, o, 1e24, acct)
	if err != nil {
		t.Fatal(err)
	}
	xc, yc := testBounds.Clip(d.X, d.Y)
	beta, err := linear.OLS(xc, yc)
	if err != nil {
		t.Fatal(err)
	}
	mean := make([]float64, 3)
	for i, g := range d.Groups {
		m := beta[0]*xc.At(i, 0) + beta[1]*xc.At(i, 1)
		mean[g] += math.Min((yc[i]-m)*(yc[i]-m), testBounds.Y*testBounds.Y) / float64(d.Sizes[g])
	}
	total := mean[0] + mean[1] + mean[2]
	for k := range 3 {
		near(t, fmt.Sprintf("s_%d", k), se.S[k], math.Sqrt(mean[k]/total), 1e-8)
	}
	// The small group (slope −4 against a pooled fit near 0.4) is the worst
	// served: it gets the largest share.
	if !(se.S[1] > se.S[2] && se.S[2] > se.S[0]) {
		t.Errorf("s = %v, want small > mid > big", se.S)
	}
}

func TestStageOneFallbacks(t *testing.T) {
	d := newData(t, threeGroups(t, 3), linear.Squared)
	o, _ := DefaultOptions(1, testBounds).withDefaults()
	released := false
	release := func(sums []float64) ([]float64, error) { released = true; return sums, nil }
	notPD := linear.SufficientStats{XtX: mat.NewSymDense(2, []float64{1, 2, 2, 1}), XtY: []float64{1, 1}}
	se, err := standardErrors(d, o, notPD, 0, release)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(se.Fallback, "not positive definite") || released || se.Beta != nil {
		t.Errorf("indefinite XᵀX: fallback %q, released %v, β %v", se.Fallback, released, se.Beta)
	}
	for _, s := range se.S {
		near(t, "fallback s_k", s, 1/math.Sqrt(3), 1e-15)
	}

	good := linear.SufficientStats{XtX: mat.NewSymDense(2, []float64{580, 0, 0, 580}), XtY: []float64{0, 0}}
	negative := func([]float64) ([]float64, error) { return []float64{50, -3, 0}, nil }
	se, err = standardErrors(d, o, good, 0, negative)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(se.Fallback, "S(small) = -3") || !strings.Contains(se.Fallback, "S(mid) = 0") {
		t.Errorf("negative S_k: fallback %q", se.Fallback)
	}
	for _, s := range se.S {
		near(t, "fallback s_k", s, 1/math.Sqrt(3), 1e-15)
	}
	if len(se.Residuals) != 3 || se.Residuals[1] != -3 {
		t.Errorf("residuals %v not kept", se.Residuals)
	}
}

// TestStageOneFallbackEndToEnd: all-zero features make XᵀX pure noise, so
// over seeds some noisy XᵀX are not positive definite; those runs fall back
// and spend only the fit's part τ/(K+1).
func TestStageOneFallbackEndToEnd(t *testing.T) {
	ds := threeGroups(t, 4)
	ds.X = make([]float64, len(ds.X)*3)
	ds.Dim = 3
	ds.FeatureNames = nil
	d, err := NewData(ds, linear.Squared, false)
	if err != nil {
		t.Fatal(err)
	}
	o := DefaultOptions(1, testBounds)
	fallbacks := 0
	for seed := range 40 {
		acct, _ := accounting.NewZCDP(1)
		se, err := EstimateStandardErrors(rand.New(rand.NewPCG(uint64(seed), 5)), d, o, 1, acct)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(se.Fallback, "not positive definite") {
			fallbacks++
			near(t, "ρ spent after the fallback", acct.Rho(), 0.25, 1e-14)
		} else {
			near(t, "ρ spent", acct.Rho(), 1, 1e-14)
		}
	}
	// A 3×3 symmetric Gaussian matrix is positive definite with probability
	// well below 1/2, so 40 seeds all passing would be a bug.
	if fallbacks < 10 {
		t.Errorf("only %d of 40 pure-noise XᵀX fell back", fallbacks)
	}
}

// TestStageTwoSpendsExactlyMu: stage 2 spends μ = 0.8ρ, the run ρ, and
// group k's releases have noise multiplier 1/√(2·μ s_k²/(rT)), r = 2 with
// the constraint on (gradient and loss), 1 without.
func TestStageTwoSpendsExactlyMu(t *testing.T) {
	d := newData(t, threeGroups(t, 5), linear.Squared)
	for _, constrained := range []bool{false, true} {
		o := DefaultOptions(4, testBounds)
		o.Steps = 30
		releases := 1.0
		if constrained {
			o.Constraint = BoundedGroupLoss{Eta: 2, G: 1}
			releases = 2
		}
		res, err := Train(rand.New(rand.NewPCG(6, 7)), d, o)
		if err != nil {
			t.Fatal(err)
		}
		near(t, "τ spent", res.StageOneRho, 0.8, 1e-13)
		near(t, "μ spent", res.StageTwoRho, 3.2, 1e-13)
		near(t, "ρ spent", res.Accountant.Rho(), 4, 1e-13)
		for _, m := range res.Accountant.Spends() {
			if !strings.HasPrefix(m.Protects, "stage 2") {
				continue
			}
			g := strings.Index("big small mid", m.Protects[strings.LastIndex(m.Protects, " ")+1:])
			k := map[int]int{0: 0, 4: 1, 10: 2}[g]
			rho := 3.2 * res.Shares[k] / (releases * 30)
			if m.Steps != 30 || math.Abs(m.NoiseMultiplier-1/math.Sqrt(2*rho)) > 1e-9*m.NoiseMultiplier {
				t.Errorf("constraint %v: %s: steps %d σ %.6g, want 30 and %.6g", constrained, m.Protects, m.Steps, m.NoiseMultiplier, 1/math.Sqrt(2*rho))
			}
			if strings.Contains(m.Protects, "loss") != (constrained && strings.Contains(m.Protects, "loss")) {
				t.Errorf("loss released without the constraint: %s", m.Protects)
			}
		}
		rec, err := res.Receipt(1e-5, accounting.RunInfo{})
		if err != nil || rec.Rho == nil || math.Abs(*rec.Rho-4) > 1e-12 || !strings.Contains(rec.Note, "public") {
			t.Errorf("receipt %+v, %v", rec, err)
		}
	}
}

func TestDPNoSEBudget(t *testing.T) {
	d := newData(t, threeGroups(t, 6), linear.Squared)
	o := DefaultOptions(2, testBounds)
	o.Method, o.Steps = DPNoSE, 10
	res, err := Train(rand.New(rand.NewPCG(8, 9)), d, o)
	if err != nil {
		t.Fatal(err)
	}
	if res.StageOneRho != 0 || math.Abs(res.StageTwoRho-2) > 1e-13 {
		t.Errorf("DPNoSE spent τ=%v μ=%v, want 0 and ρ=2", res.StageOneRho, res.StageTwoRho)
	}
	for _, s := range res.Shares {
		near(t, "DPNoSE share", s, 1.0/3, 1e-15)
	}
	o.BaselineStageTwoOnly = true
	res, err = Train(rand.New(rand.NewPCG(8, 9)), d, o)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "DPNoSE μ-only spend", res.Accountant.Rho(), 1.6, 1e-13)
}

// lagrangianGD is stage 2 without noise, written out with plain loops: the
// slow path Train must reproduce as ρ → ∞.
func lagrangianGD(d *Data, o Options, perGroup bool) []float64 {
	o, _ = o.withDefaults()
	p := d.Features()
	dim := p
	if perGroup {
		dim = d.K() * p
	}
	beta := make([]float64, dim)
	block := func(g int) int {
		if perGroup {
			return g * p
		}
		return 0
	}
	// The objective's reading: a group's gradient and loss terms are its
	// sums over n_k (means), or its gradient sum over N = Σ n_k and its
	// loss sum as it is (sums).
	n := 0
	for _, size := range d.Sizes {
		n += size
	}
	gradDiv := func(g int) float64 {
		if o.Objective == GroupSums {
			return float64(n)
		}
		return float64(d.Sizes[g])
	}
	lossDiv := func(g int) float64 {
		if o.Objective == GroupSums {
			return 1
		}
		return float64(d.Sizes[g])
	}
	for range o.Steps {
		grads := make([][]float64, d.K())
		losses := make([]float64, d.K())
		for g := range grads {
			grads[g] = make([]float64, dim)
		}
		for i, g := range d.Groups {
			off := block(g)
			m := 0.0
			for j := range p {
				m += d.X.At(i, j) * beta[off+j]
			}
			dv := o.Loss.Derivative(m, d.Y[i])
			norm := math.Abs(dv) * mat.Norm(d.X.RowView(i), 2)
			c := math.Min(1, o.GradClip/norm)
			for j := range p {
				grads[g][off+j] += c * dv * d.X.At(i, j) / gradDiv(g)
			}
			losses[g] += math.Min(o.Loss.Value(m, d.Y[i]), o.LossClip) / lossDiv(g)
		}
		step := make([]float64, dim)
		worst := 0
		for g := range grads {
			for j := range step {
				step[j] += grads[g][j]
			}
			if losses[g] > losses[worst] {
				worst = g
			}
		}
		if o.Constraint.On() && losses[worst] >= o.Constraint.Eta {
			for j := range step {
				step[j] += o.Constraint.G * grads[worst][j]
			}
		}
		for j := range beta {
			beta[j] = math.Max(-o.Box, math.Min(o.Box, beta[j]-o.LR*step[j]))
		}
	}
	return beta
}

func TestTrainMatchesNoiselessLagrangian(t *testing.T) {
	for _, tc := range []struct {
		loss  linear.Loss
		model Model
		g     float64
		obj   Objective
		eta   float64
	}{
		{linear.Squared, Pooled, 0, GroupMeans, 1.5},
		{linear.Squared, Pooled, 2, GroupMeans, 1.5},
		{linear.Squared, PerGroup, 1, GroupMeans, 1.5},
		{linear.Logistic, Pooled, 1, GroupMeans, 1.5},
		// The synthetic study's reading: η in units of a loss sum (the
		// largest group's sum is in the hundreds, so 300 switches the
		// constraint on for some steps and off for others).
		{linear.Squared, Pooled, 0, GroupSums, 0},
		{linear.Squared, Pooled, 2, GroupSums, 300},
		{linear.Squared, PerGroup, 1, GroupSums, 0},
		{linear.Logistic, Pooled, 1, GroupSums, 100},
	} {
		ds := threeGroups(t, 7)
		if tc.loss == linear.Logistic {
			ds.LabelNames = []string{"neg", "pos"}
			ds.Labels = make([]int, len(ds.Targets))
			for i, y := range ds.Targets {
				if y > 0 {
					ds.Labels[i] = 1
				}
			}
		}
		d := newData(t, ds, tc.loss)
		o := DefaultOptions(1e24, testBounds)
		o.Loss, o.Model, o.Steps, o.LR, o.Objective = tc.loss, tc.model, 60, 0.05, tc.obj
		o.Constraint = BoundedGroupLoss{Eta: tc.eta, G: tc.g}
		o.LossClip = 50
		res, err := Train(rand.New(rand.NewPCG(10, 11)), d, o)
		if err != nil {
			t.Fatal(err)
		}
		want := lagrangianGD(d, o, tc.model == PerGroup)
		if len(res.Beta) != len(want) {
			t.Fatalf("%+v: %d coefficients, want %d", tc, len(res.Beta), len(want))
		}
		for j := range want {
			near(t, fmt.Sprintf("%v %v G=%g %v β[%d]", tc.loss, tc.model, tc.g, tc.obj, j), res.Beta[j], want[j], 1e-7)
		}
	}
}

// TestTrainOLSConvergesToGroupOLS: the OLS variant with a huge μ is OLS on
// the clipped data: per group for a per-group model, pooled otherwise.
func TestTrainOLSConvergesToGroupOLS(t *testing.T) {
	d := newData(t, threeGroups(t, 8), linear.Squared)
	for _, model := range []Model{Pooled, PerGroup} {
		o := DefaultOptions(1e24, testBounds)
		o.Model = model
		res, err := TrainOLS(rand.New(rand.NewPCG(12, 13)), d, o)
		if err != nil {
			t.Fatal(err)
		}
		near(t, "ρ spent", res.Accountant.Rho(), 1e24, 1e-12)
		if model == Pooled {
			xc, yc := testBounds.Clip(d.X, d.Y)
			want, _ := linear.OLS(xc, yc)
			for j := range want {
				near(t, fmt.Sprintf("pooled β[%d]", j), res.Beta[j], want[j], 1e-6)
			}
			continue
		}
		for g, ex := range d.byGroup {
			xc, yc := testBounds.Clip(ex.X, ex.Y)
			want, _ := linear.OLS(xc, yc)
			for j := range want {
				near(t, fmt.Sprintf("group %d β[%d]", g, j), res.Beta[g*2+j], want[j], 1e-6)
			}
		}
	}
}

// TestBoundedGroupLossLowersWorstGroup: with negligible noise, the
// constraint moves the pooled fit towards the worst-served group and lowers
// the largest group loss.
func TestBoundedGroupLossLowersWorstGroup(t *testing.T) {
	// Slopes 0, −4, 4, 4: Σ_k ℓ_k is minimal near slope 1, where the −4
	// group has MSPE ≈ 26; the minimax slope is near 0 (MSPE ≈ 17).
	ds, err := linear.Synthetic(rand.New(rand.NewPCG(9, 9)), "four", []linear.SyntheticGroup{
		{N: 400, Slope: []float64{0}, NoiseStd: 1}, {N: 60, Slope: []float64{-4}, NoiseStd: 1},
		{N: 120, Slope: []float64{4}, NoiseStd: 1}, {N: 150, Slope: []float64{4}, NoiseStd: 1}})
	if err != nil {
		t.Fatal(err)
	}
	d := newData(t, ds, linear.Squared)
	worst := func(g float64) float64 {
		o := DefaultOptions(1e20, testBounds)
		o.Constraint = BoundedGroupLoss{Eta: 1, G: g}
		o.LossClip = 100
		res, err := Train(rand.New(rand.NewPCG(14, 15)), d, o)
		if err != nil {
			t.Fatal(err)
		}
		pred, _ := res.Predict(d)
		loss := make([]float64, d.K())
		for i, g := range d.Groups {
			loss[g] += (pred[i] - d.Y[i]) * (pred[i] - d.Y[i]) / float64(d.Sizes[g])
		}
		return max(loss[0], loss[1], loss[2], loss[3])
	}
	free, constrained := worst(0), worst(3)
	if !(constrained < 0.9*free) {
		t.Errorf("largest group MSPE %.3f with the constraint, %.3f without: want at least 10%% lower", constrained, free)
	}
}

func TestRunTrialsReproducible(t *testing.T) {
	train := newData(t, threeGroups(t, 10), linear.Squared)
	test := newData(t, threeGroups(t, 11), linear.Squared)
	seed := uint64(5)
	_, src := dpops.NewRand(&seed)
	o := DefaultOptions(2, testBounds)
	o.Steps = 20
	one, err := RunTrials(src, train, test, o, GD, 6, 1, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	three, err := RunTrials(src, train, test, o, GD, 6, 3, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(one.Test) != fmt.Sprint(three.Test) || fmt.Sprint(one.Train) != fmt.Sprint(three.Train) {
		t.Errorf("1 worker: %+v\n3 workers: %+v", one.Test, three.Test)
	}
	if len(one.Test) != 4 || one.Test[3].Group != "overall" || one.Test[1].N != 60 || one.Metric != "mspe" {
		t.Errorf("summary rows %+v", one.Test)
	}
	if one.Receipt.Seed == nil || *one.Receipt.Seed != 5 || !strings.Contains(one.Receipt.Note, "costs 6 times this ρ") ||
		one.FitRho != 2 {
		t.Errorf("receipt %+v, fit budget %v", one.Receipt, one.FitRho)
	}
	for _, g := range one.Test {
		if !(g.Min <= g.Mean && g.Mean <= g.Max && g.Std >= 0) {
			t.Errorf("group %s: min %v mean %v max %v std %v", g.Group, g.Min, g.Mean, g.Max, g.Std)
		}
	}

	// The OLS variant at a small budget: failed trials are counted, not fatal.
	o.Rho = 0.2
	o.Model = PerGroup
	sum, err := RunTrials(src, train, test, o, OLS, 20, 2, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Failed == 0 || sum.Failed == 20 {
		t.Errorf("%d of 20 trials failed at ρ = 0.2; expected some but not all", sum.Failed)
	}
}

func TestOptionAndDataErrors(t *testing.T) {
	ds := threeGroups(t, 12)
	d := newData(t, ds, linear.Squared)
	r := rand.New(rand.NewPCG(1, 1))
	for _, tc := range []struct {
		edit func(*Options)
		want string
	}{
		{func(o *Options) { o.Rho = 0 }, "Rho"},
		{func(o *Options) { o.StageOneShare = 1 }, "StageOneShare"},
		{func(o *Options) { o.Bounds.Y = 0 }, "Bounds.Y"},
		{func(o *Options) { o.Steps = -1 }, "Steps"},
		{func(o *Options) { o.Constraint.G = -1 }, "Constraint.G"},
		{func(o *Options) { o.Method = 9 }, "Method"},
	} {
		o := DefaultOptions(1, testBounds)
		tc.edit(&o)
		if _, err := Train(r, d, o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Train: err = %v, want it to mention %q", err, tc.want)
		}
	}
	logistic := DefaultOptions(1, testBounds)
	logistic.Loss = linear.Logistic
	if _, err := TrainOLS(r, d, logistic); err == nil {
		t.Error("OLS variant with logistic loss accepted")
	}

	noTargets := *ds
	noTargets.Targets = nil
	noTargets.Labels = make([]int, ds.N())
	noTargets.LabelNames = []string{"a", "b"}
	if _, err := NewData(&noTargets, linear.Squared, true); err == nil || !strings.Contains(err.Error(), "target") {
		t.Errorf("no targets: %v", err)
	}
	empty := *ds
	empty.GroupNames = append(append([]string(nil), ds.GroupNames...), "nobody")
	if _, err := NewData(&empty, linear.Squared, true); err == nil || !strings.Contains(err.Error(), `"nobody"`) {
		t.Errorf("empty group: %v", err)
	}
	if _, err := NewData(ds, linear.Logistic, true); err == nil || !strings.Contains(err.Error(), "binary labels") {
		t.Errorf("logistic without labels: %v", err)
	}

	// A per-group model cannot predict for a different number of groups.
	o := DefaultOptions(1, testBounds)
	o.Model, o.Steps = PerGroup, 2
	res, err := Train(r, d, o)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := linear.Synthetic(rand.New(rand.NewPCG(3, 3)), "two", []linear.SyntheticGroup{
		{N: 5, Slope: []float64{1}}, {N: 5, Slope: []float64{1}}})
	if _, err := res.Predict(newData(t, other, linear.Squared)); err == nil || !strings.Contains(err.Error(), "2 groups") {
		t.Errorf("per-group model on 2 groups: %v", err)
	}
}

// TestAverageIterates: Average returns the mean of the iterates after steps
// ⌊T/2⌋+1 … T.
func TestAverageIterates(t *testing.T) {
	d := newData(t, threeGroups(t, 13), linear.Squared)
	o := DefaultOptions(1e24, testBounds)
	o.Steps, o.Average = 4, true
	res, err := Train(rand.New(rand.NewPCG(16, 17)), d, o)
	if err != nil {
		t.Fatal(err)
	}
	o.Steps = 3
	three := lagrangianGD(d, o, false)
	o.Steps = 4
	four := lagrangianGD(d, o, false)
	for j := range res.Beta {
		near(t, fmt.Sprintf("averaged β[%d]", j), res.Beta[j], (three[j]+four[j])/2, 1e-9)
	}
}

// TestNoiseRidge: λ = Ridge + NoiseRidge·σ·√P with σ = XNorm²/√(2ρ); with
// NoiseRidge = 2 the OLS variant no longer fails where it mostly did
// (ρ = 0.2, see TestRunTrialsReproducible) and its estimates stay bounded.
func TestNoiseRidge(t *testing.T) {
	o := DefaultOptions(1, testBounds)
	o.Ridge, o.NoiseRidge = 1, 2
	near(t, "λ", o.ridge(o.xtxNoiseStd(0.5), 4), 1+2*16*2, 1e-15)

	train := newData(t, threeGroups(t, 10), linear.Squared)
	test := newData(t, threeGroups(t, 11), linear.Squared)
	seed := uint64(5)
	_, src := dpops.NewRand(&seed)
	o = DefaultOptions(0.2, testBounds)
	o.Model, o.NoiseRidge = PerGroup, 2
	sum, err := RunTrials(src, train, test, o, OLS, 20, 2, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Failed != 0 {
		t.Errorf("%d of 20 trials failed with NoiseRidge = 2", sum.Failed)
	}
	// y is within ±15 and the ridge only shrinks: no group's MSPE can be
	// far above E[y²] ≤ 17 + 1 in any trial.
	for _, g := range sum.Test {
		if g.Max > 100 {
			t.Errorf("group %s: MSPE up to %.3g with NoiseRidge = 2", g.Group, g.Max)
		}
	}
}

// TestRunTrialsLogistic: the logistic variant is scored by its error rate.
func TestRunTrialsLogistic(t *testing.T) {
	withLabels := func(seed uint64) *Data {
		ds := threeGroups(t, seed)
		ds.LabelNames = []string{"neg", "pos"}
		ds.Labels = make([]int, len(ds.Targets))
		for i, y := range ds.Targets {
			if y > 0 {
				ds.Labels[i] = 1
			}
		}
		ds.Targets = nil
		return newData(t, ds, linear.Logistic)
	}
	seed := uint64(8)
	_, src := dpops.NewRand(&seed)
	o := DefaultOptions(4, linear.Bounds{XNorm: 4, Y: 1})
	o.Loss, o.Model, o.Steps, o.LR = linear.Logistic, PerGroup, 100, 1
	sum, err := RunTrials(src, withLabels(14), withLabels(15), o, GD, 4, 2, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Metric != "error" {
		t.Errorf("metric %q, want error", sum.Metric)
	}
	// Per-group logistic models separate y > 0 well: slopes ±4 with unit
	// noise leave about 8 % of labels on the wrong side; slope 0 is a coin.
	for k, want := range []struct{ lo, hi float64 }{{0.3, 0.7}, {0, 0.2}, {0, 0.2}} {
		if g := sum.Test[k]; !(g.Mean >= want.lo && g.Mean <= want.hi) {
			t.Errorf("group %s error %.3f, want in [%g, %g]", g.Group, g.Mean, want.lo, want.hi)
		}
	}
}

// weightedLeastSquares solves min_β Σ_i w_g(i) (y_i − x_iᵀβ)² by its
// normal equations: the closed form stage 2 must reach without clipping
// and noise.
func weightedLeastSquares(t *testing.T, d *Data, weight func(g int) float64) []float64 {
	t.Helper()
	p := d.Features()
	a := mat.NewDense(p, p, nil)
	b := mat.NewVecDense(p, nil)
	for i, g := range d.Groups {
		w := weight(g)
		for j := range p {
			for l := range p {
				a.Set(j, l, a.At(j, l)+w*d.X.At(i, j)*d.X.At(i, l))
			}
			b.SetVec(j, b.AtVec(j)+w*d.X.At(i, j)*d.Y[i])
		}
	}
	var beta mat.VecDense
	if err := beta.SolveVec(a, b); err != nil {
		t.Fatal(err)
	}
	return beta.RawVector().Data
}

// TestObjectiveReadings: without clipping and with negligible noise, stage
// 2 converges to the minimiser of its objective. GroupMeans (Algorithm 2:
// f = Σ_k (1/n_k) Σ_i r_i²) is least squares with weight 1/n_k on group k's
// records; GroupSums (the synthetic study: f = Σ_k Σ_i r_i²) is ordinary,
// record-weighted least squares. On three groups of 400, 60 and 120 records
// with slopes 0, −4, 4 the two differ (slope ≈ 0 against ≈ 0.4), so a
// reading that weighs groups wrongly fails.
func TestObjectiveReadings(t *testing.T) {
	d := newData(t, threeGroups(t, 21), linear.Squared)
	means := weightedLeastSquares(t, d, func(g int) float64 { return 1 / float64(d.Sizes[g]) })
	sums := weightedLeastSquares(t, d, func(int) float64 { return 1 })
	if math.Abs(means[1]-sums[1]) < 0.2 {
		t.Fatalf("the two readings' slopes %.3f and %.3f are too close to tell apart", means[1], sums[1])
	}
	for _, tc := range []struct {
		obj  Objective
		want []float64
	}{{GroupMeans, means}, {GroupSums, sums}} {
		o := DefaultOptions(1e24, testBounds)
		o.Method, o.Objective, o.Steps, o.LR = DPNoSE, tc.obj, 400, 0.1
		o.GradClip, o.Box = 1e6, 1e3 // no clipping, no projection: the plain objective
		res, err := Train(rand.New(rand.NewPCG(22, 23)), d, o)
		if err != nil {
			t.Fatal(err)
		}
		near(t, tc.obj.String()+": ρ spent", res.Accountant.Rho(), 1e24, 1e-12)
		for j := range tc.want {
			near(t, fmt.Sprintf("%v β[%d]", tc.obj, j), res.Beta[j], tc.want[j], 1e-6)
		}
	}
}

// TestGroupSumsLosses: with the constraint on, GroupSums releases each
// group's loss sum (not its mean): with negligible noise the last released
// ℓ̂_k is Σ_i (y_i − x_iᵀβ)² of group k at the last iterate but one, close
// to the converged β's, and n_k times the GroupMeans value there.
func TestGroupSumsLosses(t *testing.T) {
	d := newData(t, threeGroups(t, 24), linear.Squared)
	o := DefaultOptions(1e24, testBounds)
	o.Method, o.Objective, o.Steps, o.LR, o.LossClip = DPNoSE, GroupSums, 400, 0.1, 1e6
	o.GradClip, o.Box = 1e6, 1e3
	o.Constraint = BoundedGroupLoss{Eta: 1e9, G: 1} // on, never binding
	res, err := Train(rand.New(rand.NewPCG(25, 26)), d, o)
	if err != nil {
		t.Fatal(err)
	}
	pred, err := res.Predict(d)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float64, d.K())
	for i, g := range d.Groups {
		want[g] += (pred[i] - d.Y[i]) * (pred[i] - d.Y[i])
	}
	last := res.Losses[len(res.Losses)-1]
	for g := range want {
		near(t, fmt.Sprintf("group %d loss sum", g), last[g], want[g], 1e-6)
	}
	near(t, "ρ spent", res.Accountant.Rho(), 1e24, 1e-12)
}

// TestWarmStart: stage 2 starts at stage 1's β̃ (projected onto the box,
// in every block of a per-group model) with WarmStart and at 0 without;
// with a vanishing step size the result is the start. The spend is ρ
// either way (β̃ is already released), and DPNoSE, which has no β̃, starts
// at 0.
func TestWarmStart(t *testing.T) {
	d := newData(t, threeGroups(t, 27), linear.Squared)
	for _, tc := range []struct {
		method Method
		model  Model
		box    float64
		warm   bool
	}{
		{DPSE, Pooled, 5, true},
		{DPSE, Pooled, 0.5, true}, // β̃'s intercept or slope exceeds 0.5: projected
		{DPSE, PerGroup, 5, true},
		{DPSE, Pooled, 5, false},
		{DPNoSE, Pooled, 5, true},
	} {
		o := DefaultOptions(1e6, testBounds)
		o.Method, o.Model, o.Box, o.WarmStart, o.Steps, o.LR = tc.method, tc.model, tc.box, tc.warm, 1, 1e-300
		res, err := Train(rand.New(rand.NewPCG(28, 29)), d, o)
		if err != nil {
			t.Fatal(err)
		}
		near(t, "ρ spent", res.Accountant.Rho(), 1e6, 1e-12)
		p := d.Features()
		for j, got := range res.Beta {
			want := 0.0
			if tc.warm && tc.method == DPSE {
				want = math.Max(-tc.box, math.Min(tc.box, res.StageOne.Beta[j%p]))
			}
			near(t, fmt.Sprintf("%+v: β[%d]", tc, j), got, want, 1e-12)
		}
	}
	if _, err := TrainOLS(rand.New(rand.NewPCG(1, 2)), d, Options{Rho: 1, Bounds: testBounds, WarmStart: true}); err == nil || !strings.Contains(err.Error(), "WarmStart") {
		t.Errorf("TrainOLS with WarmStart: err = %v, want a refusal naming WarmStart", err)
	}
}

// TestTrialStreamsDoNotRecoverStatistics reproduces an audit's attack: stage
// 1 first releases the noisy XᵀX and XᵀY, whose
// noise is the stream's standard normals times a std ∝ 1/√ρ, so if trial i
// at ρ and at 4ρ drew from one stream, 2y₄ − y₁ would be the exact
// statistic. Each fit's stream must be its own: the combination must miss
// the exact XᵀX and XᵀY by far more than rounding, while a seeded fit
// stays reproducible.
func TestTrialStreamsDoNotRecoverStatistics(t *testing.T) {
	d := newData(t, threeGroups(t, 3), linear.Squared)
	seed := uint64(9)
	_, src := dpops.NewRand(&seed)
	o := DefaultOptions(1, testBounds)
	o.Steps = 5
	exact, err := linear.ClippedStats(d.X, d.Y, o.Bounds)
	if err != nil {
		t.Fatal(err)
	}
	// released is the trial's stage-1 noisy statistics at ρ, drawn as
	// EstimateStandardErrors draws them, checked against the fit RunTrials
	// runs (its released β̃ solves them).
	released := func(rho float64) linear.SufficientStats {
		t.Helper()
		o := o
		o.Rho = rho
		od, _ := o.withDefaults()
		part := od.Tau() / float64(d.K()+1)
		acct, _ := accounting.NewZCDP(math.Inf(1))
		noisy, err := linear.NoisyStats(src.Derive(trialLabel(o, 0)), exact, o.Bounds, part/2, part/2, acct, "stage 1")
		if err != nil {
			t.Fatal(err)
		}
		res, err := GD.Fit(src, trialLabel(o, 0), d, o)
		if err != nil {
			t.Fatal(err)
		}
		beta, err := noisy.Solve(od.ridge(od.xtxNoiseStd(part/2), d.Features()))
		if err != nil || fmt.Sprint(beta) != fmt.Sprint(res.StageOne.Beta) {
			t.Fatalf("the fit's β̃ %v is not the solve of the statistics drawn here %v (%v)", res.StageOne.Beta, beta, err)
		}
		return noisy
	}
	y1, y4 := released(50), released(200)
	p := d.Features()
	var missXtX, missXtY float64
	for i := range p {
		for j := range p {
			missXtX = math.Max(missXtX, math.Abs(2*y4.XtX.At(i, j)-y1.XtX.At(i, j)-exact.XtX.At(i, j)))
		}
		missXtY = math.Max(missXtY, math.Abs(2*y4.XtY[i]-y1.XtY[i]-exact.XtY[i]))
	}
	// Here XᵀX's noise std at ρ = 50 is XNorm²/√(2·τ/(2(K+1))) = 16/√2.5 ≈ 10:
	// fresh streams leave an error of that order, a shared one about 1e-13.
	if missXtX < 1e-3 || missXtY < 1e-3 {
		t.Errorf("2y₄ − y₁ recovers the exact statistics: |error| XᵀX %.3g, XᵀY %.3g", missXtX, missXtY)
	}
	again := released(50)
	if fmt.Sprint(again.XtY) != fmt.Sprint(y1.XtY) {
		t.Errorf("a seeded fit is not reproducible: %v, then %v", y1.XtY, again.XtY)
	}

	// Every fit a sweep releases has its own stream: both methods, every ρ,
	// every trial.
	seen := map[string]string{}
	for _, m := range []Method{DPSE, DPNoSE} {
		for _, rho := range []float64{0.5, 2, 8} {
			for i := range 3 {
				o := o
				o.Method, o.Rho = m, rho
				fit := fmt.Sprintf("%s ρ=%g trial %d", m, rho, i)
				if other, ok := seen[trialLabel(o, i)]; ok {
					t.Errorf("%s and %s share the stream %q", fit, other, trialLabel(o, i))
				}
				seen[trialLabel(o, i)] = fit
			}
		}
	}
}
