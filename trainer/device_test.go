package trainer

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"fairdp/cuda"
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
		{func(c *Config) { c.Algo = "fermi" }, []string{"Algo", "no device step"}},
		{func(c *Config) { c.Algo = "dpsgdf" }, []string{"Algo", "no device step"}},
		{func(c *Config) { c.DType = "float64" }, []string{"DType", "float32 only"}},
		{func(c *Config) { c.Optimizer = "adam" }, []string{"Optimizer", "plain SGD update"}},
		{func(c *Config) { c.Momentum = 0.9 }, []string{"Momentum"}},
		{func(c *Config) { c.Fair.WeightDecay = 1e-4 }, []string{"Fair.WeightDecay"}},
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
