package fermi_test

import (
	"errors"
	"math"
	"testing"

	"github.com/fairdp/fairdp/fermi"
	"github.com/fairdp/fairdp/trainer"
)

// TestMethodConfigures: fermi.Method's λ and fairness notion reach the
// run's Config, and a bad one is refused naming PrivateOptions' field.
func TestMethodConfigures(t *testing.T) {
	p, err := trainer.NewPrivate(trainer.PrivateOptions{Dataset: "adult", Limit: 300, Epsilon: 1,
		Method: fermi.Method{Lambda: 2, Fairness: "eo"}})
	if err != nil {
		t.Fatal(err)
	}
	if c := p.Config(); c.Algo != fermi.Name || c.Fair.Lambda != 2 || c.Fair.Fairness != "eo" {
		t.Errorf("config algo %s, λ %v, fairness %s", c.Algo, c.Fair.Lambda, c.Fair.Fairness)
	}
	for field, m := range map[string]fermi.Method{"Method.Lambda": {Lambda: math.NaN()}, "Method.Fairness": {Fairness: "parity"}} {
		_, err := trainer.NewPrivate(trainer.PrivateOptions{Dataset: "adult", Limit: 300, Epsilon: 1, Method: m})
		var fe trainer.FieldErrors
		if !errors.As(err, &fe) || fe[0].Field != field {
			t.Errorf("%+v: %v, want a FieldError on %s", m, err, field)
		}
	}
}
