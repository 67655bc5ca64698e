//go:build !cuda

// Gorgonia v0.9.18 switches to its own CUDA ops under the same `cuda` tag
// and then needs cuDNN; the reference graph is a CPU check, so it is left
// out of CUDA builds.

package graph

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/models"
	"github.com/fairdp/fairdp/nn"
)

// batchData draws a standard-normal input batch, labels and positive
// per-sample loss weights.
func batchData(rng *rand.Rand, batch, inSize, classes int) (x []float64, labels []int, weight []float64) {
	x = make([]float64, batch*inSize)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	labels = make([]int, batch)
	weight = make([]float64, batch)
	for i := range labels {
		labels[i] = rng.IntN(classes)
		weight[i] = 0.5 + rng.Float64()
	}
	return x, labels, weight
}

// engineGrads runs fairdp's engine: logits, the summed weighted loss and
// the batch gradient of every parameter block. The taps stay in place for
// SqNorms / ParamGrads(scale).
func engineGrads[T nn.Float](m *models.Model[T], x []T, labels []int, weight []T) (logits []T, loss float64, grads [][]T) {
	batch := len(labels)
	logits = append([]T(nil), m.Forward(x, batch, true)...)
	per := make([]T, batch)
	dlogits := make([]T, len(logits))
	m.Loss(logits, labels, weight, per, dlogits)
	for i, l := range per {
		w := 1.0
		if weight != nil {
			w = float64(weight[i])
		}
		loss += w * float64(l)
	}
	m.Backward(dlogits)
	m.ZeroGrads()
	m.ParamGrads(nil)
	for _, p := range m.Params() {
		grads = append(grads, append([]T(nil), p.Grad...))
	}
	return logits, loss, grads
}

// maxRelDiff is ‖got − want‖∞ / ‖want‖∞ (absolute when want is all zeros).
func maxRelDiff[T nn.Float](got []T, want []float64) float64 {
	if len(got) != len(want) {
		return math.Inf(1)
	}
	var diff, scale float64
	for i := range want {
		diff = math.Max(diff, math.Abs(float64(got[i])-want[i]))
		scale = math.Max(scale, math.Abs(want[i]))
	}
	if scale == 0 {
		return diff
	}
	return diff / scale
}

func to[T nn.Float](v []float64) []T {
	out := make([]T, len(v))
	for i, x := range v {
		out[i] = T(x)
	}
	return out
}

// graphSpecs are the archs the Gorgonia reference checks, at full size for
// the MNIST CNN and at 32×32 for the VGG-like network.
var graphSpecs = []struct {
	spec  models.Spec
	batch int
}{
	{models.Spec{Arch: "logistic", InShape: []int{7}, Classes: 2}, 5},
	{models.Spec{Arch: "logistic", InShape: []int{7}, Classes: 4}, 5},
	{models.Spec{Arch: "logistic", InShape: []int{7}, Classes: 2}, 1},
	{models.Spec{Arch: "mlp", InShape: []int{7}, Classes: 2, Hidden: []int{6, 5}}, 4},
	{models.Spec{Arch: "mlp", InShape: []int{2, 3, 3}, Classes: 3, Hidden: []int{6}}, 4},
	{models.Spec{Arch: "mnist-cnn", InShape: []int{1, 28, 28}, Classes: 10}, 3},
	{models.Spec{Arch: "vgg", InShape: []int{3, 32, 32}, Classes: 9}, 2},
}

// TestGraphMatchesEngine is the independent check of the nn engine: logits,
// summed loss and parameter gradients of every arch equal Gorgonia's to a
// relative 1e-9 in float64.
func TestGraphMatchesEngine(t *testing.T) {
	for k, tc := range graphSpecs {
		t.Run(fmt.Sprintf("%s/%s/batch%d", tc.spec.Arch, fmt.Sprint(tc.spec.InShape), tc.batch), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(k), 11))
			m, err := models.New[float64](tc.spec, rng)
			if err != nil {
				t.Fatal(err)
			}
			x, labels, weight := batchData(rng, tc.batch, m.InSize(), tc.spec.Classes)
			compareWithGraph(t, m, x, labels, weight, 1e-9)
		})
	}
}

func compareWithGraph[T nn.Float](t *testing.T, m *models.Model[T], x []float64, labels []int, weight []float64, tol float64) {
	t.Helper()
	gm, err := Export(m, len(labels))
	if err != nil {
		t.Fatal(err)
	}
	defer gm.Close()
	compareWith(t, m, gm, x, labels, weight, tol)
}

// compareWith checks m's logits, summed loss and parameter gradients
// against the Gorgonia reference gm to a relative tol.
func compareWith[T nn.Float](t *testing.T, m *models.Model[T], gm *Model, x []float64, labels []int, weight []float64, tol float64) {
	t.Helper()
	wantLogits, err := gm.Forward(x)
	if err != nil {
		t.Fatal(err)
	}
	wantLoss, wantGrads, err := gm.Gradients(x, labels, weight)
	if err != nil {
		t.Fatal(err)
	}
	logits, loss, grads := engineGrads(m, to[T](x), labels, to[T](weight))
	t.Logf("logits rel diff %.3g, loss %v vs %v", maxRelDiff(logits, wantLogits), loss, wantLoss)
	if d := maxRelDiff(logits, wantLogits); d > tol {
		t.Errorf("logits differ from Gorgonia's by rel %.3g", d)
	}
	if d := math.Abs(loss-wantLoss) / math.Abs(wantLoss); d > tol {
		t.Errorf("loss %v, Gorgonia %v (rel %.3g)", loss, wantLoss, d)
	}
	params := m.Params()
	if len(grads) != len(wantGrads) {
		t.Fatalf("%d gradient blocks, Gorgonia %d", len(grads), len(wantGrads))
	}
	for i := range grads {
		if d := maxRelDiff(grads[i], wantGrads[i]); d > tol {
			t.Errorf("gradient of param %d (%s %v) differs from Gorgonia's by rel %.3g", i, params[i].Name, params[i].Shape, d)
		}
	}
}

// TestGraphPerSample checks every zoo model's DP quantities against
// Gorgonia sample by sample (checkPerSample): from the batch graph with one
// sample weighted, and from a loop of batch-of-one runs.
func TestGraphPerSample(t *testing.T) {
	for k, tc := range graphSpecs {
		if tc.batch < 2 {
			continue
		}
		t.Run(tc.spec.Arch, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(k), 12))
			m, err := models.New[float64](tc.spec, rng)
			if err != nil {
				t.Fatal(err)
			}
			x, labels, weight := batchData(rng, tc.batch, m.InSize(), tc.spec.Classes)
			gm, err := Export(m, tc.batch)
			if err != nil {
				t.Fatal(err)
			}
			defer gm.Close()
			checkPerSample(t, m, x, labels, weight, rng, maskedGrads(t, gm, x, labels, weight))
			gm1, err := Export(m, 1)
			if err != nil {
				t.Fatal(err)
			}
			defer gm1.Close()
			checkPerSample(t, m, x, labels, weight, rng, batchOfOneGrads(t, gm1, x, labels, weight))
		})
	}
}

// checkPerSample checks the DP quantities of m against per-sample
// gradients from Gorgonia (own(i) is sample i's gradient, every parameter
// block): SqNorms[i] is ‖own(i)‖², and ParamGrads(scale) — the clipped sum
// when scale_i = min(1, C/‖g_i‖) — equals Σ_i scale_i·own(i), for the
// clipping scales of C = half the median norm and for random scales.
func checkPerSample(t *testing.T, m *models.Model[float64], x []float64, labels []int, weight []float64, rng *rand.Rand, own func(i int) [][]float64) {
	t.Helper()
	batch := len(labels)
	engineGrads(m, x, labels, weight)
	norms := make([]float64, batch)
	m.SqNorms(norms)
	grads := make([][][]float64, batch)
	for i := range batch {
		grads[i] = own(i)
		var want float64
		for _, block := range grads[i] {
			for _, v := range block {
				want += v * v
			}
		}
		if d := math.Abs(norms[i]-want) / want; d > 1e-9 {
			t.Errorf("SqNorms[%d] = %v, Gorgonia %v (rel %.3g)", i, norms[i], want, d)
		}
	}
	sorted := slices.Clone(norms)
	slices.Sort(sorted)
	clip := math.Sqrt(sorted[batch/2]) / 2
	clipScale, randScale := make([]float64, batch), make([]float64, batch)
	for i := range batch {
		clipScale[i] = math.Min(1, clip/math.Sqrt(norms[i]))
		randScale[i] = rng.Float64()
	}
	for _, scale := range [][]float64{clipScale, randScale} {
		m.ZeroGrads()
		m.ParamGrads(scale)
		for k, p := range m.Params() {
			want := make([]float64, len(p.Grad))
			for i := range batch {
				for j, v := range grads[i][k] {
					want[j] += scale[i] * v
				}
			}
			if d := maxRelDiff(p.Grad, want); d > 1e-9 {
				t.Errorf("ParamGrads(scale) of param %d (%s) differs from Gorgonia's per-sample sum by rel %.3g", k, p.Name, d)
			}
		}
	}
}

// TestGraphOtherLayers covers layers the zoo does not use: Tanh, LeakyReLU
// and a strided, padded convolution with a pool that drops a border.
func TestGraphOtherLayers(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	conv := nn.NewConv2d[float64](2, 9, 9, 3, 3, 2, 2) // 9 → (9+4−3)/2+1 = 6
	conv.Init(rng)
	lin := nn.NewLinear[float64](3*2*2, 3)
	lin.Init(rng)
	m := &models.Model[float64]{Arch: "custom", InShape: []int{2, 9, 9}, Classes: 3, Layers: []nn.Layer[float64]{
		conv, nn.NewTanh[float64](), nn.NewMaxPool2d[float64](3, 6, 6, 3), nn.NewLeakyReLU[float64](0.1),
		nn.NewFlatten[float64](), lin,
	}}
	x, labels, weight := batchData(rng, 4, m.InSize(), 3)
	compareWithGraph(t, m, x, labels, weight, 1e-9)
}

// TestGraphFloat32 runs the reference in float32; agreement is limited by
// float32 rounding.
func TestGraphFloat32(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	m, err := models.New[float32](models.Spec{Arch: "mnist-cnn", InShape: []int{1, 16, 16}, Classes: 3}, rng)
	if err != nil {
		t.Fatal(err)
	}
	x, labels, weight := batchData(rng, 3, m.InSize(), 3)
	compareWithGraph(t, m, x, labels, weight, 1e-4)
}

func TestGraphErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	gn := &models.Model[float64]{Arch: "custom", InShape: []int{4, 3, 3}, Classes: 2, Layers: []nn.Layer[float64]{
		nn.NewGroupNorm[float64](2, 4, 3, 3), nn.NewFlatten[float64](), nn.NewLinear[float64](36, 1),
	}}
	if _, err := Export(gn, 2); err == nil || !strings.Contains(err.Error(), "layer 0 GroupNorm") {
		t.Errorf("GroupNorm: error %v, want one naming layer 0 GroupNorm", err)
	}
	m, _ := models.New[float64](models.Spec{Arch: "logistic", InShape: []int{3}, Classes: 3}, rng)
	if _, err := Export(m, 0); err == nil {
		t.Error("batch 0 accepted")
	}
	gm, err := Export(m, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer gm.Close()
	for _, tc := range []struct {
		x      []float64
		labels []int
		want   string
	}{
		{make([]float64, 5), []int{0, 1}, "5 input values, want batch 2 × 3"},
		{make([]float64, 6), []int{0, 3}, "label 3 of sample 1, want 0..2"},
		{make([]float64, 6), []int{0}, "1 labels, want 2"},
		{make([]float64, 6), nil, "labels are nil"},
	} {
		if _, _, err := gm.Gradients(tc.x, tc.labels, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want %q", err, tc.want)
		}
	}
}

// maskedGrads gives sample i's gradient from the batch graph gm, with every
// other sample's loss weight set to zero.
func maskedGrads(t *testing.T, gm *Model, x []float64, labels []int, weight []float64) func(int) [][]float64 {
	return func(i int) [][]float64 {
		only := make([]float64, len(labels))
		only[i] = weight[i]
		_, g, err := gm.Gradients(x, labels, only)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
}

// batchOfOneGrads gives sample i's gradient from gm1, the same network
// built for batches of one sample, run on sample i alone.
func batchOfOneGrads(t *testing.T, gm1 *Model, x []float64, labels []int, weight []float64) func(int) [][]float64 {
	size := len(x) / len(labels)
	return func(i int) [][]float64 {
		_, g, err := gm1.Gradients(x[i*size:(i+1)*size], labels[i:i+1], weight[i:i+1])
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
}
