package gemm

// Kernels names every kernel this CPU can run, fastest first (for the
// comparison benchmarks, which select them with Use).
func Kernels() []string {
	var names []string
	for _, k := range kernels() {
		names = append(names, k.name)
	}
	return names
}

// BestISA is the instruction set Sgemm uses by default ("avx512", "avx2" or "go").
func BestISA() string { return kernels()[0].isa }

// Stored is stored, for the benchmarks.
var Stored = stored
