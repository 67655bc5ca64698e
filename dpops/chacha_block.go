package dpops

// block16 computes the 16 blocks of one chacha8rand seed (block16Go, or
// its assembly where the CPU has it).
var block16 = block16Go

// fastChaCha reports whether block16 is assembly that beats Go's own
// ChaCha8 (four SSE2 blocks per call): only then does drawing in bulk go
// through a chachaStream.
var fastChaCha = false
