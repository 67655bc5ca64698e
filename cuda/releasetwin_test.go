package cuda

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/fairdp/fairdp/nn"
)

// ReleaseTwin noises the buffers DeviceNet noises, stream by stream: a
// convolution with a bias as [W | b] rows, one without as W alone, even
// when the next parameter is a group norm's γ of the same length as a bias
// would be (the case a shape-only rule would read as a bias), and linear
// and group-norm parameters one buffer each.
func TestReleaseTwinBuffers(t *testing.T) {
	r := rand.New(rand.NewPCG(91, 92))
	conv := nn.NewConv2d[float32](2, 5, 5, 3, 3, 1, 1)
	convNoBias := nn.NewConv2dNoBias[float32](3, 5, 5, 4, nn.SquareWindow(3, 1, 1))
	gn := nn.NewGroupNorm[float32](2, 4, 5, 5)
	lin := nn.NewLinear[float32](100, 2)
	var params []*nn.Param[float32]
	for _, l := range []nn.Layer[float32]{conv, convNoBias, gn, lin} {
		params = append(params, l.Params()...)
	}
	for _, p := range params {
		for i := range p.Grad {
			p.Grad[i] = float32(r.NormFloat64())
		}
	}
	want := map[*nn.Param[float32]][]float32{}
	for _, p := range params {
		want[p] = append([]float32(nil), p.Grad...)
	}
	seed := NewNoiseSeed(r)
	const std, scale = 0.7, 0.25
	// What DeviceNet noises: buffer k on stream k.
	buffers := []noiseBuffer{{w: params[0], b: params[1], ckk: 2 * 9}, {w: params[2]}, {w: params[3]}, {w: params[4]},
		{w: params[5]}, {w: params[6]}}
	for k, b := range buffers {
		s := seed
		s.Stream = uint32(k)
		wb := noiseBuffer{w: &nn.Param[float32]{Grad: want[b.w]}, ckk: b.ckk}
		if b.b != nil {
			wb.b = &nn.Param[float32]{Grad: want[b.b]}
		}
		wb.noise(t, std, s)
	}
	must(t, ReleaseTwin(seed, params, std, scale))
	for i, p := range params {
		w := want[p]
		for j := range w {
			w[j] *= scale
		}
		sameBits32(t, fmt.Sprintf("parameter %d (%s %v)", i, p.Name, p.Shape), p.Grad, w)
	}
}
