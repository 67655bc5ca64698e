package linear

// model.json of post-processing and of the oracle learner, and how `fairdp
// eval` scores it (registered with trainer.RegisterModelFile in
// register.go): the randomised classifier on its own held-out records,
// with the metrics expected over its coins, as the training run's report
// states them (FairResult.ExpectedTest).

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/fairdp/fairdp/dpops/accounting"
	"github.com/fairdp/fairdp/loaders"
	"github.com/fairdp/fairdp/metrics"
	"github.com/fairdp/fairdp/trainer"
)

// FairModel is model.json: the randomised classifier a post-processing or
// oracle run trained, with what eval needs to score it on the records it
// did not train on. Groups, Bins, Postprocessor, BaseWeights, BaseRowBound
// and Mixture are the file's fields since its first version; Kind, Split,
// Preprocess, Description and Privacy were added so that eval can read it.
type FairModel struct {
	// Kind is the algorithm (PostprocName or OracleName): the file's kind
	// for eval ("kind", which trainer.RegisterModelFile dispatches on).
	Kind   trainer.AlgoName `json:"kind"`
	Groups []string         `json:"groups"`
	// Post-processing: the score bins' edges, the post-processor, and the
	// base logistic regression's weights (intercept first; none with
	// external scores) and the norm its rows are clipped to first (0: none).
	Bins          []float64      `json:"bins,omitempty"`
	Postprocessor *PostProcessor `json:"postprocessor,omitempty"`
	BaseWeights   []float64      `json:"base_logistic_weights,omitempty"`
	BaseRowBound  float64        `json:"base_row_bound,omitempty"`
	// Oracle: the uniform mixture of the rounds' classifiers.
	Mixture *Mixture `json:"mixture,omitempty"`
	// Split is the train/test split the model was trained on, Preprocess
	// the preprocessing fitted on its training part (both as model.ckpt
	// keeps them, and declared in the receipt the same way); neither with
	// external scores.
	Split      *trainer.SplitRecord `json:"split,omitempty"`
	Preprocess json.RawMessage      `json:"preprocess,omitempty"`
	// Description is the report's model line, Privacy the report's
	// receipt (for a tuned run, the whole search's): WriteFairOutputs
	// fills both.
	Description string              `json:"model,omitempty"`
	Privacy     *accounting.Receipt `json:"privacy,omitempty"`
}

// newFairModel is the model file of cfg's algorithm trained on d, without
// the classifier itself.
func newFairModel(algo trainer.AlgoName, d *FairData) *FairModel {
	return &FairModel{Kind: algo, Groups: d.GroupNames, Split: d.Split, Preprocess: d.Preprocess}
}

// ProbPositive is every record's probability of a positive prediction:
// for post-processing the base scores' bins through the post-processor,
// for the oracle the mixture's vote. x holds n rows of features encoded
// with m.Preprocess, groups are indices into m.Groups.
func (m *FairModel) ProbPositive(x []float64, n int, group []int) ([]float64, error) {
	switch {
	case m.Kind == PostprocName && m.Postprocessor != nil:
		if len(m.BaseWeights) == 0 {
			return nil, errors.New("linear: the post-processed model holds no base classifier (it post-processed external scores), " +
				"so it cannot score features")
		}
		scores, err := LinearClassifier{W: m.BaseWeights, RowBound: m.BaseRowBound}.Probabilities(x, n)
		if err != nil {
			return nil, err
		}
		bins, err := ScoreBins{Edges: m.Bins}.Assign(scores)
		if err != nil {
			return nil, err
		}
		return m.Postprocessor.ProbPositive(bins, group)
	case m.Kind == OracleName && m.Mixture != nil:
		return m.Mixture.ProbPositive(x, n)
	}
	return nil, fmt.Errorf("linear: a %q model file without its classifier (postprocessor or mixture)", m.Kind)
}

// params is the number of values the model holds (the report's params).
func (m *FairModel) params() int {
	switch {
	case m.Postprocessor != nil:
		return len(m.Postprocessor.P) + len(m.BaseWeights)
	case m.Mixture != nil && len(m.Mixture.Classifiers) > 0:
		return len(m.Mixture.Classifiers) * len(m.Mixture.Classifiers[0].W)
	}
	return 0
}

// readFairModel is the trainer.ModelFileReader of model.json.
func readFairModel(path string, raw []byte) (*trainer.SavedModel, error) {
	var m FairModel
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("eval: %s: not a %s/%s model.json: %w", path, PostprocName, OracleName, err)
	}
	if m.Split == nil {
		return nil, fmt.Errorf("eval: %s records no train/test split (it post-processed external scores, which eval cannot rebuild), "+
			"so eval cannot score it", path)
	}
	if (m.Kind == PostprocName) != (m.Postprocessor != nil) || (m.Kind == OracleName) != (m.Mixture != nil) {
		return nil, fmt.Errorf("eval: %s: a %q model.json needs exactly its own classifier (postproc: postprocessor, oracle: mixture)", path, m.Kind)
	}
	sm := &trainer.SavedModel{Arch: m.Description, DType: "float64", Params: m.params(), Split: m.Split, Preprocess: m.Preprocess,
		Scored: "the metrics are expected over the randomised classifier's coins (exact expectations, as the training report's " +
			"expected_test; no coins are flipped)",
		Score: m.evaluate}
	if m.Privacy != nil {
		var err error
		if sm.Receipt, err = json.Marshal(m.Privacy); err != nil {
			return nil, err
		}
	}
	return sm, nil
}

// evaluate scores m on d: the per-group table and the error and
// violations expected over the classifier's coins (ExpectedSplit).
func (m *FairModel) evaluate(d *loaders.Dataset) (metrics.Split, error) {
	if !slices.Equal(d.GroupNames, m.Groups) {
		return metrics.Split{}, fmt.Errorf("the data's sensitive groups %v are not the model's %v", d.GroupNames, m.Groups)
	}
	if len(d.LabelNames) != 2 {
		return metrics.Split{}, fmt.Errorf("the data has %d classes; the model is a binary classifier", len(d.LabelNames))
	}
	prob, err := m.ProbPositive(d.X, d.N(), d.Groups)
	if err != nil {
		return metrics.Split{}, err
	}
	return ExpectedSplit(prob, d.Labels, d.Groups, d.GroupNames)
}

// ExpectedSplit is the test table of a randomised classifier that
// predicts 1 for record i with probability prob[i], expected over its
// coins: every rate (accuracy, TPR, FPR, selection rate, per group and
// overall) is its expectation, and Error, DPViolation and EOViolation are
// ExpectedMetrics' (the same numbers, computed the same way, as
// FairResult.ExpectedTest). Labels are 0/1; groups index groupNames.
func ExpectedSplit(prob []float64, label, group []int, groupNames []string) (metrics.Split, error) {
	exp, err := ExpectedMetrics(prob, label, group, len(groupNames))
	if err != nil {
		return metrics.Split{}, err
	}
	// Expected confusion counts per group (and overall, the last row):
	// positives predicted among label 0 and 1, and the label counts.
	type cell struct{ pos, cnt [2]float64 }
	cells := make([]cell, len(groupNames)+1)
	for i, p := range prob {
		for _, c := range []*cell{&cells[group[i]], &cells[len(groupNames)]} {
			c.pos[label[i]] += p
			c.cnt[label[i]]++
		}
	}
	row := func(name string, c cell) metrics.GroupMetrics {
		g := metrics.GroupMetrics{Group: name, N: int(c.cnt[0] + c.cnt[1])}
		if g.N == 0 {
			return g
		}
		n := float64(g.N)
		g.Accuracy = (c.cnt[0] - c.pos[0] + c.pos[1]) / n
		g.SelectionRate = (c.pos[0] + c.pos[1]) / n
		if c.cnt[1] > 0 {
			v := c.pos[1] / c.cnt[1]
			g.TPR = &v
		}
		if c.cnt[0] > 0 {
			v := c.pos[0] / c.cnt[0]
			g.FPR = &v
		}
		return g
	}
	sp := metrics.Split{N: len(prob), Error: exp.Error, DPViolation: exp.DPViolation, EOViolation: exp.EOViolation,
		Groups: make([]metrics.GroupMetrics, len(groupNames))}
	for a, name := range groupNames {
		sp.Groups[a] = row(name, cells[a])
	}
	overall := row(metrics.OverallName, cells[len(groupNames)])
	sp.Overall, sp.Accuracy = &overall, 1-exp.Error
	return sp, nil
}
