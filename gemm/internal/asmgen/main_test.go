package main

import (
	"bytes"
	"os"
	"testing"
)

// TestCommittedAssemblyIsCurrent: gemm/kernels_amd64.s is what this
// generator writes, so the committed kernels and their generator cannot
// drift apart (run go generate ./gemm after changing either).
func TestCommittedAssemblyIsCurrent(t *testing.T) {
	want, err := generate()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../kernels_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("gemm/kernels_amd64.s differs from the generator's output: run go generate ./gemm")
	}
}
