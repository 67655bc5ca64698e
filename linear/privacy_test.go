package linear

import (
	"math"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/trainer"
)

// TestValidatorsReadThePrivacyTarget: objective perturbation's and
// post-processing's validators refuse an ε or δ out of range with an
// error naming the field, and judge the privacy target they are given
// (privacyOf, read once at the pipeline's entry), not the Config's: a bad
// target under a good Config is refused, a good one under a Config whose
// privacy section is bad is accepted.
func TestValidatorsReadThePrivacyTarget(t *testing.T) {
	validators := map[string]func(trainer.Config, privacy) error{
		"objpert": func(c trainer.Config, p privacy) error { return validateObjPert(c, p) },
		"postproc": func(c trainer.Config, p privacy) error {
			_, err := validatePostproc(c, p)
			return err
		},
	}
	configs := map[string]trainer.Config{"objpert": objPertConfig(1), "postproc": privateBaseConfig()}
	for name, validate := range validators {
		good := configs[name]
		p := privacyOf(good)
		if err := validate(good, p); err != nil {
			t.Fatalf("%s: the good configuration is refused: %v", name, err)
		}
		for _, tc := range []struct {
			field string
			set   func(*privacy)
		}{
			{"Privacy.Epsilon", func(p *privacy) { p.Epsilon = 0 }},
			{"Privacy.Epsilon", func(p *privacy) { p.Epsilon = -2 }},
			{"Privacy.Epsilon", func(p *privacy) { p.Epsilon = math.NaN() }},
			{"Privacy.Delta", func(p *privacy) { p.Delta = -1e-9 }},
			{"Privacy.Delta", func(p *privacy) { p.Delta = 1 }},
			{"Privacy.Delta", func(p *privacy) { p.Delta = math.NaN() }},
		} {
			bad := p
			tc.set(&bad)
			if err := validate(good, bad); err == nil || !strings.Contains(err.Error(), tc.field) {
				t.Errorf("%s, %s %+v: got %v, want an error naming it", name, tc.field, bad, err)
			}
		}
		broken := good
		broken.Privacy.Epsilon, broken.Privacy.Delta = -1, 2
		if err := validate(broken, p); err != nil {
			t.Errorf("%s: the Config's privacy section was read instead of the target given: %v", name, err)
		}
	}
}
