package nn_test

import (
	"testing"

	"github.com/fairdp/fairdp/backend"
	"github.com/fairdp/fairdp/nn"
)

// TestStepDoesNotAllocate runs training steps (plain and DP) with a
// varying Poisson-like batch size and checks that, once buffers have grown
// to the largest batch, a step allocates nothing. The small model keeps
// every product below the size at which gonum's pure-Go GEMM starts
// goroutines (which allocate), so the check holds in both builds; the
// benchmark-size model is checked in the OpenBLAS build only.
func TestStepDoesNotAllocate(t *testing.T) {
	small := newStack([]int{2, 5, 5},
		nn.NewConv2d[float32](2, 5, 5, 4, 3, 1, 1), nn.NewReLU[float32](), nn.NewMaxPool2d[float32](4, 5, 5, 2),
		nn.NewGroupNorm[float32](2, 4, 2, 2), nn.NewLeakyReLU[float32](0.1), nn.NewFlatten[float32](),
		nn.NewLinear[float32](16, 8), nn.NewTanh[float32](), nn.NewLinear[float32](8, 3))
	checkNoAllocs(t, small, []int{2, 0, 1, 3})
	if backend.Name() != "openblas" {
		t.Log("benchmark-size model skipped: gonum's pure-Go GEMM allocates for large products")
		return
	}
	checkNoAllocs(t, mnistCNN(), []int{64, 60, 3, 0, 50})
}

func checkNoAllocs(t *testing.T, s *stack, batches []int) {
	t.Helper()
	maxBatch := 0
	for _, b := range batches {
		maxBatch = max(maxBatch, b)
	}
	bufs := s.bufs(maxBatch)
	for _, dp := range []bool{false, true} {
		for _, b := range batches { // grow every buffer once
			s.step(bufs, b, dp)
		}
		k := 0
		allocs := testing.AllocsPerRun(10, func() {
			s.step(bufs, batches[k%len(batches)], dp)
			k++
		})
		if allocs != 0 {
			t.Errorf("dp=%v: %.1f allocations per step in steady state, want 0", dp, allocs)
		}
	}
}
