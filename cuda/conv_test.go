package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/fairdp/fairdp/nn"
)

// bruteConv forms each sample's convolution gradient from the definition
// (no unfolding) in float64: per-sample squared norms of [weight | bias]
// and the clipped sums for scale.
func bruteConv(x, dy, scale []float32, g ConvGeom, n int) (sq, dw, db []float64) {
	oh, ow := g.OutHW()
	sq, dw, db = make([]float64, n), make([]float64, g.OutC*g.CKK()), make([]float64, g.OutC)
	gi := make([]float64, g.CKK()+1)
	for i := 0; i < n; i++ {
		for o := 0; o < g.OutC; o++ {
			clear(gi)
			for h := 0; h < oh; h++ {
				for w := 0; w < ow; w++ {
					d := float64(dy[((i*g.OutC+o)*oh+h)*ow+w])
					gi[g.CKK()] += d
					for ci := 0; ci < g.InC; ci++ {
						for ki := 0; ki < g.K; ki++ {
							for kj := 0; kj < g.K; kj++ {
								ih, iw := h*g.Stride-g.Pad+ki, w*g.Stride-g.Pad+kj
								if ih < 0 || ih >= g.InH || iw < 0 || iw >= g.InW {
									continue
								}
								gi[(ci*g.K+ki)*g.K+kj] += d * float64(x[((i*g.InC+ci)*g.InH+ih)*g.InW+iw])
							}
						}
					}
				}
			}
			for r, v := range gi {
				sq[i] += v * v
				if r < g.CKK() {
					dw[o*g.CKK()+r] += float64(scale[i]) * v
				} else {
					db[o] += float64(scale[i]) * v
				}
			}
		}
	}
	return sq, dw, db
}

var convGeoms = []ConvGeom{
	{InC: 1, InH: 5, InW: 5, OutC: 2, K: 3, Stride: 1, Pad: 1},
	{InC: 3, InH: 9, InW: 7, OutC: 4, K: 3, Stride: 2, Pad: 1},
	{InC: 2, InH: 6, InW: 6, OutC: 3, K: 1, Stride: 1, Pad: 0},
	{InC: 4, InH: 8, InW: 8, OutC: 5, K: 5, Stride: 1, Pad: 2},  // ckk+1 = 101 rows
	{InC: 30, InH: 4, InW: 4, OutC: 2, K: 3, Stride: 1, Pad: 1}, // ckk+1 = 271 > 256 threads
}

// Convolutions: unfold, per-sample norms and clipped sum against the
// definition, nn.Conv2d's SqNorms (both methods) and ParamGrads(scale), and
// bit for bit against the twin.
func TestConvNormsAndClippedGrad(t *testing.T) {
	be := backendUnderTest(t)
	r := rand.New(rand.NewPCG(11, 12))
	const n = 3
	for _, g := range convGeoms {
		oh, ow := g.OutHW()
		x := randF32(r, n*g.InC*g.InH*g.InW, 1)
		dy := randF32(r, n*g.OutC*oh*ow, 0.5)
		scale := randF32(r, n, 1)
		wantSq, wantDW, wantDB := bruteConv(x, dy, scale, g, n)

		u := make([]float32, n*(g.CKK()+1)*g.HW())
		if err := be.Im2col(u, x, g, n); err != nil {
			t.Fatal(err)
		}
		tu := make([]float32, len(u))
		if err := (CPU{}).Im2col(tu, x, g, n); err != nil {
			t.Fatal(err)
		}
		sameBits32(t, be.Name()+" Im2col vs twin", u, tu)

		sq := filled64(n, 1)
		if err := be.ConvSqNorms(sq, u, dy, g, n); err != nil {
			t.Fatal(err)
		}
		near(t, "ConvSqNorms vs definition", sq, plus(wantSq, filled64(n, 1)), 1e-12, 0)
		twin := filled64(n, 1)
		if err := (CPU{}).ConvSqNorms(twin, tu, dy, g, n); err != nil {
			t.Fatal(err)
		}
		sameBits64(t, be.Name()+" ConvSqNorms vs twin", sq, twin)

		for _, m := range []nn.NormMethod{nn.NormExplicit, nn.NormGram} {
			c := nn.NewConv2d[float32](g.InC, g.InH, g.InW, g.OutC, g.K, g.Stride, g.Pad)
			c.SetNormMethod(m)
			c.Forward(x, n, true)
			c.Backward(dy, false)
			nnSq := make([]float32, n)
			c.SqNorms(nnSq)
			near(t, "nn.Conv2d.SqNorms ("+m.String()+") vs definition", nnSq, wantSq, 1e-5, 0)
			if m == nn.NormGram {
				c.ParamGrads(scale)
				p := c.Params()
				near(t, "nn.Conv2d.ParamGrads weight vs definition", p[0].Grad, wantDW, 1e-5, 1)
				near(t, "nn.Conv2d.ParamGrads bias vs definition", p[1].Grad, wantDB, 1e-5, 1)
			}
		}

		dw0, db0 := randF32(r, g.OutC*g.CKK(), 1), randF32(r, g.OutC, 1)
		dw, db := append([]float32(nil), dw0...), append([]float32(nil), db0...)
		if err := be.ConvClippedGrad(dw, db, u, dy, scale, g, n); err != nil {
			t.Fatal(err)
		}
		near(t, "ConvClippedGrad dw vs definition", dw, plus(wantDW, widen(dw0)), 1e-6, 1)
		near(t, "ConvClippedGrad db vs definition", db, plus(wantDB, widen(db0)), 1e-6, 1)
		tw, tb := append([]float32(nil), dw0...), append([]float32(nil), db0...)
		if err := (CPU{}).ConvClippedGrad(tw, tb, tu, dy, scale, g, n); err != nil {
			t.Fatal(err)
		}
		sameBits32(t, be.Name()+" ConvClippedGrad dw vs twin", dw, tw)
		sameBits32(t, be.Name()+" ConvClippedGrad db vs twin", db, tb)
	}
}

// Im2col's layout on a case small enough to write out: one 1×3×3 image,
// 2×2 kernel, stride 1, no padding: rows (ki, kj) = (0,0), (0,1), (1,0),
// (1,1), then the ones row; columns are the 2×2 output positions.
func TestIm2colLayout(t *testing.T) {
	be := backendUnderTest(t)
	g := ConvGeom{InC: 1, InH: 3, InW: 3, OutC: 1, K: 2, Stride: 1, Pad: 0}
	u := make([]float32, 5*4)
	if err := be.Im2col(u, []float32{1, 2, 3, 4, 5, 6, 7, 8, 9}, g, 1); err != nil {
		t.Fatal(err)
	}
	sameBits32(t, "Im2col", u, []float32{
		1, 2, 4, 5,
		2, 3, 5, 6,
		4, 5, 7, 8,
		5, 6, 8, 9,
		1, 1, 1, 1,
	})
	// A 1×1 kernel with stride 2 and padding 1 over a 1×2×2 image reads the
	// input at (-1,-1), (-1,1), (1,-1) and (1,1): three zeros of padding and 4.
	g = ConvGeom{InC: 1, InH: 2, InW: 2, OutC: 1, K: 1, Stride: 2, Pad: 1}
	u = make([]float32, 2*4)
	if err := be.Im2col(u, []float32{1, 2, 3, 4}, g, 1); err != nil {
		t.Fatal(err)
	}
	sameBits32(t, "Im2col with padding", u, []float32{0, 0, 0, 4, 1, 1, 1, 1})
}

// Col2im of du_i = Wᵀ·B_i is the convolution's input gradient: nn.Conv2d's
// Backward to 1e-5, and the twin's bits. Col2im is Im2col's adjoint:
// ⟨Im2col(x), du⟩ = ⟨x, Col2im(du)⟩ for random x and du (ones row left out).
func TestCol2imIsConvInputGradient(t *testing.T) {
	be := backendUnderTest(t)
	r := rand.New(rand.NewPCG(19, 20))
	const n = 3
	for _, g := range convGeoms {
		oh, ow := g.OutHW()
		ckk, hw := g.CKK(), g.HW()
		c := nn.NewConv2d[float32](g.InC, g.InH, g.InW, g.OutC, g.K, g.Stride, g.Pad)
		c.Init(r)
		x := randF32(r, n*g.InC*g.InH*g.InW, 1)
		dy := randF32(r, n*g.OutC*oh*ow, 0.5)
		c.Forward(x, n, true)
		want := widen(c.Backward(dy, true))
		w := c.Params()[0].Value // outC × ckk
		du := make([]float32, n*ckk*hw)
		for i := range n {
			for rr := range ckk {
				for p := range hw {
					s := 0.0
					for o := range g.OutC {
						s += float64(w[o*ckk+rr]) * float64(dy[(i*g.OutC+o)*hw+p])
					}
					du[(i*ckk+rr)*hw+p] = float32(s)
				}
			}
		}
		dx := make([]float32, len(x))
		if err := be.Col2im(dx, du, g, n); err != nil {
			t.Fatal(err)
		}
		near(t, fmt.Sprintf("Col2im(Wᵀ·B) vs nn.Conv2d.Backward %+v", g), dx, want, 1e-5, 1)
		twin := make([]float32, len(x))
		must(t, CPU{}.Col2im(twin, du, g, n))
		sameBits32(t, be.Name()+" Col2im vs twin", dx, twin)

		// Adjoint of the unfold.
		u := make([]float32, n*(ckk+1)*hw)
		must(t, be.Im2col(u, x, g, n))
		lhs, rhs := 0.0, 0.0
		for i := range n {
			for j := range ckk * hw {
				lhs += float64(u[(i*(ckk+1))*hw+j]) * float64(du[i*ckk*hw+j])
			}
		}
		for j := range x {
			rhs += float64(x[j]) * float64(dx[j])
		}
		if math.Abs(lhs-rhs) > 1e-4*math.Max(1, math.Abs(lhs)) {
			t.Errorf("%+v: ⟨Im2col(x), du⟩ = %v, ⟨x, Col2im(du)⟩ = %v", g, lhs, rhs)
		}
	}
	wantErr(t, be.Col2im(make([]float32, 3), make([]float32, 9), ConvGeom{InC: 1, InH: 3, InW: 3, OutC: 1, K: 3, Stride: 1}, 1), "input gradient dx has 3 elements, want 9")
}
