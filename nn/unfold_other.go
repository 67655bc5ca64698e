//go:build !amd64 || purego

package nn

// movePiecesAsm has no assembly here: movePieces runs its Go loop.
func movePiecesAsm[T Float](dst, src []T, m pieceMove) bool { return false }

// addRowsAsm has no assembly here: addRows runs its Go loop.
func addRowsAsm[T Float](dst, src []T, m rowAdd) bool { return false }
