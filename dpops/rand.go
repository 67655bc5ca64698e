package dpops

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	mrand "math/rand/v2"
)

// Source records where a run's randomness came from, so the privacy receipt
// can say whether the noise was secret.
//
// Seeded runs are bit-reproducible (same seed, same code, same Go version give
// the same shuffles, batches and noise) and for exactly that reason are NOT
// private against anyone who knows or can guess the seed: a receipt of a
// seeded run must say so (String does).
//
// Keep the Source that NewRand returned to split further streams with Derive;
// it carries the (unexported) root key, so never log it with %#v.
type Source struct {
	Seeded bool   `json:"seeded"`
	Seed   uint64 `json:"seed"` // meaningful only when Seeded

	key   [32]byte // root key of the run's ChaCha8 streams
	keyed bool     // false for the zero Source, which has no key
}

// seedKeyPrefix domain-separates the key derived from a user seed, so seed s
// here never collides with a ChaCha8 keyed from s by some other code.
const seedKeyPrefix = "fairdp/dpops/seed/v1\x00" // a fixed label, not the import path: changing it changes every seeded run

// NewRand returns the root random stream of a run and its Source.
//
// With a nil seed the stream is Go's ChaCha8 keyed with 256 bits read from
// crypto/rand. ChaCha8 is a cryptographically strong generator (the Go
// documentation says so, and it is the generator Go's runtime uses, with fast
// key erasure: past outputs cannot be recovered from the current state), so
// noise drawn from it is as unpredictable as noise drawn from crypto/rand
// itself, at a fraction of the cost — which matters because every DP-SGD step
// draws one Gaussian per model parameter.
//
// With a seed the key is SHA-256 of the seed: the run is bit-reproducible and
// NOT secure (a 64-bit seed can be guessed, and anyone who knows it can
// subtract the noise). Use seeds for tests, debugging and paper
// reproductions only.
func NewRand(seed *uint64) (*mrand.Rand, Source) {
	var src Source
	if seed == nil {
		// crypto/rand.Read never fails on supported platforms (Go ≥ 1.24
		// crashes the program rather than return short or predictable output).
		_, _ = rand.Read(src.key[:])
	} else {
		src.Seeded, src.Seed = true, *seed
		var buf [len(seedKeyPrefix) + 8]byte
		copy(buf[:], seedKeyPrefix)
		binary.LittleEndian.PutUint64(buf[len(seedKeyPrefix):], *seed)
		src.key = sha256.Sum256(buf[:])
	}
	src.keyed = true
	return mrand.New(mrand.NewChaCha8(src.key)), src
}

// Derive returns an independent random stream named by label (e.g. "shuffle",
// "sampling", "noise", "init"). The stream depends only on the run's root key
// and the label — not on how much randomness was drawn before or on which
// other streams exist — so adding a feature that draws randomness does not
// change the batches or the noise of an otherwise identical seeded run.
// Labels must differ between uses that should be independent; the same label
// always gives the same stream again.
//
// The key of the derived ChaCha8 is HMAC-SHA256(root key, label), a PRF, so
// derived streams of an unseeded run are as secret as the root stream.
// Each *rand.Rand is for one goroutine: derive one stream per worker.
//
// Derive panics on a Source that NewRand did not make (a programming error:
// such a Source has no key and would silently give every run the same noise).
func (s Source) Derive(label string) *mrand.Rand {
	return mrand.New(s.DeriveChaCha8(label))
}

// DeriveChaCha8 is the generator behind Derive(label), for a caller that
// must save and restore its position (its MarshalBinary and
// UnmarshalBinary): a checkpoint of a seeded run saves the sampling and
// noise streams so that the resumed run draws what the uninterrupted run
// would have. A saved position predicts every later draw, so an unseeded
// run's checkpoint must never hold one (trainer re-keys those streams).
func (s Source) DeriveChaCha8(label string) *mrand.ChaCha8 {
	return mrand.NewChaCha8(s.DeriveKey(label))
}

// DeriveKey is the key of the stream Derive(label) returns. It is as secret
// as the stream itself: a key that draws noise must never leave the process.
// A key that only draws the train/test split may be stored (a checkpoint of an
// unseeded run keeps it so that a resumed run trains on the same split, and
// model.ckpt keeps it so that eval scores the model's own held-out records):
// HMAC keys are independent, so it predicts no noise, but with the data file
// it tells which records trained the model, which the receipt's not_covered
// list says.
func (s Source) DeriveKey(label string) [32]byte {
	if !s.keyed {
		panic("dpops: Source.Derive on a Source not made by NewRand (it has no key)")
	}
	mac := hmac.New(sha256.New, s.key[:])
	mac.Write([]byte(label))
	var key [32]byte
	copy(key[:], mac.Sum(nil))
	return key
}

// String describes the source for a privacy receipt.
func (s Source) String() string {
	if s.Seeded {
		return fmt.Sprintf("ChaCha8 keyed from --seed %d: bit-reproducible, NOT secure (noise is predictable from the seed)", s.Seed)
	}
	return "ChaCha8 keyed from crypto/rand (CSPRNG)"
}
