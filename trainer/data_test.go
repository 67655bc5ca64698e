package trainer

import (
	"errors"
	"strings"
	"testing"
)

// A data set loaders cannot name is refused with the Config field it came
// from (FieldErrors: the command line turns it into --dataset) and the
// loader's message unchanged.
func TestDataErrorNamesConfigField(t *testing.T) {
	cfg := Defaults()
	cfg.Dataset = "nope.csv"
	_, err := Prepare(cfg, nil)
	var fe FieldErrors
	if !errors.As(err, &fe) || len(fe) != 1 || fe[0].Field != "Dataset" || !strings.HasPrefix(err.Error(), `Dataset "nope.csv" is not a built-in`) {
		t.Errorf("Prepare with an unknown data set: %v, want FieldErrors naming Dataset", err)
	}
}
