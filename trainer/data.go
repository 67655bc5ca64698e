package trainer

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"fairdp/loaders"
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
			// DPSGD-F's unbalanced MNIST: class 8 cut to 500 training images (REFERENCE §4).
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
			skippedList(stats.Skipped)),
			"pixels standardised with ImageNet's public channel means and deviations (no privacy spent)")
		all.Standardise, all.Mean, all.Std = true, slices.Clone(loaders.ImageNetMean), slices.Clone(loaders.ImageNetStd)
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
