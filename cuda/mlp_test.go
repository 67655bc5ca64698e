package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/nn"
)

// deviceUnderTest is the Device of the backend under test, or skips (the
// CPU twins have none).
func deviceUnderTest(t *testing.T) Device {
	t.Helper()
	db, ok := backendUnderTest(t).(*DeviceBackend)
	if !ok {
		t.Skip("the backend under test is the CPU twin; run with -tags cudaemu (make test-gpu-emulated) or on a GPU")
	}
	return db.Device()
}

// cpuNet is the same model on fairdp's CPU engine: nn's layers and losses,
// dpops.Clipper, the release of dpops.NoiseAndScale (with the twin's Philox
// noise on DeviceNet's parameter buffers, so that both sides add the same
// noise) and nn.SGD.
type cpuNet struct {
	layers  []nn.Layer[float32]
	blocks  []dpops.Tapped[float32]
	params  []*nn.Param[float32]
	buffers []noiseBuffer // DPSGDStep's parameter buffers, stream k = index k
	classes int           // logits per sample
	clip    dpops.Clipper[float32]
	opt     nn.Optimizer[float32] // nil: nn.SGD at the step's LR
}

// noiseBuffer is one of DeviceNet's noised buffers: a parameter, or a
// convolution's weight and bias interleaved as its rows [W_o | b_o].
type noiseBuffer struct {
	w, b *nn.Param[float32] // b nil: w alone
	ckk  int
}

func (c *cpuNet) addLinear(r *rand.Rand, in, out int) {
	lin := nn.NewLinear[float32](in, out)
	lin.Init(r)
	p := lin.Params()
	c.layers, c.blocks, c.params = append(c.layers, lin), append(c.blocks, lin), append(c.params, p...)
	c.buffers = append(c.buffers, noiseBuffer{w: p[0]}, noiseBuffer{w: p[1]})
	c.classes = out
}

func (c *cpuNet) addConv(r *rand.Rand, g ConvGeom) {
	conv := nn.NewConv2d[float32](g.InC, g.InH, g.InW, g.OutC, g.K, g.Stride, g.Pad)
	conv.Init(r)
	p := conv.Params()
	c.layers, c.blocks, c.params = append(c.layers, conv), append(c.blocks, conv), append(c.params, p...)
	c.buffers = append(c.buffers, noiseBuffer{w: p[0], b: p[1], ckk: g.CKK()})
}

// addConvNoBias appends nn.Conv2d without a bias: its weight is one
// noise buffer of its own, as a linear layer's.
func (c *cpuNet) addConvNoBias(r *rand.Rand, g ConvGeom) {
	conv := nn.NewConv2dNoBias[float32](g.InC, g.InH, g.InW, g.OutC, nn.SquareWindow(g.K, g.Stride, g.Pad))
	conv.Init(r)
	p := conv.Params()
	c.layers, c.blocks, c.params = append(c.layers, conv), append(c.blocks, conv), append(c.params, p...)
	c.buffers = append(c.buffers, noiseBuffer{w: p[0]})
}

// addGroupNorm appends nn.GroupNorm with random γ and β (γ near 1), noised
// on the device as two buffers.
func (c *cpuNet) addGroupNorm(r *rand.Rand, groups, ch, h, w int) *nn.GroupNorm[float32] {
	gn := nn.NewGroupNorm[float32](groups, ch, h, w)
	p := gn.Params()
	for i := range ch {
		p[0].Value[i] = float32(1 + 0.3*r.NormFloat64())
		p[1].Value[i] = float32(0.3 * r.NormFloat64())
	}
	c.layers, c.blocks, c.params = append(c.layers, gn), append(c.blocks, gn), append(c.params, p...)
	c.buffers = append(c.buffers, noiseBuffer{w: p[0]}, noiseBuffer{w: p[1]})
	return gn
}

func newCPUMLP(r *rand.Rand, sizes []int) *cpuNet {
	m := &cpuNet{}
	for l := 0; l+1 < len(sizes); l++ {
		if l > 0 {
			m.layers = append(m.layers, nn.NewReLU[float32]())
		}
		m.addLinear(r, sizes[l], sizes[l+1])
	}
	return m
}

func (m *cpuNet) values() [][]float32 {
	var v [][]float32
	for _, p := range m.params {
		v = append(v, append([]float32(nil), p.Value...))
	}
	return v
}

// noise adds the twin's noise for stream k to buffer k.
func (b noiseBuffer) noise(t *testing.T, std float64, seed NoiseSeed) {
	t.Helper()
	if b.b == nil {
		must(t, CPU{}.AddGaussian(b.w.Grad, std, seed))
		return
	}
	outC, kk := len(b.b.Grad), b.ckk+1
	rows := make([]float32, outC*kk)
	for o := range outC {
		copy(rows[o*kk:], b.w.Grad[o*b.ckk:(o+1)*b.ckk])
		rows[o*kk+b.ckk] = b.b.Grad[o]
	}
	must(t, CPU{}.AddGaussian(rows, std, seed))
	for o := range outC {
		copy(b.w.Grad[o*b.ckk:(o+1)*b.ckk], rows[o*kk:])
		b.b.Grad[o] = rows[o*kk+b.ckk]
	}
}

func (m *cpuNet) forward(x []float32, n int, train bool) []float32 {
	h := x
	for _, l := range m.layers {
		h = l.Forward(h, n, train)
	}
	return h
}

func (m *cpuNet) step(t *testing.T, x []float32, labels []int32, s DPSGDStep) float64 {
	t.Helper()
	n := len(labels)
	h := m.forward(x, n, true)
	ys := make([]int, n)
	for i, y := range labels {
		ys[i] = int(y)
	}
	k := m.classes
	loss, dz := make([]float32, n), make([]float32, n*k)
	if k == 1 {
		nn.SigmoidBCE(h, ys, nil, loss, dz)
	} else {
		nn.SoftmaxCrossEntropy(h, ys, k, nil, loss, dz)
	}
	g := dz
	for i := len(m.layers) - 1; i >= 0; i-- {
		g = m.layers[i].Backward(g, i > 0)
	}
	nn.ZeroGrads(m.params)
	std := s.NoiseStd
	if s.Group != nil {
		std = m.groupStep(t, n, s)
	} else if _, err := m.clip.Clip(n, dpops.Flat(s.Clip), m.blocks...); err != nil {
		t.Fatal(err)
	}
	for k, b := range m.buffers {
		seed := s.Seed
		seed.Stream = uint32(k)
		b.noise(t, std, seed)
	}
	for _, p := range m.params {
		for i := range p.Grad {
			p.Grad[i] *= float32(s.Scale)
		}
	}
	opt := m.opt
	if opt == nil {
		opt = nn.NewSGD(s.LR)
	}
	opt.Step(m.params)
	sum := 0.0
	for _, v := range loss {
		sum += float64(v)
	}
	return sum
}

// stepBoth runs one step on the device (s) and on the CPU engine (cs: s,
// or s with the CPU's own copy of a group rule) and checks that the loss
// sums and then every parameter agree to 1e-4 relative.
func stepBoth(t *testing.T, net *DeviceNet, cpu *cpuNet, step int, x []float32, y []int32, s, cs DPSGDStep) {
	t.Helper()
	n := len(y)
	loss, err := net.Step(x, y, s)
	if err != nil {
		t.Fatalf("step %d (n=%d): %v", step, n, err)
	}
	if want := cpu.step(t, x, y, cs); math.Abs(loss-want) > 1e-4*math.Max(1, math.Abs(want)) {
		t.Errorf("step %d (n=%d): loss sum %v, CPU engine %v", step, n, loss, want)
	}
	got, err := net.Params()
	must(t, err)
	for k, p := range cpu.params {
		near(t, fmt.Sprintf("step %d (n=%d) parameter %d", step, n, k), got[k], widen(p.Value), 1e-4, rms(p.Value))
	}
}

// newTestMLP is an MLP of the given sizes on the CPU engine and the same
// model on dev, closed when the test ends.
func newTestMLP(t *testing.T, dev Device, r *rand.Rand, sizes []int) (*cpuNet, *DeviceNet) {
	t.Helper()
	cpu := newCPUMLP(r, sizes)
	net, err := NewDeviceMLP(dev, sizes, cpu.values())
	must(t, err)
	t.Cleanup(func() { must(t, net.Close()) })
	return cpu, net
}

// mlpBatch draws a batch of n samples with a learnable label of classes
// values.
func mlpBatch(r *rand.Rand, n, in, classes int) ([]float32, []int32) {
	x := randF32(r, n*in, 1)
	y := make([]int32, n)
	for i := range y {
		if x[i*in] > 0.3*float32(r.NormFloat64()) {
			y[i] = 1
		}
		if classes > 2 && x[i*in+1] > 0.5 {
			y[i] = int32(2 + r.IntN(classes-2))
		}
	}
	return x, y
}

// DP-SGD steps of the logistic model (two classes: one logit and the
// sigmoid loss; three: softmax) and of MLPs on the device agree with the CPU
// engine's steps (nn, dpops) to 1e-4 relative after every step, on
// Poisson-like batch sizes that include an empty batch and a batch of one;
// the loss sums and the trained model's logits agree; and two runs on the
// device give the same bits.
func TestDeviceMLPMatchesCPUEngine(t *testing.T) {
	dev := deviceUnderTest(t)
	for _, sizes := range [][]int{{14, 1}, {14, 3}, {14, 32, 16, 1}, {300, 257, 5}} {
		classes := max(2, sizes[len(sizes)-1])
		t.Run(fmt.Sprint(sizes), func(t *testing.T) {
			run := func() ([][]float32, *cpuNet) {
				r := rand.New(rand.NewPCG(41, uint64(len(sizes))))
				cpu, m := newTestMLP(t, dev, r, sizes)
				noise := rand.New(rand.NewPCG(43, 44))
				for step, n := range []int{37, 1, 0, 64, 23} {
					x, y := mlpBatch(r, n, sizes[0], classes)
					s := DPSGDStep{Clip: 0.5, NoiseStd: 0.5 * 1.1, Scale: 1.0 / 32, LR: 0.1, Seed: NewNoiseSeed(noise)}
					stepBoth(t, m, cpu, step, x, y, s, s)
				}
				x, _ := mlpBatch(r, 9, sizes[0], classes)
				logits, err := m.Logits(x)
				if err != nil {
					t.Fatal(err)
				}
				near(t, "logits of the trained model", logits, widen(cpu.forward(x, 9, false)), 1e-4, 1)
				got, err := m.Params()
				if err != nil {
					t.Fatal(err)
				}
				return got, cpu
			}
			first, _ := run()
			second, _ := run()
			for k := range first {
				sameBits32(t, fmt.Sprintf("parameter %d, second run on %s", k, dev.Name()), second[k], first[k])
			}
		})
	}
}

func rms(s []float32) float64 {
	q := 0.0
	for _, v := range s {
		q += float64(v) * float64(v)
	}
	return math.Sqrt(q / float64(max(len(s), 1)))
}

// The training kernels on their own: the losses against nn.SigmoidBCE and
// nn.SoftmaxCrossEntropy, including large |z| where the naive formulas
// overflow, and the fill.
func TestTrainingKernels(t *testing.T) {
	dev := deviceUnderTest(t)
	r := rand.New(rand.NewPCG(45, 46))
	const n = 300
	z := randF32(r, n, 5)
	copy(z, []float32{0, -0, 40, -40, 100, -100, 1e-8})
	labels := make([]int32, n)
	ys := make([]int, n)
	for i := range labels {
		labels[i] = int32(r.IntN(2))
		ys[i] = int(labels[i])
	}
	wantLoss, wantDZ := make([]float32, n), make([]float32, n)
	nn.SigmoidBCE(z, ys, nil, wantLoss, wantDZ)
	buf := func(bytes int) DevicePtr {
		p, err := dev.Alloc(int64(bytes))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { dev.Free(p) })
		return p
	}
	dz, dl, dd, dy := buf(4*n), buf(4*n), buf(4*n), buf(4*n)
	must(t, CopyIn(dev, dz, z))
	must(t, CopyIn(dev, dy, labels))
	must(t, dev.Launch("fairdp_sigmoid_bce", D1(2), D1(block), 0, Ptr(dl), Ptr(dd), Ptr(dz), Ptr(dy), Int(n)))
	gotLoss, gotDZ := make([]float32, n), make([]float32, n)
	must(t, CopyOut(dev, gotLoss, dl))
	must(t, CopyOut(dev, gotDZ, dd))
	near(t, "sigmoid BCE loss vs nn.SigmoidBCE", gotLoss, widen(wantLoss), 1e-6, 1e-6)
	near(t, "sigmoid BCE gradient vs nn.SigmoidBCE", gotDZ, widen(wantDZ), 1e-6, 1e-6)

	// Softmax cross-entropy over 7 classes, logits up to ±40.
	const classes = 7
	zs := randF32(r, n*classes, 8)
	zs[3] = 40
	for i := range labels {
		labels[i] = int32(r.IntN(classes))
		ys[i] = int(labels[i])
	}
	wantDZs := make([]float32, n*classes)
	nn.SoftmaxCrossEntropy(zs, ys, classes, nil, wantLoss, wantDZs)
	dzs, dds := buf(4*n*classes), buf(4*n*classes)
	must(t, CopyIn(dev, dzs, zs))
	must(t, CopyIn(dev, dy, labels))
	must(t, dev.Launch("fairdp_softmax_ce", D1(1), D1(128), 0, Ptr(dl), Ptr(dds), Ptr(dzs), Ptr(dy), Int(n), Int(classes)))
	gotDZs := make([]float32, n*classes)
	must(t, CopyOut(dev, gotLoss, dl))
	must(t, CopyOut(dev, gotDZs, dds))
	near(t, "softmax CE loss vs nn.SoftmaxCrossEntropy", gotLoss, widen(wantLoss), 1e-6, 1e-6)
	near(t, "softmax CE gradient vs nn.SoftmaxCrossEntropy", gotDZs, widen(wantDZs), 1e-6, 1e-6)

	must(t, dev.Launch("fairdp_fill_u32", D1(1), D1(64), 0, Ptr(dz), U32(math.Float32bits(-2.5)), Int(n-1)))
	got := make([]float32, n)
	must(t, CopyOut(dev, got, dz))
	for i, v := range got {
		if want := map[bool]float32{true: -2.5, false: z[n-1]}[i < n-1]; v != want {
			t.Fatalf("fill: element %d = %v, want %v", i, v, want)
		}
	}
}

// A sample whose gradient is not finite stops the step before anything is
// updated (as dpops.Clipper does on the CPU); wrong labels and sizes are
// refused.
func TestDeviceMLPRefusesNonFinite(t *testing.T) {
	dev := deviceUnderTest(t)
	r := rand.New(rand.NewPCG(47, 48))
	sizes := []int{5, 4, 1}
	cpu := newCPUMLP(r, sizes)
	m, err := NewDeviceMLP(dev, sizes, cpu.values())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	x, y := mlpBatch(r, 3, 5, 2)
	x[7] = float32(math.Inf(1))
	s := DPSGDStep{Clip: 1, NoiseStd: 1, Scale: 1, LR: 1, Seed: NewNoiseSeed(r)}
	_, err = m.Step(x, y, s)
	wantErr(t, err, "sample 1 has a gradient norm² that is negative or not finite")
	got, err := m.Params()
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range cpu.values() {
		sameBits32(t, fmt.Sprintf("parameter %d after a refused step", k), got[k], v)
	}
	_, err = m.Step(x[:5], []int32{2}, s)
	wantErr(t, err, "label 2, want 0..1")
	_, err = m.Step(x[:4], []int32{1}, s)
	wantErr(t, err, "4 input values for 1 samples of 5 features")
	if _, err := NewDeviceMLP(dev, []int{5, 2}, nil); err == nil {
		t.Error("NewDeviceMLP accepted a model with 2 outputs")
	}
}

// A refused step (checked once, at the step's end) leaves no trace in the
// optimizer either: with momentum or Adam, a refused step then a good one
// gives the same bits as the good one alone (the update kernels skip on the
// device, and the refused step is not counted as Adam's t).
func TestDeviceRefusedStepLeavesOptimizer(t *testing.T) {
	dev := deviceUnderTest(t)
	for _, o := range []Optimizer{{Kind: "sgd", Momentum: 0.9}, {Kind: "adam", Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}} {
		r := rand.New(rand.NewPCG(57, 58))
		sizes := []int{5, 4, 1}
		cpu := newCPUMLP(r, sizes)
		x, y := mlpBatch(r, 3, 5, 2)
		bad := slices.Clone(x)
		bad[7] = float32(math.Inf(1))
		seed := NewNoiseSeed(r)
		run := func(refuseFirst bool) [][]float32 {
			m, err := NewDeviceMLP(dev, sizes, cpu.values())
			must(t, err)
			defer m.Close()
			must(t, m.SetOptimizer(o))
			s := DPSGDStep{Clip: 1, NoiseStd: 1, Scale: 1, LR: 0.5, Seed: seed}
			if refuseFirst {
				_, err = m.Step(bad, y, s)
				wantErr(t, err, "sample 1 has a gradient norm² that is negative or not finite")
			}
			_, err = m.Step(x, y, s)
			must(t, err)
			got, err := m.Params()
			must(t, err)
			return got
		}
		want, got := run(false), run(true)
		for k := range want {
			sameBits32(t, fmt.Sprintf("%s: parameter %d after a refused and a good step", o.Kind, k), got[k], want[k])
		}
	}
}
