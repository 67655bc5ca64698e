package trainer

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"fairdp/cuda"
	"fairdp/models"
	"fairdp/nn"
)

// Device cuda refuses, before any data is loaded and with errors naming the
// Config fields, what has no device step; and without a device (no tag
// `cuda`, or the emulated device not asked for with FAIRDP_DEVICE=emu) it
// fails with the reason instead of training on the CPU.
func TestDeviceCudaRefusals(t *testing.T) {
	t.Setenv("FAIRDP_DEVICE", "")
	ok := Defaults()
	ok.Device, ok.Algo, ok.Optimizer = "cuda", "dpsgd", "sgd"
	for _, tc := range []struct {
		mutate func(*Config)
		want   []string
	}{
		{func(c *Config) { c.Algo = "steffle" }, []string{"Algo", "no device step"}},
		{func(c *Config) { c.DType = "float64" }, []string{"DType", "float32 only"}},
		{func(c *Config) { c.Baseline = true }, []string{"Baseline"}},
	} {
		cfg := ok
		tc.mutate(&cfg)
		err := cfg.Validate()
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("Validate: %v, want an error mentioning %q", err, w)
			}
		}
	}
	if err := ok.Validate(); err != nil {
		t.Errorf("sgd-optimizer dpsgd on cuda: %v", err)
	}
	// What else runs on the device: DPSGD-F and
	// Naive, momentum, Adam and weight decay.
	for _, mutate := range []func(*Config){
		func(c *Config) { c.Algo = "dpsgdf" },
		func(c *Config) { c.Algo = "naive" },
		func(c *Config) { c.Optimizer = "adam"; c.Fair.WeightDecay = 1e-4 },
		func(c *Config) { c.Momentum = 0.9 },
	} {
		cfg := ok
		mutate(&cfg)
		if err := cfg.Validate(); err != nil {
			t.Errorf("Device cuda with algo %s, optimizer %s, momentum %v: %v", cfg.Algo, cfg.Optimizer, cfg.Momentum, err)
		}
	}
	if cuda.CheckDevice() == nil {
		t.Log("a GPU is present: the no-device error is not checked") // a cuda build on a GPU host
	} else if _, err := Prepare(ok, &bytes.Buffer{}); !errors.Is(err, cuda.ErrUnavailable) || !strings.Contains(err.Error(), "Device") {
		t.Errorf("Prepare without a device: %v, want cuda.ErrUnavailable naming Device", err)
	}
	ran := false
	RegisterPipeline("device-test-pipeline", func(context.Context, Config) (*Report, error) { ran = true; return nil, nil })
	defer delete(pipelines, "device-test-pipeline")
	if _, err := RunConfig(t.Context(), Config{Algo: "device-test-pipeline", Device: "cuda"}, nil); err == nil || ran {
		t.Errorf("a pipeline with Device cuda: ran %v, error %v; want it refused", ran, err)
	}
}

// deviceNetSpec maps a model's layers to cuda.NetLayers one to one (flatten
// is free), a group norm with its geometry, ε and parameters, and refuses a
// layer the device has no kernel for, naming it.
func TestDeviceNetSpecLayers(t *testing.T) {
	spec := models.Spec{Arch: "gn", InShape: []int{2, 4, 4}, Classes: 3, Layers: []nn.LayerSpec{
		{Kind: nn.KindGroupNorm, C: 2, H: 4, W: 4, Groups: 2},
		{Kind: nn.KindConv2d, C: 2, H: 4, W: 4, OutC: 4, K: 3, Stride: 1, Pad: 1},
		{Kind: nn.KindReLU}, {Kind: nn.KindMaxPool2d, C: 4, H: 4, W: 4, K: 2}, {Kind: nn.KindFlatten},
		{Kind: nn.KindLinear, In: 16, Out: 3},
	}}
	m, err := models.New[float32](spec, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	gn := m.Layers[0].Params()
	gn[0].Value[1], gn[1].Value[0] = 1.5, -0.25
	layers, err := deviceNetSpec(m)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, l := range layers {
		kinds = append(kinds, l.Kind)
	}
	if want := []string{"groupnorm", "conv", "relu", "maxpool", "linear"}; !slices.Equal(kinds, want) {
		t.Fatalf("device layers %v, want %v", kinds, want)
	}
	if g := layers[0].Norm; g != (cuda.GroupGeom{C: 2, H: 4, W: 4, Groups: 2, Eps: 1e-5}) ||
		!slices.Equal(layers[0].Weight, []float32{1, 1.5}) || !slices.Equal(layers[0].Bias, []float32{-0.25, 0}) {
		t.Errorf("group norm layer %+v, γ %v, β %v", g, layers[0].Weight, layers[0].Bias)
	}
	if layers[2].Size != 64 {
		t.Errorf("ReLU after the convolution: Size %d, want 4·4·4", layers[2].Size)
	}
	spec.Layers[2].Kind = nn.KindTanh
	if m, err = models.New[float32](spec, rand.New(rand.NewPCG(1, 2))); err != nil {
		t.Fatal(err)
	}
	if _, err := deviceNetSpec(m); err == nil || !strings.Contains(err.Error(), "groupnorm") || !strings.Contains(err.Error(), "layer 2 is tanh") {
		t.Errorf("a tanh layer on the device: %v, want a refusal naming it and the layers the device runs", err)
	}
}
