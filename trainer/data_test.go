package trainer

import (
	"errors"
	"github.com/fairdp/fairdp/dpops"
	"strings"
	"testing"
)

// A data set loaders cannot name is refused with the Config field it came
// from (FieldErrors: the command line turns it into --dataset) and the
// loader's message unchanged.
func TestDataErrorNamesConfigField(t *testing.T) {
	cfg := Defaults()
	cfg.Dataset = "nope.csv"
	_, err := Prepare(cfg, PrepareOptions{})
	var fe FieldErrors
	if !errors.As(err, &fe) || len(fe) != 1 || fe[0].Field != "Dataset" || !strings.HasPrefix(err.Error(), `Dataset "nope.csv" is not a built-in`) {
		t.Errorf("Prepare with an unknown data set: %v, want FieldErrors naming Dataset", err)
	}
}

// TestLoadDataTask: LoadData, the one load function, leaves the data's
// task to an algorithm that fits either (objpert: least squares on a
// target) and refuses a regression target for a classifier, with the same
// split for both (the split does not depend on the algorithm).
func TestLoadDataTask(t *testing.T) {
	cfg := Defaults()
	cfg.Dataset, cfg.Schema = "testdata/regression-sample/regression.csv", "testdata/regression-sample/regression.schema.json"
	cfg.Algo = "objpert"
	seed := uint64(3)
	r, _ := dpops.NewRand(&seed)
	train, test, _, err := LoadData(cfg, r)
	if err != nil {
		t.Fatalf("objpert on a regression target: %v", err)
	}
	if len(train.LabelNames) != 0 || train.N() == 0 || test.N() == 0 {
		t.Fatalf("objpert's regression data: %d labels, %d/%d records", len(train.LabelNames), train.N(), test.N())
	}
	cfg.Algo = "fermi"
	r, _ = dpops.NewRand(&seed)
	if _, _, _, err := LoadData(cfg, r); err == nil || !strings.Contains(err.Error(), "regression target and no class label") {
		t.Errorf("fermi on a regression target: %v, want the classifier refusal", err)
	}
}
