// Package docs holds fairdp's user documentation; its test builds and runs
// every Go program in the documents, so that none goes stale.
package docs

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// goBlock is a fenced Go block of a Markdown document.
var goBlock = regexp.MustCompile("(?s)```go\n(.*?)```")

// TestProgramsRunAsWritten extracts every Go program (a ```go block that
// starts with "package main") from README.md and docs/*.md, puts each in a
// module of its own that requires fairdp through a replace directive (as
// README's "Use from Go" tells a user to), and builds and runs it as
// written. A program that no longer compiles against the library, or that
// fails when run, fails the test. Module downloads are off (GOPROXY=off):
// the programs use only what fairdp's go.mod already pins.
func TestProgramsRunAsWritten(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs each documented program (about a minute)")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	docs, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	docs = append([]string{filepath.Join("..", "README.md")}, docs...)
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	goTool := filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	if _, err := os.Stat(goTool); err != nil {
		if goTool, err = exec.LookPath("go"); err != nil {
			t.Skip("no go command to build the programs with")
		}
	}
	programs := 0
	for _, doc := range docs {
		text, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range goBlock.FindAllStringSubmatch(string(text), -1) {
			src := m[1]
			if !strings.HasPrefix(src, "package main\n") {
				continue
			}
			programs++
			name := filepath.Base(doc) + "#" + string(rune('1'+i))
			t.Run(name, func(t *testing.T) {
				dir := t.TempDir()
				mod := "module demo\n\ngo 1.26.0\n\nrequire github.com/fairdp/fairdp v0.0.0\n\nreplace github.com/fairdp/fairdp => " + root + "\n"
				for file, body := range map[string][]byte{"go.mod": []byte(mod), "go.sum": sum, "main.go": []byte(src)} {
					if err := os.WriteFile(filepath.Join(dir, file), body, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
				defer cancel()
				run := func(args ...string) string {
					cmd := exec.CommandContext(ctx, args[0], args[1:]...)
					cmd.Dir = dir
					cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod -buildvcs=false", "GOPROXY=off", "GOWORK=off")
					out, err := cmd.CombinedOutput()
					if err != nil {
						t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
					}
					return string(out)
				}
				run(goTool, "build", "-o", "demo", ".")
				out := run(filepath.Join(dir, "demo"))
				if !strings.Contains(out, "privacy: (ε = ") {
					t.Errorf("the program ran but printed no receipt line:\n%s", out)
				}
				t.Logf("%s", out)
			})
		}
	}
	if programs < 4 {
		t.Errorf("found %d Go programs in README.md and docs/*.md, want at least 4 (README's, library.md's two, gorgonia.md's)", programs)
	}
}
