package trainer

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"fairdp/dpops/accounting"
	"fairdp/loaders"
	"fairdp/models"
)

// imageSets are the built-in image data sets (tabular ones come from loaders).
var imageSets = []string{"mnist", "mnist-unbalanced", "utkface"}

// DatasetNames lists the built-in values of --dataset.
func DatasetNames() []string {
	return append(loaders.BuiltinNames(), imageSets...)
}

// LoadData loads the data set cfg names and splits it with r.
// Tabular data gets its preprocessing fitted on the training split; the
// fitted preprocessor is returned as JSON for the checkpoint.
func LoadData(cfg Config, r *rand.Rand) (train, test *loaders.Dataset, prep json.RawMessage, err error) {
	return LoadDataFitted(cfg, r, nil)
}

// LoadDataFitted is LoadData for tabular data encoded with a preprocessing
// fitted before (a checkpoint's): nothing is fitted on this data, and data
// whose columns do not match it is refused (loaders.Preprocessor.
// CompatibleWith). nil fits a new one, as LoadData.
func LoadDataFitted(cfg Config, r *rand.Rand, fitted *loaders.Preprocessor) (train, test *loaders.Dataset, prep json.RawMessage, err error) {
	split := loaders.SplitOptions{TrainFrac: cfg.TrainFrac, Rand: r}
	if fitted != nil && (cfg.Dataset == "mnist" || cfg.Dataset == "mnist-unbalanced" || cfg.Dataset == "utkface") {
		return nil, nil, nil, fmt.Errorf("the model was trained on tabular data (it carries a fitted preprocessing); %s is image data", cfg.Dataset)
	}
	switch {
	case cfg.Dataset == "mnist" || cfg.Dataset == "mnist-unbalanced":
		dir, err := dataSubdir(cfg.DataDir, "mnist")
		if err != nil {
			return nil, nil, nil, err
		}
		opts := loaders.MNISTOptions{}
		if cfg.Dataset == "mnist-unbalanced" {
			// DPSGD-F's unbalanced MNIST: class 8 cut to 500 training images
			// (Xu, Du and Wu 2021).
			opts = loaders.MNISTOptions{KeepClass: 8, KeepN: 500, Rand: r}
		}
		train, test, err = loaders.LoadMNIST(dir, opts)
		if err != nil {
			return nil, nil, nil, err
		}
	case cfg.Dataset == "utkface":
		dir, err := dataSubdir(cfg.DataDir, filepath.Join("utkface", "UTKFace"))
		if err != nil {
			return nil, nil, nil, err
		}
		cache := filepath.Join(os.TempDir(), "fairdp-cache")
		if err := os.MkdirAll(cache, 0o755); err != nil {
			cache = ""
		}
		all, stats, err := loaders.LoadUTKFace(dir, loaders.UTKOptions{Size: cfg.ImageSize, Limit: cfg.Limit, CacheDir: cache})
		if err != nil {
			return nil, nil, nil, err
		}
		all.Notes = append(all.Notes, fmt.Sprintf("UTKFace: %d images loaded, %d files skipped%s", stats.Loaded, len(stats.Skipped),
			skippedList(stats.Skipped)))
		if len(cfg.ImageMean) == 0 { // given constants replace ImageNet's (applyImageNorm)
			all.Notes = append(all.Notes, "pixels standardised with ImageNet's public channel means and deviations (no privacy spent)")
			all.Standardise, all.Mean, all.Std = true, slices.Clone(loaders.ImageNetMean), slices.Clone(loaders.ImageNetStd)
		}
		train, test = loaders.Split(all, cfg.TrainFrac, r)
	case isBuiltin(cfg.Dataset):
		var p *loaders.Preprocessor
		train, test, p, err = loaders.LoadBuiltinFitted(cfg.Dataset, cfg.DataDir, split, fitted)
		if err != nil {
			return nil, nil, nil, err
		}
		if prep, err = json.Marshal(p); err != nil {
			return nil, nil, nil, err
		}
	default:
		var s loaders.Schema
		switch {
		case cfg.Schema != "":
			if s, err = loaders.LoadSchema(cfg.Schema); err != nil {
				return nil, nil, nil, err
			}
		case fitted != nil: // a model's own schema reads its kind of file
			s = fitted.Schema()
		default:
			return nil, nil, nil, FieldErrors{{Field: "Dataset", Msg: fmt.Sprintf("%q is not a built-in (%s); a CSV file needs Schema FILE.json",
				cfg.Dataset, strings.Join(DatasetNames(), ", "))}}
		}
		opts, note, err := csvFiles(cfg, s)
		if err != nil {
			return nil, nil, nil, err
		}
		opts.Split, opts.Fitted = split, fitted
		var p *loaders.Preprocessor
		if train, test, p, err = loaders.LoadCSV(opts); err != nil {
			return nil, nil, nil, err
		}
		if note != "" {
			train.Notes, test.Notes = append(train.Notes, note), append(test.Notes, note)
		}
		if prep, err = json.Marshal(p); err != nil {
			return nil, nil, nil, err
		}
	}
	if err := applyImageNorm(cfg, train, test); err != nil {
		return nil, nil, nil, err
	}
	if cfg.Limit > 0 {
		train = limit(train, cfg.Limit)
		test = limit(test, max(1, cfg.Limit/3))
	}
	if train.N() == 0 || test.N() == 0 {
		return nil, nil, nil, fmt.Errorf("data set %s: the split left %d training and %d test records; both must be non-empty",
			train.Name, train.N(), test.N())
	}
	if len(train.LabelNames) == 0 {
		// Every algorithm that loads through here trains a classifier.
		return nil, nil, nil, fmt.Errorf("data set %s has a regression target and no class label: algorithm %s trains classifiers "+
			"(sgd, dpsgd, dpsgdf, naive, fermi, steffle, postproc, oracle); for a regression target use tailoring or dpnose "+
			"with task regression, or give the schema a \"label\"", train.Name, cfg.Algo)
	}
	if len(train.LabelNames) < 2 {
		return nil, nil, nil, fmt.Errorf("data set %s has %d class (%v): a classifier needs at least 2", train.Name,
			len(train.LabelNames), train.LabelNames)
	}
	return train, test, prep, nil
}

func limit(d *loaders.Dataset, n int) *loaders.Dataset {
	if d.N() <= n {
		return d
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	return loaders.Subset(d, idx)
}

// dataSubdir finds sub under the data directory (cfg.DataDir, $FAIRDP_DATA,
// ../shared/data) and says what is missing when it is absent.
func dataSubdir(dataDir, sub string) (string, error) {
	base := dataDir
	if base == "" {
		d, err := loaders.DataDir()
		if err != nil {
			return "", fmt.Errorf("%s needs its files: %w (set %w)", sub, err, FieldErrors{{Field: "DataDir"}})
		}
		base = d
	}
	dir := filepath.Join(base, sub)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return "", fmt.Errorf("%s: directory %s not found under the data directory %s", sub, dir, base)
	}
	return dir, nil
}

func isBuiltin(name string) bool {
	_, err := loaders.Builtin(name)
	return err == nil
}

// csvFiles says which files a CSV run reads. Without a data file (Dataset
// "") the schema's files and test_files are read, relative to the schema
// file. A data file replaces the schema's files; the schema's test_files
// are then the test split only if the data file is one of the schema's
// files (as in the README's example), and otherwise the note says they
// were not used.
func csvFiles(cfg Config, s loaders.Schema) (opts loaders.CSVOptions, note string, err error) {
	opts.Schema = s
	dir := filepath.Dir(cfg.Schema)
	if cfg.Dataset == "" {
		if len(s.Files) == 0 {
			return opts, "", FieldErrors{{Field: "Dataset", Msg: fmt.Sprintf("is needed: schema %s declares no \"files\" (give the data file, or list it in the schema)", cfg.Schema)}}
		}
		opts.Files, opts.TestFiles, opts.Dir = s.Files, s.TestFiles, dir
		return opts, "", nil
	}
	opts.Files = []string{cfg.Dataset}
	if len(s.TestFiles) == 0 {
		return opts, "", nil
	}
	abs := func(f string) string {
		if !filepath.IsAbs(f) {
			f = filepath.Join(dir, f)
		}
		a, err := filepath.Abs(f)
		if err != nil {
			return filepath.Clean(f)
		}
		return a
	}
	data := abs(cfg.Dataset)
	if !filepath.IsAbs(cfg.Dataset) { // a data file on the command line is relative to the working directory
		if a, err := filepath.Abs(cfg.Dataset); err == nil {
			data = a
		}
	}
	for _, f := range s.Files {
		if abs(f) == data {
			for _, t := range s.TestFiles {
				opts.TestFiles = append(opts.TestFiles, abs(t))
			}
			return opts, "", nil
		}
	}
	return opts, fmt.Sprintf("the schema's test_files (%s) were not used: the data file given replaces the schema's files, "+
		"so the test split is a random part of it", strings.Join(s.TestFiles, ", ")), nil
}

// maxSkippedListed caps how many skipped files a note names.
const maxSkippedListed = 10

// skippedList names the skipped files with their reasons (the first
// maxSkippedListed, then how many more).
func skippedList(skipped []loaders.UTKSkip) string {
	if len(skipped) == 0 {
		return ""
	}
	var parts []string
	for i, s := range skipped {
		if i == maxSkippedListed {
			parts = append(parts, fmt.Sprintf("and %d more", len(skipped)-i))
			break
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", s.Name, s.Reason))
	}
	return ": " + strings.Join(parts, "; ")
}

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

// EvalData is what `fairdp eval` scores and how to describe it.
type EvalData struct {
	Data *loaders.Dataset
	// HeldOut is true when Data is the held-out split of the model's own
	// training data; false when it is the whole of another file.
	HeldOut bool
	// Scored says what was scored, in words, for the printed table and the
	// report ("the held-out split of the training data, N records").
	Scored string
}

// LoadEvalData loads the data cfg names (Dataset, Schema, DataDir; the
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
func LoadEvalData(cfg Config, fitted *loaders.Preprocessor, rec *SplitRecord) (EvalData, error) {
	if rec == nil {
		return EvalData{}, errors.New("the checkpoint records no train/test split (it was written before fairdp kept one), " +
			"so eval cannot tell which records the model trained on: retrain the model with this version of fairdp")
	}
	key, err := hex.DecodeString(rec.Key)
	if err != nil || len(key) != 32 {
		return EvalData{}, fmt.Errorf("the checkpoint's split record has a malformed key %q", rec.Key)
	}
	cfg.TrainFrac, cfg.Limit = rec.TrainFrac, rec.Limit
	train, test, _, err := LoadDataFitted(cfg, rand.New(rand.NewChaCha8([32]byte(key))), fitted)
	if err != nil {
		return EvalData{}, err
	}
	if hex.EncodeToString(dataFingerprint(test)) == rec.TestSHA256 {
		return EvalData{Data: test, HeldOut: true,
			Scored: fmt.Sprintf("the held-out split of the model's training data, %d records (the %d it trained on are not scored)", test.N(), train.N())}, nil
	}
	if cfg.Limit > 0 { // the whole file, not the training run's first records
		cfg.Limit = 0
		if train, test, _, err = LoadDataFitted(cfg, rand.New(rand.NewChaCha8([32]byte(key))), fitted); err != nil {
			return EvalData{}, err
		}
	}
	all, err := loaders.Concat(train, test)
	if err != nil {
		return EvalData{}, err
	}
	all.Name = strings.TrimSuffix(train.Name, "/train")
	// Notes about one split (how it was drawn, its own counts) do not
	// describe the whole; those about the file (rows dropped before the
	// split, the filter, the label) are in both.
	all.Notes = slices.DeleteFunc(slices.Clone(train.Notes), func(n string) bool { return !slices.Contains(test.Notes, n) })
	return EvalData{Data: all, Scored: fmt.Sprintf("the whole of %s, %d records: it is not the model's training data read the way the model was "+
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
