package accounting

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/dpops/accounting/accountingtest"
)

// pldEps is the PLD ε of one subsampled Gaussian run, failing the test on
// error.
func pldEps(t testing.TB, q, sigma float64, steps int, delta float64, opts PLDOptions) float64 {
	t.Helper()
	eps, err := PLDEpsilon([]Mechanism{{Kind: KindSubsampledGaussian, SampleRate: q, NoiseMultiplier: sigma, Steps: steps}}, delta, opts)
	if err != nil {
		t.Fatalf("PLD ε(q=%v, σ=%v, T=%d, δ=%v): %v", q, sigma, steps, delta, err)
	}
	return eps
}

// rdpEps is the RDP accountant's ε (Opacus orders, Balle et al. 2020).
func rdpEps(t testing.TB, q, sigma float64, steps int, delta float64) float64 {
	t.Helper()
	a, err := NewRDP(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Step(SubsampledGaussian(q, sigma, 1, ""), steps); err != nil {
		t.Fatal(err)
	}
	eps, _ := a.Epsilon(delta)
	return eps
}

// pldVectors are the issue-32 reference vectors: ε of Google's
// dp_accounting (google/differential-privacy, python/dp_accounting at
// b5b0286, PLDAccountant, add/remove, pessimistic discretisation 1e-4),
// and fairdp's RDP ε of the same runs. Opacus 1.4's PRVAccountant gives
// 0.938, 2.445 and 2.830 on the first three.
var pldVectors = []struct {
	name     string
	sigma, q float64
	steps    int
	delta    float64
	pld, rdp float64
}{
	{"adult-tailoring", 2.454, 0.007548, 2640, 8.69e-10, 0.92767, 0.97963},
	{"adult-dpsgdf", 0.99504, 256.0 / 36177, 2820, 1e-6, 2.43472, 2.68820},
	{"mnist-60-epochs", 1.0, 256.0 / 60000, 14040, 1e-5, 2.82020, 3.07607},
	{"q0.01", 1.1, 0.01, 1000, 1e-5, 1.51537, 1.71177},
	{"small-sigma", 0.8, 0.004, 10000, 1e-6, 4.02848, 4.46000},
}

// TestPLDReferenceVectors checks the five issue-32 rows to -0.5 %/+1 % of
// dp_accounting (fairdp's bound is pessimistic too, so it may not be much
// below), and that PLD is below the RDP accountant on each.
func TestPLDReferenceVectors(t *testing.T) {
	for _, v := range pldVectors {
		t.Run(v.name, func(t *testing.T) {
			got := pldEps(t, v.q, v.sigma, v.steps, v.delta, PLDOptions{})
			if rel := (got - v.pld) / v.pld; rel < -0.005 || rel > 0.01 {
				t.Errorf("PLD ε = %.6f, dp_accounting %.5f (%+.3f %%, want within -0.5 %%/+1 %%)", got, v.pld, 100*rel)
			}
			rdp := rdpEps(t, v.q, v.sigma, v.steps, v.delta)
			if relErr(rdp, v.rdp) > 1e-4 {
				t.Errorf("RDP ε = %.6f, want %.5f", rdp, v.rdp)
			}
			if !(got <= rdp) {
				t.Errorf("PLD ε %.6f exceeds RDP ε %.6f", got, rdp)
			}
		})
	}
}

// TestPLDReplaceOne checks replace-one adjacency (--scope sensitive) against
// the issue-32 measurements with dp_accounting's REPLACE_ONE (σ relative to
// the sensitivity 2C, δ = 8.69e-10). They were taken at a discretisation
// interval of 1e-3 on one grid: the add/remove value 0.9350 given with them
// is what that gives (h = 1e-4 gives the table's 0.92767), so the test
// reproduces them on that grid, and checks that the default (h = 1e-4,
// finer per-release grids) is tighter but within 1 %. Replace-one must be
// the tighter relation.
func TestPLDReplaceOne(t *testing.T) {
	const delta = 8.69e-10
	for _, c := range []struct {
		sigma, q              float64
		steps                 int
		addRemove, replaceOne float64
	}{
		{2.454, 0.007548, 2640, 0.9350, 0.8747},
		{0.6, 0.01, 3000, 18.35, 5.84},
	} {
		for _, x := range []struct {
			rel  string
			want float64
		}{{RelationAddRemove, c.addRemove}, {RelationReplaceOne, c.replaceOne}} {
			dpa := pldEps(t, c.q, c.sigma, c.steps, delta, PLDOptions{Interval: 1e-3, Relation: x.rel, singleGrid: true})
			if rel := (dpa - x.want) / x.want; math.Abs(rel) > 0.001 {
				t.Errorf("σ=%v q=%v %s at h = 1e-3: ε = %.5f, dp_accounting %.4g (%+.3f %%)", c.sigma, c.q, x.rel, dpa, x.want, 100*rel)
			}
			if c.sigma < 1 {
				continue // slow at the default interval; the first row covers it
			}
			def := pldEps(t, c.q, c.sigma, c.steps, delta, PLDOptions{Relation: x.rel})
			if !(def <= dpa) || def < 0.99*x.want {
				t.Errorf("σ=%v q=%v %s by default: ε = %.5f, want in [0.99·%.4g, %.5f]", c.sigma, c.q, x.rel, def, x.want, dpa)
			}
		}
		ar := pldEps(t, c.q, c.sigma, c.steps, delta, PLDOptions{Interval: 1e-3})
		ro := pldEps(t, c.q, c.sigma, c.steps, delta, PLDOptions{Interval: 1e-3, Relation: RelationReplaceOne})
		if !(ro < ar) {
			t.Errorf("σ=%v: replace-one ε %v should be below add/remove at 2C %v", c.sigma, ro, ar)
		}
	}
	// At q = 1 replace-one with shift ±1/2 is the Gaussian with shift 1.
	g := pldEps(t, 1, 3, 10, 1e-6, PLDOptions{})
	if r := pldEps(t, 1, 3, 10, 1e-6, PLDOptions{Relation: RelationReplaceOne}); relErr(r, g) > 1e-7 {
		t.Errorf("replace-one at q = 1: ε = %v, want the Gaussian's %v", r, g)
	}
}

// gaussianDeltaExact is Balle and Wang 2018's exact privacy profile of the
// Gaussian mechanism with noise multiplier sigma (accountingtest).
func gaussianDeltaExact(sigma, eps float64) float64 {
	return accountingtest.GaussianDelta(1/sigma, eps)
}

// gaussianEpsExact inverts gaussianDeltaExact (accountingtest).
func gaussianEpsExact(sigma, delta float64) float64 {
	return accountingtest.GaussianEpsilon(1/sigma, delta)
}

// TestPLDGaussianClosedForm: T releases of the plain Gaussian (q = 1, as
// kind subsampled-gaussian and as kind gaussian) compose to one Gaussian
// with σ/√T, whose ε is known exactly (Balle and Wang 2018). The PLD bound
// must be within 1e-6 relative and never below it. Connect the dots adds
// up to h²/4 to each release's loss variance 1/σ², i.e. 2.5e-7 of it at
// σ = 10, h = 1e-4; at σ = 20 it is 1e-6, and 400 releases come out 2.2e-6
// above the exact ε (2e-5 brings them within 1e-6, tested here at a
// smaller scale).
func TestPLDGaussianClosedForm(t *testing.T) {
	for _, c := range []struct {
		sigma    float64
		steps    int
		delta, h float64
	}{{2, 1, 1e-5, 0}, {5, 20, 1e-5, 0}, {10, 100, 1e-9, 0}, {20, 16, 1e-9, 2e-5}} {
		want := gaussianEpsExact(c.sigma/math.Sqrt(float64(c.steps)), c.delta)
		for _, kind := range []string{KindSubsampledGaussian, KindGaussian} {
			m := Mechanism{Kind: kind, SampleRate: 1, NoiseMultiplier: c.sigma, Steps: c.steps}
			got, err := PLDEpsilon([]Mechanism{m}, c.delta, PLDOptions{Interval: c.h})
			if err != nil {
				t.Fatal(err)
			}
			if rel := (got - want) / want; rel > 1e-6 || rel < -1e-12 {
				t.Errorf("%s σ=%v T=%d δ=%v: ε = %.12g, exact %.12g (rel %+.3g)", kind, c.sigma, c.steps, c.delta, got, want, rel)
			}
		}
	}
}

// TestPLDLaplaceClosedForm: one Laplace release with ε0 = Δ/b has δ(ε) =
// 1 - e^((ε-ε0)/2) for ε < ε0, so ε(δ) = ε0 + 2·log(1-δ); k releases are at
// most k·ε0 (basic composition) at any δ.
func TestPLDLaplaceClosedForm(t *testing.T) {
	for _, eps0 := range []float64{0.1, 1, 2.5} {
		for _, delta := range []float64{1e-6, 1e-3, 0.05} {
			got, err := PLDEpsilon([]Mechanism{{Kind: KindLaplace, Epsilon: eps0, Steps: 1}}, delta, PLDOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want := math.Max(0, eps0+2*math.Log1p(-delta))
			if d := got - want; d > 1e-6*want || d < -1e-12 {
				t.Errorf("Laplace ε0=%v δ=%v: ε = %.12g, exact %.12g", eps0, delta, got, want)
			}
		}
	}
	const k, eps0 = 50, 0.2
	got, err := PLDEpsilon([]Mechanism{{Kind: KindLaplace, Epsilon: k * eps0, Steps: k}}, 1e-6, PLDOptions{})
	if err != nil {
		t.Fatal(err)
	}
	adv, _, err := AdvancedComposition(eps0, 0, k, 1e-6)
	if err != nil {
		t.Fatal(err)
	}
	if !(got < adv && adv < k*eps0) {
		t.Errorf("%d Laplace releases of ε0 = %v: PLD ε %v should be below advanced composition %v and basic %v", k, eps0, got, adv, k*eps0)
	}
}

// hockeyStick integrates δ(ε) = ∫ (p(x) - e^ε q(x))_+ dx numerically on
// [-lim, lim]: the definition, independent of the loss models' inversion
// and interval masses. The sign changes of p - e^ε q are located by
// bisection, and each positive piece is integrated by Simpson's rule
// (smooth there, so accurate to ~1e-13); kinks are points where the
// densities are not smooth, cut there too.
func hockeyStick(p, q func(x float64) float64, lim, eps float64, kinks ...float64) float64 {
	g := func(x float64) float64 { return p(x) - math.Exp(eps)*q(x) }
	simpson := func(a, b float64) float64 {
		const n = 20000
		h := (b - a) / n
		sum := math.Max(0, g(a)) + math.Max(0, g(b))
		for i := 1; i < n; i++ {
			w := 2.0
			if i%2 == 1 {
				w = 4
			}
			sum += w * math.Max(0, g(a+float64(i)*h))
		}
		return sum * h / 3
	}
	const scan = 20000
	cuts := []float64{-lim}
	step := 2 * lim / scan
	for i := range scan {
		a, b := -lim+float64(i)*step, -lim+float64(i+1)*step
		if (g(a) > 0) != (g(b) > 0) {
			for range 100 {
				m := (a + b) / 2
				if (g(m) > 0) == (g(a) > 0) {
					a = m
				} else {
					b = m
				}
			}
			cuts = append(cuts, (a+b)/2)
		}
	}
	cuts = append(cuts, kinks...)
	cuts = append(cuts, lim)
	slices.Sort(cuts)
	var total float64
	for i := 0; i+1 < len(cuts); i++ {
		total += simpson(cuts[i], cuts[i+1])
	}
	return total
}

// pmfDelta is δ(ε) of a single discretised release.
func pmfDelta(p pldPMF, h, eps float64) float64 {
	d := p.inf
	for k, v := range p.p {
		if l := float64(p.lo+k) * h; l > eps {
			d += v * -math.Expm1(eps-l)
		}
	}
	return d
}

// TestPLDModelsAgainstDefinition checks every loss model, in each
// direction, against the hockey-stick divergence integrated from the
// densities: the pessimistic pmf of one release must equal it at grid
// points (connect the dots interpolates it there) and never fall below it
// between them. A wrong direction, a swapped pair or a wrong replace-one
// shift fails here.
func TestPLDModelsAgainstDefinition(t *testing.T) {
	gauss := func(mu, s float64) func(float64) float64 {
		return func(x float64) float64 { return math.Exp(-(x-mu)*(x-mu)/(2*s*s)) / (s * math.Sqrt(2*math.Pi)) }
	}
	mix := func(q float64, a, b func(float64) float64) func(float64) float64 {
		return func(x float64) float64 { return (1-q)*a(x) + q*b(x) }
	}
	lap := func(mu, b float64) func(float64) float64 {
		return func(x float64) float64 { return math.Exp(-math.Abs(x-mu)/b) / (2 * b) }
	}
	const q, s = 0.2, 0.7
	cases := []struct {
		name  string
		model lossModel
		p, qd func(float64) float64
		lim   float64
		kinks []float64
	}{
		{"remove", subsampledGaussianLoss{q: q, sigma: s, remove: true}, mix(q, gauss(0, s), gauss(1, s)), gauss(0, s), 12, nil},
		{"add", subsampledGaussianLoss{q: q, sigma: s, remove: false}, gauss(0, s), mix(q, gauss(0, s), gauss(1, s)), 12, nil},
		{"gaussian", subsampledGaussianLoss{q: 1, sigma: s, remove: true}, gauss(1, s), gauss(0, s), 12, nil},
		{"replace-one", newReplaceOneLoss(q, s), mix(q, gauss(0, s), gauss(0.5, s)), mix(q, gauss(0, s), gauss(-0.5, s)), 12, nil},
		{"laplace", laplaceLoss{eps0: 1.5}, lap(0, 1/1.5), lap(1, 1/1.5), 40, []float64{0, 1}},
	}
	const h = 0.01
	for _, c := range cases {
		pmf := discretise(c.model, h, 1e-18, true)
		for _, eps := range []float64{0, 0.3, 0.305, 0.8, 1.2, 1.4999} {
			want := hockeyStick(c.p, c.qd, c.lim, eps, c.kinks...)
			got := pmfDelta(pmf, h, eps)
			onGrid := math.Abs(eps/h-math.Round(eps/h)) < 1e-9
			if got < want-1e-11 || (onGrid && math.Abs(got-want) > 1e-9) {
				t.Errorf("%s: δ(%v) = %.10g, definition %.10g", c.name, eps, got, want)
			}
		}
	}
}

// optimisticEpsilon is a fine-grid estimate from below: every loss rounded
// DOWN to a grid of interval at most h and 0.005 of the loss scale, the
// tail dropped, no slack; both directions.
func optimisticEpsilon(t *testing.T, m Mechanism, delta, h float64) float64 {
	t.Helper()
	models, _ := pldModels(m, RelationAddRemove)
	var eps float64
	for _, model := range models {
		h := math.Min(h, 0.005*model.lossScale())
		parts := []pldPart{{pmf: discretise(model, h, 1e-18, false), steps: m.Steps}}
		c, err := composePLD(parts, h)
		if err != nil {
			t.Fatal(err)
		}
		c.slack, c.inf = 0, 0
		e, err := c.epsilon(delta)
		if err != nil {
			t.Fatal(err)
		}
		eps = math.Max(eps, e)
	}
	return eps
}

// TestPLDNeverBelowFineEstimate is a property test: on random runs the
// pessimistic bound at the coarse interval 1e-3 is never below an
// optimistic estimate on a grid 10× finer, and never above RDP.
func TestPLDNeverBelowFineEstimate(t *testing.T) {
	rng := rand.New(rand.NewPCG(32, 1))
	for i := 0; i < 8; {
		sigma := 0.5 + 4*rng.Float64()
		q := math.Pow(10, -3+3*rng.Float64())
		steps := 1 + rng.IntN(1000)
		delta := math.Pow(10, -9+6*rng.Float64())
		rdp := rdpEps(t, q, sigma, steps, delta)
		if rdp > 30 {
			continue // beyond what PLD reports (it falls back to RDP)
		}
		i++
		m := Mechanism{Kind: KindSubsampledGaussian, SampleRate: q, NoiseMultiplier: sigma, Steps: steps}
		bound := pldEps(t, q, sigma, steps, delta, PLDOptions{Interval: 1e-3})
		est := optimisticEpsilon(t, m, delta, 1e-4)
		if !(bound >= est) || !(bound <= rdp) {
			t.Errorf("case %d σ=%v q=%v T=%d δ=%v: bound %.6g, fine estimate %.6g, RDP %.6g", i, sigma, q, steps, delta, bound, est, rdp)
		}
	}
}

// TestPLDMonotone: ε decreases in σ and increases in q and T.
func TestPLDMonotone(t *testing.T) {
	opts := PLDOptions{Interval: 1e-3}
	check := func(what string, vals []float64, eps func(float64) float64, increasing bool) {
		prev := math.NaN()
		for _, v := range vals {
			e := eps(v)
			if !math.IsNaN(prev) && (increasing && !(e > prev) || !increasing && !(e < prev)) {
				t.Errorf("ε should %s in %s: %v gives %v after %v", map[bool]string{true: "increase", false: "decrease"}[increasing], what, v, e, prev)
			}
			prev = e
		}
	}
	check("σ", []float64{0.5, 0.7, 1, 1.3, 2, 4, 10}, func(s float64) float64 { return pldEps(t, 0.01, s, 1000, 1e-5, opts) }, false)
	check("T", []float64{1, 10, 100, 1000, 10000}, func(n float64) float64 { return pldEps(t, 0.01, 1, int(n), 1e-5, opts) }, true)
	check("q", []float64{0.001, 0.005, 0.02, 0.1, 0.5, 1}, func(q float64) float64 { return pldEps(t, q, 1, 10, 1e-5, opts) }, true)
}

// TestPLDBelowRDPGrid compares PLD (h = 1e-3, still an upper bound) with
// RDP across the supported range.
func TestPLDBelowRDPGrid(t *testing.T) {
	for _, sigma := range []float64{0.7, 30} {
		for _, q := range []float64{0.001, 0.05, 1} {
			for _, steps := range []int{1, 1000, 100000} {
				delta := 1e-6
				rdp := rdpEps(t, q, sigma, steps, delta)
				got, err := PLDEpsilon([]Mechanism{{Kind: KindSubsampledGaussian, SampleRate: q, NoiseMultiplier: sigma, Steps: steps}},
					delta, PLDOptions{Interval: 1e-3})
				if errors.Is(err, ErrPLDRange) && rdp > 40 {
					continue // beyond the window: the caller falls back to RDP
				}
				if err != nil || !(got <= rdp) {
					t.Errorf("σ=%v q=%v T=%d: PLD ε %v (err %v), RDP %v", sigma, q, steps, got, err, rdp)
				}
			}
		}
	}
}

// TestPLDRobustRange sweeps the corners of the supported range (σ 0.3 to
// 100, q up to 1, up to 10⁶ steps): every answer is a finite ε ≤ RDP or an
// error wrapping ErrPLDRange naming why, never NaN or a hang.
func TestPLDRobustRange(t *testing.T) {
	for _, sigma := range []float64{0.3, 100} {
		for _, q := range []float64{1e-4, 1} {
			for _, steps := range []int{1, 1_000_000} {
				delta := 1e-5
				got, err := PLDEpsilon([]Mechanism{{Kind: KindSubsampledGaussian, SampleRate: q, NoiseMultiplier: sigma, Steps: steps}},
					delta, PLDOptions{Interval: 1e-3})
				rdp := rdpEps(t, q, sigma, steps, delta)
				switch {
				case err != nil && !errors.Is(err, ErrPLDRange):
					t.Errorf("σ=%v q=%v T=%d: unexpected error %v", sigma, q, steps, err)
				case err != nil && rdp < 30:
					t.Errorf("σ=%v q=%v T=%d: PLD refused (%v) although RDP ε is only %v", sigma, q, steps, err, rdp)
				case err == nil && (math.IsNaN(got) || got > rdp):
					t.Errorf("σ=%v q=%v T=%d: PLD ε %v, RDP %v", sigma, q, steps, got, rdp)
				}
			}
		}
	}
}

// TestPLDHeterogeneous composes the mechanisms fairdp releases in one run:
// DPSGD-F's joint step (σ_eff), a one-off Gaussian of counts and Laplace
// post-processing counts. The composition is order-independent, above each
// part alone, below the sum of the parts' ε at δ split between them, and
// the joint step is exactly the subsampled Gaussian with σ_eff.
func TestPLDHeterogeneous(t *testing.T) {
	const delta = 1e-6
	joint := JointSubsampledGaussian(0.01, Part{NoiseMultiplier: 8, Protects: "counts"}, Part{NoiseMultiplier: 0.9, Protects: "gradients"})
	joint.Steps = 2000
	counts := Mechanism{Kind: KindGaussian, NoiseMultiplier: 20, Steps: 1, Protects: "counts"}
	post := Mechanism{Kind: KindLaplace, Epsilon: 0.15, Steps: 3, Protects: "post-processing counts"} // 3 × ε0 = 0.05
	all := []Mechanism{joint, counts, post}

	eps := func(ms ...Mechanism) float64 {
		e, err := PLDEpsilon(ms, delta, PLDOptions{Interval: 1e-3})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	total := eps(all...)
	reversed := slices.Clone(all)
	slices.Reverse(reversed)
	if r := eps(reversed...); relErr(r, total) > 1e-9 {
		t.Errorf("composition depends on order: %v vs %v", total, r)
	}
	var sum float64
	for _, m := range all {
		e := eps(m)
		if !(e < total) {
			t.Errorf("%s alone ε %v, not below the composition %v", m.Protects, e, total)
		}
		e3, err := PLDEpsilon([]Mechanism{m}, delta/3, PLDOptions{Interval: 1e-3})
		if err != nil {
			t.Fatal(err)
		}
		sum += e3
	}
	if !(total < sum) {
		t.Errorf("composition ε %v should beat the sum %v of the parts at δ/3 each", total, sum)
	}
	single := eps(Mechanism{Kind: KindSubsampledGaussian, SampleRate: 0.01, NoiseMultiplier: JointSigma(8, 0.9), Steps: 2000})
	if j := eps(joint); j != single {
		t.Errorf("joint step ε %v, want the subsampled Gaussian with σ_eff: %v", j, single)
	}
}

// TestPLDAccountant covers the accountant's bookkeeping: steps merge like
// the RDP accountant's, Delta inverts Epsilon, and bad input is refused
// with a message that names the fix.
func TestPLDAccountant(t *testing.T) {
	a, err := NewPLD(PLDOptions{Interval: 1e-3})
	if err != nil {
		t.Fatal(err)
	}
	m := SubsampledGaussian(0.01, 1.1, 1, "gradients")
	for range 4 {
		if err := a.Step(m, 250); err != nil {
			t.Fatal(err)
		}
	}
	if h := a.History(); len(h) != 1 || h[0].Steps != 1000 {
		t.Fatalf("history %+v, want one mechanism with 1000 steps", h)
	}
	eps, err := a.Epsilon(1e-5)
	if err != nil {
		t.Fatal(err)
	}
	if want := pldEps(t, 0.01, 1.1, 1000, 1e-5, PLDOptions{Interval: 1e-3}); eps != want {
		t.Errorf("4 × 250 steps give ε %v, 1000 steps %v", eps, want)
	}
	d, err := a.Delta(eps)
	if err != nil || !(d <= 1e-5*(1+1e-9) && d > 0.99e-5) {
		t.Errorf("Delta(Epsilon(1e-5)) = %v (err %v), want 1e-5", d, err)
	}
	var empty PLD // the zero value: default options
	if e, err := empty.Epsilon(1e-5); e != 0 || err != nil || empty.Options().Interval != DefaultPLDInterval {
		t.Errorf("empty accountant: ε %v, err %v, options %+v; want 0 with the defaults", e, err, empty.Options())
	}
	noNoise, _ := NewPLD(PLDOptions{})
	_ = noNoise.Step(SubsampledGaussian(0.01, 0, 1, ""), 1)
	if e, err := noNoise.Epsilon(1e-5); !math.IsInf(e, 1) || err != nil {
		t.Errorf("σ = 0: ε %v, err %v; want +Inf", e, err)
	}

	for _, c := range []struct {
		name string
		err  error
		msg  string
	}{
		{"interval", func() error { _, err := NewPLD(PLDOptions{Interval: 1}); return err }(), "interval must be in"},
		{"relation", func() error { _, err := NewPLD(PLDOptions{Relation: "swap"}); return err }(), "relation must be"},
		{"kind", a.Step(Mechanism{Kind: KindZCDP, Rho: 1}, 1), "composes"},
		{"q", a.Step(SubsampledGaussian(1.5, 1, 1, ""), 1), "sample rate"},
		{"steps", a.Step(m, -1), "steps must be"},
		{"delta", func() error { _, err := a.Epsilon(1e-13); return err }(), "δ in [1e-12, 1)"},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.msg) {
			t.Errorf("%s: err = %v, want one mentioning %q", c.name, c.err, c.msg)
		}
	}
	if _, err := a.Epsilon(1e-13); !errors.Is(err, ErrPLDRange) {
		t.Errorf("δ = 1e-13 should wrap ErrPLDRange (fall back to RDP), got %v", err)
	}
}

// TestPLDHistoryStateReceipt: a Laplace release's Epsilon is one release's
// ε0 in Step and the total in History (as the Pure accountant reports
// it), releases of different scales stay apart, a Gaussian's Rho is
// filled in, State/Restore and PLDEpsilon(History) reproduce ε, and the
// receipt names the accountant, interval and relation.
func TestPLDHistoryStateReceipt(t *testing.T) {
	a, err := NewPLD(PLDOptions{Interval: 1e-3, Relation: RelationReplaceOne})
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		m Mechanism
		n int
	}{
		{Mechanism{Kind: KindLaplace, Epsilon: 0.1, Protects: "counts"}, 2},
		{Mechanism{Kind: KindLaplace, Epsilon: 0.2, Protects: "counts"}, 1},
		{Mechanism{Kind: KindGaussian, NoiseMultiplier: 10, Protects: "stats"}, 4},
		{SubsampledGaussian(0.02, 1.2, 1, "gradients"), 500},
	}
	for _, s := range steps {
		if err := a.Step(s.m, s.n); err != nil {
			t.Fatal(err)
		}
	}
	h := a.History()
	if len(h) != 4 || h[0].Epsilon != 0.2 || h[0].Steps != 2 || h[1].Epsilon != 0.2 || h[1].Steps != 1 || h[2].Rho != 4.0/200 {
		t.Fatalf("history %+v", h)
	}
	eps, err := a.Epsilon(1e-6)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := PLDEpsilon(h, 1e-6, a.Options()); err != nil || again != eps {
		t.Errorf("PLDEpsilon(History) = %v (err %v), want %v", again, err, eps)
	}
	var b PLD
	if err := b.Restore(a.State()); err != nil {
		t.Fatal(err)
	}
	if e, err := b.Epsilon(1e-6); err != nil || e != eps {
		t.Errorf("restored ε = %v (err %v), want %v", e, err, eps)
	}
	if err := b.Restore(PLDState{Interval: 5}); err == nil || !strings.Contains(err.Error(), "interval") {
		t.Errorf("bad state: err = %v", err)
	}
	r, err := a.Receipt(1e-6, RunInfo{Scope: ScopeSensitive})
	if err != nil {
		t.Fatal(err)
	}
	if r.Epsilon == nil || *r.Epsilon != eps || r.Accountant != AccountantPLD || r.Conversion != ConversionPLD ||
		!strings.Contains(r.Note, "replace-one") || !strings.Contains(r.Note, "interval 0.001") || r.Shuffle != nil {
		t.Errorf("receipt %+v", r)
	}
	// Shuffled, 50 steps to an epoch: the 500 gradient steps are 10
	// Gaussians (rate 1) composed with the other releases; the Poisson
	// figure is kept for comparison only.
	r, err = a.Receipt(1e-6, RunInfo{Scope: ScopeSensitive, Sampling: SamplingShuffle, StepsPerEpoch: 50})
	if err != nil {
		t.Fatal(err)
	}
	charged := slices.Clone(h)
	charged[3].SampleRate, charged[3].Steps = 1, 10
	want, err := PLDEpsilon(charged, 1e-6, a.Options())
	if err != nil {
		t.Fatal(err)
	}
	if r.Epsilon == nil || *r.Epsilon != want || !(want > eps) || r.Shuffle == nil || r.Shuffle.Epochs != 10 ||
		r.Shuffle.Adjacency != AdjacencyReplaceOne || r.Shuffle.PoissonEquivalentEpsilon == nil ||
		*r.Shuffle.PoissonEquivalentEpsilon != eps || !strings.Contains(r.Note, "shuffled") || !*r.RDPValid {
		t.Errorf("shuffled receipt %+v (want ε = %v, Poisson figure %v)", r, want, eps)
	}
	if _, err := a.Receipt(1e-13, RunInfo{}); !errors.Is(err, ErrPLDRange) {
		t.Errorf("receipt at δ = 1e-13: err = %v, want ErrPLDRange", err)
	}
}

// TestPLDRegridAndMGF: regridding keeps a composition's P-mass and its
// Q-mass Σ p·e^-l (what makes it pessimistic and not looser than needed)
// and trims zero end atoms; the moment generating function behind the
// FFT window stays finite where Horner's rule underflows (a pmf whose far
// end is empty, as a regridded composition's was before trimming, gave
// K(λ) = -Inf and a window of -Inf).
func TestPLDRegridAndMGF(t *testing.T) {
	m := subsampledGaussianLoss{q: 0.05, sigma: 2, remove: true}
	const fine, h = 2e-4, 1e-3
	c, err := composePLD([]pldPart{{pmf: discretise(m, fine, 1e-18, true), steps: 50}}, fine)
	if err != nil {
		t.Fatal(err)
	}
	r := c.regrid(h)
	var pBefore, qBefore, pAfter, qAfter float64
	for j, v := range c.c {
		pBefore += v
		qBefore += v * math.Exp(-float64(c.lo+j)*fine)
	}
	for k, v := range r.p {
		pAfter += v
		qAfter += v * math.Exp(-float64(r.lo+k)*h)
	}
	if relErr(pAfter, pBefore) > 1e-12 || relErr(qAfter, qBefore) > 1e-10 || r.p[0] == 0 || r.p[len(r.p)-1] == 0 {
		t.Errorf("regrid: P-mass %v → %v, Q-mass %v → %v, ends %v, %v", pBefore, pAfter, qBefore, qAfter, r.p[0], r.p[len(r.p)-1])
	}
	if r.inf != c.inf+c.slack {
		t.Errorf("regrid: +∞ mass %v, want the composition's %v plus its slack %v", r.inf, c.inf, c.slack)
	}

	sparse := pldPMF{lo: -3, p: make([]float64, 5000)}
	sparse.p[0] = 1
	for _, lambda := range []float64{1e4, -1e4, 3} {
		want := lambda * -3 * h
		if got := sparse.logMGF(lambda, h); math.Abs(got-want) > 1e-9 {
			t.Errorf("logMGF(%v) = %v, want %v", lambda, got, want)
		}
	}
	parts := []pldPart{{pmf: sparse, steps: 10}}
	if hi, lo := chernoffEdge(parts, h, 1e-16, true), chernoffEdge(parts, h, 1e-16, false); math.IsInf(hi, 0) || math.IsInf(lo, 0) || hi < lo {
		t.Errorf("Chernoff window [%v, %v] for a point mass", lo, hi)
	}
}

// TestPLDMemoAndDirectionsExact: the ledger's remembered ε and the two
// directions composed on two goroutines give exactly the ε of a fresh,
// sequential composition of the same history, epoch after epoch as a
// training run asks for it (the default run's mechanisms), and a step
// after a remembered answer is never answered from the memo.
func TestPLDMemoAndDirectionsExact(t *testing.T) {
	const delta = 8.69e-10
	l, err := NewLedger(AccountantPLD, PLDOptions{})
	if err != nil {
		t.Fatal(err)
	}
	counts := SubsampledGaussian(1, 29.23, 1, "counts")
	step := SubsampledGaussian(0.007548, 2.338, 1, "steps")
	if err := l.Step(counts, 1); err != nil {
		t.Fatal(err)
	}
	prev := 0.0
	for epoch := 1; epoch <= 3; epoch++ {
		if err := l.Step(step, 132); err != nil {
			t.Fatal(err)
		}
		got, _, err := l.Epsilon(delta)
		if err != nil {
			t.Fatal(err)
		}
		again, _, _ := l.Epsilon(delta)
		// A fresh accountant, composed one direction after the other.
		fresh := &PLD{}
		c, s := counts, step
		c.Steps, s.Steps = 1, 132*epoch
		for _, m := range []Mechanism{c, s} {
			if err := fresh.add(m); err != nil {
				t.Fatal(err)
			}
		}
		want := 0.0
		for d := range 2 {
			comps, _, err := composedDirection(fresh.history, fresh.Options(), d)
			if err != nil {
				t.Fatal(err)
			}
			e, err := comps[0].epsilon(delta)
			if err != nil {
				t.Fatal(err)
			}
			want = math.Max(want, e)
		}
		if got != want || again != want {
			t.Errorf("epoch %d: ledger ε %v, asked again %v; fresh sequential composition %v", epoch, got, again, want)
		}
		if !(got > prev) {
			t.Errorf("epoch %d: ε %v did not grow from %v (a stale memo?)", epoch, got, prev)
		}
		prev = got
	}
}
