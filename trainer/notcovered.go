package trainer

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/fairdp/fairdp/dpops/accounting"
)

// DeclareNotCovered adds to a private run's receipt what every fairdp run
// releases or assumes beyond its guarantee: exact test-split metrics, the
// training record count, preprocessing fitted on the training records (when
// preprocess is the fitted preprocessing's JSON), exact training statistics
// reported on request, and a non-private baseline. Every entry point that
// writes a report (train, sweep runs, post-processing, tailoring, federate)
// calls it, so the list is the same wherever a run comes from.
func DeclareNotCovered(r *accounting.Receipt, trainRecords int, preprocess json.RawMessage, cfg Config) {
	DeclareNotCoveredWith(r, trainRecords, preprocess, cfg, NotCoveredOptions{})
}

// NotCoveredOptions describe the outputs of a run for
// DeclareNotCoveredWith.
type NotCoveredOptions struct {
	// ModelFile is the file a run that does not write model.ckpt writes
	// its model to (post-processing's model.json): "" is model.ckpt, which
	// holds the split's record and the preprocessing and comes with
	// metrics.jsonl. Another file holds neither, unless SplitKept, and the
	// receipt says only what is released.
	ModelFile string
	// SplitKept says that ModelFile also holds the split's record (its key
	// and a SHA-256 of the held-out records) and the preprocessing, as
	// model.ckpt does, so that eval scores the model's own held-out records.
	SplitKept bool
}

// DeclareNotCoveredWith is DeclareNotCovered for a run whose outputs o
// describes.
func DeclareNotCoveredWith(r *accounting.Receipt, trainRecords int, preprocess json.RawMessage, cfg Config, o NotCoveredOptions) {
	if !r.Private() {
		return
	}
	if o.ModelFile == "" {
		r.AddNotCovered(accounting.NotCoveredTestEvaluation, "metrics of the test split (report.json test, metrics.jsonl test_*, "+
			"the printed test table) are exact statistics of the held-out records: the guarantee covers the training records only; "+
			"model.ckpt also holds the split's key and a SHA-256 of the held-out records (so eval scores only them), "+
			"which tell whoever holds the data file which records were held out and which trained the model")
	} else if o.SplitKept {
		r.AddNotCovered(accounting.NotCoveredTestEvaluation, "metrics of the test split (report.json test and the printed test "+
			"table) are exact statistics of the held-out records: the guarantee covers the training records only; "+o.ModelFile+
			" also holds the split's key and a SHA-256 of the held-out records (so eval scores only them), "+
			"which tell whoever holds the data file which records were held out and which trained the model")
	} else {
		r.AddNotCovered(accounting.NotCoveredTestEvaluation, "metrics of the test split (report.json test and the printed test "+
			"table) are exact statistics of the held-out records: the guarantee covers the training records only")
	}
	r.AddNotCovered(accounting.NotCoveredRecordCount, fmt.Sprintf("the number of training records (%d) is treated as public: "+
		"the sampling rate and the default δ are computed from it", trainRecords))
	if p := bytes.TrimSpace(preprocess); len(p) > 0 && !bytes.Equal(p, []byte("null")) {
		where := "is stored in model.ckpt"
		switch {
		case o.ModelFile != "" && o.SplitKept:
			where = "is stored in " + o.ModelFile + ", whose model scores features scaled by it"
		case o.ModelFile != "":
			where = "the model in " + o.ModelFile + " scores features scaled by it"
		}
		r.AddNotCovered(accounting.NotCoveredPreprocessing, "the preprocessing (numeric columns' means and standard deviations, and minima and maxima when min-max scaled, "+
			"categorical columns' category lists) was fitted on the training records without noise and "+where)
	}
	if cfg.ReportTrainStats {
		r.AddNotCovered(accounting.NotCoveredTrainStats, "exact statistics of the training records (per-group metrics, losses, "+
			"batch sizes) were reported on request and are NOT private")
	}
	if cfg.Baseline {
		r.AddNotCovered(accounting.NotCoveredBaseline, "the non-private baseline was trained on the same training records; "+
			"its results (baseline_test, cost_of_privacy) are NOT private")
	}
}
