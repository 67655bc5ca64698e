package trainer

import (
	"os/exec"
	"strings"
	"testing"
)

// The loop and the algorithms see a device only through Device: neither
// trainer nor fermi (nor anything they import) may import package cuda, in
// the default build or with the tags that build it. Checked with `go list
// -deps`; skipped where the go command is not on PATH (a test binary run
// elsewhere).
func TestNoDeviceCodeBelowTheBinary(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	if testing.Short() {
		t.Skip("runs go list three times")
	}
	for _, tags := range []string{"", "cudaemu", "cuda"} {
		out, err := exec.Command(goCmd, "list", "-tags", tags, "-deps", "github.com/fairdp/fairdp/trainer", "github.com/fairdp/fairdp/fermi").CombinedOutput()
		if err != nil {
			t.Fatalf("go list -tags %q: %v\n%s", tags, err, out)
		}
		for _, pkg := range strings.Fields(string(out)) {
			if pkg == "github.com/fairdp/fairdp/cuda" || strings.HasPrefix(pkg, "github.com/fairdp/fairdp/cuda/") {
				t.Errorf("with tags %q, trainer or fermi depends on %s: a device is registered from the binary (trainer.RegisterDevice), never imported below it", tags, pkg)
			}
		}
	}
}
