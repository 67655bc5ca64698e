package fermi

import (
	"github.com/fairdp/fairdp/loaders"
	"github.com/fairdp/fairdp/metrics"
	"github.com/fairdp/fairdp/trainer"
)

// WGrad is W's ascent direction from the last Step, before η_W: the
// estimate of λ·mean_B ∇_Wψ, clipped and with Algorithm 1's V_t added for
// private runs (the release is a copy). It is exported for SteFFLe, whose silos send this
// direction to the server instead of taking the ascent step themselves.
func (a *DPFERMI[T]) WGrad() []float64 { return append([]float64(nil), a.w.Grad...) }

// ERMI is the ERMI (conditional on the label for equalized odds) of m's
// soft predictions on d, the quantity the regulariser drives down; the
// report's test_ermi. SteFFLe reports it for the server's model.
func (a *DPFERMI[T]) ERMI(m trainer.Model[T], d *loaders.Dataset) float64 {
	probs := softPredictions(m, d)
	k, l := a.Reg.Groups, a.Reg.Classes
	if a.Reg.EqualizedOdds {
		return metrics.ERMIEqualizedOdds(probs, d.Labels, d.Groups, l, k)
	}
	return metrics.ERMIDemographicParity(probs, d.Groups, l, k)
}
