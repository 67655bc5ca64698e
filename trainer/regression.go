package trainer

import (
	"fmt"
	"slices"

	"github.com/fairdp/fairdp/models"
)

// regressionAlgorithms are the algorithms that train a regression output
// (one prediction per record) with the squared loss: their step reads the
// loss only through Pass (which takes the squared error for a batch with
// targets), and DPSGD-F's and Naïve's group rules read only the groups and
// the per-sample gradient norms, never a label. DP-FERMI and SteFFLe are
// not among them: their fairness term is a function of predicted class
// probabilities and labels (Lowy et al. 2023, ERMI), which a real-valued
// prediction does not have.
var regressionAlgorithms = []AlgoName{AlgoSGD, AlgoDPSGD, algoDPSGDF, algoNaive}

// regressionRun says whether job trains a regression output: its own model
// says so (Job.Model), or the model the config names for its data does
// (ModelSpec: a regression schema, or Model linear-regression).
func regressionRun(job *Job) bool {
	if job.Model != nil {
		r, ok := job.Model.(interface{ Regression() bool })
		return ok && r.Regression()
	}
	return ModelSpec(job.Cfg, job.Train).Regression()
}

// checkRegressionRun refuses, before anything is built, what a regression
// run cannot do: an algorithm with a classification objective, the device
// (its step computes cross-entropy), and Baseline (whose cost of privacy
// compares per-group accuracy).
func checkRegressionRun(cfg Config) error {
	switch {
	case !slices.Contains(regressionAlgorithms, cfg.Algo):
		return regressionAlgoError(cfg.Algo)
	case cfg.Device == DeviceCUDA:
		return FieldErrors{{Field: "Device", Msg: "a regression output trains on the CPU: the device step computes the cross-entropy of class labels"}}
	case cfg.Baseline:
		return FieldErrors{{Field: "Baseline", Msg: "the cost of privacy compares per-group accuracy, which a regression output does not have"}}
	}
	return nil
}

// regressionAlgoError is the refusal of a regression output by an
// algorithm that trains classifiers.
func regressionAlgoError(algo AlgoName) error {
	return fmt.Errorf("algorithm %s trains classifiers (its objective reads class labels and probabilities), and this model is a "+
		"regression output (%s, or a network of one's own with one output and classes 1): train it with %v (squared loss), "+
		"or fit least squares with objpert", algo, models.RegressionArch, regressionAlgorithms)
}

// checkTask checks, once the model is built, that the data has what the
// model's loss reads: regression targets for a regression output (trained
// only by regressionAlgorithms), class labels for a classifier.
func checkTask(job *Job, regression bool, algo AlgoName) error {
	d := job.Train
	switch {
	case regression && d.Targets == nil:
		return fmt.Errorf("the model is a regression output but data set %s has no regression target (a schema's \"target\")", d.Name)
	case regression && !slices.Contains(regressionAlgorithms, algo):
		return regressionAlgoError(algo)
	case !regression && len(d.LabelNames) == 0:
		return fmt.Errorf("data set %s has a regression target and no class label but the model is a classifier "+
			"(train a regression output: arch %s, or a network of one's own with classes 1)", d.Name, models.RegressionArch)
	}
	return nil
}
