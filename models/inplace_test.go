package models

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/fairdp/fairdp/nn"
)

// layerByLayer is the reference for Model.Forward and Backward: every layer
// in Layers order with its own buffers, nothing in place, nothing reordered.
type layerByLayer[T nn.Float] struct{ m *Model[T] }

func (r layerByLayer[T]) forward(x []T, batch int) []T {
	for _, l := range r.m.Layers {
		x = l.Forward(x, batch, true)
	}
	return x
}

func (r layerByLayer[T]) backward(dy []T) {
	for i := len(r.m.Layers) - 1; i >= 0; i-- {
		dy = r.m.Layers[i].Backward(dy, i > 0)
	}
}

// TestInPlaceMatchesLayerByLayer checks that the memory savings of
// Model.Forward and Backward (ReLU run after a following max-pool, layers
// working in the buffers they are handed) change no bit of the logits, the
// per-sample norms or the scaled gradient sums, including a second Backward
// after one Forward (as DP-FERMI's --scope sensitive step does), a second
// step at another batch size, inputs with many exact ties in the pools, a
// model whose first layers are ReLU and max-pool and one whose last layer is
// a ReLU; and that the caller's input and dlogits are never written.
func TestInPlaceMatchesLayerByLayer(t *testing.T) {
	build := map[string]func(rng *rand.Rand) *Model[float32]{
		"vgg": func(rng *rand.Rand) *Model[float32] {
			return mustNew[float32](t, Spec{Arch: "vgg", InShape: []int{3, 16, 16}, Classes: 5}, rng)
		},
		"mnist-cnn": func(rng *rand.Rand) *Model[float32] {
			return mustNew[float32](t, Spec{Arch: "mnist-cnn", InShape: []int{1, 16, 16}, Classes: 4}, rng)
		},
		// ReLU and a pool first (the caller's x must not be taken), Tanh,
		// a pool after a Tanh (no reordering), Flatten between ReLU and
		// Linear, and a ReLU last (dlogits is the caller's).
		"hand-built": func(rng *rand.Rand) *Model[float32] {
			conv1, conv2 := nn.NewConv2d[float32](2, 4, 4, 3, 3, 1, 1), nn.NewConv2d[float32](3, 4, 4, 4, 3, 1, 1)
			lin1, lin2 := nn.NewLinear[float32](4, 6), nn.NewLinear[float32](6, 3)
			conv1.Init(rng)
			conv2.Init(rng)
			lin1.Init(rng)
			lin2.Init(rng)
			return &Model[float32]{Arch: "mine", InShape: []int{2, 8, 8}, Classes: 3, Layers: []nn.Layer[float32]{
				nn.NewReLU[float32](), nn.NewMaxPool2d[float32](2, 8, 8, 2),
				conv1, nn.NewTanh[float32](), nn.NewReLU[float32](), conv2, nn.NewTanh[float32](), nn.NewMaxPool2d[float32](4, 4, 4, 2),
				nn.NewReLU[float32](), nn.NewMaxPool2d[float32](4, 2, 2, 2), nn.NewFlatten[float32](),
				lin1, nn.NewReLU[float32](), lin2, nn.NewReLU[float32](),
			}}
		},
	}
	for name, mk := range build {
		for _, ties := range []bool{false, true} {
			got, want := mk(rand.New(rand.NewPCG(1, 2))), mk(rand.New(rand.NewPCG(1, 2)))
			rng := rand.New(rand.NewPCG(3, 4))
			for step, batch := range []int{5, 3} {
				x := make([]float32, batch*got.InSize())
				for i := range x {
					x[i] = float32(rng.NormFloat64())
					if ties { // small integers: many equal maxima and zeros in the pools
						x[i] = float32(math.Round(2 * rng.NormFloat64()))
					}
				}
				x0 := slices.Clone(x)
				logits := got.Forward(x, batch, true)
				wantLogits := layerByLayer[float32]{want}.forward(x, batch)
				sameBits(t, name, "logits", logits, wantLogits)
				sameBits(t, name, "input", x, x0)
				for round := range 2 {
					dl := make([]float32, len(logits))
					for i := range dl {
						dl[i] = float32(rng.NormFloat64())
					}
					dl0 := slices.Clone(dl)
					got.Backward(dl)
					layerByLayer[float32]{want}.backward(dl)
					sameBits(t, name, "dlogits", dl, dl0)
					norms, wantNorms := make([]float32, batch), make([]float32, batch)
					got.SqNorms(norms)
					want.SqNorms(wantNorms)
					sameBits(t, name, "norms", norms, wantNorms)
					scale := make([]float32, batch)
					for i := range scale {
						scale[i] = float32(rng.Float64())
					}
					got.ZeroGrads()
					want.ZeroGrads()
					got.ParamGrads(scale)
					want.ParamGrads(scale)
					for j, p := range got.Params() {
						sameBits(t, name, p.Name, p.Grad, want.Params()[j].Grad)
					}
					if t.Failed() {
						t.Fatalf("%s (ties %v): step %d, backward %d differs", name, ties, step, round)
					}
				}
			}
		}
	}
}

func mustNew[T nn.Float](t *testing.T, spec Spec, rng *rand.Rand) *Model[T] {
	t.Helper()
	m, err := New[T](spec, rng)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// sameBits reports the first element where got and want differ in any bit.
func sameBits(t *testing.T, model, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %s has %d values, want %d", model, what, len(got), len(want))
		return
	}
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Errorf("%s: %s[%d] = %v, want %v (bit for bit)", model, what, i, got[i], want[i])
			return
		}
	}
}
