//go:build amd64 && !purego

package dpops

import "golang.org/x/sys/cpu"

//go:generate go run ./internal/chachagen -o chacha_amd64.s

var (
	haveBlock16AVX512 = cpu.X86.HasAVX512F
	haveBlock16AVX2   = cpu.X86.HasAVX2
)

func init() {
	switch {
	case haveBlock16AVX512:
		block16, fastChaCha = block16AVX512, true
	case haveBlock16AVX2:
		block16, fastChaCha = block16AVX2, true
	}
}

// block16AVX512 is chacha_amd64.s: block16Go with the 16 blocks in the 16
// lanes of one AVX-512 register per state word.
//
//go:noescape
func block16AVX512(seed *[4]uint64, buf *[128]uint64)

// block16AVX2 is chacha_amd64.s: block16Go in two passes of eight blocks,
// one AVX2 register per state word.
//
//go:noescape
func block16AVX2(seed *[4]uint64, buf *[128]uint64)

// block16Kernels lists the assembly kernels this CPU runs, for tests and
// benchmarks.
func block16Kernels() map[string]func(*[4]uint64, *[128]uint64) {
	k := map[string]func(*[4]uint64, *[128]uint64){}
	if haveBlock16AVX512 {
		k["avx512"] = block16AVX512
	}
	if haveBlock16AVX2 {
		k["avx2"] = block16AVX2
	}
	return k
}
