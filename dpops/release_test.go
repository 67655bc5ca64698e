package dpops

import (
	"math"
	mrand "math/rand/v2"
	"testing"

	"github.com/fairdp/fairdp/nn"
)

// TestNoiseAndScale: with no noise the gradients are only scaled; with
// noise every value moves, and the hardened variant lands on its lattice.
func TestNoiseAndScale(t *testing.T) {
	seed := uint64(3)
	r, _ := NewRand(&seed)
	p := &nn.Param[float64]{Grad: []float64{2, -4, 6}}
	if err := NoiseAndScale(r, []*nn.Param[float64]{p}, 0, 0.5); err != nil {
		t.Fatal(err)
	}
	if p.Grad[0] != 1 || p.Grad[1] != -2 || p.Grad[2] != 3 {
		t.Errorf("std 0: %v, want the gradients halved", p.Grad)
	}
	q := &nn.Param[float64]{Grad: []float64{1, 1, 1}}
	if err := NoiseAndScaleHardened(r, []*nn.Param[float64]{q}, 1, 1); err != nil {
		t.Fatal(err)
	}
	g := ceilPowerOfTwo(2 / float64(binomialBound))
	for i, v := range q.Grad {
		if v == 1 || v/g != float64(int64(v/g)) {
			t.Errorf("hardened value %d = %v: unchanged or off the lattice %v", i, v, g)
		}
	}
	if err := NoiseAndScale(r, []*nn.Param[float64]{p}, -1, 1); err == nil {
		t.Error("negative std accepted")
	}
}

// TestNoiseAndScaleDrawnMatches checks that noise drawn ahead by Normals and
// added by NoiseAndScaleDrawn is bit for bit NoiseAndScale's from the same
// stream (float32 and float64 gradients, several parameters), that the
// stream ends in the same place, and that a wrong count is refused; with
// the bulk ChaCha8 stream where the CPU has it and without.
func TestNoiseAndScaleDrawnMatches(t *testing.T) {
	check := func(t *testing.T, sizes []int) {
		mk := func() []*nn.Param[float32] {
			var ps []*nn.Param[float32]
			for k, n := range sizes {
				p := &nn.Param[float32]{Grad: make([]float32, n)}
				for i := range p.Grad {
					p.Grad[i] = float32(i*7%11) - 5 + float32(k)/3
				}
				ps = append(ps, p)
			}
			return ps
		}
		want, got := mk(), mk()
		src1, src2 := mrand.NewChaCha8([32]byte{9}), mrand.NewChaCha8([32]byte{9})
		r1, r2 := mrand.New(src1), src2
		if err := NoiseAndScale(r1, want, 0.7, 1.0/3); err != nil {
			t.Fatal(err)
		}
		total := 0
		for _, n := range sizes {
			total += n
		}
		var d Normals
		d.Start(r2, total)
		if err := NoiseAndScaleDrawn(d.Wait(), got, 0.7, 1.0/3); err != nil {
			t.Fatal(err)
		}
		for k := range want {
			for i := range want[k].Grad {
				if math.Float32bits(want[k].Grad[i]) != math.Float32bits(got[k].Grad[i]) {
					t.Fatalf("param %d value %d: drawn ahead %v, NoiseAndScale %v", k, i, got[k].Grad[i], want[k].Grad[i])
				}
			}
		}
		if a, b := r1.Uint64(), r2.Uint64(); a != b {
			t.Fatalf("the streams end in different places: next %#x and %#x", a, b)
		}
		if err := NoiseAndScaleDrawn(d.Wait()[:max(0, total-1)], mk(), 0.7, 1); total > 0 && err == nil {
			t.Fatal("one value short was accepted")
		}
	}
	for _, fast := range []bool{false, fastChaCha} {
		save := fastChaCha
		fastChaCha = fast // false: one NormFloat64 at a time
		for _, sizes := range [][]int{{5}, {3, 1, 17}, {1000, 1}, {}, {123}, {124}, {30000, 7, 1}} {
			check(t, sizes)
		}
		fastChaCha = save
	}
}

// BenchmarkNoiseAndScaleDrawn: the end of a DP-SGD step for the MNIST
// CNN's 431K float32 gradients, the noise drawn ahead.
func BenchmarkNoiseAndScaleDrawn(b *testing.B) {
	const n = 431080
	z := make([]float64, n)
	drawNormals(mrand.NewChaCha8([32]byte{1}), z, new(chachaStream))
	params := []*nn.Param[float32]{{Grad: make([]float32, n)}}
	for b.Loop() {
		if err := NoiseAndScaleDrawn(z, params, 1.1, 1.0/256); err != nil {
			b.Fatal(err)
		}
	}
}
