package loaders

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ImageSets are the image data sets Load reads by name (the tabular ones
// are BuiltinNames).
var ImageSets = []string{"mnist", "mnist-unbalanced", "utkface"}

// Names lists every data set Load reads by name: the built-in tables,
// then the image sets.
func Names() []string { return append(BuiltinNames(), ImageSets...) }

// IsBuiltin says whether name is a built-in table (BuiltinNames).
func IsBuiltin(name string) bool {
	_, err := Builtin(name)
	return err == nil
}

// LoadOptions say which data Load reads and how it splits it.
type LoadOptions struct {
	// Dataset is a built-in table, an image set (Names), or a CSV file
	// read with Schema; "" reads the schema's own files.
	Dataset string
	// Schema is the schema file of a CSV data set.
	Schema string
	// DataDir holds the image sets' files and a built-in table's full
	// download (default: DataDir()).
	DataDir string
	// TrainFrac is the training share of a random split; Rand draws it.
	TrainFrac float64
	Rand      *rand.Rand
	// Limit, if > 0, keeps the first Limit training records and the first
	// max(1, Limit/3) test records.
	Limit int
	// ImageSize is the side UTKFace's images are resized to.
	ImageSize int
	// Fitted, if set, encodes tabular data with a preprocessing fitted
	// before (a trained model's): nothing is fitted on this data, data
	// whose columns do not match it is refused, and a CSV given without
	// Schema is read with Fitted's.
	Fitted *Preprocessor
}

// OptionError is an error in one LoadOptions field, which it names
// (Option) so that a caller can name its own setting (trainer.Config has
// fields of the same names).
type OptionError struct {
	Option, Msg string
}

func (e OptionError) Error() string { return strings.TrimSpace(e.Option + " " + e.Msg) }

// Load reads the data set o names and splits it into training and test
// records: the dispatch from a name to its loader (LoadMNIST,
// LoadUTKFace, LoadBuiltinFitted, LoadCSV with the files a schema and a
// data file select). Tabular data gets its preprocessing fitted on the
// training split (returned; nil for images), unless o.Fitted is given.
// Both splits are non-empty or Load fails.
func Load(o LoadOptions) (train, test *Dataset, prep *Preprocessor, err error) {
	split := SplitOptions{TrainFrac: o.TrainFrac, Rand: o.Rand}
	if o.Fitted != nil && slices.Contains(ImageSets, o.Dataset) {
		return nil, nil, nil, fmt.Errorf("the model was trained on tabular data (it carries a fitted preprocessing); %s is image data", o.Dataset)
	}
	switch {
	case o.Dataset == "mnist" || o.Dataset == "mnist-unbalanced":
		dir, err := dataSubdir(o.DataDir, "mnist")
		if err != nil {
			return nil, nil, nil, err
		}
		opts := MNISTOptions{}
		if o.Dataset == "mnist-unbalanced" {
			// DPSGD-F's unbalanced MNIST: class 8 cut to 500 training images
			// (Xu, Du and Wu 2021).
			opts = MNISTOptions{KeepClass: 8, KeepN: 500, Rand: o.Rand}
		}
		if train, test, err = LoadMNIST(dir, opts); err != nil {
			return nil, nil, nil, err
		}
	case o.Dataset == "utkface":
		dir, err := dataSubdir(o.DataDir, filepath.Join("utkface", "UTKFace"))
		if err != nil {
			return nil, nil, nil, err
		}
		cache := filepath.Join(os.TempDir(), "fairdp-cache")
		if err := os.MkdirAll(cache, 0o755); err != nil {
			cache = ""
		}
		all, stats, err := LoadUTKFace(dir, UTKOptions{Size: o.ImageSize, Limit: o.Limit, CacheDir: cache})
		if err != nil {
			return nil, nil, nil, err
		}
		all.Notes = append(all.Notes, fmt.Sprintf("UTKFace: %d images loaded, %d files skipped%s", stats.Loaded, len(stats.Skipped),
			skippedList(stats.Skipped)),
			"pixels standardised with ImageNet's public channel means and deviations (no privacy spent)")
		all.Standardise, all.Mean, all.Std = true, slices.Clone(ImageNetMean), slices.Clone(ImageNetStd)
		train, test = Split(all, o.TrainFrac, o.Rand)
	case IsBuiltin(o.Dataset):
		if train, test, prep, err = LoadBuiltinFitted(o.Dataset, o.DataDir, split, o.Fitted); err != nil {
			return nil, nil, nil, err
		}
	default:
		var s Schema
		switch {
		case o.Schema != "":
			if s, err = LoadSchema(o.Schema); err != nil {
				return nil, nil, nil, err
			}
		case o.Fitted != nil: // a model's own schema reads its kind of file
			s = o.Fitted.Schema()
		default:
			return nil, nil, nil, OptionError{Option: "Dataset", Msg: fmt.Sprintf("%q is not a built-in (%s); a CSV file needs Schema FILE.json",
				o.Dataset, strings.Join(Names(), ", "))}
		}
		opts, note, err := csvFiles(o.Dataset, o.Schema, s)
		if err != nil {
			return nil, nil, nil, err
		}
		opts.Split, opts.Fitted = split, o.Fitted
		if train, test, prep, err = LoadCSV(opts); err != nil {
			return nil, nil, nil, err
		}
		if note != "" {
			train.Notes, test.Notes = append(train.Notes, note), append(test.Notes, note)
		}
	}
	if o.Limit > 0 {
		train = limit(train, o.Limit)
		test = limit(test, max(1, o.Limit/3))
	}
	if train.N() == 0 || test.N() == 0 {
		return nil, nil, nil, fmt.Errorf("data set %s: the split left %d training and %d test records; both must be non-empty",
			train.Name, train.N(), test.N())
	}
	return train, test, prep, nil
}

// limit keeps d's first n records.
func limit(d *Dataset, n int) *Dataset {
	if d.N() <= n {
		return d
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	return Subset(d, idx)
}

// dataSubdir finds sub under the data directory (dataDir, $FAIRDP_DATA,
// ../shared/data) and says what is missing when it is absent.
func dataSubdir(dataDir, sub string) (string, error) {
	base := dataDir
	if base == "" {
		d, err := DataDir()
		if err != nil {
			return "", fmt.Errorf("%s needs its files: %w (set %w)", sub, err, OptionError{Option: "DataDir"})
		}
		base = d
	}
	dir := filepath.Join(base, sub)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return "", fmt.Errorf("%s: directory %s not found under the data directory %s", sub, dir, base)
	}
	return dir, nil
}

// csvFiles says which files a CSV data set reads. Without a data file
// (dataset "") the schema's files and test_files are read, relative to the
// schema file. A data file replaces the schema's files; the schema's
// test_files are then the test split only if the data file is one of the
// schema's files (as in the README's example), and otherwise the note says
// they were not used.
func csvFiles(dataset, schemaFile string, s Schema) (opts CSVOptions, note string, err error) {
	opts.Schema = s
	dir := filepath.Dir(schemaFile)
	if dataset == "" {
		if len(s.Files) == 0 {
			return opts, "", OptionError{Option: "Dataset", Msg: fmt.Sprintf("is needed: schema %s declares no \"files\" (give the data file, or list it in the schema)", schemaFile)}
		}
		opts.Files, opts.TestFiles, opts.Dir = s.Files, s.TestFiles, dir
		return opts, "", nil
	}
	opts.Files = []string{dataset}
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
	data := abs(dataset)
	if !filepath.IsAbs(dataset) { // a data file on the command line is relative to the working directory
		if a, err := filepath.Abs(dataset); err == nil {
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
func skippedList(skipped []UTKSkip) string {
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
