package dpops_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/models"
	"github.com/fairdp/fairdp/nn"
)

// zoo is every architecture of the model zoo at a test-sized input.
var zoo = []models.Spec{
	{Arch: "logistic", InShape: []int{7}, Classes: 2},
	{Arch: "logistic", InShape: []int{7}, Classes: 3},
	{Arch: "mlp", InShape: []int{6}, Classes: 4, Hidden: []int{5, 3}},
	{Arch: "mnist-cnn", InShape: []int{1, 28, 28}, Classes: 10},
	{Arch: "vgg", InShape: []int{3, 32, 32}, Classes: 9},
}

// bruteForce returns every sample's own flattened gradient, from one
// batch-of-one backward pass per sample: the slow independent path.
func bruteForce[T nn.Float](m *models.Model[T], x []T, labels []int) [][]float64 {
	in := m.InSize()
	out := make([][]float64, len(labels))
	loss := make([]T, 1)
	dl := make([]T, m.OutDim())
	for i := range labels {
		logits := m.Forward(x[i*in:(i+1)*in], 1, true)
		m.Loss(logits, labels[i:i+1], nil, loss, dl)
		m.Backward(dl)
		m.ZeroGrads()
		m.ParamGrads(nil)
		for _, p := range m.Params() {
			for _, g := range p.Grad {
				out[i] = append(out[i], float64(g))
			}
		}
	}
	return out
}

func flatGrad[T nn.Float](m *models.Model[T]) []float64 {
	var g []float64
	for _, p := range m.Params() {
		for _, v := range p.Grad {
			g = append(g, float64(v))
		}
	}
	return g
}

func norm(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x * x
	}
	return math.Sqrt(s)
}

func relErr(got, want []float64) float64 {
	var d, w float64
	for i := range got {
		d += (got[i] - want[i]) * (got[i] - want[i])
		w += want[i] * want[i]
	}
	return math.Sqrt(d) / math.Max(math.Sqrt(w), 1e-30)
}

// checkClip compares the tap-based engine with the brute-force loop for one
// model: per-sample norms, clipped sum under per-sample bounds, every clipped
// contribution within its bound, and C = ∞ equal to the batch gradient.
func checkClip[T nn.Float](t *testing.T, spec models.Spec, tol float64) {
	rng := rand.New(rand.NewPCG(1, 2))
	m, err := models.New[T](spec, rng)
	if err != nil {
		t.Fatal(err)
	}
	const n = 5
	x := make([]T, n*m.InSize())
	for i := range x {
		x[i] = T(rng.NormFloat64())
	}
	labels := make([]int, n)
	for i := range labels {
		labels[i] = rng.IntN(spec.Classes)
	}
	per := bruteForce(m, x, labels)

	forwardBackward := func() {
		logits := m.Forward(x, n, true)
		loss := make([]T, n)
		dl := make([]T, n*m.OutDim())
		m.Loss(logits, labels, nil, loss, dl)
		m.Backward(dl)
		m.ZeroGrads()
	}
	var c dpops.Clipper[T]

	// Bounds: some samples clipped, some not.
	bounds := make(dpops.PerSample, n)
	want := make([]float64, len(per[0]))
	for i := range per {
		ni := norm(per[i])
		bounds[i] = ni * []float64{0.3, 2, 0.7, 1, 0.05}[i]
		f := math.Min(1, bounds[i]/ni)
		if f*ni > bounds[i]*(1+1e-12) {
			t.Fatalf("sample %d: clipped norm %v above bound %v", i, f*ni, bounds[i])
		}
		for j, g := range per[i] {
			want[j] += f * g
		}
	}
	forwardBackward()
	norms, err := c.Clip(n, bounds, m)
	if err != nil {
		t.Fatal(err)
	}
	for i := range per {
		if e := math.Abs(norms[i]-norm(per[i])) / norm(per[i]); e > tol {
			t.Errorf("%s: sample %d norm %v, brute force %v (rel %.2g)", spec.Arch, i, norms[i], norm(per[i]), e)
		}
	}
	if e := relErr(flatGrad(m), want); e > tol {
		t.Errorf("%s: clipped sum rel err %.3g > %.g", spec.Arch, e, tol)
	}

	// C = ∞ is the ordinary batch gradient.
	forwardBackward()
	if _, err := c.Clip(n, dpops.Flat(math.Inf(1)), m); err != nil {
		t.Fatal(err)
	}
	clipped := flatGrad(m)
	forwardBackward()
	m.ParamGrads(nil)
	if e := relErr(clipped, flatGrad(m)); e > tol {
		t.Errorf("%s: C=∞ differs from the batch gradient (rel %.3g)", spec.Arch, e)
	}
}

func TestClipMatchesBruteForce(t *testing.T) {
	for _, spec := range zoo {
		t.Run(spec.Arch+"/float64", func(t *testing.T) { checkClip[float64](t, spec, 1e-9) })
		t.Run(spec.Arch+"/float32", func(t *testing.T) { checkClip[float32](t, spec, 1e-4) })
	}
}

// twoBlocks checks joint clipping: the norm is over both blocks together.
func TestJointClipping(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	spec := models.Spec{Arch: "logistic", InShape: []int{4}, Classes: 2}
	a, _ := models.New[float64](spec, rng)
	b, _ := models.New[float64](spec, rng)
	const n = 3
	x := make([]float64, n*4)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	labels := []int{0, 1, 1}
	pa, pb := bruteForce(a, x, labels), bruteForce(b, x, labels)
	for _, m := range []*models.Model[float64]{a, b} {
		logits := m.Forward(x, n, true)
		dl := make([]float64, n)
		m.Loss(logits, labels, nil, make([]float64, n), dl)
		m.Backward(dl)
		m.ZeroGrads()
	}
	var c dpops.Clipper[float64]
	const C = 0.1
	norms, err := c.Clip(n, dpops.Flat(C), a, b)
	if err != nil {
		t.Fatal(err)
	}
	wantA := make([]float64, len(pa[0]))
	for i := range pa {
		joint := math.Sqrt(norm(pa[i])*norm(pa[i]) + norm(pb[i])*norm(pb[i]))
		if math.Abs(norms[i]-joint) > 1e-12*joint {
			t.Errorf("sample %d: joint norm %v, want %v", i, norms[i], joint)
		}
		for j, g := range pa[i] {
			wantA[j] += math.Min(1, C/joint) * g
		}
	}
	if e := relErr(flatGrad(a), wantA); e > 1e-12 {
		t.Errorf("block a: rel err %v", e)
	}
}

func TestClipRejectsBadBounds(t *testing.T) {
	var c dpops.Clipper[float64]
	m, _ := models.New[float64](models.Spec{Arch: "logistic", InShape: []int{2}, Classes: 2}, rand.New(rand.NewPCG(1, 1)))
	logits := m.Forward([]float64{1, 2}, 1, true)
	dl := make([]float64, 1)
	m.Loss(logits, []int{1}, nil, make([]float64, 1), dl)
	m.Backward(dl)
	if _, err := c.Clip(1, dpops.Flat(0), m); err == nil {
		t.Error("bound 0 accepted")
	}
	// An empty Poisson batch is legal: nothing to clip, nothing added.
	m.ZeroGrads()
	m.Forward(nil, 0, true)
	m.Backward(nil)
	if _, err := c.Clip(0, dpops.Flat(1), m); err != nil {
		t.Errorf("empty batch: %v", err)
	}
	for _, g := range flatGrad(m) {
		if g != 0 {
			t.Fatalf("empty batch changed a gradient: %v", g)
		}
	}
}

func TestClipFactor(t *testing.T) {
	for _, tc := range []struct{ norm, bound, want float64 }{
		{0, 1, 1}, {0.5, 1, 1}, {1, 1, 1}, {4, 1, 0.25}, {3, math.Inf(1), 1},
	} {
		if got := dpops.ClipFactor(tc.norm, tc.bound); got != tc.want {
			t.Errorf("ClipFactor(%v, %v) = %v, want %v", tc.norm, tc.bound, got, tc.want)
		}
	}
}

// opaque hides a block's layers from the clipper, so that Clip runs it
// unfused: every layer's norms, then every layer's ParamGrads.
type opaque[T nn.Float] struct{ dpops.Tapped[T] }

// TestClipFusedMatchesUnfused runs Clip on the CNNs (whose largest
// convolution is fused: its clipped sum is added as its norms come) and on
// the same models hidden behind opaque, with a second block after the
// model as DP-FERMI's W is: the norms, and so the factors, must be bit for
// bit the unfused ones, every other layer's gradient too, and the fused
// layer's clipped sum equal up to float32 rounding of another summation
// order. A sample whose loss is not finite must give the unfused error.
func TestClipFusedMatchesUnfused(t *testing.T) {
	for _, spec := range zoo[3:] {
		t.Run(spec.Arch, func(t *testing.T) {
			const n = 9 // groups of four norms and a remainder
			var twins [2]*models.Model[float32]
			for k := range twins {
				m, err := models.New[float32](spec, rand.New(rand.NewPCG(5, 6)))
				if err != nil {
					t.Fatal(err)
				}
				twins[k] = m
			}
			fusedLayer := -1
			for j, l := range twins[0].Layers {
				if s, ok := l.(nn.ClipSummer[float32]); ok && s.ClipSumGain(n) > 0 {
					fusedLayer = j
				}
			}
			if fusedLayer < 0 {
				t.Fatalf("no layer of %s gains from fusing at batch %d", spec.Arch, n)
			}
			rng := rand.New(rand.NewPCG(7, 8))
			x := make([]float32, n*twins[0].InSize())
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			labels := make([]int, n)
			for i := range labels {
				labels[i] = rng.IntN(spec.Classes)
			}
			extra, _ := models.New[float32](models.Spec{Arch: "logistic", InShape: []int{3}, Classes: 2}, rng)
			xe := make([]float32, n*3)
			for i := range xe {
				xe[i] = float32(rng.NormFloat64())
			}
			run := func(m *models.Model[float32], hide bool, poison bool) ([]float64, error) {
				for _, mm := range []*models.Model[float32]{m, extra} {
					in, lb := x, labels
					if mm == extra {
						in, lb = xe, make([]int, n)
					}
					logits := mm.Forward(in, n, true)
					dl := make([]float32, n*mm.OutDim())
					mm.Loss(logits, lb, nil, make([]float32, n), dl)
					if poison && mm == m {
						dl[4*mm.OutDim()] = float32(math.NaN())
					}
					mm.Backward(dl)
					mm.ZeroGrads()
				}
				var c dpops.Clipper[float32]
				var blk dpops.Tapped[float32] = m
				if hide {
					blk = opaque[float32]{m}
				}
				norms, err := c.Clip(n, dpops.Flat(0.05), blk, extra)
				return append([]float64(nil), norms...), err
			}
			fused, err := run(twins[0], false, false)
			if err != nil {
				t.Fatal(err)
			}
			unfused, err := run(twins[1], true, false)
			if err != nil {
				t.Fatal(err)
			}
			for i := range fused {
				if math.Float64bits(fused[i]) != math.Float64bits(unfused[i]) {
					t.Errorf("sample %d: fused norm %v, unfused %v", i, fused[i], unfused[i])
				}
			}
			for j := range twins[0].Layers {
				for p, par := range twins[0].Layers[j].Params() {
					got, want := par.Grad, twins[1].Layers[j].Params()[p].Grad
					var d, s float64
					for q := range got {
						d = max(d, math.Abs(float64(got[q]-want[q])))
						s = max(s, math.Abs(float64(want[q])))
						if j != fusedLayer && math.Float32bits(got[q]) != math.Float32bits(want[q]) {
							t.Fatalf("layer %d (%s) param %d [%d]: %v fused, %v unfused: only the fused layer may differ", j, twins[0].Layers[j].Name(), p, q, got[q], want[q])
						}
					}
					if d > 1e-5*s {
						t.Errorf("layer %d (%s) param %d: fused clipped sum differs by %.3g of %.3g", j, twins[0].Layers[j].Name(), p, d, s)
					}
				}
			}
			_, errFused := run(twins[0], false, true)
			_, errUnfused := run(twins[1], true, true)
			if errFused == nil || errUnfused == nil || errFused.Error() != errUnfused.Error() {
				t.Errorf("a NaN loss: fused error %v, unfused %v", errFused, errUnfused)
			}
		})
	}
}
