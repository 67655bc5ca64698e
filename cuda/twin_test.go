package cuda

import (
	"math/rand/v2"
	"testing"

	"github.com/fairdp/fairdp/nn"
)

// linearCase runs an nn.Linear forward and backward on random data and
// returns the layer with its taps (x, dy).
func linearCase(r *rand.Rand, n, in, out int) (*nn.Linear[float32], []float32, []float32) {
	l := nn.NewLinear[float32](in, out)
	l.Init(r)
	x := randF32(r, n*in, 1)
	dy := randF32(r, n*out, 0.5)
	l.Forward(x, n, true)
	l.Backward(dy, false)
	return l, x, dy
}

// bruteLinear forms each sample's gradient (a_i ⊗ b_i, b_i) explicitly in
// float64: the squared norms of the weight part and of the bias part, and
// the clipped sums for scale.
func bruteLinear(x, dy, scale []float32, n, in, out int) (sqW, sqB, dw, db []float64) {
	sqW, sqB, dw, db = make([]float64, n), make([]float64, n), make([]float64, in*out), make([]float64, out)
	for i := 0; i < n; i++ {
		for q := 0; q < out; q++ {
			bq := float64(dy[i*out+q])
			for p := 0; p < in; p++ {
				g := float64(x[i*in+p]) * bq
				sqW[i] += g * g
				dw[p*out+q] += float64(scale[i]) * g
			}
			sqB[i] += bq * bq
			db[q] += float64(scale[i]) * bq
		}
	}
	return sqW, sqB, dw, db
}

func plus(a, b []float64) []float64 {
	s := make([]float64, len(a))
	for i := range a {
		s[i] = a[i] + b[i]
	}
	return s
}

func widen(s []float32) []float64 {
	w := make([]float64, len(s))
	for i, v := range s {
		w[i] = float64(v)
	}
	return w
}

func filled64(n int, v float64) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = v
	}
	return s
}

// Linear layers: ghost norms and the clipped sum against brute-force
// per-sample gradients, nn.Linear's SqNorms and ParamGrads(scale), and
// bit for bit against the twin. Sizes cover rows shorter and longer than a
// block of 256 threads.
func TestLinearNormsAndClippedGrad(t *testing.T) {
	be := backendUnderTest(t)
	r := rand.New(rand.NewPCG(5, 6))
	for _, c := range []struct{ n, in, out int }{{1, 1, 1}, {7, 3, 2}, {33, 300, 5}, {4, 700, 513}} {
		l, x, dy := linearCase(r, c.n, c.in, c.out)
		scale := randF32(r, c.n, 1)
		sqW, sqB, wantDW, wantDB := bruteLinear(x, dy, scale, c.n, c.in, c.out)
		for _, bias := range []bool{true, false} {
			want := sqW
			if bias {
				want = plus(sqW, sqB)
			}
			sq, twin := filled64(c.n, 0.25), filled64(c.n, 0.25) // the kernel adds to what is there
			if err := be.LinearSqNorms(sq, x, dy, c.n, c.in, c.out, bias); err != nil {
				t.Fatal(err)
			}
			near(t, "LinearSqNorms vs brute force", sq, plus(want, filled64(c.n, 0.25)), 1e-12, 0)
			if err := (CPU{}).LinearSqNorms(twin, x, dy, c.n, c.in, c.out, bias); err != nil {
				t.Fatal(err)
			}
			sameBits64(t, be.Name()+" LinearSqNorms vs twin", sq, twin)
		}
		nnSq := make([]float32, c.n)
		l.SqNorms(nnSq)
		near(t, "nn.Linear.SqNorms vs brute force", nnSq, plus(sqW, sqB), 1e-5, 0)

		// Clipped sum, added to gradients that already hold something.
		dw0, db0 := randF32(r, c.in*c.out, 1), randF32(r, c.out, 1)
		dw, db := append([]float32(nil), dw0...), append([]float32(nil), db0...)
		if err := be.LinearClippedGrad(dw, db, x, dy, scale, c.n, c.in, c.out); err != nil {
			t.Fatal(err)
		}
		near(t, "LinearClippedGrad dw vs brute force", dw, plus(wantDW, widen(dw0)), 1e-6, 1)
		near(t, "LinearClippedGrad db vs brute force", db, plus(wantDB, widen(db0)), 1e-6, 1)
		tw, tb := append([]float32(nil), dw0...), append([]float32(nil), db0...)
		if err := (CPU{}).LinearClippedGrad(tw, tb, x, dy, scale, c.n, c.in, c.out); err != nil {
			t.Fatal(err)
		}
		sameBits32(t, be.Name()+" LinearClippedGrad dw vs twin", dw, tw)
		sameBits32(t, be.Name()+" LinearClippedGrad db vs twin", db, tb)
		noBias := append([]float32(nil), dw0...)
		if err := be.LinearClippedGrad(noBias, nil, x, dy, scale, c.n, c.in, c.out); err != nil {
			t.Fatal(err)
		}
		sameBits32(t, "LinearClippedGrad without bias", noBias, dw)

		l.ParamGrads(scale)
		p := l.Params()
		near(t, "nn.Linear.ParamGrads weight vs brute force", p[0].Grad, wantDW, 1e-5, 1)
		near(t, "nn.Linear.ParamGrads bias vs brute force", p[1].Grad, wantDB, 1e-5, 1)
	}
}

// ScaleRows gives nn's scaled backprop: ParamGrads(nil) over ScaleRows'
// output equals ParamGrads(scale) bit for bit.
func TestScaleRows(t *testing.T) {
	be := backendUnderTest(t)
	dst := make([]float32, 6)
	if err := be.ScaleRows(dst, []float32{1, 2, 3, 4, 5, 6}, []float32{0.5, 2}, 3); err != nil {
		t.Fatal(err)
	}
	sameBits32(t, "ScaleRows", dst, []float32{0.5, 1, 1.5, 8, 10, 12})

	r := rand.New(rand.NewPCG(7, 8))
	const n, in, out = 9, 5, 4
	l, x, dy := linearCase(r, n, in, out)
	scale := randF32(r, n, 1)
	l.ParamGrads(scale)
	want := append([]float32(nil), l.Params()[0].Grad...)
	scaled := append([]float32(nil), dy...)
	if err := be.ScaleRows(scaled, scaled, scale, out); err != nil { // in place
		t.Fatal(err)
	}
	l2 := nn.NewLinear[float32](in, out)
	l2.Forward(x, n, true)
	l2.Backward(scaled, false)
	l2.ParamGrads(nil)
	sameBits32(t, "ParamGrads(nil) of scaled rows vs ParamGrads(scale)", l2.Params()[0].Grad, want)
}

// BiasAdd: a table, and nn.Linear's forward is x·W + b.
func TestBiasAdd(t *testing.T) {
	be := backendUnderTest(t)
	y := []float32{1, 2, 3, 4, 5, 6, 7, 8}
	if err := be.BiasAdd(y, []float32{10, 20}, 2, 2, 2); err != nil {
		t.Fatal(err)
	}
	sameBits32(t, "BiasAdd", y, []float32{11, 12, 23, 24, 15, 16, 27, 28})

	r := rand.New(rand.NewPCG(9, 10))
	const n, in, out = 6, 4, 3
	l := nn.NewLinear[float32](in, out)
	l.Init(r)
	x := randF32(r, n*in, 1)
	got := make([]float32, n*out)
	w, b := l.Params()[0].Value, l.Params()[1].Value
	for i := 0; i < n; i++ {
		for q := 0; q < out; q++ {
			s := float32(0)
			for p := 0; p < in; p++ {
				s += x[i*in+p] * w[p*out+q]
			}
			got[i*out+q] = s
		}
	}
	if err := be.BiasAdd(got, b, n, out, 1); err != nil {
		t.Fatal(err)
	}
	near(t, "x·W then BiasAdd vs nn.Linear.Forward", got, widen(l.Forward(x, n, false)), 1e-6, 1)
}
