package nntest

import (
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/fairdp/fairdp/nn"
)

// Options tunes CheckLayer; the zero value gives the defaults.
type Options struct {
	// FDTol is the tolerance of Backward and ParamGrads(nil) against
	// central finite differences (float64 only; default 1e-6).
	FDTol float64
	// Tol is the tolerance of SqNorms, ParamGrads(scale) and batch-of-one
	// agreement (default 1e-9 for float64, 1e-4 for float32).
	Tol float64
	// MaxFD caps how many input and how many parameter coordinates are
	// checked by finite differences (a random subset; default 300).
	MaxFD int
	// Step is the finite-difference step (default 1e-5).
	Step float64
	// KeepParams leaves the layer's parameters as they are instead of
	// drawing them from N(0, 0.5²) first.
	KeepParams bool
}

// CheckLayer checks a layer on a random input batch of the given per-sample
// shape with a random linear functional f = Σ r·Forward(x):
//
//   - Backward's input gradient and ParamGrads(nil) against central finite
//     differences of f (only for float64, whose rounding allows it);
//   - Forward, Backward, SqNorms, ParamGrads(scale) and ParamGrads(nil) of
//     the batch against a loop of batch-of-one passes (per-sample norms are
//     Σ‖g_i‖² of the single-sample gradients), with and without SqNorms
//     before ParamGrads, and that ParamGrads accumulates;
//   - that a batch of 0 works and changes nothing.
//
// Errors are relative: max|got − want| / max|want| per vector, and
// |got − want|/|want| per norm. It reports failures on t and returns the
// largest finite-difference and per-sample errors seen.
func CheckLayer[T nn.Float](t testing.TB, layer nn.Layer[T], inShape []int, batch int, rng *rand.Rand, opt Options) (fdErr, sampleErr float64) {
	t.Helper()
	var z T
	is64 := unsafe.Sizeof(z) == 8
	if opt.FDTol == 0 {
		opt.FDTol = 1e-6
	}
	if opt.Tol == 0 {
		opt.Tol = 1e-4
		if is64 {
			opt.Tol = 1e-9
		}
	}
	if opt.MaxFD == 0 {
		opt.MaxFD = 300
	}
	if opt.Step == 0 {
		opt.Step = 1e-5
	}
	name := layer.Name()
	params := layer.Params()
	if !opt.KeepParams {
		for _, p := range params {
			fill(rng, p.Value, 0.5)
		}
	}
	inSize := prod(inShape)
	outSize := prod(layer.OutShape(inShape))
	x := make([]T, batch*inSize)
	fill(rng, x, 1)
	r := make([]T, batch*outSize)
	fill(rng, r, 1)
	scale := make([]T, batch)
	for i := range scale {
		scale[i] = T(rng.Float64()*2 - 0.5) // some negative, none special
	}

	// The batch pass: outputs, input gradient, norms and scaled gradients.
	y := clone(layer.Forward(x, batch, true))
	if len(y) != batch*outSize {
		t.Errorf("%s: Forward returned %d values, want %d", name, len(y), batch*outSize)
		return
	}
	dx := clone(layer.Backward(r, true))
	nn.ZeroGrads(params)
	layer.ParamGrads(scale)
	scaledDirect := flatGrads(params)
	norms := make([]T, batch)
	for i := range norms {
		norms[i] = 0.5 // SqNorms must add, not overwrite
	}
	layer.SqNorms(norms)
	for i := range norms {
		norms[i] -= 0.5
	}
	nn.ZeroGrads(params)
	layer.ParamGrads(scale)
	scaledAfterNorms := flatGrads(params)
	nn.ZeroGrads(params)
	layer.ParamGrads(nil)
	layer.ParamGrads(nil)
	twice := flatGrads(params)

	// The same through batch-of-one passes.
	nParams := len(twice)
	wantY := make([]T, 0, len(y))
	wantDx := make([]T, 0, len(dx))
	wantScaled := make([]float64, nParams)
	wantSum := make([]float64, nParams)
	wantNorms := make([]float64, batch)
	for i := 0; i < batch; i++ {
		wantY = append(wantY, layer.Forward(x[i*inSize:(i+1)*inSize], 1, true)...)
		wantDx = append(wantDx, layer.Backward(r[i*outSize:(i+1)*outSize], true)...)
		nn.ZeroGrads(params)
		layer.ParamGrads(nil)
		for j, g := range flatGrads(params) {
			gf := float64(g)
			wantNorms[i] += gf * gf
			wantScaled[j] += float64(scale[i]) * gf
			wantSum[j] += gf
		}
	}
	check := func(what string, got []T, want []float64) {
		t.Helper()
		e := relErr(got, want)
		sampleErr = math.Max(sampleErr, e)
		if e > opt.Tol {
			t.Errorf("%s batch %d: %s differs from the batch-of-one loop: rel err %.3g > %.3g", name, batch, what, e, opt.Tol)
		}
	}
	check("Forward output", y, widen(wantY))
	check("Backward input gradient", dx, widen(wantDx))
	check("ParamGrads(scale)", scaledDirect, wantScaled)
	check("ParamGrads(scale) after SqNorms", scaledAfterNorms, wantScaled)
	for j := range wantSum {
		wantSum[j] *= 2
	}
	check("two ParamGrads(nil)", twice, wantSum)
	for i := range norms {
		e := math.Abs(float64(norms[i])-wantNorms[i]) / math.Max(wantNorms[i], 1e-300)
		if wantNorms[i] == 0 && norms[i] == 0 {
			e = 0
		}
		sampleErr = math.Max(sampleErr, e)
		if e > opt.Tol {
			t.Errorf("%s batch %d: SqNorms[%d] = %.12g, batch-of-one loop gives %.12g (rel err %.3g)", name, batch, i, float64(norms[i]), wantNorms[i], e)
		}
	}

	checkEmptyBatch(t, layer, params)

	if is64 && batch > 0 {
		fdErr = checkFiniteDifferences(t, layer, params, x, r, batch, dx, rng, opt)
	}
	return fdErr, sampleErr
}

// checkFiniteDifferences compares dx and ParamGrads(nil) with central
// differences of f = Σ r·Forward(x) on up to opt.MaxFD coordinates each.
func checkFiniteDifferences[T nn.Float](t testing.TB, layer nn.Layer[T], params []*nn.Param[T], x, r []T, batch int, dx []T, rng *rand.Rand, opt Options) float64 {
	t.Helper()
	f := func() float64 {
		y := layer.Forward(x, batch, true)
		var s float64
		for i, v := range y {
			s += float64(r[i]) * float64(v)
		}
		return s
	}
	layer.Forward(x, batch, true)
	layer.Backward(r, false)
	nn.ZeroGrads(params)
	layer.ParamGrads(nil)
	analytic := flatGrads(params)

	fd := func(v []T, idx []int) []float64 {
		out := make([]float64, len(idx))
		for k, j := range idx {
			orig := v[j]
			v[j] = orig + T(opt.Step)
			fp := f()
			v[j] = orig - T(opt.Step)
			fm := f()
			v[j] = orig
			out[k] = (fp - fm) / (2 * opt.Step)
		}
		return out
	}
	var worst float64
	compare := func(what string, got []T, want []float64) {
		t.Helper()
		e := relErr(got, want)
		worst = math.Max(worst, e)
		if e > opt.FDTol {
			t.Errorf("%s batch %d: %s differs from finite differences: rel err %.3g > %.3g", layer.Name(), batch, what, e, opt.FDTol)
		}
	}
	if dx != nil {
		idx := sample(rng, len(x), opt.MaxFD)
		compare("input gradient", pick(dx, idx), fd(x, idx))
	}
	off := 0
	for _, p := range params {
		idx := sample(rng, len(p.Value), opt.MaxFD)
		want := fd(p.Value, idx)
		compare("gradient of "+p.Name, pick(analytic[off:off+len(p.Value)], idx), want)
		off += len(p.Value)
	}
	return worst
}

// checkEmptyBatch runs a batch of 0 through every method: nothing may
// panic, outputs must be empty and gradients unchanged.
func checkEmptyBatch[T nn.Float](t testing.TB, layer nn.Layer[T], params []*nn.Param[T]) {
	t.Helper()
	for _, p := range params {
		for j := range p.Grad {
			p.Grad[j] = 1
		}
	}
	if y := layer.Forward(nil, 0, true); len(y) != 0 {
		t.Errorf("%s: Forward of an empty batch returned %d values", layer.Name(), len(y))
	}
	if dx := layer.Backward(nil, true); len(dx) != 0 {
		t.Errorf("%s: Backward of an empty batch returned %d values", layer.Name(), len(dx))
	}
	layer.SqNorms(nil)
	layer.ParamGrads(nil)
	layer.ParamGrads([]T{})
	for _, p := range params {
		for j, g := range p.Grad {
			if g != 1 {
				t.Errorf("%s: empty batch changed %s.Grad[%d] to %v", layer.Name(), p.Name, j, g)
				return
			}
		}
	}
}

// RelErr is max|got − want| / max|want| (0 when both are all zero): the
// error measure CheckLayer uses for vectors.
func RelErr[T nn.Float](got []T, want []float64) float64 { return relErr(got, want) }

func relErr[T nn.Float](got []T, want []float64) float64 {
	if len(got) != len(want) {
		return math.Inf(1)
	}
	var num, den float64
	for i, w := range want {
		g := float64(got[i])
		if math.IsNaN(g) || math.IsInf(g, 0) {
			return math.Inf(1)
		}
		num = math.Max(num, math.Abs(g-w))
		den = math.Max(den, math.Abs(w))
	}
	if num == 0 {
		return 0
	}
	return num / den
}

func flatGrads[T nn.Float](params []*nn.Param[T]) []T {
	var g []T
	for _, p := range params {
		g = append(g, p.Grad...)
	}
	return g
}

func fill[T nn.Float](rng *rand.Rand, v []T, sd float64) {
	for i := range v {
		v[i] = T(rng.NormFloat64() * sd)
	}
}

func clone[T any](v []T) []T { return append([]T(nil), v...) }

func widen[T nn.Float](v []T) []float64 {
	out := make([]float64, len(v))
	for i, e := range v {
		out[i] = float64(e)
	}
	return out
}

func pick[T nn.Float](v []T, idx []int) []T {
	out := make([]T, len(idx))
	for k, j := range idx {
		out[k] = v[j]
	}
	return out
}

// sample returns all of 0..n-1 when n ≤ k, else k distinct random indices.
func sample(rng *rand.Rand, n, k int) []int {
	if n <= k {
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		return idx
	}
	return rng.Perm(n)[:k]
}

func prod(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}
