package fermi

import (
	"math"

	"github.com/fairdp/fairdp/trainer"
)

// Method is DP-FERMI as a trainer.PrivateOptions method: private and fair
// training (Lowy et al. 2022), the model's loss plus λ times the ERMI
// fairness penalty. Naming it imports this package, which registers the
// algorithm, so a program using DP-FERMI cannot compile without it.
type Method struct {
	// Lambda is the fairness weight λ ≥ 0 (0 trains without the fairness
	// term, as DP-SGD with DP-FERMI's clipping and accounting would).
	Lambda float64
	// Fairness is "dp" (demographic parity; also when empty) or "eo"
	// (equalized odds).
	Fairness string
}

// Algo is Name.
func (Method) Algo() trainer.AlgoName { return Name }

// Configure sets Config.Fair's λ and fairness notion, naming a bad one.
func (m Method) Configure(cfg *trainer.Config) error {
	var errs trainer.FieldErrors
	if !(m.Lambda >= 0) || math.IsInf(m.Lambda, 1) {
		errs = append(errs, trainer.FieldError{Field: "Lambda", Msg: "must be a finite number ≥ 0"})
	}
	switch m.Fairness {
	case "", "dp", "eo":
	default:
		errs = append(errs, trainer.FieldError{Field: "Fairness", Msg: `must be "dp" or "eo" (got "` + m.Fairness + `")`})
	}
	if len(errs) > 0 {
		return errs
	}
	cfg.Fair.Lambda = m.Lambda
	if m.Fairness != "" {
		cfg.Fair.Fairness = m.Fairness
	}
	return nil
}
