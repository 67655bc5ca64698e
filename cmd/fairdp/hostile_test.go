package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestHostileInputsNeverPanic checks the rule "no input a user
// can give may produce a Go stack trace": odd data and odd flags end in a
// result or an error, never a panic (a panic fails this test).
func TestHostileInputsNeverPanic(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	rows := func(n int, row func(i int) string) string {
		var b strings.Builder
		b.WriteString("x,s,y\n")
		for i := range n {
			b.WriteString(row(i) + "\n")
		}
		return b.String()
	}
	schema := write("s.json", `{"format": {"header": true}, "label": {"column": "y", "positive": ["1"]}, "sensitive": {"columns": ["s"]}, "numeric": ["x"]}`)
	regression := write("r.json", `{"format": {"header": true}, "target": "y", "sensitive": {"columns": ["s"]}, "numeric": ["x"]}`)
	good := write("good.csv", rows(120, func(i int) string {
		return strconv.Itoa(i%9) + "," + []string{"a", "b"}[i%2] + "," + strconv.Itoa(i%3%2)
	}))
	oneClass := write("oneclass.csv", rows(60, func(i int) string { return strconv.Itoa(i) + "," + []string{"a", "b"}[i%2] + ",0" }))
	empty := write("empty.csv", "x,s,y\n")
	oneRow := write("one.csv", rows(1, func(int) string { return "1,a,1" }))
	allMissing := write("missing.csv", rows(40, func(i int) string { return "?," + []string{"a", "b"}[i%2] + ",1" }))
	ragged := write("ragged.csv", "x,s,y\n1,a,1\n2,b\n")
	for _, args := range [][]string{
		{"--dataset", good, "--schema", regression},
		{"--dataset", oneClass, "--schema", schema},
		{"--dataset", empty, "--schema", schema},
		{"--dataset", oneRow, "--schema", schema},
		{"--dataset", allMissing, "--schema", schema},
		{"--dataset", ragged, "--schema", schema},
		{"--dataset", good, "--schema", schema, "--batch", "1000"},
		{"--dataset", good, "--schema", schema, "--epochs", "0"},
		{"--dataset", good, "--schema", schema, "--lr", "1e30"},
		{"--dataset", good, "--schema", schema, "--lr", "-1"},
		{"--dataset", good, "--schema", schema, "--clip", "0"},
		{"--dataset", good, "--schema", schema, "--model", "mnist-cnn"},
		{"--dataset", good, "--schema", schema, "--model", "mlp", "--hidden", "0"},
		{"--dataset", good, "--schema", schema, "--sigma", "1e-300"},
		{"--dataset", good, "--schema", write("bad.json", "{")},
		{"--dataset", filepath.Join(dir, "nope.csv"), "--schema", schema},
	} {
		for _, algo := range []string{"sgd", "dpsgd", "dpsgdf", "fermi", "steffle", "postproc", "oracle"} {
			a := append([]string{"train", "--algo", algo, "--quiet", "--seed", "1"}, args...)
			if algo != "postproc" && algo != "oracle" {
				if !contains(args, "--epochs") {
					a = append(a, "--epochs", "1")
				}
				if !contains(args, "--batch") {
					a = append(a, "--batch", "16")
				}
			}
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Errorf("fairdp %s panicked: %v", strings.Join(a, " "), r)
					}
				}()
				if _, _, err := runCLI(t, a...); testing.Verbose() {
					t.Logf("%s: %v", strings.Join(a[1:3], " "), err)
				}
			}()
		}
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
