package dpops

import (
	"math/rand/v2"

	"github.com/fairdp/fairdp/nn"
)

// NoiseAndScale adds N(0, std²) to every gradient value of params and then
// scales the gradients (by 1/expected batch size): the release step of
// every DP-SGD-style trainer (DPSGD, DPSGD-F, DP-FERMI's θ), kept here beside
// the noise so that no trainer re-derives it.
func NoiseAndScale[T nn.Float](r *rand.Rand, params []*nn.Param[T], std, scale float64) error {
	return noiseAndScale(AddGaussian[T], r, params, std, scale)
}

// NoiseAndScaleHardened is NoiseAndScale with the floating-point-safe
// sampler (AddGaussianHardened), for sums released as they are.
func NoiseAndScaleHardened[T nn.Float](r *rand.Rand, params []*nn.Param[T], std, scale float64) error {
	return noiseAndScale(AddGaussianHardened[T], r, params, std, scale)
}

func noiseAndScale[T nn.Float](add func(*rand.Rand, []T, float64) error, r *rand.Rand, params []*nn.Param[T], std, scale float64) error {
	for _, p := range params {
		if err := add(r, p.Grad, std); err != nil {
			return err
		}
		s := T(scale)
		for i := range p.Grad {
			p.Grad[i] *= s
		}
	}
	return nil
}
