package dpops

import (
	mrand "math/rand/v2"
	"testing"
)

// TestBlock16MatchesChaCha8 checks both block16 kernels against Go's
// ChaCha8 itself: the 124 values of a seed, then the next seed's, over
// several reseeds from random seeds.
func TestBlock16MatchesChaCha8(t *testing.T) {
	kernels := block16Kernels()
	kernels["go"] = block16Go
	for name, kernel := range kernels {
		for trial := range 5 {
			var key [32]byte
			key[0], key[31] = byte(trial), 0x5a
			c := mrand.NewChaCha8(key)
			var s chachaStream
			if !s.load(c) {
				t.Fatalf("%s: a fresh ChaCha8 does not load", name)
			}
			kernel(&s.seed, &s.buf) // load used block16; redo with this kernel
			for k := range 5 * chachaValues {
				want := c.Uint64()
				if s.used == chachaValues {
					copy(s.seed[:], s.buf[chachaValues:])
					kernel(&s.seed, &s.buf)
					s.used = 0
				}
				got := s.buf[s.used]
				s.used++
				if got != want {
					t.Fatalf("%s trial %d: value %d = %#x, ChaCha8 gives %#x", name, trial, k, got, want)
				}
			}
		}
	}
}

// TestFastNormalsMatchNormFloat64 checks that a chachaStream's normals are
// (*rand.Rand).NormFloat64's from the same generator, bit for bit, from
// positions inside a seed, and that store leaves the generator where the
// one-by-one draws leave it.
func TestFastNormalsMatchNormFloat64(t *testing.T) {
	kernels := block16Kernels()
	kernels["go"] = block16Go
	save := block16
	defer func() { block16 = save }()
	for name, kernel := range kernels {
		block16 = kernel
		for _, n := range []int{0, 1, 123, 124, 125, 1000, 100003} {
			for _, skip := range []int{0, 1, 61, 123, 124, 125} {
				key := [32]byte{byte(n), byte(skip), 7}
				ref, fast := mrand.NewChaCha8(key), mrand.NewChaCha8(key)
				for range skip {
					ref.Uint64()
					fast.Uint64()
				}
				r := mrand.New(ref)
				want := make([]float64, n)
				for i := range want {
					want[i] = r.NormFloat64()
				}
				var s chachaStream
				if !s.load(fast) {
					t.Fatal("ChaCha8 does not load")
				}
				got := make([]float64, n)
				s.normals(got)
				if err := s.store(fast); err != nil {
					t.Fatal(err)
				}
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("%s, n=%d skip=%d: draw %d = %v, NormFloat64 gives %v", name, n, skip, i, got[i], want[i])
					}
				}
				if a, b := ref.Uint64(), fast.Uint64(); a != b {
					t.Fatalf("%s, n=%d skip=%d: the generator is left elsewhere (%#x, want %#x)", name, n, skip, b, a)
				}
			}
		}
	}
}

// TestChaChaStreamRefusesReadBuffer: a generator that Read left bytes in
// has a longer encoding; load refuses it (the caller then draws one by
// one) rather than lose the buffered bytes.
func TestChaChaStreamRefusesReadBuffer(t *testing.T) {
	c := mrand.NewChaCha8([32]byte{1})
	var p [3]byte
	c.Read(p[:])
	var s chachaStream
	if s.load(c) {
		t.Fatal("a ChaCha8 with buffered Read bytes was loaded")
	}
	z := make([]float64, 500)
	drawNormals(c, z, &s) // falls back to NormFloat64
	ref := mrand.NewChaCha8([32]byte{1})
	ref.Read(p[:])
	r := mrand.New(ref)
	for i, v := range z {
		if w := r.NormFloat64(); v != w {
			t.Fatalf("draw %d = %v, want %v", i, v, w)
		}
	}
}

func BenchmarkNormals(b *testing.B) {
	const n = 431080 // the MNIST CNN's parameters
	z := make([]float64, n)
	b.Run("NormFloat64", func(b *testing.B) {
		r := mrand.New(mrand.NewChaCha8([32]byte{1}))
		for b.Loop() {
			for i := range z {
				z[i] = r.NormFloat64()
			}
		}
	})
	kernels := block16Kernels()
	kernels["go"] = block16Go
	for name, kernel := range kernels {
		b.Run("stream/"+name, func(b *testing.B) {
			save := block16
			block16 = kernel
			defer func() { block16 = save }()
			c := mrand.NewChaCha8([32]byte{1})
			var s chachaStream
			for b.Loop() {
				s.load(c)
				s.normals(z)
				s.store(c)
			}
		})
	}
	b.Run("uint64/ChaCha8", func(b *testing.B) {
		c := mrand.NewChaCha8([32]byte{1})
		for b.Loop() {
			for range n {
				c.Uint64()
			}
		}
	})
	b.Run("uint64/stream", func(b *testing.B) {
		c := mrand.NewChaCha8([32]byte{1})
		var s chachaStream
		s.load(c)
		for b.Loop() {
			for range n {
				s.next()
			}
		}
	})
}

func BenchmarkBlock16(b *testing.B) {
	var seed [4]uint64
	var buf [128]uint64
	kernels := block16Kernels()
	kernels["go"] = block16Go
	for name, kernel := range kernels {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				kernel(&seed, &buf)
			}
		})
	}
}
