package bench

// A fully private fair pipeline on tabular data (bench/results/tabular.md,
// "A fully private fair pipeline"): Jagielski et al.'s (2019)
// post-processing on a private base classifier (objective perturbation or
// DP-SGD, `fairdp train --algo postproc --base objpert|dpsgd`) against the
// unfair private model it starts from (`fairdp train --algo objpert`, its
// default), on the same splits, at every ε, seed, base share of ε and γ:
//
//	FAIRDP_FULL=1 FAIRDP_BENCH_OUT=/tmp/fair CGO_LDFLAGS=-lopenblas \
//	  go test -tags openblas -timeout 0 -run TabularFairPipeline -v ./bench
//
// FAIRDP_FAIR_SETS (default "adult,credit"; an entry ending in .csv is a
// generated table with its schema beside it, bench/tabular_synthetic.py),
// FAIRDP_FAIR_SEEDS (default 3), FAIRDP_FAIR_EPS (default "0.5,1,4"),
// FAIRDP_FAIR_BASES (default "objpert,dpsgd"), FAIRDP_FAIR_SHARES (the
// objpert base's share of ε, default "0.3,0.5,0.7"), FAIRDP_FAIR_DPSGD_SHARES
// (default "0.5"), FAIRDP_FAIR_GAMMAS (default "0,0.02,0.05") and
// FAIRDP_FAIR_FAIRNESS (default "dp") and FAIRDP_FAIR_BINS (the score bins:
// 2 is the paper's threshold, more are linear.UniformBins; default "2,4")
// change the grid, and so do FAIRDP_FAIR_SLACKS (the LP's slack rules,
// linear.SlackRule, "sd:Z" for Z standard deviations; default "union") and
// FAIRDP_FAIR_GAMMA_SHARES (linear.PostprocConfig.GammaShare, γ then being
// the larger of the grid's γ and that share of the noisy violation; -1 is
// linear.GammaShareAuto, the command line's default rule; default "0"), and FAIRDP_FAIR_BASE_CLIP (0: the objpert base scores
// unclipped rows, linear.PostprocConfig.BaseClipAtPredict off; default 1).
// One row per run in
// OUT/fair.csv: the post-processed model's test error and violations
// expected over its coins (and of one draw of them, "sampled_*"), its
// base's at threshold 0.5, and the unfair model's (model "objpert").

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/linear"
	"github.com/fairdp/fairdp/metrics"
	"github.com/fairdp/fairdp/trainer"
)

func TestTabularFairPipeline(t *testing.T) {
	data, out, sets, seeds := tabularBench(t, "FAIRDP_FAIR", 3)
	eps := envFloats(t, "FAIRDP_FAIR_EPS", "0.5,1,4")
	bases := strings.Split(orDefault(os.Getenv("FAIRDP_FAIR_BASES"), "objpert,dpsgd"), ",")
	shares := map[string][]float64{
		linear.BaseObjPert: envFloats(t, "FAIRDP_FAIR_SHARES", "0.3,0.5,0.7"),
		linear.BaseDPSGD:   envFloats(t, "FAIRDP_FAIR_DPSGD_SHARES", "0.5"),
	}
	gammas := envFloats(t, "FAIRDP_FAIR_GAMMAS", "0,0.02,0.05")
	fairness := strings.Split(orDefault(os.Getenv("FAIRDP_FAIR_FAIRNESS"), "dp"), ",")
	bins := envFloats(t, "FAIRDP_FAIR_BINS", "2,4")
	slacks := strings.Split(orDefault(os.Getenv("FAIRDP_FAIR_SLACKS"), string(linear.SlackUnion)), ",")
	gammaShares := envFloats(t, "FAIRDP_FAIR_GAMMA_SHARES", "0")
	// FAIRDP_FAIR_MONOTONE=0,1 runs every setting with and without the
	// monotone cells (PostprocConfig.Monotone); default: without.
	type cellRule struct {
		share    float64
		monotone bool
	}
	var cellRules []cellRule
	for _, gs := range gammaShares {
		for _, mono := range envFloats(t, "FAIRDP_FAIR_MONOTONE", "0") {
			cellRules = append(cellRules, cellRule{gs, mono != 0})
		}
	}
	f, err := os.Create(filepath.Join(out, "fair.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fmt.Fprintln(f, "dataset,train_records,groups,seed,epsilon,model,base,base_share,bins,fairness,gamma,failed,"+
		"test_error,dp_violation,eo_violation,sampled_error,sampled_dp,sampled_eo,slack,base_error,base_dp,base_eo,majority_error,receipt_epsilon,receipt_delta,slack_rule,gamma_share,gamma_used,noisy_violation,monotone")
	row := func(set string, n, groups, seed int, e float64, model, base string, share float64, k int, fair string, gamma float64,
		failed bool, exp, sampled, baseM metrics.Split, slack, majority float64, rec *float64, delta float64, lp fairLPRow) {
		re := ""
		if rec != nil {
			re = strconv.FormatFloat(*rec, 'g', 6, 64)
		}
		fmt.Fprintf(f, "%s,%d,%d,%d,%g,%s,%s,%g,%d,%s,%g,%v,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%s,%.3g,%s,%g,%.6f,%.6f,%v\n",
			set, n, groups, seed, e, model, base, share, k, fair, gamma, failed, exp.Error, exp.DPViolation, exp.EOViolation,
			sampled.Error, sampled.DPViolation, sampled.EOViolation, slack, baseM.Error, baseM.DPViolation, baseM.EOViolation, majority, re, delta,
			lp.rule, lp.share, lp.gamma, lp.noisy, lp.monotone)
	}
	for _, path := range sets {
		for s := 1; s <= seeds; s++ {
			cfg, set := tabularConfig(trainer.Defaults(), path, data, s)
			for _, e := range eps {
				cfg.Privacy.Epsilon = e
				// The unfair private model: objpert's default.
				oc := cfg
				oc.Algo = "objpert"
				orep, err := linear.RunObjPert(context.Background(), oc)
				if err != nil {
					t.Fatal(err)
				}
				majority := -1.0
				for _, base := range bases {
					for _, share := range shares[base] {
						pc := linear.PostprocDefaults()
						pc.Base, pc.BaseEpsilon = base, share*e
						pc.BaseClipAtPredict = os.Getenv("FAIRDP_FAIR_BASE_CLIP") != "0"
						fc := linear.WithPostprocConfig(cfg, pc)
						fc.Algo = "postproc"
						d, err := linear.LoadFairData(fc)
						if err != nil {
							t.Fatal(err)
						}
						if majority < 0 { // the same split as objpert's: the split seed's "data" stream
							majority = majorityError(d.Test.Label)
							row(set, orep.TrainRecords, len(orep.Test.Groups), s, e, "objpert", "", 0, 0, "", 0, false, orep.Test, orep.Test,
								orep.Test, 0, majority, orep.Privacy.Epsilon, orep.Privacy.Delta, fairLPRow{})
							t.Logf("%s seed %d ε %g objpert: error %.4f DP %.4f EO %.4f (majority %.4f)", set, s, e, orep.Test.Error,
								orep.Test.DPViolation, orep.Test.EOViolation, majority)
						}
						for _, k := range bins {
							for _, fair := range fairness {
								for _, g := range gammas {
									for _, sl := range slacks {
										for _, cell := range cellRules {
											gs := cell.share
											pc.Fairness, pc.Gamma, pc.Bins, pc.GammaShare, pc.Monotone = fair, g, int(k), gs, cell.monotone
											if pc.Slack, pc.SlackZ, err = parseBenchSlack(sl); err != nil {
												t.Fatal(err)
											}
											fc = linear.WithPostprocConfig(fc, pc)
											rep, err := linear.RunFair(context.Background(), d, fc)
											if err != nil {
												t.Fatal(err)
											}
											res := linear.FairExtra(rep)
											var exp metrics.Split
											if x := res.ExpectedTest; x != nil {
												exp = metrics.Split{Error: x.Error, DPViolation: x.DPViolation, EOViolation: x.EOViolation}
											}
											slack, lp := 0.0, fairLPRow{rule: sl, share: gs, monotone: cell.monotone}
											if pp := res.PostProcessing; pp != nil {
												slack, lp.gamma, lp.noisy = pp.Slack, pp.Gamma, pp.NoisyViolation
											}
											row(set, rep.TrainRecords, len(d.GroupNames), s, e, "postproc", base, share, int(k), fair, g, res.Failed, exp, rep.Test,
												*res.BaseTest, slack, majority, rep.Privacy.Epsilon, rep.Privacy.Delta, lp)
											t.Logf("%s seed %d ε %g postproc on %s (share %g, %d bins) %s γ %g slack %s γ-share %g: error %.4f DP %.4f EO %.4f (base %.4f / %.4f)",
												set, s, e, base, share, int(k), fair, g, sl, gs, exp.Error, exp.DPViolation, exp.EOViolation,
												res.BaseTest.Error, res.BaseTest.DPViolation)
										}
									}
								}
							}
						}
					}
				}
			}
		}
	}
}

// fairLPRow is what fair.csv records of a run's LP: the slack rule and
// γ share asked for, the γ the LP ran with and the noisy violation it was
// derived from (empty for the unfair model's rows).
type fairLPRow struct {
	rule         string
	share        float64
	gamma, noisy float64
	monotone     bool
}

// parseBenchSlack reads FAIRDP_FAIR_SLACKS's entries: a linear.SlackRule,
// or "sd:Z" for linear.SlackSD at Z standard deviations.
func parseBenchSlack(s string) (string, float64, error) {
	rule, z, hasZ := strings.Cut(s, ":")
	if _, err := linear.ParseSlackRule(rule); err != nil {
		return "", 0, err
	}
	if !hasZ {
		return rule, 0, nil
	}
	v, err := strconv.ParseFloat(z, 64)
	if err != nil || rule != string(linear.SlackSD) {
		return "", 0, fmt.Errorf("slack %q: want sd:Z with a number Z", s)
	}
	return rule, v, nil
}

// majorityError is the error of predicting the more frequent class of the
// labels for everyone.
func majorityError(label []int) float64 {
	pos := 0
	for _, y := range label {
		pos += y
	}
	p := float64(pos) / float64(max(1, len(label)))
	return min(p, 1-p)
}

// TestTabularFairPrice is the price of parity without privacy: on the
// same splits, logistic regression fitted without noise and Hardt et
// al.'s LP at ε = ∞ over 10 score-quantile bins with γ half the base's
// test DP violation (and 0). Where this costs more than 0.02 of error, no
// post-processing, private or not, can halve the violation within the
// done-when's 0.02. Rows in OUT/fair_price.csv (same environment as
// TestTabularFairPipeline: FAIRDP_FAIR_SETS, FAIRDP_FAIR_SEEDS);
// FAIRDP_FAIR_PRICE_GAMMAS adds fixed values of γ (say the unfair private
// model's violation halved), the non-private frontier at those bounds.
func TestTabularFairPrice(t *testing.T) {
	data, out, sets, seeds := tabularBench(t, "FAIRDP_FAIR", 3)
	var fixed []float64
	if os.Getenv("FAIRDP_FAIR_PRICE_GAMMAS") != "" {
		fixed = envFloats(t, "FAIRDP_FAIR_PRICE_GAMMAS", "")
	}
	f, err := os.Create(filepath.Join(out, "fair_price.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fmt.Fprintln(f, "dataset,seed,base_error,base_dp,gamma,error,dp_violation")
	for _, path := range sets {
		for s := 1; s <= seeds; s++ {
			cfg, set := tabularConfig(trainer.Defaults(), path, data, s)
			cfg.Algo, cfg.Privacy.Epsilon = "postproc", math.Inf(1)
			pc := linear.PostprocDefaults()
			pc.Fairness, pc.Bins = "dp", 10
			cfg = linear.WithPostprocConfig(cfg, pc)
			d, err := linear.LoadFairData(cfg)
			if err != nil {
				t.Fatal(err)
			}
			var base metrics.Split
			for i := range 2 + len(fixed) {
				switch i {
				case 0:
					rep, err := linear.RunFair(context.Background(), d, linear.WithPostprocConfig(cfg, func() linear.PostprocConfig { p := pc; p.Gamma = 1; return p }()))
					if err != nil {
						t.Fatal(err)
					}
					base = *linear.FairExtra(rep).BaseTest
					pc.Gamma = base.DPViolation / 2
				case 1:
					pc.Gamma = 0
				default:
					pc.Gamma = fixed[i-2]
				}
				rep, err := linear.RunFair(context.Background(), d, linear.WithPostprocConfig(cfg, pc))
				if err != nil {
					t.Fatal(err)
				}
				x := linear.FairExtra(rep).ExpectedTest
				fmt.Fprintf(f, "%s,%d,%.6f,%.6f,%.6f,%.6f,%.6f\n", set, s, base.Error, base.DPViolation, pc.Gamma, x.Error, x.DPViolation)
				t.Logf("%s seed %d: base %.4f DP %.4f; γ %.4f: error %.4f DP %.4f", set, s, base.Error, base.DPViolation, pc.Gamma, x.Error, x.DPViolation)
			}
		}
	}
}
