//go:build cuda

package cuda

import (
	"debug/elf"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// A cuda build loads cuBLAS at run time: linked with -lcublas, a binary
// built against one CUDA version would not start on a host with another
// (libcublas.so.11, .12 and .13 are different sonames) nor on one without
// the toolkit. The test binary is such a build; it must not need libcublas.
func TestBinaryDoesNotLinkCublas(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	libs, err := f.ImportedLibraries()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range libs {
		if strings.HasPrefix(l, "libcublas") {
			t.Errorf("the cuda build links %s at load time (needed: %v); cuBLAS must be dlopened", l, libs)
		}
	}
}

// With FAIRDP_CUBLAS pointing at a library that is not there, Check fails
// with an error that names the variable, the path and the fix. cuBLAS is
// loaded once per process, so the check runs in a child process.
func TestCublasMissingIsClear(t *testing.T) {
	if os.Getenv("FAIRDP_CUBLAS_CHILD") == "1" {
		if err := Check(); err != nil {
			os.Stdout.WriteString("CHECK: " + err.Error() + "\n")
		} else {
			os.Stdout.WriteString("CHECK: nil\n")
		}
		return
	}
	if err := probeDriverOnly(); err != nil {
		skipOrFail(t, err)
	}
	const path = "/nonexistent/libcublas.so.42"
	cmd := exec.Command(os.Args[0], "-test.run", "^TestCublasMissingIsClear$", "-test.count", "1")
	cmd.Env = append(os.Environ(), "FAIRDP_CUBLAS_CHILD=1", CublasEnv+"="+path)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	for _, want := range []string{"CHECK: ", CublasEnv + "=" + path, "cuBLAS could not be loaded", "libcublas.so.N"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("Check with %s=%s said:\n%s\nwant it to contain %q", CublasEnv, path, out, want)
		}
	}
}

// probeDriverOnly is Check without cuBLAS: whether there is a driver and a
// device at all (the test above is about cuBLAS only).
func probeDriverOnly() error {
	err := Check()
	if err != nil && strings.Contains(err.Error(), "cuBLAS") {
		return nil
	}
	return err
}

func skipOrFail(t *testing.T, err error) {
	t.Helper()
	if errors.Is(err, ErrUnavailable) && os.Getenv("FAIRDP_REQUIRE_DEVICE") == "" {
		t.Skipf("no CUDA device: %v", err)
	}
	t.Fatal(err)
}

// TestDeviceProbe opens GPU 0 (driver, context, stream, cuBLAS, every PTX
// module) and logs what it found on a line that starts with "DEVICE: ";
// gpu-check.sh runs it first to decide whether there is a GPU to test.
func TestDeviceProbe(t *testing.T) {
	if err := Check(); err != nil {
		skipOrFail(t, err)
	}
	d, err := NewDriver(0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	t.Logf("DEVICE: %s", d.Name())
}

// A device-resident step on the driver is one hop to the driver's locked
// thread (Driver.Do), not one per launch, GEMM and copy: steady-state
// DP-SGD steps of an MLP and of a small CNN each send one closure.
func TestDriverStepIsOneHop(t *testing.T) {
	drv, ok := deviceUnderTest(t).(*Driver)
	if !ok {
		t.Skip("needs the driver (FAIRDP_DEVICE=cuda)")
	}
	plan := cnnPlan{name: "cnn", c: 1, h: 12, w: 12, convs: []ConvGeom{{OutC: 4, K: 3, Stride: 1}}, pools: []int{2},
		hidden: []int{8}, classes: 3}
	r := rand.New(rand.NewPCG(81, 82))
	_, spec := plan.build(r)
	net, err := NewDeviceNet(drv, spec)
	if err != nil {
		t.Fatal(err)
	}
	defer net.Close()
	x, y := mlpBatch(r, 16, 144, 3)
	for i := range 3 {
		before := drv.hops
		if _, err := net.Step(x, y, DPSGDStep{Clip: 1, NoiseStd: 1, Scale: 1.0 / 16, LR: 0.1, Seed: NewNoiseSeed(r)}); err != nil {
			t.Fatal(err)
		}
		if hops := drv.hops - before; hops != 1 {
			t.Errorf("step %d: %d hops to the driver's thread, want 1", i, hops)
		}
	}
}
