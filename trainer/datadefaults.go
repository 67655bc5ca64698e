package trainer

// Data-aware defaults. Defaults() was tuned on Adult
// (34,000 training records) for DP-FERMI; a private SGD-family run with it
// on a small table takes too few, too small steps: on 750 records, batch
// 256 is 3 steps an epoch, 60 steps in all at η = 0.005, and the model
// hardly leaves its start, predicting the majority class. The rules below
// fix the number of noisy steps and their size instead of the batch.

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/fairdp/fairdp/loaders"
)

// Data-aware default rules, from a sweep of DP-SGD (logistic regression,
// Adam, 3 seeds) at ε = 0.3, 1 and 3 over sampling rate q ∈ {0.05, 0.25},
// epochs ∈ {20, 40}, η ∈ {0.005, 0.03, 0.1} and clip ∈ {0.1, 1} on
// synthetic tables of 750 to 16,000 training records (8 to 40 features, 20
// to 35 % minority class), credit (750) and adult (4,500) (the sweep and its
// table: README "Defaults"). What decides is
// the budget per record, ε·n: below 2,000 the noise dominates and few,
// large, short-clipped steps win (q = 0.25, 20 epochs, η = 0.1, clip C/10);
// above it, many small steps (q = 0.05, 40 epochs, η = 0.03, clip C). On
// the 18 (table, ε) pairs this rule's mean test error is within 0.012 of
// the sweep's best cell (within 0.007 but for credit at ε = 1), where the
// old defaults (batch 256, 20 epochs, η = 0.005, clip 1) were up to 0.13
// worse and no better than the majority class on 8 pairs. The one pair
// where the rule is not better than the majority class, credit at
// ε = 0.3, is one where no cell of the sweep is (750 records cannot carry
// the signal at that ε).
//
// DP-FERMI and SteFFLe (the fairness algorithms). With the fixed defaults
// (batch 256, 20 epochs, Adam η = 0.005, clip 1, λ = 10) DP-FERMI was
// worse than the majority class on synthetic tables of 750 and 1,500
// training records at ε = 1 (test error .36–.40 against .23–.26, λ's
// noisy fairness term pushing the selection rate to 43–50 %) and
// one-class on Communities (1,495 records); SteFFLe (plain SGD at
// η = 0.005) did not leave its random start on any table (error .35–.53
// against .25 on 3,750 records, .44 on Credit's 22,500 with the built-in
// .214 only by predicting 1.5 % positives). Sweeps at ε = 1, 2 seeds, on
// synthetic tables (bench/tabular_synthetic.py: 750 to 16,500 training
// records, 5 to 100 features, 5 to 50 % positives), Credit, Communities
// and Parkinsons (bench/results/tabular.md, "Data-aware defaults for the
// fair algorithms") gave:
//   - DP-FERMI below ε·n = 2,000: DP-SGD's small-budget rule with λ = 0.5
//     (750 records: .200/.236 against majority .232/.264; λ = 2 .232/.228,
//     λ = 10 .432/.296); from 2,000 to fermiTunedBudget DP-SGD's
//     large-budget rule with λ = 2 (3,750 records: .164/.165, λ = 10
//     .181/.168; old defaults .182/.185); from fermiTunedBudget on,
//     Defaults(), tuned on Adult for a visibly fair model (the rule's
//     settings there lose Adult's fairness: DP violation .083 at λ = 2 and
//     .087 at λ = 10, against .016 with Defaults(), error .164/.212/.175),
//     but only where Defaults() take at least fermiTunedSteps = 1,500
//     noisy steps (20·n/256, so n ≥ 19,200); with fewer, the middle rule.
//     Why: Defaults() move each weight by at most η = 0.005 a step (Adam),
//     and their step count 20·n/256 shrinks with n (Adult: 2,650 steps,
//     η·T = 13; 15,000 records: 1,172, η·T = 5.9; Parkinsons' 4,406: 344).
//     On the synthetic 15,000×100 table with 10 % positives at ε = 4
//     (seeds 1/2, majority .100/.098) Defaults() gave .126/.105; λ = 2 or 0
//     alone gave the one-class model (.100/.098: the intercept learns
//     before the weights, and λ = 10's fairness term was what kept any
//     positives), batch 0.05·n alone (400 steps) .124/.142, while η = 0.03
//     (.087/.089) or 40 epochs (2,344 steps: .088/.092) alone fixed it, as
//     did the middle rule (.089/.087). So the cause is too little
//     movement (steps × step), not λ, the W player or the batch; it is
//     not the class balance either (the rule does not read it: that would
//     be a release of the labels, and n, which every receipt treats as
//     public, is enough). The 1,500 sits between the tables where
//     Defaults() failed (1,172 steps, 100 features) and where they beat
//     the majority class (synthetic 16,500×20, 1,289 steps: .092/.081;
//     Credit, 1,758: .188/.181; Adult, 2,650). With it, DP-FERMI's
//     default beats the majority class on every table of
//     bench/results/tabular.md ("More tables") at every ε, and is no worse
//     at ε = 4 than at ε = 1 (15,000×100: .089 against .093; Parkinsons
//     .053 / .055; 3,750×20 .162 / .162; Defaults() gave .119, .132 and
//     .194 at ε = 4), and Adult's default run (n = 33,916: 2,650 steps)
//     is unchanged bit for bit. The synthetic 16,500×20 table moves to
//     the middle rule and gains (.082/.076).
//   - SteFFLe: the budget is a silo's, ε·ñ with ñ = n/silos, and the
//     batch is a silo's. Its server takes plain SGD steps, whose size η·C
//     does not adapt as Adam's does: q = 0.05, 40 epochs, C = 1, η = 0.1
//     below ε·ñ = 2,000 and 0.5 from it, λ as DP-FERMI's (0.5 below
//     ε·ñ = 2,000, else 2).
//     At ε = 1 it reached .187 and .178 on 1,000 records a silo (seeds 1
//     and 2; majority class .254 and .236) and .164 on 1,250 (majority
//     .260); DP-SGD's small-budget settings (q = 0.25, 20 epochs: 80
//     rounds) stayed near the start (.302 and .255 at η = 0.5), and
//     C = 0.1 with η = 0.5–2 was no better (.181–.203). At large silo
//     budgets η = 0.1 is too small a step: on the synthetic 22,000×20
//     table with 10 % positives (5,500 records a silo, ε·ñ = 5,500) it
//     gave .099/.095/.104 against majority .101/.096/.106 (seeds 1–3),
//     η = 0.5 .080/.079/.082; on Credit (7,500 a silo) .196/.192/.197
//     against .187/.181/.185. On small silos η = 0.5 was no better
//     (Parkinsons, 1,468 a silo: .053 against .052 mean of 3 seeds;
//     Communities, 498: .194 against .176, seed 1), so it applies from
//     ε·ñ = 2,000 on (bench/results/tabular.md, "SteFFLe: η = 0.5 at
//     large silo budgets").
//
// DPSGD-F and Naïve take DP-SGD's rule with two changes, both read from
// public facts only (ε, n, the batch, σ1; never the labels' balance).
// With the old guards their defaults were worse than the majority class
// on the synthetic 20,000×100 table with 10 % positives at ε = 0.5
// (15,000 training records, batch 750; DPSGD-F .172, Naïve .282 against
// .0998, DP-SGD .095) and Naïve on the 5,000×20 table (.229 against
// .255), with Communities at ε = 4 breaking one seed of DPSGD-F in three
// (.361). The cause is the count noise: σ2 ≈ 14.5 there, so σ1 = 10·σ2 ≈
// 145 on two groups of ≈ 375 records a batch; under GuardC0 the noisy
// clipped total m̃ is often near 0, r = m̃/b with it, and C^k = C0·(1 +
// f^k/r) jumps (single steps at 29.7·C0), the noise σ2·max_k C^k with it;
// Naïve's θ^k = (b/K)/b̃^k with counts raised to 1 reaches b/K = 375 for a
// step. Adam carries such a step for many more. So:
//   - DPSGD-F runs GuardSmooth (fractions shrunk towards the pooled one
//     with σ1 pseudo-counts: a group lost in the count noise gets the
//     typical bound 2·C0) and C0 = half the rule's clip (dpsgdfClipX): its
//     typical bound 2·C0 is then the clip the rule chose for DP-SGD. On
//     the 15,000×100 table at ε = 0.5 (seeds 1–3) the smooth guard alone
//     gave .103/.097/.103, with C0 halved .101/.093/.101 (a quarter:
//     .099/.094/.099, not adopted: one table); --clip alone (0.1 under
//     GuardC0) .121/.146/.103 and --count-noise-ratio 3 .108/.140/.101.
//   - Naïve runs NaiveGuardSmooth (σ1 pseudo-records at the even share
//     b/K: a weight of at most 1 + (b/K)/σ1 for a group lost in the
//     noise): .101/.095/.099 there, where a smaller clip under the old
//     guard did not help (C0 = 0.25: .240/.310 for seeds 2/3).
//
// Both guards are post-processing of the released counts (no ε), and a
// guard the caller names is kept. With them (3 seeds, ε = 0.5, 1 and 4,
// bench/results/tabular.md, "DPSGD-F and Naïve: data-aware defaults") every
// DPSGD-F and Naïve default on Adult, Credit, Dutch, Communities,
// Parkinsons and synthetic tables of 375 to 15,000 training records is
// within 0.011 of DP-SGD's default (before: up to .076 and .186 worse) and
// below the majority class on average, but only at it on the 15,000×100
// table at ε = 0.5 (.0986 and .0984 against .0990, where DP-SGD's default
// reaches .0954). On Dutch DPSGD-F's halved C0 costs .001–.003.
//
// Where no private model beats the majority class the rules cannot either:
// on synthetic tables with 5 % positives (22,000 records and 5 features,
// 50,000 and 10) every DP-FERMI and SteFFLe setting predicts one class,
// and objpert and diffprivlib are within 0.001 of the majority class.
const (
	dataDefaultBudget = 2000 // ε·n separating the two regimes
	dataDefaultMinB   = 16   // smallest default batch (tiny tables)
)

// dataRule is one regime's settings: sampling rate, epochs, Adam's step,
// the clip bound as a multiple of Config's, DP-FERMI's and SteFFLe's λ,
// and SteFFLe's plain SGD step.
type dataRule struct {
	rate      float64
	epochs    int
	lr, clipX float64
	lambda    float64
	steffleLR float64
}

// dataRuleFor is the regime of n training records at ε.
func dataRuleFor(n int, eps float64) dataRule {
	if eps*float64(n) < dataDefaultBudget {
		return dataRule{rate: 0.25, epochs: 20, lr: 0.1, clipX: 0.1, lambda: fairLambdaSmall, steffleLR: steffleLRSmall}
	}
	return dataRule{rate: 0.05, epochs: 40, lr: 0.03, clipX: 1, lambda: fairLambdaLarge, steffleLR: steffleLRLarge}
}

// DP-FERMI's and SteFFLe's data-aware λ and SteFFLe's SGD step (the
// rules above).
const (
	fairLambdaSmall = 0.5 // ε·n below dataDefaultBudget
	fairLambdaLarge = 2
	// fermiTunedBudget is the ε·n from which DP-FERMI may keep
	// Defaults(); it does when Defaults() also take at least
	// fermiTunedSteps noisy steps on the table (fermiKeepsDefaults).
	fermiTunedBudget = 10000
	fermiTunedSteps  = 1500
	// SteFFLe's server takes plain SGD steps of η times a mean of
	// gradients clipped to C (Config's, at every budget): η =
	// steffleLRSmall below a silo's ε·ñ = dataDefaultBudget, else
	// steffleLRLarge; it samples steffleRate of a silo's records a round,
	// for steffleEpochs.
	steffleLRSmall = 0.1
	steffleLRLarge = 0.5
	steffleRate    = 0.05
	steffleEpochs  = 40
)

// fermiKeepsDefaults reports whether DP-FERMI keeps Defaults() for n
// training records at ε: a large budget (ε·n ≥ fermiTunedBudget) and
// enough of Defaults()' Adam steps of 0.005 (epochs·n/batch ≥
// fermiTunedSteps, i.e. n ≥ 19,200 at batch 256 and 20 epochs) for the
// model to reach the data's optimum. It reads the defaults from
// Defaults(), so a change there moves the threshold with them.
func fermiKeepsDefaults(n int, eps float64) bool {
	d := Defaults()
	return eps*float64(n) >= fermiTunedBudget && float64(d.Epochs)*float64(n)/float64(d.Batch) >= fermiTunedSteps
}

// dataAware are the algorithms whose defaults follow the data with Adam:
// the private SGD family, which shares DP-SGD's step, and DP-FERMI.
// SteFFLe (plain SGD on the server) follows them with its own step.
var dataAware = []AlgoName{AlgoDPSGD, algoDPSGDF, algoNaive, algoFermi}

// DPSGD-F's and Naïve's tabular defaults (the rules above; package
// dpsgdf, which imports this one, names the guards GuardSmooth and
// NaiveGuardSmooth).
const (
	tabularCountGuard = "smooth"
	tabularNaiveGuard = "smooth"
	// dpsgdfClipX scales DPSGD-F's C0 from the rule's clip: its typical
	// bound is 2·C0 (f^k ≈ r), so C0 = clip/2 puts it at the rule's clip.
	dpsgdfClipX = 0.5
)

// AdaptsToData reports whether AdaptToData changes anything for cfg: a
// private run (finite ε, no σ given) of the SGD family or DP-FERMI with
// Adam, or of SteFFLe with plain SGD.
func AdaptsToData(cfg Config) bool {
	if cfg.Privacy.Sigma != 0 || !(cfg.Privacy.Epsilon > 0) || math.IsInf(cfg.Privacy.Epsilon, 1) {
		return false
	}
	if cfg.Algo == algoSteffle {
		return cfg.Optimizer == OptimizerSGD
	}
	return slices.Contains(dataAware, cfg.Algo) && cfg.Optimizer == OptimizerAdam
}

// AdaptToData returns cfg with the batch size, epochs, learning rate and
// clip bound that the caller did not fix (fixed holds Config field names:
// "Batch", "Epochs", "LR", "Privacy.Clip") chosen for the n training
// records of train at cfg's ε by dataRuleFor: batch max(16, round(q·n))
// (at most n). For DP-FERMI and SteFFLe it also sets λ, but only when
// fixed says "Fair.Lambda" is not fixed (the key present and false: the
// command line without --lambda), since elsewhere (the library's
// PrivateOptions.Lambda) a λ of 0 is a choice. SteFFLe's rule is applied
// to one silo's records, n/silos, and its batch is per silo. It reads only
// the number of training records, which every receipt already treats as
// public, and ε; not the labels, whose balance would be a release of the
// private records. Image data keep Defaults() (the rules were derived on
// tables). note says what changed ("" when nothing did).
func AdaptToData(cfg Config, train *loaders.Dataset, fixed map[string]bool) (out Config, note string) {
	if !AdaptsToData(cfg) || train == nil || train.IsImage() || train.N() < 1 {
		return cfg, ""
	}
	n, per := train.N(), train.N()
	if cfg.Algo == algoSteffle && cfg.Federation.Silos > 1 {
		per = max(1, n/cfg.Federation.Silos)
	}
	r := dataRuleFor(per, cfg.Privacy.Epsilon)
	if cfg.Algo == algoFermi && fermiKeepsDefaults(n, cfg.Privacy.Epsilon) {
		// Defaults() is DP-FERMI's setting tuned on Adult; where it
		// takes enough steps at a large budget it beats the majority
		// class, and the rule's settings do not keep Adult's fairness
		// (the rules above).
		return cfg, ""
	}
	if cfg.Algo == algoSteffle {
		r.rate, r.epochs, r.lr, r.clipX = steffleRate, steffleEpochs, r.steffleLR, 1
	}
	var changed []string
	if !fixed["Batch"] {
		if b := min(per, max(dataDefaultMinB, int(math.Round(r.rate*float64(per))))); b != cfg.Batch {
			cfg.Batch = b
			changed = append(changed, fmt.Sprintf("batch %d", b))
		}
	}
	if !fixed["Epochs"] && cfg.Epochs != r.epochs {
		cfg.Epochs = r.epochs
		changed = append(changed, fmt.Sprintf("epochs %d", cfg.Epochs))
	}
	if !fixed["LR"] && cfg.LR != r.lr {
		cfg.LR = r.lr
		changed = append(changed, fmt.Sprintf("learning rate %g", cfg.LR))
	}
	clipX := r.clipX
	if cfg.Algo == algoDPSGDF {
		clipX *= dpsgdfClipX
	}
	if !fixed["Privacy.Clip"] && clipX != 1 {
		cfg.Privacy.Clip *= clipX
		changed = append(changed, fmt.Sprintf("clip %g", cfg.Privacy.Clip))
	}
	// The guards are post-processing of the released counts (no ε); a
	// guard the caller named (non-empty) is kept.
	if cfg.Algo == algoDPSGDF && cfg.Fair.CountGuard == "" {
		cfg.Fair.CountGuard = tabularCountGuard
		changed = append(changed, "count guard "+tabularCountGuard)
	}
	if cfg.Algo == algoNaive && cfg.Fair.NaiveGuard == "" {
		cfg.Fair.NaiveGuard = tabularNaiveGuard
		changed = append(changed, "naive guard "+tabularNaiveGuard)
	}
	if lambdaFixed, given := fixed["Fair.Lambda"]; given && !lambdaFixed && (cfg.Algo == algoFermi || cfg.Algo == algoSteffle) &&
		cfg.Fair.Lambda != r.lambda {
		cfg.Fair.Lambda = r.lambda
		changed = append(changed, fmt.Sprintf("λ %g", cfg.Fair.Lambda))
	}
	if len(changed) == 0 {
		return cfg, ""
	}
	records := fmt.Sprintf("the %d training records", n)
	if per != n {
		records = fmt.Sprintf("%d training records a silo", per)
	}
	return cfg, fmt.Sprintf("defaults adapted to %s at ε = %g: %s", records, cfg.Privacy.Epsilon, strings.Join(changed, ", "))
}
