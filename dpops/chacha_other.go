//go:build !amd64 || purego

package dpops

// block16Kernels lists the assembly kernels this CPU runs: none here, so
// drawing in bulk is off (fastChaCha) and block16 stays block16Go.
func block16Kernels() map[string]func(*[4]uint64, *[128]uint64) {
	return map[string]func(*[4]uint64, *[128]uint64){}
}
