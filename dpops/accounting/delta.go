package accounting

import (
	"fmt"
	"math"
)

// DefaultDelta is δ when the user gives none, for every fairdp algorithm:
// 1/n², where n is the number of records the guarantee covers (the training
// records; a SteFFLe silo's own records). It is the choice of the DP-FERMI
// and SteFFLe papers (Lowy et al. 2022 and the SteFFLe paper), and far below 1/n, which δ must be
// for (ε, δ)-DP to mean anything: a mechanism that publishes one random
// record in full is (0, 1/n)-DP. Presets that reproduce a paper keep the
// paper's explicit δ (DPSGD-F's 1e-6, Jagielski's 1e-7).
func DefaultDelta(n int) float64 {
	if n < 1 {
		return math.NaN()
	}
	return 1 / (float64(n) * float64(n))
}

// LargeDeltaError is CheckDelta's refusal of a δ that is not below 1/n.
type LargeDeltaError struct {
	Delta   float64
	Records int
}

func (e *LargeDeltaError) Error() string {
	return fmt.Sprintf("δ = %g is not below 1/n = %.3g for n = %d records: such a guarantee allows publishing a whole record "+
		"(a mechanism that releases one random record in full meets it); give a smaller δ (the default is 1/n² = %.3g), "+
		"or allow a large δ explicitly, and the receipt will say so", e.Delta, 1/float64(e.Records), e.Records, DefaultDelta(e.Records))
}

// CheckDelta refuses δ outside (0, 1), and δ ≥ 1/n for n records unless
// allowLarge (the user insisted; the receipt then says so, see
// RunInfo.Records).
func CheckDelta(delta float64, n int, allowLarge bool) error {
	if err := checkDelta(delta); err != nil {
		return err
	}
	if n > 0 && delta >= 1/float64(n) && !allowLarge {
		return &LargeDeltaError{Delta: delta, Records: n}
	}
	return nil
}

// largeDeltaNote is the receipt's note for a δ ≥ 1/n.
func largeDeltaNote(delta float64, n int) string {
	return fmt.Sprintf("δ = %g is not below 1/n = %.3g (n = %d records) and was allowed by the user: the guarantee is weak "+
		"(a mechanism that publishes one random record in full meets it)", delta, 1/float64(n), n)
}
