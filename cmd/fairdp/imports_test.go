package main

import (
	"go/build"
	"os"
	"slices"
	"strings"
	"testing"
)

// maxModuleImports is how many of the module's packages the binary may
// import: the loop (trainer), the algorithms it registers (fermi,
// fermi/federated, dpsgdf, linear, tailoring), the accountant (fairdp
// privacy) and the loaders (fairdp data). The binary parses flags, calls
// the library and prints; it does not reach past the library into layers,
// BLAS, checkpoints, metrics or noise.
const maxModuleImports = 8

// neverImported are the module's packages the binary must not import (the
// layers and BLAS, the model zoo and checkpoints, metrics and plots, the
// noise primitives, file writing, and Gorgonia's front end).
var neverImported = []string{"nn", "backend", "models", "metrics", "dpops", "atomicfile", "graph"}

// TestModuleImports: in the default build cmd/fairdp imports at most
// maxModuleImports of the module's packages and none of neverImported.
func TestModuleImports(t *testing.T) {
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	path, _, _ := strings.Cut(strings.TrimPrefix(strings.SplitN(string(mod), "\n", 2)[0], "module "), " ")
	path = strings.TrimSpace(path)
	pkg, err := build.Default.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	var own []string
	for _, p := range pkg.Imports {
		if rel, ok := strings.CutPrefix(p, path+"/"); ok {
			own = append(own, rel)
		}
	}
	if len(own) > maxModuleImports {
		t.Errorf("cmd/fairdp imports %d of the module's packages (%s), want at most %d", len(own), strings.Join(own, ", "), maxModuleImports)
	}
	for _, p := range own {
		if slices.Contains(neverImported, p) {
			t.Errorf("cmd/fairdp imports %s/%s: the binary speaks to the library, not to %s", path, p, p)
		}
	}
}
