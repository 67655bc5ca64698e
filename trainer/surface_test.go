package trainer

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestExportedSurface holds the package's exported names (functions,
// types, constants and variables; methods are their types') to the list in
// testdata/exported.txt. NewPrivate and TrainPrivate are the one way in;
// every other name is there for the command line or the algorithm packages
// (doc.go, "One way in"), so a name added or removed must change the list
// in the same commit, with the reason in the commit.
func TestExportedSurface(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range af.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Name.IsExported() {
					got = append(got, d.Name.Name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							got = append(got, s.Name.Name)
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								got = append(got, n.Name)
							}
						}
					}
				}
			}
		}
	}
	slices.Sort(got)
	raw, err := os.ReadFile(filepath.Join("testdata", "exported.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, l := range strings.Split(string(raw), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			want = append(want, l)
		}
	}
	slices.Sort(want)
	for _, n := range got {
		if _, ok := slices.BinarySearch(want, n); !ok {
			t.Errorf("exported %s is not in testdata/exported.txt: unexport it, or add it there saying who outside the package needs it", n)
		}
	}
	for _, n := range want {
		if _, ok := slices.BinarySearch(got, n); !ok {
			t.Errorf("testdata/exported.txt lists %s, which the package no longer exports: remove it", n)
		}
	}
}
