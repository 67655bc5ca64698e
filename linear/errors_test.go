package linear

import (
	"errors"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/trainer"
)

// TestSentinelErrorsNamePackage: the error values package linear exports
// start with the package's one prefix and say what went wrong, so a caller
// who prints one (as `fairdp train` does) can tell where it came from.
// ErrFairFailed used to read only "failed" and ErrUndefinedRate had no prefix.
func TestSentinelErrorsNamePackage(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		says string // a word naming what failed
	}{
		{"ErrFairFailed", ErrFairFailed, "post-processing"},
		{"ErrFairFailed", ErrFairFailed, "oracle"},
		{"ErrUndefinedRate", ErrUndefinedRate, "rate"},
		{"ErrNotPositiveDefinite", ErrNotPositiveDefinite, "positive definite"},
	} {
		msg := tc.err.Error()
		if !strings.HasPrefix(msg, "linear: ") {
			t.Errorf("%s = %q, want the prefix %q", tc.name, msg, "linear: ")
		}
		if !strings.Contains(msg, tc.says) {
			t.Errorf("%s = %q does not say %q", tc.name, msg, tc.says)
		}
	}
}

// TestFairFailureMessage: the error of a failed private run wraps
// ErrFairFailed, starts with the package prefix and names the algorithm and
// the report's reason; a run that did not fail has no error.
func TestFairFailureMessage(t *testing.T) {
	const reason = "a (noisy) group-label count is -3 ≤ 0"
	for _, algo := range []string{"postproc", "oracle"} {
		rep := &trainer.Report{Algorithm: algo, Extra: trainer.Extras{"jagielski": &FairResult{Failed: true, Reason: reason}}}
		err := FairFailure(rep)
		if !errors.Is(err, ErrFairFailed) {
			t.Fatalf("%s: err = %v, want it to wrap ErrFairFailed", algo, err)
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, "linear: ") || !strings.Contains(msg, algo) || !strings.Contains(msg, reason) {
			t.Errorf("%s: err = %q, want the prefix %q, the algorithm and the reason", algo, msg, "linear: ")
		}
		rep.Extra["jagielski"] = &FairResult{}
		if err := FairFailure(rep); err != nil {
			t.Errorf("%s: a run that did not fail gave %v", algo, err)
		}
	}
}
