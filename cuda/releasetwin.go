package cuda

import "github.com/fairdp/fairdp/nn"

// ReleaseTwin is DeviceNet's release on the CPU for nn's parameters (the
// layers' weights and biases in model order): the Philox noise the device
// adds under seed, parameter buffer k on stream k (a linear layer's weight
// then its bias; a convolution's weight and bias, recognised by the
// weight's four dimensions and the next parameter's name "bias", as one
// buffer of [W_o | b_o] rows; a convolution without a bias, its weight
// alone), added to
// each gradient by the kernel's Go twin, then every gradient multiplied by
// scale. A CPU run that releases its gradients with it adds exactly the
// device run's noise, so tests can compare the two value for value.
func ReleaseTwin(seed NoiseSeed, params []*nn.Param[float32], std, scale float64) error {
	stream := uint32(0)
	for i := 0; i < len(params); i++ {
		p := params[i]
		s := seed
		s.Stream = stream
		stream++
		if len(p.Shape) != 4 { // a linear weight or bias: a buffer of its own
			if err := (CPU{}).AddGaussian(p.Grad, std, s); err != nil {
				return err
			}
			continue
		}
		if i+1 == len(params) || params[i+1].Name != "bias" { // a convolution without a bias: W alone
			if err := (CPU{}).AddGaussian(p.Grad, std, s); err != nil {
				return err
			}
			continue
		}
		b := params[i+1] // a convolution: weight and bias as [W | b] rows
		i++
		outC := len(b.Grad)
		ckk := len(p.Grad) / outC
		rows := make([]float32, 0, outC*(ckk+1))
		for o := range outC {
			rows = append(append(rows, p.Grad[o*ckk:(o+1)*ckk]...), b.Grad[o])
		}
		if err := (CPU{}).AddGaussian(rows, std, s); err != nil {
			return err
		}
		for o := range outC {
			copy(p.Grad[o*ckk:(o+1)*ckk], rows[o*(ckk+1):])
			b.Grad[o] = rows[o*(ckk+1)+ckk]
		}
	}
	for _, p := range params {
		for i := range p.Grad {
			p.Grad[i] *= float32(scale)
		}
	}
	return nil
}
