package main

import (
	"bytes"
	"os"
	"testing"
)

// TestCommittedAssemblyIsCurrent: dpops/chacha_amd64.s is what this
// generator writes, so the committed kernels and their generator cannot
// drift apart (run go generate ./dpops after changing either).
func TestCommittedAssemblyIsCurrent(t *testing.T) {
	got, err := os.ReadFile("../../chacha_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, generate()) {
		t.Fatal("dpops/chacha_amd64.s differs from the generator's output: run go generate ./dpops")
	}
}
