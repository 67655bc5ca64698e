package trainer

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/fairdp/fairdp/loaders"
)

// MemoryDataset is the Config.Dataset (and report.json "dataset") of a run
// on Data: the records came from the caller's memory, so `--config` cannot
// reload them.
const MemoryDataset = "memory"

// Data is a caller's own records in memory: one row of features, one label
// and one sensitive group per record. It is the third way to give a private
// run its data, besides a built-in name and a CSV with a schema
// (PrivateOptions.Dataset).
//
// The features are used as given: nothing is fitted on them (no scaling,
// no encoding), so no statistic of the records is computed before the
// private training. The number of classes and groups comes from the names,
// never from the largest value in Labels or Groups, which would be a fact
// about the records: without LabelNames the labels must be 0 or 1, without
// GroupNames the groups must be 0 or 1.
type Data struct {
	Features [][]float64 // one row per record, all of one length ≥ 1, finite
	Labels   []int       // 0 … len(LabelNames)-1, one per record
	Groups   []int       // the sensitive group, 0 … len(GroupNames)-1, one per record

	FeatureNames []string // one per column; nil: x0, x1, …
	LabelNames   []string // nil: "0", "1"
	GroupNames   []string // nil: "0", "1"

	// Test, if set, holds the held-out records the report's test metrics
	// are computed on (the same names apply; its own names are not read).
	// When nil, the records are split at random, DefaultTrainFrac for
	// training, with a stream derived from the run's seed.
	Test *Data
}

// dataset checks d and converts it into a loaders.Dataset, naming the
// field (as "Data.Labels[4]") at fault. A test set takes the training
// set's names (names), so the two always agree.
func (d *Data) dataset(field string, names *Data) (*loaders.Dataset, error) {
	var errs FieldErrors
	n := len(d.Features)
	if n == 0 {
		errs.Add(field+".Features", "is empty: give one row of features per record")
		return nil, errs.err()
	}
	dim := len(names.Features[0])
	if dim == 0 {
		errs.Add(field+".Features[0]", "has no features")
	}
	x := make([]float64, 0, n*dim)
	for i, row := range d.Features {
		if len(row) != dim {
			errs.Add(fmt.Sprintf("%s.Features[%d]", field, i), "has %d features, the first row has %d", len(row), dim)
			break
		}
		for j, v := range row {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				errs.Add(fmt.Sprintf("%s.Features[%d][%d]", field, i, j), "is %v: features must be finite (impute missing values first)", v)
				return nil, errs.err()
			}
		}
		x = append(x, row...)
	}
	if len(names.FeatureNames) != 0 && len(names.FeatureNames) != dim {
		errs.Add("Data.FeatureNames", "has %d names for %d features", len(names.FeatureNames), dim)
	}
	labelNames := namesOr(names.LabelNames)
	groupNames := namesOr(names.GroupNames)
	if len(labelNames) < 2 {
		errs.Add("Data.LabelNames", "has %d name: a classifier needs at least 2 classes", len(labelNames))
	}
	checkCodes(&errs, field+".Labels", d.Labels, n, labelNames, "Data.LabelNames")
	checkCodes(&errs, field+".Groups", d.Groups, n, groupNames, "Data.GroupNames")
	if err := errs.err(); err != nil {
		return nil, err
	}
	featureNames := names.FeatureNames
	if len(featureNames) == 0 {
		featureNames = make([]string, dim)
		for j := range featureNames {
			featureNames[j] = "x" + strconv.Itoa(j)
		}
	}
	row := make([]int, n)
	for i := range row {
		row[i] = i + 1
	}
	ds := &loaders.Dataset{Name: MemoryDataset, X: x, Dim: dim, FeatureNames: append([]string(nil), featureNames...),
		Labels: append([]int(nil), d.Labels...), LabelNames: labelNames,
		Groups: append([]int(nil), d.Groups...), GroupNames: groupNames,
		Row: row, SourceOf: make([]int, n), Sources: []string{field}}
	if err := ds.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	return ds, nil
}

// namesOr is names, or the binary default "0", "1".
func namesOr(names []string) []string {
	if len(names) == 0 {
		return []string{"0", "1"}
	}
	return append([]string(nil), names...)
}

// checkCodes checks that codes has one value per record, each naming one
// of names.
func checkCodes(errs *FieldErrors, field string, codes []int, n int, names []string, namesField string) {
	if len(codes) != n {
		errs.Add(field, "has %d values for %d records", len(codes), n)
		return
	}
	for i, c := range codes {
		if c < 0 || c >= len(names) {
			errs.Add(fmt.Sprintf("%s[%d]", field, i), "is %d, want 0 … %d (one per name in %s: %v)", c, len(names)-1, namesField, names)
			return
		}
	}
}

// load is the training and test sets d stands for: d.Test when given, else
// a trainFrac split of d drawn from r.
func (d *Data) load(trainFrac float64, r *rand.Rand) (train, test *loaders.Dataset, err error) {
	all, err := d.dataset("Data", d)
	if err != nil {
		return nil, nil, err
	}
	if d.Test == nil {
		if all.N() < 2 {
			return nil, nil, FieldErrors{{Field: "Data.Features", Msg: "has 1 record: a split needs at least 2 (or give Data.Test)"}}
		}
		train, test = loaders.Split(all, trainFrac, r)
		return train, test, nil
	}
	if test, err = d.Test.dataset("Data.Test", d); err != nil {
		return nil, nil, err
	}
	return all, test, nil
}
