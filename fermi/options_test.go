package fermi

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/dpops/accounting"
	"github.com/fairdp/fairdp/trainer"
)

// TestOptionsRefuseBadPrivacy: DP-FERMI built from options (as a SteFFLe
// silo builds it, without trainer.Config's Validate) refuses an ε, δ, clip
// or σ out of range with an error naming the Config field, rather than
// calibrating and charging noise for it.
func TestOptionsRefuseBadPrivacy(t *testing.T) {
	job := syntheticJob(t, nil)
	for _, tc := range []struct {
		field string
		set   func(*Options)
	}{
		{"Privacy.Epsilon", func(o *Options) { o.Epsilon = 0 }},
		{"Privacy.Epsilon", func(o *Options) { o.Epsilon = -1 }},
		{"Privacy.Epsilon", func(o *Options) { o.Epsilon = math.NaN() }},
		{"Privacy.Delta", func(o *Options) { o.Delta = -1e-9 }},
		{"Privacy.Delta", func(o *Options) { o.Delta = 1 }},
		{"Privacy.Delta", func(o *Options) { o.Delta = math.NaN() }},
		{"Privacy.Clip", func(o *Options) { o.Clip = 0 }},
		{"Privacy.Clip", func(o *Options) { o.Clip = -0.5 }},
		{"Privacy.Clip", func(o *Options) { o.Clip = math.NaN() }},
		{"Privacy.Sigma", func(o *Options) { o.Sigma = -1 }},
	} {
		o := OptionsOf(job.Cfg)
		tc.set(&o)
		_, err := NewWithReleasedCounts[float64](job, o, nil)
		var fe trainer.FieldErrors
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s (%+v): got %v, want a field error naming it", tc.field, o, err)
		}
	}
}

// TestOptionsFlow: the constructor uses the options it is given, not the
// job's Config: a job whose Config asks for ε = 1 and clip 1, built with
// options ε = 3 and clip 0.25, plans and receipts ε = 3 (within the
// accountant's calibration tolerance) with sensitivity 0.25, exactly as a
// job whose Config states those values.
func TestOptionsFlow(t *testing.T) {
	job := syntheticJob(t, nil)
	o := OptionsOf(job.Cfg)
	o.Epsilon, o.Clip, o.Accountant = 3, 0.25, accounting.AccountantRDP
	got, err := NewWithReleasedCounts[float64](job, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, err := New[float64](syntheticJob(t, func(c *trainer.Config) {
		c.Privacy.Epsilon, c.Privacy.Clip, c.Privacy.Accountant = 3, 0.25, accounting.AccountantRDP
	}))
	if err != nil {
		t.Fatal(err)
	}
	if got.Sigma != want.Sigma || got.Sensitivity != 0.25 || got.Clip != 0.25 || got.target != 3 {
		t.Errorf("σ %v (want %v), sensitivity %v, clip %v, target ε %v: not the options'", got.Sigma, want.Sigma, got.Sensitivity, got.Clip, got.target)
	}
	eps, _, err := got.PlannedRunEpsilon()
	if err != nil || !(eps <= 3 && eps > 2.9) {
		t.Errorf("planned ε %v (%v), want the options' 3", eps, err)
	}
}
