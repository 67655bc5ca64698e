package trainer

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/fairdp/fairdp/dpops/accounting"
	"github.com/fairdp/fairdp/loaders"
	"github.com/fairdp/fairdp/models"
)

// LoadData loads the data set cfg names and splits it with r, the one way
// a run's data is read (Prepare, the pipelines, the benchmarks). Tabular
// data gets its preprocessing fitted on the training split; the fitted
// preprocessor is returned as JSON for the checkpoint. Data the algorithm
// cfg.Algo cannot train on is refused: a regression target without a
// class label, for a classifier, and a class label with one class; an
// algorithm that fits either task (ownTask) checks the data itself.
func LoadData(cfg Config, r *rand.Rand) (train, test *loaders.Dataset, prep json.RawMessage, err error) {
	if train, test, prep, err = loadDataAny(cfg, r, nil); err != nil || ownTask[cfg.Algo] {
		return train, test, prep, err
	}
	if len(train.LabelNames) == 0 && !slices.Contains(regressionAlgorithms, cfg.Algo) {
		// The other algorithms that load through here train classifiers.
		return nil, nil, nil, fmt.Errorf("data set %s has a regression target and no class label: algorithm %s trains classifiers "+
			"(fermi, steffle, postproc, oracle); for a regression target use %v (squared loss), objpert (least squares), "+
			"or tailoring or dpnose with task regression, or give the schema a \"label\"", train.Name, cfg.Algo, regressionAlgorithms)
	}
	if len(train.LabelNames) == 1 { // 0 is a regression schema, for regressionAlgorithms
		return nil, nil, nil, fmt.Errorf("data set %s has %d class (%v): a classifier needs at least 2", train.Name,
			len(train.LabelNames), train.LabelNames)
	}
	return train, test, prep, nil
}

// ownTask are the algorithms that fit a regression target or a class label
// as the data has it and check the data's task themselves: objective
// perturbation (least squares or logistic regression, package linear).
var ownTask = map[AlgoName]bool{algoObjPert: true}

// loadDataAny reads and splits the data without the classifier check, for
// the callers that fit or score either task (objpert, eval of a regression
// model). Tabular data encoded with fitted (a checkpoint's preprocessing)
// fits nothing on this data, and data whose columns do not match it are
// refused (loaders.Preprocessor.CompatibleWith); nil fits a new one. Which
// loader reads which name is loaders.Load's.
func loadDataAny(cfg Config, r *rand.Rand, fitted *loaders.Preprocessor) (train, test *loaders.Dataset, prep json.RawMessage, err error) {
	train, test, p, err := loaders.Load(loaders.LoadOptions{Dataset: cfg.Dataset, Schema: cfg.Schema, DataDir: cfg.DataDir,
		TrainFrac: cfg.TrainFrac, Rand: r, Limit: cfg.Limit, ImageSize: cfg.ImageSize, Fitted: fitted})
	if err != nil {
		return nil, nil, nil, configFieldError(err)
	}
	if !slices.Contains(loaders.ImageSets, cfg.Dataset) { // tabular: its preprocessing goes into the checkpoint
		if prep, err = json.Marshal(p); err != nil {
			return nil, nil, nil, err
		}
	}
	if err := applyImageNorm(cfg, train, test); err != nil {
		return nil, nil, nil, err
	}
	return train, test, prep, nil
}

// configFieldError is err with the loaders.OptionError in it also as the
// FieldErrors of the Config field of the same name, so that callers (the
// command line) name their own setting; the message is unchanged.
func configFieldError(err error) error {
	var oe loaders.OptionError
	if !errors.As(err, &oe) {
		return err
	}
	return fieldWrapped{fields: FieldErrors{{Field: oe.Option, Msg: oe.Msg}}, err: err}
}

// fieldWrapped is an error that also wraps the FieldErrors it names.
type fieldWrapped struct {
	fields FieldErrors
	err    error
}

func (e fieldWrapped) Error() string   { return e.err.Error() }
func (e fieldWrapped) Unwrap() []error { return []error{e.fields, e.err} }

// SplitInfoKey is the models.Meta Info key under which a model checkpoint
// keeps its SplitRecord (as JSON).
const SplitInfoKey = "split"

// SplitRecord is what a model checkpoint keeps of the train/test split it
// was trained on, so that `fairdp eval` on the training data scores exactly
// the records the model did not train on, whatever seed eval is given, and
// tells the training data from another file.
//
// Key is the key of the split's own random stream (Source.DeriveKey("data"),
// or the split seed's): a PRF output, it says nothing of the run's noise
// keys, and since the split is chosen by the program's randomness, not by
// the data, it is no function of any record. TestSHA256 fingerprints the
// held-out records as encoded (an exact function of the test split only,
// like the test metrics); it is how eval knows that the data it re-split
// is the training data read the same way. Both are declared in the receipt
// (accounting.NotCoveredTestEvaluation's neighbour, see splitNotCovered).
type SplitRecord struct {
	Dataset    string  `json:"dataset"`          // Config.Dataset of the run
	Schema     string  `json:"schema,omitempty"` // Config.Schema of the run
	TrainFrac  float64 `json:"train_frac"`       // the fraction the split used
	Limit      int     `json:"limit,omitempty"`  // Config.Limit of the run
	Key        string  `json:"key"`              // hex of the split stream's key
	Train      int     `json:"train_records"`
	Test       int     `json:"test_records"`
	TestSHA256 string  `json:"test_sha256"`
}

// NewSplitRecord records the split of train and test, made by the stream
// keyed by key (the split stream's Source.DeriveKey) under cfg.
func NewSplitRecord(cfg Config, key [32]byte, train, test *loaders.Dataset) *SplitRecord {
	return &SplitRecord{Dataset: cfg.Dataset, Schema: cfg.Schema, TrainFrac: cfg.TrainFrac, Limit: cfg.Limit,
		Key: hex.EncodeToString(key[:]), Train: train.N(), Test: test.N(), TestSHA256: hex.EncodeToString(dataFingerprint(test))}
}

// ReadSplitRecord returns the split a model checkpoint recorded, or nil when
// it records none (checkpoints written before fairdp kept it).
func ReadSplitRecord(meta models.Meta) (*SplitRecord, error) {
	raw, ok := meta.Info[SplitInfoKey]
	if !ok {
		return nil, nil
	}
	var r SplitRecord
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		return nil, fmt.Errorf("the checkpoint's split record: %w", err)
	}
	if k, err := hex.DecodeString(r.Key); err != nil || len(k) != 32 {
		return nil, fmt.Errorf("the checkpoint's split record has a malformed key %q", r.Key)
	}
	return &r, nil
}

// evalData is what `fairdp eval` scores and how to describe it.
type evalData struct {
	Data *loaders.Dataset
	// HeldOut is true when Data is the held-out split of the model's own
	// training data; false when it is the whole of another file.
	HeldOut bool
	// Scored says what was scored, in words, for the printed table and the
	// report ("the held-out split of the training data, N records").
	Scored string
}

// loadEvalData loads the data cfg names (Dataset, Schema, DataDir; the
// split settings and seeds of cfg are not read) for scoring a model whose
// checkpoint recorded rec and whose tabular data is encoded with fitted.
//
// The data is split the way the model's training data was (rec's key,
// fraction and limit). When the held-out split it gives is the one the
// model recorded (the same records, encoded the same way), the data is the
// training data and only those records are scored. Otherwise the data is
// another file (or the training file read another way) and all of it is
// scored, and Scored says so. A checkpoint without a record cannot tell, and
// is refused.
func loadEvalData(cfg Config, fitted *loaders.Preprocessor, rec *SplitRecord) (evalData, error) {
	if rec == nil {
		return evalData{}, errors.New("the checkpoint records no train/test split (it was written before fairdp kept one), " +
			"so eval cannot tell which records the model trained on: retrain the model with this version of fairdp")
	}
	key, err := hex.DecodeString(rec.Key)
	if err != nil || len(key) != 32 {
		return evalData{}, fmt.Errorf("the checkpoint's split record has a malformed key %q", rec.Key)
	}
	cfg.TrainFrac, cfg.Limit = rec.TrainFrac, rec.Limit
	train, test, _, err := loadDataAny(cfg, rand.New(rand.NewChaCha8([32]byte(key))), fitted)
	if err != nil {
		return evalData{}, err
	}
	if hex.EncodeToString(dataFingerprint(test)) == rec.TestSHA256 {
		return evalData{Data: test, HeldOut: true,
			Scored: fmt.Sprintf("the held-out split of the model's training data, %d records (the %d it trained on are not scored)", test.N(), train.N())}, nil
	}
	if cfg.Limit > 0 { // the whole file, not the training run's first records
		cfg.Limit = 0
		if train, test, _, err = loadDataAny(cfg, rand.New(rand.NewChaCha8([32]byte(key))), fitted); err != nil {
			return evalData{}, err
		}
	}
	all, err := loaders.Concat(train, test)
	if err != nil {
		return evalData{}, err
	}
	all.Name = strings.TrimSuffix(train.Name, "/train")
	// Notes about one split (how it was drawn, its own counts) do not
	// describe the whole; those about the file (rows dropped before the
	// split, the filter, the label) are in both.
	all.Notes = slices.DeleteFunc(slices.Clone(train.Notes), func(n string) bool { return !slices.Contains(test.Notes, n) })
	return evalData{Data: all, Scored: fmt.Sprintf("the whole of %s, %d records: it is not the model's training data read the way the model was "+
		"trained (its held-out split differs), so every record is scored; if it holds training records, they are scored too",
		strings.Join(all.Sources, ", "), all.N())}, nil
}

// NotCoveredDataCounts is the receipt item of the exact counts in the data
// notes (Dataset.NotesCountRecords).
const NotCoveredDataCounts = "data_counts"

// declareDataCounts adds to a private run's receipt the exact counts that
// the training split's notes print (train's "data:" lines): rows dropped
// for a missing cell or by the schema's filter are counted before the
// split, over training records too, and imputed cells are counted in the
// training split itself.
func declareDataCounts(r *accounting.Receipt, train *loaders.Dataset) {
	if !r.Private() || !train.NotesCountRecords {
		return
	}
	r.AddNotCovered(NotCoveredDataCounts, "the data notes (rows dropped for a missing cell or by the schema's filter, cells imputed) "+
		"are exact counts over the records read, training records included")
}
