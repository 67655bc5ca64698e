package models

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/nn"
)

// TestParamCounts checks parameter counts computed from the spec alone and
// counted on the built model. The first three rows are the peer layouts' parameter
// counts (MNIST CNN 431,080, DPSGD-F's "431K"; VGG-like 1,608,777; logistic 103);
// the others are hand sums of the same layouts.
func TestParamCounts(t *testing.T) {
	tests := []struct {
		spec Spec
		want int
	}{
		{Spec{Arch: "mnist-cnn", InShape: []int{1, 28, 28}, Classes: 10}, 431080},
		{Spec{Arch: "vgg", InShape: []int{3, 128, 128}, Classes: 9}, 1608777},
		{Spec{Arch: "logistic", InShape: []int{102}, Classes: 2}, 103},
		// multinomial: 102·3 + 3
		{Spec{Arch: "logistic", InShape: []int{102}, Classes: 3}, 309},
		// images are flattened: 784 + 1
		{Spec{Arch: "logistic", InShape: []int{1, 28, 28}, Classes: 2}, 785},
		// (102·64+64) + (64·32+32) + (32+1)
		{Spec{Arch: "mlp", InShape: []int{102}, Classes: 2, Hidden: []int{64, 32}}, 8705},
		// (102·16+16) + (16·4+4)
		{Spec{Arch: "mlp", InShape: []int{102}, Classes: 4, Hidden: []int{16}}, 1716},
		// convs 287,008 + Linear(512→160) 82,080 + 10,304 + 585
		{Spec{Arch: "vgg", InShape: []int{3, 32, 32}, Classes: 9}, 379977},
		// convs 520 + 25,050, flat 50·5·5 = 1250: 625,500 + 5010
		{Spec{Arch: "mnist-cnn", InShape: []int{1, 32, 32}, Classes: 10}, 656080},
		// odd sizes floor in the pools: 17→13→6→2→1, flat 50
		{Spec{Arch: "mnist-cnn", InShape: []int{1, 17, 17}, Classes: 2}, 520 + 25050 + 50*500 + 500 + 500*2 + 2},
	}
	for _, tc := range tests {
		got, err := tc.spec.NumParams()
		if err != nil || got != tc.want {
			t.Errorf("%s: NumParams() = %d, %v; want %d", tc.spec, got, err, tc.want)
		}
		m, err := New[float32](tc.spec, rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			t.Fatalf("%s: New: %v", tc.spec, err)
		}
		if got := m.NumParams(); got != tc.want {
			t.Errorf("%s: model has %d parameters, want %d", tc.spec, got, tc.want)
		}
	}
}

// TestOutputShapes checks OutDim and the length of Forward's logits.
func TestOutputShapes(t *testing.T) {
	tests := []struct {
		spec    Spec
		outDim  int
		inSize  int
		nLayers int
	}{
		{Spec{Arch: "logistic", InShape: []int{5}, Classes: 2}, 1, 5, 1},
		{Spec{Arch: "logistic", InShape: []int{5}, Classes: 4}, 4, 5, 1},
		{Spec{Arch: "logistic", InShape: []int{2, 3, 3}, Classes: 3}, 3, 18, 2},
		{Spec{Arch: "mlp", InShape: []int{5}, Classes: 2, Hidden: []int{7, 3}}, 1, 5, 5},
		{Spec{Arch: "mnist-cnn", InShape: []int{1, 16, 16}, Classes: 10}, 10, 256, 10},
		{Spec{Arch: "vgg", InShape: []int{3, 16, 16}, Classes: 9}, 9, 768, 21},
	}
	for _, tc := range tests {
		m, err := New[float64](tc.spec, rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			t.Fatalf("%s: %v", tc.spec, err)
		}
		if m.OutDim() != tc.outDim || m.InSize() != tc.inSize || len(m.Layers) != tc.nLayers {
			t.Errorf("%s: OutDim %d InSize %d layers %d, want %d %d %d", tc.spec,
				m.OutDim(), m.InSize(), len(m.Layers), tc.outDim, tc.inSize, tc.nLayers)
		}
		const batch = 3
		logits := m.Forward(make([]float64, batch*m.InSize()), batch, false)
		if len(logits) != batch*tc.outDim {
			t.Errorf("%s: Forward gave %d logits, want %d", tc.spec, len(logits), batch*tc.outDim)
		}
	}
}

// TestSpecErrors checks that bad specs are refused with a message that says
// what was wrong.
func TestSpecErrors(t *testing.T) {
	tests := []struct {
		spec Spec
		want string
	}{
		{Spec{Arch: "resnet", InShape: []int{3}, Classes: 2}, `unknown arch "resnet" (known: logistic, mlp, mnist-cnn, vgg, linear-regression)`},
		{Spec{Arch: "logistic", InShape: []int{3}, Classes: 1}, "Classes = 1, want 2.."},
		{Spec{Arch: "logistic", InShape: nil, Classes: 2}, "rank 0"},
		{Spec{Arch: "logistic", InShape: []int{3, 0}, Classes: 2}, "InShape[1] = 0"},
		{Spec{Arch: "logistic", InShape: []int{-1}, Classes: 2}, "InShape[0] = -1"},
		{Spec{Arch: "logistic", InShape: []int{3}, Classes: 2, Hidden: []int{4}}, `only used by arch "mlp"`},
		{Spec{Arch: "mlp", InShape: []int{3}, Classes: 2}, "Hidden is empty"},
		{Spec{Arch: "mlp", InShape: []int{3}, Classes: 2, Hidden: []int{4, 0}}, "Hidden[1] = 0"},
		{Spec{Arch: "mnist-cnn", InShape: []int{784}, Classes: 10}, "needs InShape {C, H, W} (rank 3), got [784] (rank 1)"},
		{Spec{Arch: "mnist-cnn", InShape: []int{1, 15, 28}, Classes: 10}, "needs H, W ≥ 16"},
		{Spec{Arch: "vgg", InShape: []int{3, 40, 32}, Classes: 9}, "divisible by 16"},
		{Spec{Arch: "vgg", InShape: []int{3, 32}, Classes: 9}, "rank 3"},
		{Spec{Arch: "logistic", InShape: []int{1 << 20, 1 << 20}, Classes: 2}, "more than 268435456 values per sample"},
		{Spec{Arch: "mlp", InShape: []int{1 << 20}, Classes: 2, Hidden: []int{1 << 20}}, "more than 2147483648 parameters"},
		{Spec{Arch: "mlp", InShape: []int{1 << 15}, Classes: 2, Hidden: []int{1 << 15, 1 << 15, 1 << 15}}, "more than 2147483648 parameters"},
		// A residual join whose branches end in different shapes, or whose
		// body does not take the input.
		{Spec{Arch: "mine", InShape: []int{4}, Classes: 3, Layers: []nn.LayerSpec{{Kind: nn.KindResidual, Residual: &nn.ResidualSpec{
			Body: []nn.LayerSpec{{Kind: nn.KindLinear, In: 4, Out: 3}}}}}}, "the body gives [3], the shortcut [4]"},
		{Spec{Arch: "mine", InShape: []int{4}, Classes: 4, Layers: []nn.LayerSpec{{Kind: nn.KindResidual, Residual: &nn.ResidualSpec{
			Body: []nn.LayerSpec{{Kind: nn.KindLinear, In: 5, Out: 4}}}}}}, "branch 0 layer 0: takes 5 inputs"},
	}
	for _, tc := range tests {
		err := tc.spec.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want it to contain %q", tc.spec, err, tc.want)
		}
		if _, err := New[float32](tc.spec, rand.New(rand.NewPCG(1, 2))); err == nil {
			t.Errorf("%+v: New accepted it", tc.spec)
		}
	}
	if _, err := New[float32](Spec{Arch: "logistic", InShape: []int{3}, Classes: 2}, nil); err == nil ||
		!strings.Contains(err.Error(), "rng is nil") {
		t.Errorf("New with nil rng: error %v, want one about the rng", err)
	}
}
