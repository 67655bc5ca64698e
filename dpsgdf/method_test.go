package dpsgdf_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/dpsgdf"
	"github.com/fairdp/fairdp/trainer"
)

// TestMethodConfigures: dpsgdf.Method trains under its policy's name with
// its count-noise ratio and guards (a guard not named takes the tabular
// default, smooth, on a table: trainer.AdaptToData), and Flat, a bad
// ratio, an unknown guard or a guard given to the other policy is refused
// naming PrivateOptions' field.
func TestMethodConfigures(t *testing.T) {
	for _, tc := range []struct {
		m                    dpsgdf.Method
		algo                 string
		countGuard, naiveGrd string
	}{{dpsgdf.Method{}, "dpsgdf", "smooth", ""}, {dpsgdf.Method{Policy: dpsgdf.Naive, CountNoiseRatio: 3}, "naive", "", "smooth"},
		{dpsgdf.Method{CountGuard: dpsgdf.GuardC0}, "dpsgdf", "c0", ""},
		{dpsgdf.Method{Policy: dpsgdf.Naive, NaiveGuard: dpsgdf.NaiveGuardOne}, "naive", "", "one"}} {
		p, err := trainer.NewPrivate(trainer.PrivateOptions{Dataset: "adult", Limit: 300, Epsilon: 1, Method: tc.m})
		if err != nil {
			t.Fatal(err)
		}
		c := p.Config()
		if string(c.Algo) != tc.algo || (tc.m.CountNoiseRatio != 0 && c.Fair.CountNoiseRatio != tc.m.CountNoiseRatio) ||
			c.Fair.CountGuard != tc.countGuard || c.Fair.NaiveGuard != tc.naiveGrd {
			t.Errorf("%+v: algo %s, count-noise ratio %v, count guard %q, naive guard %q", tc.m, c.Algo, c.Fair.CountNoiseRatio,
				c.Fair.CountGuard, c.Fair.NaiveGuard)
		}
	}
	for field, m := range map[string]dpsgdf.Method{"Method.Policy": {Policy: dpsgdf.Flat}, "Method.CountNoiseRatio": {CountNoiseRatio: -1},
		"Method.CountGuard": {CountGuard: "zero"}, "Method.CountGuard ": {Policy: dpsgdf.Naive, CountGuard: dpsgdf.GuardFloor},
		"Method.NaiveGuard": {Policy: dpsgdf.Naive, NaiveGuard: "zero"}, "Method.NaiveGuard ": {NaiveGuard: dpsgdf.NaiveGuardSmooth}} {
		field = strings.TrimSpace(field) // a trailing space keeps two cases of one field apart
		_, err := trainer.NewPrivate(trainer.PrivateOptions{Dataset: "adult", Limit: 300, Epsilon: 1, Method: m})
		var fe trainer.FieldErrors
		if !errors.As(err, &fe) || fe[0].Field != field {
			t.Errorf("%+v: %v, want a FieldError on %s", m, err, field)
		}
	}
}
