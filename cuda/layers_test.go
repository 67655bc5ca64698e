package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/fairdp/fairdp/nn"
)

var nan32 = float32(math.NaN())

// specials are the values where ReLU's and max-pool's semantics show:
// signed zeros, NaN with either sign bit, infinities.
var specials = []float32{0, float32(math.Copysign(0, -1)), nan32, -nan32, float32(math.Inf(1)), float32(math.Inf(-1)), 1, -1, 1e-45, -1e-45}

// ReLU forward and backward equal nn.ReLU's bit for bit, special values
// included (NaN propagates forward; the backward gate is nn's sign-bit test).
func TestReLUMatchesNN(t *testing.T) {
	be := backendUnderTest(t)
	r := rand.New(rand.NewPCG(15, 16))
	x := append(randF32(r, 1000, 1), specials...)
	dy := append(randF32(r, 1000, 1), specials...)
	dy = append(dy, randF32(r, len(x)-len(dy), 1)...)
	relu := nn.NewReLU[float32]()
	wantY := append([]float32(nil), relu.Forward(x, 1, true)...)
	wantDX := relu.Backward(dy, true)
	y, dx := make([]float32, len(x)), make([]float32, len(x))
	if err := be.ReLUForward(y, x); err != nil {
		t.Fatal(err)
	}
	sameBits32(t, "ReLUForward vs nn.ReLU", y, wantY)
	if err := be.ReLUBackward(dx, y, dy); err != nil {
		t.Fatal(err)
	}
	sameBits32(t, "ReLUBackward vs nn.ReLU", dx, wantDX)
	// -0 becomes +0 forward; NaN stays NaN.
	y2 := make([]float32, 3)
	if err := be.ReLUForward(y2, []float32{float32(math.Copysign(0, -1)), nan32, -2}); err != nil {
		t.Fatal(err)
	}
	if math.Float32bits(y2[0]) != 0 || y2[1] == y2[1] || y2[2] != 0 {
		t.Errorf("ReLU(-0, NaN, -2) = %v, want (+0, NaN, 0)", y2)
	}
	wantErr(t, be.ReLUForward(make([]float32, 2), x), "y has 2 elements")
	wantErr(t, be.ReLUBackward(make([]float32, 2), y, dy), "dx has 2 elements")
}

// Max-pool forward and backward equal nn.MaxPool2d's bit for bit: k = 2
// (nn's special case) and 3, sizes that leave trailing rows and columns,
// ties, signed zeros and NaN; the arg-max is checked on a literal case.
func TestMaxPoolMatchesNN(t *testing.T) {
	be := backendUnderTest(t)
	r := rand.New(rand.NewPCG(17, 18))
	for _, g := range []PoolGeom{{C: 3, H: 8, W: 8, K: 2}, {C: 2, H: 7, W: 9, K: 2}, {C: 2, H: 10, W: 11, K: 3}, {C: 1, H: 3, W: 3, K: 3}} {
		const n = 4
		x := randF32(r, n*g.C*g.H*g.W, 1)
		for i := range x {
			switch r.IntN(8) {
			case 0:
				x[i] = float32(r.IntN(3)) // ties
			case 1:
				x[i] = specials[r.IntN(len(specials))]
			}
		}
		oh, ow := g.OutHW()
		dy := randF32(r, n*g.C*oh*ow, 1)
		dy[0] = float32(math.Copysign(0, -1))
		pool := nn.NewMaxPool2d[float32](g.C, g.H, g.W, g.K)
		wantY := append([]float32(nil), pool.Forward(x, n, true)...)
		wantDX := pool.Backward(dy, true)
		y, arg := make([]float32, len(wantY)), make([]int32, len(wantY))
		if err := be.MaxPoolForward(y, arg, x, g, n); err != nil {
			t.Fatal(err)
		}
		sameBits32(t, "MaxPoolForward vs nn.MaxPool2d", y, wantY)
		dx := make([]float32, len(x))
		for i := range dx {
			dx[i] = 99 // every element is written
		}
		if err := be.MaxPoolBackward(dx, dy, arg, g, n); err != nil {
			t.Fatal(err)
		}
		sameBits32(t, "MaxPoolBackward vs nn.MaxPool2d", dx, wantDX)
	}
	// Literal: one 3×4 plane, 2×2 windows (the last row is dropped); the
	// first maximum in row-major order wins a tie; a NaN window keeps its
	// top-left.
	x := []float32{
		1, 5, nan32, 0,
		5, 2, 3, 4,
		9, 9, 9, 9,
	}
	y, arg := make([]float32, 2), make([]int32, 2)
	if err := be.MaxPoolForward(y, arg, x, PoolGeom{C: 1, H: 3, W: 4, K: 2}, 1); err != nil {
		t.Fatal(err)
	}
	if y[0] != 5 || y[1] == y[1] || arg[0] != 1 || arg[1] != 2 {
		t.Errorf("MaxPoolForward = %v, arg %v; want [5 NaN], [1 2]", y, arg)
	}
	dx := make([]float32, 12)
	if err := be.MaxPoolBackward(dx, []float32{7, 8}, arg, PoolGeom{C: 1, H: 3, W: 4, K: 2}, 1); err != nil {
		t.Fatal(err)
	}
	sameBits32(t, "MaxPoolBackward", dx, []float32{0, 7, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	wantErr(t, be.MaxPoolForward(y, arg, x, PoolGeom{C: 1, H: 3, W: 4, K: 4}, 1), "bad max-pool geometry")
	wantErr(t, be.MaxPoolForward(y, arg[:1], x, PoolGeom{C: 1, H: 3, W: 4, K: 2}, 1), "arg-max has 1 elements, want 2")
}

// Every method rejects inconsistent sizes with an error that names the
// argument, on both backends alike (the checks are shared).
func TestValidation(t *testing.T) {
	be := backendUnderTest(t)
	g := ConvGeom{InC: 1, InH: 4, InW: 4, OutC: 2, K: 3, Stride: 1, Pad: 0}
	u := make([]float32, 2*10*4)
	b := make([]float32, 2*2*4)
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"linear a", be.LinearSqNorms(make([]float64, 2), make([]float32, 5), make([]float32, 2), 2, 3, 1, true), "input tap a has 5 elements, want 6"},
		{"linear sizes", be.LinearSqNorms(nil, nil, nil, 0, 0, 1, true), "layer sizes must be ≥ 1"},
		{"linear sq", be.LinearSqNorms(make([]float64, 1), make([]float32, 6), make([]float32, 2), 2, 3, 1, true), "sq has 1 elements, want 2"},
		{"linear overflow", be.LinearSqNorms(nil, nil, nil, 1<<20, 1<<12, 1, true), "exceed"},
		{"conv geometry", be.ConvSqNorms(make([]float64, 2), u, b, ConvGeom{InC: 1, InH: 2, InW: 2, OutC: 1, K: 3, Stride: 1}, 2), "larger than the padded input"},
		{"conv b", be.ConvSqNorms(make([]float64, 2), u, b[:3], g, 2), "backprop tap b has 3 elements, want 16"},
		{"conv u", be.ConvClippedGrad(make([]float32, 18), make([]float32, 2), u[:7], b, make([]float32, 2), g, 2), "unfolded input u has 7 elements"},
		{"conv db", be.ConvClippedGrad(make([]float32, 18), make([]float32, 1), u, b, make([]float32, 2), g, 2), "bias gradient db has 1 elements, want 2"},
		{"im2col x", be.Im2col(u, make([]float32, 3), g, 2), "input x has 3 elements, want 32"},
		{"linear grad scale", be.LinearClippedGrad(make([]float32, 3), nil, make([]float32, 6), make([]float32, 2), make([]float32, 1), 2, 3, 1), "scale has 1 elements, want 2"},
		{"scale rows", be.ScaleRows(make([]float32, 4), make([]float32, 4), make([]float32, 2), 0), "row length 0"},
		{"bias add", be.BiasAdd(make([]float32, 4), make([]float32, 3), 2, 2, 1), "bias has 3 elements, want 2"},
	}
	for _, c := range cases {
		if c.err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		wantErr(t, c.err, c.want)
	}
}

// groupNormCase is a GroupNorm geometry and a batch size.
type groupNormCase struct {
	g GroupGeom
	n int
}

// groupNormCases: one group and one channel per group, a 1×1 spatial size,
// groups of 256 values and of sizes on either side of the 256-thread block,
// a batch of one and an empty one.
var groupNormCases = []groupNormCase{
	{GroupGeom{C: 4, H: 3, W: 3, Groups: 2}, 3},
	{GroupGeom{C: 6, H: 1, W: 1, Groups: 3}, 5},
	{GroupGeom{C: 3, H: 17, W: 16, Groups: 1}, 2}, // 816 values per group
	{GroupGeom{C: 8, H: 5, W: 7, Groups: 8}, 1},
	{GroupGeom{C: 2, H: 16, W: 16, Groups: 2}, 2}, // exactly 256
	{GroupGeom{C: 1, H: 15, W: 17, Groups: 1}, 2}, // 255
	{GroupGeom{C: 1, H: 1, W: 257, Groups: 1}, 1},
	{GroupGeom{C: 4, H: 2, W: 2, Groups: 2}, 0},
}

// randomGroupNormCases draws k geometries (1–4 groups of 1–3 channels,
// 1–12 × 1–12) and batches of 0–5.
func randomGroupNormCases(r *rand.Rand, k int) []groupNormCase {
	var cases []groupNormCase
	for range k {
		groups := 1 + r.IntN(4)
		g := GroupGeom{C: groups * (1 + r.IntN(3)), H: 1 + r.IntN(12), W: 1 + r.IntN(12), Groups: groups}
		cases = append(cases, groupNormCase{g, r.IntN(6)})
	}
	return cases
}

// GroupNorm forward and backward agree with nn.GroupNorm (random γ, β,
// inputs with an offset, a constant group): the outputs, input gradients
// and every sample's [∂γ | ∂β] (nn's ParamGrads with a one-hot scale) to
// 1e-5 relative; the first layer's backward without dx gives the same ps.
func TestGroupNormMatchesNN(t *testing.T) {
	be := backendUnderTest(t)
	r := rand.New(rand.NewPCG(19, 20))
	for _, tc := range append(groupNormCases, randomGroupNormCases(r, 4)...) {
		g, n := tc.g, tc.n
		g.Eps = 1e-5
		size := g.Size()
		gn := nn.NewGroupNorm[float32](g.Groups, g.C, g.H, g.W)
		if gn.Eps() != g.Eps {
			t.Fatalf("nn.GroupNorm's ε is %v, the test assumes %v", gn.Eps(), g.Eps)
		}
		p := gn.Params()
		copy(p[0].Value, randF32(r, g.C, 1))
		copy(p[1].Value, randF32(r, g.C, 1))
		x := randF32(r, n*size, 2)
		for i := range x {
			x[i] += 3
		}
		if n > 0 {
			for j := range size / g.Groups { // sample 0's first group is constant
				x[j] = 0.5
			}
		}
		dy := randF32(r, n*size, 1)
		wantY := append([]float32(nil), gn.Forward(x, n, true)...)
		wantDX := append([]float32(nil), gn.Backward(dy, true)...)
		wantPS := make([]float32, 0, n*2*g.C)
		for i := range n {
			nn.ZeroGrads(p)
			onehot := make([]float32, n)
			onehot[i] = 1
			gn.ParamGrads(onehot)
			wantPS = append(append(wantPS, p[0].Grad...), p[1].Grad...)
		}
		y, xhat, inv := make([]float32, n*size), make([]float32, n*size), make([]float64, n*g.Groups)
		must(t, be.GroupNormForward(y, xhat, inv, x, p[0].Value, p[1].Value, g, n))
		name := fmt.Sprintf("%+v n=%d", g, n)
		near(t, name+" y", y, widen(wantY), 1e-5, 1)
		dx, ps := make([]float32, n*size), make([]float32, n*2*g.C)
		must(t, be.GroupNormBackward(dx, ps, dy, xhat, inv, p[0].Value, g, n))
		near(t, name+" dx", dx, widen(wantDX), 1e-5, rms(wantDX))
		near(t, name+" ps", ps, widen(wantPS), 1e-5, rms(wantPS))
		ps2 := make([]float32, len(ps))
		must(t, be.GroupNormBackward(nil, ps2, dy, xhat, inv, p[0].Value, g, n))
		sameBits32(t, name+" ps without dx", ps2, ps)
	}
	g := GroupGeom{C: 4, H: 2, W: 2, Groups: 2, Eps: 1e-5}
	x := make([]float32, 16)
	wantErr(t, be.GroupNormForward(x, x, make([]float64, 2), x, make([]float32, 4), make([]float32, 4),
		GroupGeom{C: 4, H: 2, W: 2, Groups: 3}, 1), "Groups dividing C")
	wantErr(t, be.GroupNormForward(x, x, make([]float64, 1), x, make([]float32, 4), make([]float32, 4), g, 1), "invStd has 1 elements, want 2")
	wantErr(t, be.GroupNormBackward(x[:3], make([]float32, 8), x, x, make([]float64, 2), make([]float32, 4), g, 1), "dx has 3 elements")
	wantErr(t, be.GroupNormBackward(nil, make([]float32, 4), x, x, make([]float64, 2), make([]float32, 4), g, 1), "ps has 4 elements, want 8")
}
