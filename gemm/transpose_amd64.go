//go:build amd64 && !purego

package gemm

import "golang.org/x/sys/cpu"

// transpose8Strip is transpose_amd64.s: n 8×8 blocks of a strip of eight
// source rows, scaled by f, into eight-column slices of destination rows.
//
//go:noescape
func transpose8Strip(dst *float32, ldd int, src *float32, lds int, f float32, n int)

var haveTranspose8 = cpu.X86.HasAVX

// transposeRows8 handles the first rows−rows%8 source rows of
// transposePanel, eight at a time and eight columns per block (the last
// kb%8 columns in Go); it returns how many rows it did.
func transposeRows8(pan []float32, w int, src []float32, ld, r0, p0, rows, kb int, f float32) int {
	if !haveTranspose8 || kb < 8 {
		return 0
	}
	nb := kb / 8
	done := rows / 8 * 8
	for r := 0; r < done; r += 8 {
		// Bounds: the strip reads rows r0+r…r0+r+7, columns p0…p0+8nb−1 and
		// writes pan rows 0…8nb−1, columns r…r+7.
		_ = src[(r0+r+7)*ld+p0+8*nb-1]
		_ = pan[(8*nb-1)*w+r+7]
		transpose8Strip(&pan[r], w, &src[(r0+r)*ld+p0], ld, f, nb)
		for i := r; i < r+8; i++ {
			s := src[(r0+i)*ld+p0:][:kb]
			for p := 8 * nb; p < kb; p++ {
				pan[p*w+i] = f * s[p]
			}
		}
	}
	return done
}
