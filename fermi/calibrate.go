package fermi

import (
	"fmt"
	"math"
)

// PaperSigmas is the closed-form noise of Lowy et al. 2022, Theorem 3.3
// (sensitive attributes private): the standard deviations of
// the Gaussian noise added to the mean θ gradient and the mean W gradient,
//
//	σ_θ = sqrt(16 L_θ² D² ln(1/δ) T / (ε² n² ρ)),   σ_W = sqrt(16 ln(1/δ) T / (ε² n² ρ)),
//
// for n records, smallest group frequency ρ, T steps, θ-gradient clip L_θ
// and W-ball radius D. --calibration paper uses it for fidelity with the
// reference code; the default RDP calibration needs far less noise.
func PaperSigmas(n int, rho float64, steps int, lipschitzTheta, radius, epsilon, delta float64) (sigmaTheta, sigmaW float64, err error) {
	switch {
	case n < 1 || steps < 1:
		return 0, 0, fmt.Errorf("fermi: paper calibration needs n ≥ 1 and T ≥ 1 (got n = %d, T = %d)", n, steps)
	case !(rho > 0 && rho <= 1):
		return 0, 0, fmt.Errorf("fermi: paper calibration needs the smallest group frequency ρ in (0,1] (got %v)", rho)
	case !(epsilon > 0) || math.IsInf(epsilon, 0):
		return 0, 0, fmt.Errorf("fermi: paper calibration needs a finite Privacy.Epsilon > 0 (got %v)", epsilon)
	case !(delta > 0 && delta < 1):
		return 0, 0, fmt.Errorf("fermi: paper calibration needs δ in (0,1) (got %v)", delta)
	case !(lipschitzTheta > 0) || !(radius > 0):
		return 0, 0, fmt.Errorf("fermi: paper calibration needs Privacy.Clip and Fair.Radius > 0 (got %v, %v)", lipschitzTheta, radius)
	}
	nf := float64(n)
	base := 16 * math.Log(1/delta) * float64(steps) / (epsilon * epsilon * nf * nf * rho)
	return math.Sqrt(base * lipschitzTheta * lipschitzTheta * radius * radius), math.Sqrt(base), nil
}
