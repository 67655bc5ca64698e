package trainer

import (
	"math"
	"strings"
	"testing"
)

// TestCheckPrivacy: every out-of-range value is refused with its field's
// name, NaN and +Inf included (a NaN σ or δ used to pass Config.Validate,
// whose checks were "< 0"), and the values a private or non-private run
// uses pass.
func TestCheckPrivacy(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	tests := []struct {
		name                      string
		epsilon, delta, clip, sig float64
		field                     string // "" for no error
	}{
		{"private", 1, 1e-5, 1, 0, ""},
		{"sigma given", 1, 1e-5, 1, 1.1, ""},
		{"not private", inf, 0, 1, 0, ""},
		{"eps 0", 0, 0, 1, 0, "Privacy.Epsilon"},
		{"eps NaN", nan, 0, 1, 0, "Privacy.Epsilon"},
		{"delta 1", 1, 1, 1, 0, "Privacy.Delta"},
		{"delta NaN", 1, nan, 1, 0, "Privacy.Delta"},
		{"delta -0.1", 1, -0.1, 1, 0, "Privacy.Delta"},
		{"clip 0", 1, 0, 0, 0, "Privacy.Clip"},
		{"clip NaN", 1, 0, nan, 0, "Privacy.Clip"},
		{"clip inf", 1, 0, inf, 0, "Privacy.Clip"},
		{"sigma -1", 1, 0, 1, -1, "Privacy.Sigma"},
		{"sigma NaN", 1, 0, 1, nan, "Privacy.Sigma"},
		{"sigma inf", 1, 0, 1, inf, "Privacy.Sigma"},
	}
	for _, tc := range tests {
		errs := CheckPrivacy(tc.epsilon, tc.delta, tc.clip, tc.sig)
		if tc.field == "" {
			if len(errs) != 0 {
				t.Errorf("%s: refused: %v", tc.name, errs)
			}
			continue
		}
		if len(errs) != 1 || errs[0].Field != tc.field {
			t.Errorf("%s: errors %v, want one for %s", tc.name, errs, tc.field)
		}
		// Config.Validate refuses the same value under the same field.
		c := Defaults()
		c.Privacy.Epsilon, c.Privacy.Delta, c.Privacy.Clip, c.Privacy.Sigma = tc.epsilon, tc.delta, tc.clip, tc.sig
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: Config.Validate gave %v, want an error naming %s", tc.name, err, tc.field)
		}
	}
}
