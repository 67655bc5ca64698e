//go:build !unix

package gemm_test

// cpuSeconds is unavailable here; GFLOP/cpu-s is then not reported.
func cpuSeconds() float64 { return 0 }
