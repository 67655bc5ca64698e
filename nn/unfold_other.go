//go:build !amd64 || purego

package nn

// copyRowsPadAsm has no assembly here: copyRowsPad runs its Go loop.
func copyRowsPadAsm[T Float](dst, src []T, m rowMove) bool { return false }

// addRowsAsm has no assembly here: addRows runs its Go loop.
func addRowsAsm[T Float](dst, src []T, m rowMove) bool { return false }

// copyPiecesAsm has no assembly here: copyPieces runs its Go loop.
func copyPiecesAsm[T Float](dst, src []T, m pieceMove) bool { return false }
