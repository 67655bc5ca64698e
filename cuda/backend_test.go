package cuda

import (
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
)

// The suite runs on one backend: FAIRDP_DEVICE=cpu the CPU twins (the
// default), FAIRDP_DEVICE=emu the kernels on the emulated device through
// DeviceBackend (the default in a build with -tags cudaemu: `make
// test-gpu-emulated`), FAIRDP_DEVICE=cuda the kernels on GPU 0 through the
// same DeviceBackend (build with -tags cuda). Every test compares the backend
// under test with fairdp's own CPU path (nn, dpops, brute force) and, bit
// for bit, with the twin, which is trivial on the CPU and is the check of
// the kernels' code on the emulated device and on a GPU host.
var device struct {
	once sync.Once
	be   Backend
	err  error
}

// backendUnderTest returns the backend selected by FAIRDP_DEVICE, skipping
// the test with the reason when that is a device that cannot be used (or
// failing it, with FAIRDP_REQUIRE_DEVICE=1: `make test-gpu` on a GPU host).
func backendUnderTest(t testing.TB) Backend {
	t.Helper()
	device.once.Do(func() {
		d := os.Getenv("FAIRDP_DEVICE")
		if d == "" {
			d = defaultTestDevice
		}
		switch d {
		case "cpu":
			device.be = CPU{}
		case "emu":
			device.be, device.err = openEmulated()
		case "cuda":
			device.be, device.err = NewGPU(0)
		default:
			device.err = errors.New("FAIRDP_DEVICE=" + d + ": want cpu, emu or cuda")
		}
	})
	if device.err != nil {
		if errors.Is(device.err, ErrUnavailable) && os.Getenv("FAIRDP_REQUIRE_DEVICE") == "" {
			t.Skipf("the device under test (FAIRDP_DEVICE=%s) is unavailable, so the kernels are not tested: %v",
				os.Getenv("FAIRDP_DEVICE"), device.err)
		}
		t.Fatal(device.err)
	}
	return device.be
}

func TestMain(m *testing.M) {
	code := m.Run()
	if device.be != nil {
		if err := device.be.Close(); err != nil {
			println("closing backend:", err.Error())
			code = 1
		}
	}
	os.Exit(code)
}

func randF32(r *rand.Rand, n int, scale float64) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(scale * r.NormFloat64())
	}
	return s
}

// sameBits reports whether two float32 slices are identical bit for bit
// (any NaN equals any NaN).
func sameBits32(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g != g && w != w {
			continue
		}
		if math.Float32bits(g) != math.Float32bits(w) {
			t.Fatalf("%s[%d] = %v (%#08x), want %v (%#08x)", what, i, g, math.Float32bits(g), w, math.Float32bits(w))
		}
	}
}

func sameBits64(t *testing.T, what string, got, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
			t.Fatalf("%s[%d] = %v, want %v bit for bit", what, i, got[i], want[i])
		}
	}
}

// near fails when got and want differ by more than tol relative to
// max(|want|, floor).
func near[T float32 | float64](t *testing.T, what string, got []T, want []float64, tol, floor float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		d := math.Abs(float64(got[i]) - want[i])
		if !(d <= tol*math.Max(math.Abs(want[i]), floor)) {
			t.Fatalf("%s[%d] = %v, want %v (tolerance %g relative)", what, i, got[i], want[i], tol)
		}
	}
}

func wantErr(t *testing.T, err error, substr string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), substr) {
		t.Fatalf("error %v, want one containing %q", err, substr)
	}
}
