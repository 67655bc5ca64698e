package loaders

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// skippedList names at most ten skipped files, then how many more.
func TestSkippedList(t *testing.T) {
	var s []UTKSkip
	if skippedList(s) != "" {
		t.Error("nothing skipped, yet a list")
	}
	for i := range 12 {
		s = append(s, UTKSkip{Name: fmt.Sprintf("f%d.jpg", i), Reason: "no race field"})
	}
	got := skippedList(s)
	if !strings.HasPrefix(got, ": f0.jpg (no race field); f1.jpg") || !strings.HasSuffix(got, "f9.jpg (no race field); and 2 more") {
		t.Errorf("list %q", got)
	}
}

// Load dispatches a name to its loader: a built-in table is split at
// TrainFrac, cut by Limit (a third of it for the test split) and comes with
// its fitted preprocessing; an unknown name without a schema is an
// OptionError naming Dataset and listing the names Load reads.
func TestLoadDispatch(t *testing.T) {
	train, test, prep, err := Load(LoadOptions{Dataset: "adult", TrainFrac: 0.5, Limit: 300,
		Rand: rand.New(rand.NewPCG(1, 2))})
	if err != nil {
		t.Fatal(err)
	}
	if train.N() != 300 || test.N() != 100 || prep == nil {
		t.Errorf("adult with Limit 300: %d training and %d test records, preprocessing %v; want 300, 100 and one", train.N(), test.N(), prep != nil)
	}
	_, _, _, err = Load(LoadOptions{Dataset: "nope.csv", TrainFrac: 0.5, Rand: rand.New(rand.NewPCG(1, 2))})
	var oe OptionError
	if !errors.As(err, &oe) || oe.Option != "Dataset" || !strings.Contains(err.Error(), "utkface") {
		t.Errorf("an unknown name: %v, want an OptionError naming Dataset and the names", err)
	}
	if _, _, _, err = Load(LoadOptions{Dataset: "mnist", Fitted: &Preprocessor{}}); err == nil || !strings.Contains(err.Error(), "image data") {
		t.Errorf("image data with a tabular preprocessing: %v", err)
	}
}
