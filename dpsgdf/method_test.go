package dpsgdf_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/dpsgdf"
	"github.com/fairdp/fairdp/trainer"
)

// TestMethodConfigures: dpsgdf.Method trains under its policy's name with
// its count-noise ratio and count guard, and Flat, a bad ratio, an unknown
// guard or a guard given to Naïve is refused naming
// PrivateOptions' field.
func TestMethodConfigures(t *testing.T) {
	for _, tc := range []struct {
		m    dpsgdf.Method
		algo string
	}{{dpsgdf.Method{}, "dpsgdf"}, {dpsgdf.Method{Policy: dpsgdf.Naive, CountNoiseRatio: 3}, "naive"},
		{dpsgdf.Method{CountGuard: dpsgdf.GuardSmooth}, "dpsgdf"}} {
		p, err := trainer.NewPrivate(trainer.PrivateOptions{Dataset: "adult", Limit: 300, Epsilon: 1, Method: tc.m})
		if err != nil {
			t.Fatal(err)
		}
		c := p.Config()
		if c.Algo != tc.algo || (tc.m.CountNoiseRatio != 0 && c.Fair.CountNoiseRatio != tc.m.CountNoiseRatio) ||
			c.Fair.CountGuard != string(tc.m.CountGuard) {
			t.Errorf("%+v: algo %s, count-noise ratio %v, count guard %q", tc.m, c.Algo, c.Fair.CountNoiseRatio, c.Fair.CountGuard)
		}
	}
	for field, m := range map[string]dpsgdf.Method{"Method.Policy": {Policy: dpsgdf.Flat}, "Method.CountNoiseRatio": {CountNoiseRatio: -1},
		"Method.CountGuard": {CountGuard: "zero"}, "Method.CountGuard ": {Policy: dpsgdf.Naive, CountGuard: dpsgdf.GuardFloor}} {
		field = strings.TrimSpace(field) // a trailing space keeps the two CountGuard cases apart
		_, err := trainer.NewPrivate(trainer.PrivateOptions{Dataset: "adult", Limit: 300, Epsilon: 1, Method: m})
		var fe trainer.FieldErrors
		if !errors.As(err, &fe) || fe[0].Field != field {
			t.Errorf("%+v: %v, want a FieldError on %s", m, err, field)
		}
	}
}
