package linear

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"

	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/dpops/accounting"
	"gonum.org/v1/gonum/mat"
)

// Jagielski et al.'s DP post-processing (2019): a regulator who holds
// the sensitive attribute makes a given classifier fair for equalized odds
// while keeping every person's group membership ε-differentially private.
//
// Privacy model (the paper's): only the sensitive attribute is private.
// Neighbouring data sets differ in one record's group; features, labels and
// the base classifier (trained without the attribute) are public, and so is
// the number of records m. Moving one record to another group moves one count
// of the (bin, group, label) table down by one and another up by one, so the
// table has L1 sensitivity 2 (2/m on fractions) and Laplace(2/(mε)) noise on
// every cell makes it ε-DP. Everything after that — clamping, the LP, the
// randomised predictions — is post-processing of the noisy table and costs
// nothing more.

// ScoreBins turns base-classifier scores into the bins the post-processing
// LP works on: bin b holds the scores s with Edges[b-1] ≤ s < Edges[b].
// Two bins split at a threshold are the paper's setting (the bin is the base
// prediction Ŷ); more bins, at score quantiles, let the LP mix thresholds
// per group the way fairlearn's ThresholdOptimizer does. Bins may be fitted
// on the data because scores do not depend on the sensitive attribute.
type ScoreBins struct {
	Edges []float64 `json:"edges"` // increasing
}

// ThresholdBins is the paper's two bins: Ŷ = 1 when the score is ≥ t.
func ThresholdBins(t float64) ScoreBins { return ScoreBins{Edges: []float64{t}} }

// UniformBins is k bins of equal width on the probability scale: edges
// j/k for j = 1..k−1. They read nothing of the data, so a private base's
// scores can be binned with them at no privacy cost (quantile edges would
// be statistics of the private scores); they let the LP choose a
// threshold per group to within 1/k, where the paper's two bins can only
// flip the base prediction at random.
func UniformBins(k int) (ScoreBins, error) {
	if k < 2 {
		return ScoreBins{}, fmt.Errorf("linear: %d score bins, want at least 2", k)
	}
	edges := make([]float64, k-1)
	for j := range edges {
		edges[j] = float64(j+1) / float64(k)
	}
	return ScoreBins{Edges: edges}, nil
}

// QuantileBins returns at most k bins with about equally many of the given
// scores in each (edges at the j/k quantiles; repeated edges are merged, so
// scores with few distinct values give fewer bins).
func QuantileBins(scores []float64, k int) (ScoreBins, error) {
	if k < 2 {
		return ScoreBins{}, fmt.Errorf("linear: %d score bins, want at least 2", k)
	}
	if len(scores) == 0 {
		return ScoreBins{}, errors.New("linear: no scores to place bin edges")
	}
	if i := slices.IndexFunc(scores, func(s float64) bool { return math.IsNaN(s) || math.IsInf(s, 0) }); i >= 0 {
		return ScoreBins{}, fmt.Errorf("linear: score %d is %v, want a finite number", i, scores[i])
	}
	sorted := slices.Clone(scores)
	slices.Sort(sorted)
	var edges []float64
	for j := 1; j < k; j++ {
		e := sorted[j*len(sorted)/k]
		if e > sorted[0] && (len(edges) == 0 || e > edges[len(edges)-1]) {
			edges = append(edges, e)
		}
	}
	if len(edges) == 0 {
		return ScoreBins{}, fmt.Errorf("linear: all %d scores equal %v, so no bins can separate them", len(scores), sorted[0])
	}
	return ScoreBins{Edges: edges}, nil
}

// Len is the number of bins.
func (sb ScoreBins) Len() int { return len(sb.Edges) + 1 }

// Assign returns every score's bin. Scores must be finite.
func (sb ScoreBins) Assign(scores []float64) ([]int, error) {
	if len(sb.Edges) == 0 {
		return nil, errors.New("linear: score bins have no edges")
	}
	out := make([]int, len(scores))
	for i, s := range scores {
		if math.IsNaN(s) || math.IsInf(s, 0) {
			return nil, fmt.Errorf("linear: score %d is %v, want a finite number", i, s)
		}
		out[i] = sort.Search(len(sb.Edges), func(j int) bool { return sb.Edges[j] > s })
	}
	return out, nil
}

// CountCells counts the records of every (bin, group, label) cell, in the
// layout of Cells.Q. Bins must be in 0..bins-1, groups in 0..groups-1 and
// labels 0 or 1; errors name the offending record.
func CountCells(bin, group, label []int, bins, groups int) ([]float64, error) {
	if bins < 1 || groups < 1 {
		return nil, fmt.Errorf("linear: %d bins and %d groups, want at least 1 of each", bins, groups)
	}
	if len(group) != len(bin) || len(label) != len(bin) {
		return nil, fmt.Errorf("linear: %d bins, %d groups and %d labels, want one of each per record",
			len(bin), len(group), len(label))
	}
	counts := make([]float64, bins*groups*2)
	for i := range bin {
		switch {
		case bin[i] < 0 || bin[i] >= bins:
			return nil, fmt.Errorf("linear: record %d has bin %d, want 0..%d", i, bin[i], bins-1)
		case group[i] < 0 || group[i] >= groups:
			return nil, fmt.Errorf("linear: record %d has group %d, want 0..%d", i, group[i], groups-1)
		case label[i] != 0 && label[i] != 1:
			return nil, fmt.Errorf("linear: record %d has label %d, want 0 or 1 (post-processing is for binary tasks)", i, label[i])
		}
		counts[(bin[i]*groups+group[i])*2+label[i]]++
	}
	return counts, nil
}

// PostProcessSlack is how much the private LP loosens the fairness bound so
// that, with probability 1 − β over the noise, the classifier that is
// γ-fair on the true cells stays feasible on the noisy ones:
//
//	slack = 4(K−1) ln(2K|A|/β) / (min Q̃(a,y) · m · ε)
//
// For the paper's K = 2 bins this is Jagielski et al.'s 4 ln(4|A|/β)/(min q̃ m ε).
// Demographic parity's rates are over a group's records of both labels:
// PostProcess passes the smallest noisy group fraction as minQ and doubles
// the result, since each of its cells sums two noisy ones.
// (Derivation for K bins: a union bound puts every one of the 2K|A| cells
// within 2 ln(2K|A|/β)/(mε) of its true value; a post-processed rate
// Σ_b p_b q(b,a,y)/Q(a,y) then moves by at most (K−1) times that over Q(a,y),
// because its weights' deviations from the rate sum to at most K−1; a
// difference of two groups' rates doubles it.) It is 0 for ε = ∞.
func PostProcessSlack(minQ float64, m int, epsilon, beta float64, bins, groups int) float64 {
	if math.IsInf(epsilon, 1) {
		return 0
	}
	k := float64(bins)
	return 4 * (k - 1) * math.Log(2*k*float64(groups)/beta) / (minQ * float64(m) * epsilon)
}

// DefaultBeta is the slack's failure probability when none is given.
const DefaultBeta = 0.05

// PostProcessSlackSD is the standard deviation, over the Laplace noise, of
// a noisy constrained difference of two groups' rates, to first order in
// the noise, times z:
//
//	slack = z · √2 · √c · 2√2 · √(K−1) / (min Q̃(a,y) · m · ε)
//
// with c = 2 for demographic parity (a positive rate's cell sums the two
// labels' noisy cells) and 1 for error rates. Where PostProcessSlack bounds
// the worst of all the noisy cells (with probability 1 − β), this is the
// typical deviation of the one quantity the LP constrains, which is what
// the expected test violation sees; the LP is feasible without any slack
// (a constant classifier has equal rates on any cells).
// (Derivation: every cell fraction carries Laplace noise of scale 2/(mε),
// variance 8/(mε)²; a rate r = Σ_b p_b q(b)/Q moves by Σ_b (p_b − r) n_b /
// Q for cell noises n_b, of variance Σ_b (p_b − r)² · c · 8/(mε)² / Q²,
// and Σ_b (p_b − r)² ≤ K − 1 for p_b and r in [0, 1] (the sum is convex in
// p, and at a vertex with j of the K weights at 1 it is at most
// max(j, K − j) ≤ K − 1, or 0 when r is 0 or 1); the two groups' noises
// are independent, so their difference's variance is the sum, at most
// twice the larger.) It is 0 for ε = ∞ or z = 0.
func PostProcessSlackSD(minQ float64, m int, epsilon, z float64, bins int, f Fairness) float64 {
	if math.IsInf(epsilon, 1) || z == 0 {
		return 0
	}
	c := 1.0
	if f == DemographicParity {
		c = 2
	}
	return z * math.Sqrt(2*c*8*float64(bins-1)) / (minQ * float64(m) * epsilon)
}

// SlackRule says how private post-processing loosens the LP's fairness
// bound for the noise of its cells (PostProcessConfig.Slack).
type SlackRule string

const (
	// SlackUnion is Jagielski et al.'s (2019) slack, PostProcessSlack
	// (twice it for demographic parity): the γ-fair classifier on the true
	// cells stays feasible with probability 1 − β. It is the empty rule's
	// meaning, so configurations written before the rules existed repeat.
	SlackUnion SlackRule = "union"
	// SlackSD is PostProcessSlackSD at PostProcessConfig.SlackZ standard
	// deviations: it aims the expected violation, not a worst case, at γ.
	SlackSD SlackRule = "sd"
	// SlackNone adds nothing: γ alone bounds the noisy rates' difference.
	SlackNone SlackRule = "none"
)

// DefaultSlackZ is SlackSD's number of standard deviations when
// PostProcessConfig.SlackZ is 0.
const DefaultSlackZ = 1.0

// ParseSlackRule reads "" (SlackUnion), "union", "sd" or "none".
func ParseSlackRule(s string) (SlackRule, error) {
	switch r := SlackRule(s); r {
	case "":
		return SlackUnion, nil
	case SlackUnion, SlackSD, SlackNone:
		return r, nil
	}
	return "", fmt.Errorf("linear: slack rule %q, want %q, %q or %q", s, SlackUnion, SlackSD, SlackNone)
}

// PostProcessConfig sets up DP post-processing.
type PostProcessConfig struct {
	// Gamma is the allowed difference of the constrained rates, γ ≥ 0.
	Gamma float64
	// Epsilon is the privacy budget; +Inf runs Hardt et al.'s non-private
	// LP on the exact cells.
	Epsilon float64
	// Beta is the slack's failure probability in (0, 1); 0 means
	// DefaultBeta.
	Beta float64
	// Fairness: EqualizedOdds (FPR and TPR), EqualFPR or
	// DemographicParity (positive rates).
	Fairness Fairness
	// AllPairs constrains every pair of groups rather than every group
	// against group 0 (the paper); see comparisons.
	AllPairs bool
	// Slack is the rule of the privacy slack added to γ ("": SlackUnion,
	// the paper's); SlackZ is SlackSD's number of standard deviations (0:
	// DefaultSlackZ).
	Slack  SlackRule
	SlackZ float64
	// GammaShare, when positive, makes γ data-aware: the larger of Gamma
	// and GammaShare times NoisyViolation, the violation of the most
	// accurate post-processed classifier on the noisy cells (so 0.4 aims
	// at 40 % of what post-processing without the constraint would leave).
	// It reads only the released noisy cells, so it costs no privacy.
	GammaShare float64
	// Relation is the neighbouring relation the cell counts are private
	// under. "" is the paper's: one record's group changes (or, for whole
	// records, one record is replaced), which moves one count down and
	// another up, L1 sensitivity 2 and Laplace(2/(mε)) on every cell.
	// accounting.RelationAddRemove is for a pipeline whose other release
	// is private under adding or removing a record (a DP-SGD base): that
	// moves one count by one, L1 sensitivity 1, so Laplace(1/(mε)) makes
	// the table ε-DP, half the noise at the same ε. Only a caller whose
	// bins come from a public function or from such a private release may
	// set it, since then the bins are not the records' secret; the
	// receipt then protects whole records under add-remove.
	Relation string
	// Monotone smooths the noisy cells before the LP so that within every
	// group the positive label's share rises with the score bin
	// (monotoneCells: isotonic regression of the shares, bins' totals
	// kept). It reads only the released cells, so it costs no privacy.
	Monotone bool
}

// cellSensitivity is the L1 sensitivity of the (bin, group, label) count
// table under c's relation: 1 for add-remove, 2 otherwise.
func (c PostProcessConfig) cellSensitivity() float64 {
	if c.Relation == accounting.RelationAddRemove {
		return 1
	}
	return 2
}

func (c PostProcessConfig) withDefaults() (PostProcessConfig, error) {
	if c.Beta == 0 {
		c.Beta = DefaultBeta
	}
	if !(c.Gamma >= 0) || math.IsInf(c.Gamma, 1) {
		return c, fmt.Errorf("linear: gamma = %v, want a finite number ≥ 0", c.Gamma)
	}
	if !(c.Epsilon > 0) {
		return c, fmt.Errorf("linear: epsilon = %v, want a number > 0 or +Inf", c.Epsilon)
	}
	if !(c.Beta > 0 && c.Beta < 1) {
		return c, fmt.Errorf("linear: beta = %v, want a number in (0, 1)", c.Beta)
	}
	if _, err := c.Fairness.labels(); err != nil {
		return c, err
	}
	rule, err := ParseSlackRule(string(c.Slack))
	if err != nil {
		return c, err
	}
	c.Slack = rule
	if c.SlackZ == 0 {
		c.SlackZ = DefaultSlackZ
	}
	if !(c.SlackZ > 0) || math.IsInf(c.SlackZ, 1) {
		return c, fmt.Errorf("linear: slack z = %v, want a finite number > 0 (0: %v)", c.SlackZ, DefaultSlackZ)
	}
	if !(c.GammaShare >= 0 && c.GammaShare <= 1) {
		return c, fmt.Errorf("linear: gamma share = %v, want a number in [0, 1] (0: γ fixed)", c.GammaShare)
	}
	if c.Relation != "" && c.Relation != accounting.RelationAddRemove {
		return c, fmt.Errorf("linear: post-processing relation %q, want \"\" (one record's group or the record changes) or %q", c.Relation, accounting.RelationAddRemove)
	}
	return c, nil
}

// PostProcessor is the randomised post-processed classifier: a record in
// bin b and group a is predicted positive with probability P[b*Groups+a].
// It needs the group at prediction time (the price of post-processing).
type PostProcessor struct {
	Bins   int       `json:"bins"`
	Groups int       `json:"groups"`
	P      []float64 `json:"p"`
}

// ProbPositive returns every record's probability of a positive prediction.
func (pp *PostProcessor) ProbPositive(bin, group []int) ([]float64, error) {
	if len(bin) != len(group) {
		return nil, fmt.Errorf("linear: %d bins and %d groups, want one of each per record", len(bin), len(group))
	}
	out := make([]float64, len(bin))
	for i := range bin {
		if bin[i] < 0 || bin[i] >= pp.Bins {
			return nil, fmt.Errorf("linear: record %d has bin %d, want 0..%d", i, bin[i], pp.Bins-1)
		}
		if group[i] < 0 || group[i] >= pp.Groups {
			return nil, fmt.Errorf("linear: record %d has group %d, want 0..%d", i, group[i], pp.Groups-1)
		}
		out[i] = pp.P[bin[i]*pp.Groups+group[i]]
	}
	return out, nil
}

// Predict draws the randomised predictions from r (seed it for
// reproducible predictions).
func (pp *PostProcessor) Predict(r *rand.Rand, bin, group []int) ([]int, error) {
	prob, err := pp.ProbPositive(bin, group)
	if err != nil {
		return nil, err
	}
	return SamplePredictions(r, prob)
}

// SamplePredictions draws 1 with probability prob[i] for every record: the
// predictions of a randomised classifier.
func SamplePredictions(r *rand.Rand, prob []float64) ([]int, error) {
	if r == nil {
		return nil, errors.New("linear: nil *rand.Rand for randomised predictions")
	}
	out := make([]int, len(prob))
	for i, p := range prob {
		if r.Float64() < p {
			out[i] = 1
		}
	}
	return out, nil
}

// PostProcessResult is the outcome of PostProcess. When the noisy statistics
// leave a constrained rate undefined (a non-positive noisy group-label count)
// the run fails: Failed is set, Reason says why and Model is nil. The
// privacy budget is spent either way, so the receipt is always valid.
type PostProcessResult struct {
	Model  *PostProcessor
	Failed bool
	Reason string
	// Cells are the (noisy, clamped at 0) cell fractions the LP was solved
	// on; Records is m.
	Cells   Cells
	Records int
	// Slack is added to Gamma in the LP (0 for ε = ∞), by rule SlackRule.
	Slack     float64
	SlackRule SlackRule
	// Gamma is the γ the LP ran with: PostProcessConfig.Gamma, or with a
	// GammaShare the data-aware one. NoisyViolation is the fairness
	// violation, on Cells, of the most accurate post-processed classifier
	// (predict the more frequent label of every bin and group); both are
	// functions of the released noisy cells.
	Gamma          float64
	NoisyViolation float64
	// Objective is the LP optimum: the estimated error on Cells.
	Objective float64

	acct     *accounting.Pure // nil when not private
	relation string           // PostProcessConfig.Relation of a private run
}

// Receipt states the privacy of the run: pure ε-DP for the sensitive
// attribute, or not private for ε = ∞. seed is the noise seed (nil for a
// crypto-seeded run).
func (r *PostProcessResult) Receipt(seed *uint64) (accounting.Receipt, error) {
	rec, err := pureReceipt(r.acct, 0, seed)
	if err != nil || r.relation != accounting.RelationAddRemove {
		return rec, err
	}
	// Counts at Laplace(1/(mε)) are ε-DP for adding or removing a whole
	// record, not for changing one record's group (that moves two counts:
	// 2ε), so the receipt says add-remove, whole records.
	rec.Scope, rec.Relation = accounting.ScopeAll, accounting.RelationAddRemove
	rec.Note = "the (bin, group, label) counts are ε-DP for whole records under add-remove neighbours (adding or " +
		"removing a record moves one count by one; the record count is public); the bins must come from a public " +
		"function or a private release, whose own cost is not in this receipt"
	return rec, nil
}

// pureReceipt is the receipt of a Jagielski et al. run.
func pureReceipt(acct *accounting.Pure, delta float64, seed *uint64) (accounting.Receipt, error) {
	if acct == nil {
		return accounting.NotPrivate(), nil
	}
	rec, err := acct.Receipt(delta, accounting.RunInfo{Scope: accounting.ScopeSensitive, Seed: seed})
	if err != nil {
		return accounting.Receipt{}, err
	}
	rec.Sampling = accounting.SamplingNone // every release uses the whole data set
	rec.Note = "only the sensitive attribute is protected: neighbouring data sets differ in one record's group " +
		"(features, labels and the record count are public)"
	return rec, nil
}

// MarshalJSON makes the result readable in reports (the receipt is separate).
func (r PostProcessResult) MarshalJSON() ([]byte, error) {
	type out struct {
		Failed         bool           `json:"failed"`
		Reason         string         `json:"reason,omitempty"`
		Slack          float64        `json:"slack"`
		SlackRule      SlackRule      `json:"slack_rule,omitempty"`
		Gamma          float64        `json:"gamma"`
		NoisyViolation float64        `json:"noisy_violation"`
		Objective      float64        `json:"lp_objective"`
		Cells          []float64      `json:"cells"`
		Model          *PostProcessor `json:"model,omitempty"`
	}
	return json.Marshal(out{r.Failed, r.Reason, r.Slack, r.SlackRule, r.Gamma, r.NoisyViolation, r.Objective, r.Cells.Q, r.Model})
}

// PostProcess runs DP post-processing (Jagielski et al. 2019) on the base
// classifier's bins: it counts the (bin, group, label) cells, adds
// Laplace(2/(mε)) to every cell fraction (Laplace(1/(mε)) under
// cfg.Relation add-remove; none for ε = ∞), clamps them at 0,
// and solves Hardt et al.'s LP with bound γ + the slack of cfg.Slack
// (γ data-aware with cfg.GammaShare). r draws the noise. An error means bad input; a run whose noisy statistics leave a rate
// undefined returns a result with Failed set.
func PostProcess(r *rand.Rand, bin, group, label []int, bins, groups int, cfg PostProcessConfig) (*PostProcessResult, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	counts, err := CountCells(bin, group, label, bins, groups)
	if err != nil {
		return nil, err
	}
	m := len(bin)
	if m == 0 {
		return nil, errors.New("linear: no records to post-process")
	}
	res := &PostProcessResult{Records: m, SlackRule: cfg.Slack, Gamma: cfg.Gamma}
	if !math.IsInf(cfg.Epsilon, 1) {
		if r == nil {
			return nil, errors.New("linear: private post-processing needs a *rand.Rand for its noise")
		}
		// Moving one record to another group changes two cells by one;
		// adding or removing one changes one cell by one.
		sens := cfg.cellSensitivity()
		if err := laplaceVector(r, counts, sens, cfg.Epsilon, int(sens)); err != nil {
			return nil, err
		}
		res.acct = &accounting.Pure{}
		if err := res.acct.SpendLaplace(sens, sens/cfg.Epsilon, "(bin, group, label) cell counts"); err != nil {
			return nil, err
		}
		res.relation = cfg.Relation
	}
	// The slack rules are stated for Laplace(2/(mε)) cells; a table of
	// sensitivity s carries Laplace(s/(mε)) = Laplace(2/(m·noiseEps)).
	noiseEps := cfg.Epsilon * 2 / cfg.cellSensitivity()
	for i, c := range counts {
		counts[i] = max(0, c)
	}
	if cfg.Monotone {
		monotoneCells(counts, bins, groups)
	}
	q := make([]float64, len(counts))
	for i, c := range counts {
		q[i] = c / float64(m)
	}
	res.Cells = Cells{Bins: bins, Groups: groups, Q: q}

	ys, _ := cfg.Fairness.labels()
	minQ := math.Inf(1)
	for a := range groups {
		for _, y := range ys {
			minQ = min(minQ, res.Cells.rateTotal(a, y))
		}
	}
	switch {
	case groups == 1: // nothing to equalise: the LP just minimises the error
	case !(minQ > 0):
		res.Failed = true
		res.Reason = fmt.Sprintf("a (noisy) group-label count is %g ≤ 0, so a constrained rate is undefined; "+
			"use a larger ε or fewer groups", minQ*float64(m))
		return res, nil
	default:
		switch cfg.Slack {
		case SlackUnion:
			res.Slack = PostProcessSlack(minQ, m, noiseEps, cfg.Beta, bins, groups)
			if cfg.Fairness == DemographicParity {
				// A positive rate's cells are sums of two noisy cells (both
				// labels), each within the union bound's radius, so the rate
				// moves by up to twice as much over its group's fraction.
				res.Slack *= 2
			}
		case SlackSD:
			res.Slack = PostProcessSlackSD(minQ, m, noiseEps, cfg.SlackZ, bins, cfg.Fairness)
		}
		if res.NoisyViolation, err = CellsViolation(res.Cells, MostAccurate(res.Cells), cfg.Fairness, cfg.AllPairs); err != nil {
			return nil, err
		}
		res.Gamma = max(cfg.Gamma, cfg.GammaShare*res.NoisyViolation)
	}
	sol, err := SolveHardtLP(res.Cells, res.Gamma+res.Slack, cfg.Fairness, cfg.AllPairs)
	if err != nil {
		res.Failed, res.Reason = true, err.Error()
		return res, nil
	}
	res.Objective = sol.Error
	res.Model = &PostProcessor{Bins: bins, Groups: groups, P: sol.P}
	return res, nil
}

// laplaceVector adds Laplace noise to v so that releasing v is ε-DP when one
// neighbouring change moves v by at most l1Sensitivity in L1 norm and touches
// at most maxChanged coordinates. Every coordinate is drawn with
// dpops.ScalarLaplace (the floating-point-safe sampler: the noisy vector is
// released, directly or through a model it determines exactly). That sampler
// rounds its input to a lattice of spacing g < 2·Δ/(ε·2⁴⁰) and pays for the
// rounding of one coordinate; rounding each of maxChanged changed
// coordinates costs at most (maxChanged−1)·g·ε/Δ < (maxChanged−1)·2⁻³⁹
// more, so the coordinates are drawn at ε − (maxChanged−1)·2⁻³⁹ and the
// vector is ε-DP. The noise scale is l1Sensitivity/ε (to 10⁻¹⁰ relative).
func laplaceVector(r *rand.Rand, v []float64, l1Sensitivity, epsilon float64, maxChanged int) error {
	if maxChanged < 1 {
		maxChanged = len(v)
	}
	eps := epsilon - float64(maxChanged-1)*0x1p-39
	if !(eps > 0) {
		return fmt.Errorf("linear: epsilon %v is too small for a %d-coordinate Laplace release", epsilon, maxChanged)
	}
	for i, x := range v {
		noisy, err := dpops.ScalarLaplace(r, x, l1Sensitivity, eps)
		if err != nil {
			return fmt.Errorf("linear: Laplace noise on coordinate %d: %w", i, err)
		}
		v[i] = noisy
	}
	return nil
}

// GroupRates are one group's expected false- and true-positive rates under
// a randomised classifier; nil when the group has no records of that label.
type GroupRates struct {
	N   int      `json:"n"`
	FPR *float64 `json:"fpr"`
	TPR *float64 `json:"tpr"`
	// PositiveRate is the expected fraction predicted positive (nil for
	// a group with no records).
	PositiveRate *float64 `json:"positive_rate,omitempty"`
}

// ExpectedRates are the exact expectations, over a randomised classifier's
// coin flips, of its error, equalized-odds and demographic-parity
// quantities on a data set.
// They are what the LP constrains (sampled predictions add binomial noise of
// order 1/√n on top).
type ExpectedRates struct {
	Error float64 `json:"error"`
	// EOViolation is the larger of FPRGap and TPRGap: the largest pairwise
	// difference, as metrics.EqualizedOdds.
	EOViolation float64 `json:"eo_violation"`
	FPRGap      float64 `json:"fpr_gap"`
	TPRGap      float64 `json:"tpr_gap"`
	// DPViolation is the largest pairwise difference of the groups'
	// positive rates, as metrics.DemographicParity.
	DPViolation float64      `json:"dp_violation"`
	Groups      []GroupRates `json:"groups"`
}

// ExpectedMetrics computes ExpectedRates from every record's probability of
// a positive prediction. Labels are 0/1 and groups 0..groups-1.
func ExpectedMetrics(prob []float64, label, group []int, groups int) (ExpectedRates, error) {
	if len(label) != len(prob) || len(group) != len(prob) {
		return ExpectedRates{}, fmt.Errorf("linear: %d probabilities, %d labels and %d groups, want one of each per record",
			len(prob), len(label), len(group))
	}
	if len(prob) == 0 || groups < 1 {
		return ExpectedRates{}, fmt.Errorf("linear: %d records in %d groups, want at least one of each", len(prob), groups)
	}
	pos := make([][2]float64, groups) // Σ prob per (group, label)
	cnt := make([][2]int, groups)
	out := ExpectedRates{Groups: make([]GroupRates, groups)}
	for i, p := range prob {
		a, y := group[i], label[i]
		switch {
		case a < 0 || a >= groups:
			return ExpectedRates{}, fmt.Errorf("linear: record %d has group %d, want 0..%d", i, a, groups-1)
		case y != 0 && y != 1:
			return ExpectedRates{}, fmt.Errorf("linear: record %d has label %d, want 0 or 1", i, y)
		case !(p >= 0 && p <= 1):
			return ExpectedRates{}, fmt.Errorf("linear: record %d has probability %v, want [0, 1]", i, p)
		}
		pos[a][y] += p
		cnt[a][y]++
		if y == 1 {
			out.Error += 1 - p
		} else {
			out.Error += p
		}
	}
	out.Error /= float64(len(prob))
	// gap is the largest difference of the groups' rates over the
	// records of label y (anyLabel: of both labels).
	gap := func(y int) float64 {
		lo, hi := math.Inf(1), math.Inf(-1)
		for a := range groups {
			p, c := 0.0, 0
			if y == anyLabel {
				p, c = pos[a][0]+pos[a][1], cnt[a][0]+cnt[a][1]
			} else {
				p, c = pos[a][y], cnt[a][y]
			}
			if c > 0 {
				r := p / float64(c)
				lo, hi = min(lo, r), max(hi, r)
			}
		}
		return max(0, hi-lo)
	}
	for a := range groups {
		g := GroupRates{N: cnt[a][0] + cnt[a][1]}
		if cnt[a][0] > 0 {
			v := pos[a][0] / float64(cnt[a][0])
			g.FPR = &v
		}
		if cnt[a][1] > 0 {
			v := pos[a][1] / float64(cnt[a][1])
			g.TPR = &v
		}
		if g.N > 0 {
			v := (pos[a][0] + pos[a][1]) / float64(g.N)
			g.PositiveRate = &v
		}
		out.Groups[a] = g
	}
	out.FPRGap, out.TPRGap = gap(0), gap(1)
	out.EOViolation = max(out.FPRGap, out.TPRGap)
	out.DPViolation = gap(anyLabel)
	return out, nil
}

// FitLogistic fits a base classifier for post-processing: plain
// (non-private) logistic regression with an intercept and an L2 penalty
// (l2/2)‖w‖² (intercept included, so one-hot features stay identifiable),
// minimised by Newton's method with backtracking; each Newton step solves
// its normal equations with SolveNormal. Pass the features only, never the
// sensitive attribute: post-processing is what makes the classifier fair,
// and under the paper's privacy model features and labels are public, so the
// base fit needs no noise.
func FitLogistic(x []float64, n, dim int, label []int, l2 float64) (LinearClassifier, error) {
	if n < 1 || dim < 1 || len(x) != n*dim {
		return LinearClassifier{}, fmt.Errorf("linear: %d feature values for %d rows × %d features", len(x), n, dim)
	}
	y, err := binaryTargets(label, n)
	if err != nil {
		return LinearClassifier{}, err
	}
	ex, err := NewExamples(AddIntercept(mat.NewDense(n, dim, x)), y)
	if err != nil {
		return LinearClassifier{}, err
	}
	w, err := minimiseLogistic(ex, penalty{l2: l2})
	if err != nil {
		return LinearClassifier{}, err
	}
	return LinearClassifier{W: w}, nil
}
