package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/nn"
)

// testBuf allocates bytes on dev for the test's life.
func testBuf(t *testing.T, dev Device, bytes int) DevicePtr {
	t.Helper()
	p, err := dev.Alloc(int64(max(bytes, 4)))
	must(t, err)
	t.Cleanup(func() { dev.Free(p) })
	return p
}

// The update kernels on their own, kernel by kernel, against nn's CPU
// optimizers (nn.SGD plain, with weight decay, with momentum; nn.Adam with
// and without weight decay) over four steps, each step's gradient scaled
// as the release scales it (kept in grad, bit for bit): the parameters
// agree after every step (so the velocities and moments do) to float32 tolerance (2e-7 relative of the largest value, i.e. the last bit
// or two) on sizes around the block size and grids that do and do not
// cover the buffer in one pass.
func TestOptimizerKernelsMatchNN(t *testing.T) {
	dev := deviceUnderTest(t)
	type optCase struct {
		name string
		o    Optimizer
	}
	cases := []optCase{
		{"sgd", Optimizer{}},
		{"sgd+decay", Optimizer{Kind: "sgd", WeightDecay: 0.01}},
		{"momentum", Optimizer{Kind: "sgd", Momentum: 0.9}},
		{"momentum+decay", Optimizer{Kind: "sgd", Momentum: 0.5, WeightDecay: 0.003}},
		{"adam", Optimizer{Kind: "adam", Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}},
		{"adam+decay", Optimizer{Kind: "adam", Beta1: 0.8, Beta2: 0.99, Eps: 1e-6, WeightDecay: 0.02}},
	}
	const lr, scale = 0.05, 1.0 / 24
	for _, tc := range cases {
		for _, count := range []int{1, 7, block - 1, block, block + 1, 3*block + 5} {
			t.Run(fmt.Sprintf("%s/%d", tc.name, count), func(t *testing.T) {
				r := rand.New(rand.NewPCG(61, uint64(count)))
				p := &nn.Param[float32]{Value: randF32(r, count, 1), Grad: make([]float32, count)}
				var cpu nn.Optimizer[float32]
				if tc.o.Kind == "adam" {
					cpu = &nn.Adam[float32]{LR: lr, Beta1: tc.o.Beta1, Beta2: tc.o.Beta2, Eps: tc.o.Eps, WeightDecay: tc.o.WeightDecay}
				} else {
					cpu = &nn.SGD[float32]{LR: lr, Momentum: tc.o.Momentum, WeightDecay: tc.o.WeightDecay}
				}
				st := &optState{arena: arena{dev: dev}, o: tc.o}
				defer func() { must(t, st.freeFrom(0)) }()
				w, g := testBuf(t, dev, 4*count), testBuf(t, dev, 4*count)
				must(t, CopyIn(dev, w, p.Value))
				bits := 0
				for step := 1; step <= 4; step++ {
					grad := randF32(r, count, 3)
					must(t, CopyIn(dev, g, grad))
					st.steps = step
					s := DPSGDStep{Scale: scale, LR: lr}
					if step == 3 { // a grid of one block: the grid-stride loop covers the rest
						must(t, launchOneBlock(t, st, dev, w, g, count, s))
					} else {
						must(t, st.update(dev, w, g, count, s, 0))
					}
					for i, v := range grad {
						p.Grad[i] = v * float32(scale) // dpops.NoiseAndScale's scaling
					}
					cpu.Step([]*nn.Param[float32]{p})
					got, gotG := make([]float32, count), make([]float32, count)
					must(t, CopyOut(dev, got, w))
					must(t, CopyOut(dev, gotG, g))
					sameBits32(t, fmt.Sprintf("step %d: released gradient kept in grad", step), gotG, p.Grad)
					near(t, fmt.Sprintf("step %d: parameters vs nn", step), got, widen(p.Value), 2e-7, rms(p.Value))
					for i := range got {
						if got[i] != p.Value[i] {
							bits++
						}
					}
				}
				if bits > 0 { // allowed: Go may fuse a multiply-add that the kernel rounds twice
					t.Logf("%d of %d parameter values differ from nn's in the last bits", bits, 4*count)
				}
			})
		}
	}
}

// launchOneBlock runs st's update kernel on a grid of one block.
func launchOneBlock(t *testing.T, st *optState, dev Device, w, g DevicePtr, count int, s DPSGDStep) error {
	t.Helper()
	one := &oneBlockDevice{Device: dev}
	return st.update(one, w, g, count, s, 0)
}

// oneBlockDevice launches every kernel on a grid of one block.
type oneBlockDevice struct{ Device }

func (d *oneBlockDevice) Launch(kernel string, _, blk Dim3, shared int, args ...Arg) error {
	return d.Device.Launch(kernel, D1(1), blk, shared, args...)
}

// The group clip's kernels against trainer.DPSGD's arithmetic: the counts
// of norms above and at most the threshold per group equal a Go count, and
// every factor equals float32(w_g·dpops.ClipFactor(norm, C_g)) bit for bit,
// norms equal to the threshold and to a bound included, for one sample,
// sizes around the block size and one to five groups.
func TestGroupClipKernels(t *testing.T) {
	dev := deviceUnderTest(t)
	r := rand.New(rand.NewPCG(63, 64))
	for _, k := range []int{1, 2, 5} {
		for _, n := range []int{1, block - 1, block + 1, 700} {
			t.Run(fmt.Sprintf("K=%d/n=%d", k, n), func(t *testing.T) {
				const threshold = 1.0
				norms := make([]float64, n)
				groups := make([]int32, n)
				for i := range norms {
					norms[i] = 2 * r.Float64()
					groups[i] = int32(r.IntN(k))
				}
				norms[0] = threshold
				bounds, weights := make([]float64, k), make([]float64, k)
				for g := range k {
					bounds[g], weights[g] = 0.2+2*r.Float64(), 3*r.Float64()
				}
				if n > 1 {
					norms[1] = bounds[groups[1]]
				}
				counts := make([]int32, 2*k)
				scale := make([]float32, n)
				wantScale := make([]float32, n)
				for i, g := range groups {
					if norms[i] > threshold {
						counts[g]++
					} else {
						counts[k+int(g)]++
					}
					wantScale[i] = float32(weights[g] * dpops.ClipFactor(norms[i], bounds[g]))
				}
				dcounts, dnorms, dgroups := testBuf(t, dev, 8*k), testBuf(t, dev, 8*n), testBuf(t, dev, 4*n)
				drule, dscale := testBuf(t, dev, 16*k), testBuf(t, dev, 4*n)
				must(t, CopyIn(dev, dnorms, norms))
				must(t, CopyIn(dev, dgroups, groups))
				must(t, CopyIn(dev, drule, append(slices.Clone(bounds), weights...)))
				for _, grid := range []int{1, (n + block - 1) / block} {
					must(t, dev.Launch("fairdp_fill_u32", D1(1), D1(block), 0, Ptr(dcounts), U32(0), Int(2*k)))
					must(t, dev.Launch("fairdp_group_counts", D1(grid), D1(block), 0, Ptr(dcounts), Ptr(dnorms), Ptr(dgroups),
						F64(threshold), Int(n), Int(k)))
					got := make([]int32, 2*k)
					must(t, CopyOut(dev, got, dcounts))
					if !slices.Equal(got, counts) {
						t.Fatalf("grid %d: counts (above, then at most) %v, want %v", grid, got, counts)
					}
					must(t, dev.Launch("fairdp_group_clip_factors", D1(grid), D1(block), 0, Ptr(dscale), Ptr(dnorms), Ptr(dgroups),
						Ptr(drule), Int(n), Int(k)))
					must(t, CopyOut(dev, scale, dscale))
					sameBits32(t, fmt.Sprintf("grid %d: factors vs w·dpops.ClipFactor", grid), scale, wantScale)
				}
			})
		}
	}
}

// testRule is a deterministic group rule for the step tests: bounds and
// weights that depend on the counts, so that a wrong count shows in the
// parameters; it records every call's counts.
type testRule struct {
	clip  float64
	calls [][]int32
}

func (r *testRule) rule(above, atMost []int32) (GroupRule, error) {
	r.calls = append(r.calls, append(slices.Clone(above), atMost...))
	k := len(above)
	g := GroupRule{Bounds: make([]float64, k), Weights: make([]float64, k)}
	total := 0
	for j := range k {
		total += int(above[j] + atMost[j])
	}
	for j := range k {
		g.Bounds[j] = r.clip * (1 + float64(above[j])/float64(above[j]+atMost[j]+1))
		g.Weights[j] = float64(atMost[j]+1) / float64(total+1)
	}
	g.NoiseStd = 0.7 * slices.Max(g.Bounds) * slices.Max(g.Weights)
	return g, nil
}

// groupStep is cpuNet's step with a group clip: the norms from
// dpops.Clipper, the counts, the rule and the factors as trainer.DPSGD
// computes them; it returns the rule's noise std.
func (m *cpuNet) groupStep(t *testing.T, n int, s DPSGDStep) float64 {
	t.Helper()
	norms, err := m.clip.Norms(n, m.blocks...)
	must(t, err)
	k := s.Group.Count
	counts := make([]int32, 2*k)
	for i, g := range s.Group.Groups {
		if norms[i] > s.Clip {
			counts[g]++
		} else {
			counts[k+int(g)]++
		}
	}
	rule, err := s.Group.Rule(counts[:k], counts[k:])
	must(t, err)
	scale := make([]float32, n)
	for i, g := range s.Group.Groups {
		scale[i] = float32(rule.Weights[g] * dpops.ClipFactor(norms[i], rule.Bounds[g]))
	}
	if n > 0 {
		for _, b := range m.blocks {
			b.ParamGrads(scale)
		}
	}
	return rule.NoiseStd
}

// DeviceNet steps with a group clip and each optimizer (plain SGD with
// weight decay, momentum, Adam) agree with the CPU engine (nn's layers and
// optimizers, dpops, the same rule on counts from the CPU's norms, the same
// Philox noise) to 1e-4 relative after every step on an MLP and a small
// CNN, batches of 37, 1, 0, 64 and 23; the rule sees the same counts on
// both; two device runs give the same bits.
func TestDeviceNetGroupClipAndOptimizers(t *testing.T) {
	dev := deviceUnderTest(t)
	opts := []Optimizer{
		{Kind: "sgd", WeightDecay: 0.01},
		{Kind: "sgd", Momentum: 0.9},
		{Kind: "adam", Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.001},
	}
	cnn := cnnPlan{name: "cnn", c: 1, h: 8, w: 8, convs: []ConvGeom{{OutC: 3, K: 3, Stride: 1}}, pools: []int{2}, classes: 3}
	for _, model := range []string{"mlp", "cnn"} {
		for _, o := range opts {
			for _, group := range []bool{true, false} {
				name := fmt.Sprintf("%s/%s,momentum=%v,decay=%v/group=%v", model, o.Kind, o.Momentum, o.WeightDecay, group)
				t.Run(name, func(t *testing.T) {
					const k = 3
					var calls [2][][]int32
					run := func() [][]float32 {
						r := rand.New(rand.NewPCG(65, 66))
						var cpu *cpuNet
						var net *DeviceNet
						var err error
						in, classes := 14, 2
						if model == "mlp" {
							cpu = newCPUMLP(r, []int{14, 16, 1})
							net, err = NewDeviceMLP(dev, []int{14, 16, 1}, cpu.values())
						} else {
							var spec []NetLayer
							cpu, spec = cnn.build(r)
							net, err = NewDeviceNet(dev, spec)
							in, classes = 64, 3
						}
						must(t, err)
						if o.Kind == "adam" {
							cpu.opt = &nn.Adam[float32]{LR: 0.01, Beta1: o.Beta1, Beta2: o.Beta2, Eps: o.Eps, WeightDecay: o.WeightDecay}
						} else {
							cpu.opt = &nn.SGD[float32]{LR: 0.01, Momentum: o.Momentum, WeightDecay: o.WeightDecay}
						}
						defer func() { must(t, net.Close()) }()
						must(t, net.SetOptimizer(o))
						noise := rand.New(rand.NewPCG(67, 68))
						devRule, cpuRule := &testRule{clip: 0.5}, &testRule{clip: 0.5}
						for step, n := range []int{37, 1, 0, 64, 23} {
							x, y := mlpBatch(r, n, in, classes)
							s := DPSGDStep{Clip: 0.5, NoiseStd: 0.5, Scale: 1.0 / 32, LR: 0.01, Seed: NewNoiseSeed(noise)}
							cs := s
							if group {
								groups := make([]int32, n)
								for i := range groups {
									groups[i] = int32(r.IntN(k))
								}
								s.Group = &GroupClip{Groups: groups, Count: k, Rule: devRule.rule}
								cs.Group = &GroupClip{Groups: groups, Count: k, Rule: cpuRule.rule}
							}
							stepBoth(t, net, cpu, step, x, y, s, cs)
						}
						if group {
							calls = [2][][]int32{devRule.calls, cpuRule.calls}
							if len(devRule.calls) != 5 {
								t.Errorf("the rule ran %d times on the device, want once per step (5)", len(devRule.calls))
							}
							for i := range devRule.calls {
								if !slices.Equal(devRule.calls[i], cpuRule.calls[i]) {
									t.Errorf("step %d: device counts %v, CPU counts %v", i, devRule.calls[i], cpuRule.calls[i])
								}
							}
						}
						got, err := net.Params()
						must(t, err)
						return got
					}
					first := run()
					firstCalls := calls
					second := run()
					for j := range first {
						sameBits32(t, fmt.Sprintf("parameter %d, second run", j), second[j], first[j])
					}
					for i := range firstCalls[0] {
						if !slices.Equal(firstCalls[0][i], calls[0][i]) {
							t.Errorf("step %d: counts %v, then %v on a second run", i, firstCalls[0][i], calls[0][i])
						}
					}
				})
			}
		}
	}
}

// What a group clip or an optimizer cannot take is refused before anything
// changes: groups out of range or of the wrong length, a rule with the wrong
// number of bounds or a bound that is not positive, an optimizer with bad
// settings or chosen after the first step.
func TestDeviceNetGroupClipRefusals(t *testing.T) {
	dev := deviceUnderTest(t)
	cpu, net := newTestMLP(t, dev, rand.New(rand.NewPCG(69, 70)), []int{5, 4, 1})
	r := rand.New(rand.NewPCG(77, 78))
	x, y := mlpBatch(r, 3, 5, 2)
	ok := func(above, atMost []int32) (GroupRule, error) {
		return GroupRule{Bounds: []float64{1, 1}, Weights: []float64{1, 1}, NoiseStd: 1}, nil
	}
	step := func(g *GroupClip) error {
		_, err := net.Step(x, y, DPSGDStep{Clip: 1, Scale: 1, LR: 0.1, Seed: NewNoiseSeed(r), Group: g})
		return err
	}
	wantErr(t, step(&GroupClip{Groups: []int32{0, 2, 1}, Count: 2, Rule: ok}), "sample 1 has group 2, want 0..1")
	wantErr(t, step(&GroupClip{Groups: []int32{0, 1}, Count: 2, Rule: ok}), "2 groups for 3 samples")
	wantErr(t, step(&GroupClip{Groups: []int32{0, 1, 1}, Count: 2}), "want 1..")
	wantErr(t, step(&GroupClip{Groups: []int32{0, 1, 1}, Count: 2, Rule: func(_, _ []int32) (GroupRule, error) {
		return GroupRule{Bounds: []float64{1}, Weights: []float64{1, 1}}, nil
	}}), "1 bounds and 2 weights for 2 groups")
	wantErr(t, step(&GroupClip{Groups: []int32{0, 1, 1}, Count: 2, Rule: func(_, _ []int32) (GroupRule, error) {
		return GroupRule{Bounds: []float64{1, 0}, Weights: []float64{1, 1}}, nil
	}}), "group 1 bound 0")
	got, err := net.Params()
	must(t, err)
	for j, v := range cpu.values() {
		sameBits32(t, fmt.Sprintf("parameter %d after refused steps", j), got[j], v)
	}
	wantErr(t, net.SetOptimizer(Optimizer{Kind: "adam", Beta1: 1, Beta2: 0.9, Eps: 1e-8}), "want β1, β2 in [0, 1)")
	wantErr(t, net.SetOptimizer(Optimizer{Kind: "rmsprop"}), `Kind "rmsprop"`)
	wantErr(t, net.SetOptimizer(Optimizer{Momentum: float32(math.Inf(1))}), "Momentum +Inf")
	must(t, step(&GroupClip{Groups: []int32{0, 1, 1}, Count: 2, Rule: ok}))
	wantErr(t, net.SetOptimizer(Optimizer{Kind: "sgd", Momentum: 0.9}), "after 1 steps")
}

// trafficDevice counts the bytes copied between host and device, by
// either API.
type trafficDevice struct {
	Device
	up, down int64
}

func (d *trafficDevice) CopyToDevice(dst DevicePtr, src unsafe.Pointer, bytes int64) error {
	d.up += bytes
	return d.Device.CopyToDevice(dst, src, bytes)
}

func (d *trafficDevice) CopyToHost(dst unsafe.Pointer, src DevicePtr, bytes int64) error {
	d.down += bytes
	return d.Device.CopyToHost(dst, src, bytes)
}

func (d *trafficDevice) CopyToDeviceAsync(dst DevicePtr, src unsafe.Pointer, bytes int64, s Stream) error {
	d.up += bytes
	return d.Device.CopyToDeviceAsync(dst, src, bytes, s)
}

func (d *trafficDevice) CopyToHostAsync(dst unsafe.Pointer, src DevicePtr, bytes int64) error {
	d.down += bytes
	return d.Device.CopyToHostAsync(dst, src, bytes)
}

// A step with a group clip and Adam sends nothing per sample to the host:
// the clip check (two int32), the per-group counts (2K int32) and the loss
// sum (one float32), whatever the batch size; it uploads the batch, its
// labels and groups and the rule's 2K float64.
func TestDeviceNetGroupClipTraffic(t *testing.T) {
	dev := &trafficDevice{Device: deviceUnderTest(t)}
	r := rand.New(rand.NewPCG(71, 72))
	sizes := []int{6, 8, 1}
	_, net := newTestMLP(t, dev, r, sizes)
	must(t, net.SetOptimizer(Optimizer{Kind: "adam", Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}))
	const k = 4
	rule := &testRule{clip: 1}
	for _, n := range []int{300, 20, 301} { // 301: the buffers grow
		x, y := mlpBatch(r, n, sizes[0], 2)
		groups := make([]int32, n)
		for i := range groups {
			groups[i] = int32(i % k)
		}
		dev.up, dev.down = 0, 0
		_, err := net.Step(x, y, DPSGDStep{Clip: 1, Scale: 0.1, LR: 0.01, Seed: NewNoiseSeed(r),
			Group: &GroupClip{Groups: groups, Count: k, Rule: rule.rule}})
		must(t, err)
		if want := int64(2*4 + 2*k*4 + 4); dev.down != want {
			t.Errorf("n=%d: %d bytes came to the host, want %d (clip check, counts, loss)", n, dev.down, want)
		}
		if want := int64(4*n*sizes[0] + 4*n + 4*n + 16*k); dev.up != want {
			t.Errorf("n=%d: %d bytes went to the device, want %d (batch, labels, groups, rule)", n, dev.up, want)
		}
	}
}

// A run whose first Poisson batch is empty: the step still adds noise and
// updates (Adam's first step included), as the CPU engine does.
func TestDeviceNetEmptyFirstBatch(t *testing.T) {
	dev := deviceUnderTest(t)
	cnn := cnnPlan{name: "cnn", c: 1, h: 8, w: 8, convs: []ConvGeom{{OutC: 3, K: 3, Stride: 1}}, pools: []int{2}, classes: 3}
	r := rand.New(rand.NewPCG(73, 74))
	cpu, spec := cnn.build(r)
	cpu.opt = &nn.Adam[float32]{LR: 0.01, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}
	net, err := NewDeviceNet(dev, spec)
	must(t, err)
	defer net.Close()
	must(t, net.SetOptimizer(Optimizer{Kind: "adam", Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}))
	noise := rand.New(rand.NewPCG(75, 76))
	for step, n := range []int{0, 5} {
		x, y := mlpBatch(r, n, 64, 3)
		s := DPSGDStep{Clip: 1, NoiseStd: 0.5, Scale: 0.1, LR: 0.01, Seed: NewNoiseSeed(noise),
			Group: &GroupClip{Groups: make([]int32, n), Count: 2, Rule: (&testRule{clip: 1}).rule}}
		stepBoth(t, net, cpu, step, x, y, s, s)
	}
}
