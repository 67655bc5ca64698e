package trainer

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/cuda"
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
	} else if _, err := Prepare(ok, PrepareOptions{Log: &bytes.Buffer{}}); !errors.Is(err, cuda.ErrUnavailable) || !strings.Contains(err.Error(), "Device") {
		t.Errorf("Prepare without a device: %v, want cuda.ErrUnavailable naming Device", err)
	}
	ran := false
	RegisterPipeline("device-test-pipeline", func(context.Context, Config) (*Report, error) { ran = true; return nil, nil })
	defer delete(pipelines, "device-test-pipeline")
	if _, err := RunConfig(t.Context(), Config{Algo: "device-test-pipeline", Device: "cuda"}, nil); err == nil || ran {
		t.Errorf("a pipeline with Device cuda: ran %v, error %v; want it refused", ran, err)
	}
}

// A binary that registered no device "cuda" (the default build of
// cmd/fairdp) refuses Device cuda before any data is loaded, naming the
// field and the build tag, and never trains on the CPU instead.
func TestDeviceCudaUnregistered(t *testing.T) {
	devicesMu.Lock()
	saved, had := devices["cuda"]
	delete(devices, "cuda")
	devicesMu.Unlock()
	defer func() {
		devicesMu.Lock()
		if had {
			devices["cuda"] = saved
		}
		devicesMu.Unlock()
	}()
	cfg := Defaults()
	cfg.Device, cfg.Algo, cfg.Optimizer = "cuda", "dpsgd", "sgd"
	_, err := Prepare(cfg, PrepareOptions{Log: &bytes.Buffer{}})
	if !errors.Is(err, ErrNoDevice) || !strings.Contains(err.Error(), "Device") || !strings.Contains(err.Error(), "-tags cuda") {
		t.Errorf("Prepare with no device registered: %v, want ErrNoDevice naming Device and the build tag", err)
	}
	if err := CheckDevice("tpu"); err == nil || errors.Is(err, ErrNoDevice) || !strings.Contains(err.Error(), "cpu or cuda") {
		t.Errorf("CheckDevice(tpu): %v, want the list of devices", err)
	}
}

// RegisterDevice refuses "cpu" and a second registration of a name.
func TestRegisterDevicePanics(t *testing.T) {
	open := func() (Device, error) { return nil, errors.New("unused") }
	for _, name := range []DeviceKind{"cpu", "cuda"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("RegisterDevice(%q) did not panic", name)
				}
			}()
			RegisterDevice(name, func() error { return nil }, open)
		}()
	}
}
