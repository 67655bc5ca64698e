package dpsgdf

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/fairdp/fairdp/metrics"
	"github.com/fairdp/fairdp/trainer"
)

// Plot files Finish writes into --out, like the paper's Figure 2.
const (
	BoundsPlot  = "clip_bounds.png"   // DPSGD-F: mean C^k per epoch and group
	WeightsPlot = "group_weights.png" // Naive: mean θ^k per epoch and group
)

// perGroupKey is the metrics.jsonl "algo" key and the report.json "extra"
// key of the per-group series: "clip_bounds" (C^k) or "group_weights" (θ^k).
func (a *Algorithm[T]) perGroupKey() string {
	if a.cfg.Policy == Naive {
		return "group_weights"
	}
	return "clip_bounds"
}

// EpochFields is trainer.Hooks.OnEpoch: the epoch's mean C^k
// (DPSGD-F) or θ^k (Naive) per group, the mean noise sensitivity
// ("noise_bound": max_k C^k, or C0·max_k θ^k) and, for DPSGD-F, how many
// steps fell back to C0 because the noisy clipped count was ≤ 0. Flat logs
// nothing extra.
func (a *Algorithm[T]) EpochFields() map[string]any {
	st := &a.stats
	if a.cfg.Policy == Flat || st.steps == 0 {
		st.steps, st.noiseSum = 0, 0
		return nil
	}
	means := make([]float64, len(st.sum))
	byName := make(map[string]float64, len(st.sum))
	for k, s := range st.sum {
		means[k] = s / float64(st.steps)
		byName[a.cfg.Groups[k]] = means[k]
	}
	st.history = append(st.history, means)
	out := map[string]any{a.perGroupKey(): byName, "noise_bound": st.noiseSum / float64(st.steps)}
	if a.cfg.Policy == Adaptive {
		out["all_unclipped_steps"] = st.allUnclipped
	}
	clear(st.sum)
	st.steps, st.noiseSum, st.allUnclipped = 0, 0, 0
	return out
}

// History is the per-epoch mean of C^k (DPSGD-F) or θ^k (Naive): one row
// per epoch logged so far, one column per group.
func (a *Algorithm[T]) History() [][]float64 {
	out := make([][]float64, len(a.stats.history))
	for i, row := range a.stats.history {
		out[i] = slices.Clone(row)
	}
	return out
}

// Finish is trainer.Hooks.OnEnd: it puts σ1, σ2 and the per-epoch
// series into report.json's "extra" and, with --out, plots the series
// (clip_bounds.png for DPSGD-F, group_weights.png for Naive).
func (a *Algorithm[T]) Finish(_ trainer.Model[T], job *trainer.Job, rep *trainer.Report) error {
	res := &Result{Policy: a.cfg.Policy, Sigma: a.cfg.Sigma, Clip: a.cfg.Clip}
	rep.SetExtra(resultKey, res)
	if a.cfg.Policy == Flat {
		return nil
	}
	sigma1 := a.sigma1
	res.CountSigma = &sigma1
	if a.cfg.Policy == Adaptive {
		res.CountGuard = a.cfg.CountGuard
	}
	if a.cfg.Policy == Naive {
		res.NaiveGuard = a.cfg.NaiveGuard
	}
	series := a.series()
	perGroup := make(map[string][]float64, len(series))
	for _, s := range series {
		perGroup[s.Name] = s.Y
	}
	if a.cfg.Policy == Naive {
		res.GroupWeights = perGroup
	} else {
		res.ClipBounds = perGroup
	}
	if job == nil || job.Cfg.Out == "" || len(a.stats.history) == 0 {
		return nil
	}
	file, title, ylabel := BoundsPlot, "DPSGD-F clipping bound per group", "mean clip bound C^k"
	if a.cfg.Policy == Naive {
		file, title, ylabel = WeightsPlot, "Naive group weight per group", "mean weight θ^k"
	}
	path := filepath.Join(job.Cfg.Out, file)
	if err := metrics.LinePlot(path, title, "epoch", ylabel, series); err != nil {
		return fmt.Errorf("dpsgdf: %w", err)
	}
	return nil
}

// series turns the history into one line per group.
func (a *Algorithm[T]) series() []metrics.Series {
	out := make([]metrics.Series, len(a.cfg.Groups))
	for k, name := range a.cfg.Groups {
		s := metrics.Series{Name: name}
		for e, row := range a.stats.history {
			s.X = append(s.X, float64(e+1))
			s.Y = append(s.Y, row[k])
		}
		out[k] = s
	}
	return out
}

var _ trainer.Algorithm[float64] = (*Algorithm[float64])(nil)

// Hooks implements trainer.Algorithm: the clip bounds (weights) per epoch,
// the per-group series and plots at the end, the checkpoint state, and the
// planned ε that holds a given σ to a finite ε.
func (a *Algorithm[T]) Hooks() trainer.Hooks[T] {
	return trainer.Hooks[T]{OnEpoch: a.EpochFields, OnEnd: a.Finish, Resume: a, PlannedRunEpsilon: a.PlannedRunEpsilon}
}

// resultKey is where a report holds Result in memory; in report.json its
// fields sit at the top of "extra" (Result is a trainer.InlineExtra).
const resultKey = "dpsgdf"

// Result is what DPSGD-F and Naïve add to report.json's "extra", at its
// top level: the policy, σ2 and C0, and for the group policies σ1, DPSGD-F's
// count guard and the per-epoch series per group (ClipBounds for DPSGD-F, GroupWeights for
// Naïve; the perGroupKey of metrics.jsonl).
type Result struct {
	Policy     Policy   `json:"policy"`
	Sigma      float64  `json:"sigma"`
	Clip       float64  `json:"clip"`
	CountSigma *float64 `json:"count_sigma,omitempty"`
	// CountGuard is DPSGD-F's rule for noisily empty groups (empty for
	// DPSGD, Naïve and reports written before it was a choice, which ran
	// GuardC0, then the default).
	CountGuard CountGuard `json:"count_guard,omitempty"`
	// NaiveGuard is Naïve's rule for turning noisy counts into weights
	// (empty for DPSGD, DPSGD-F and reports written before it was a
	// choice, which ran NaiveGuardOne).
	NaiveGuard   NaiveGuard           `json:"naive_guard,omitempty"`
	ClipBounds   map[string][]float64 `json:"clip_bounds,omitempty"`
	GroupWeights map[string][]float64 `json:"group_weights,omitempty"`
}

// InlineExtra implements trainer.InlineExtra: the fields sit at the top
// of "extra", as they always have.
func (*Result) InlineExtra() {}

// ResultOf is a DPSGD-F or Naïve report's result, from a run or read from
// report.json (nil for other reports).
func ResultOf(rep *trainer.Report) *Result {
	r, ok := trainer.ExtraOf[*Result](rep, resultKey)
	if !ok || r.Policy == "" { // another family's extra decodes into an empty Result
		return nil
	}
	return r
}
