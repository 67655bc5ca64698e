package cuda

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// tf32Recorder is a Device that records, for every GEMM, whether TF32 was
// on, and whether the host half of the step had run (mark) when it was
// queued; SetTF32 reaches the device under it when that one has a TF32
// mode (the Driver), so the step runs as it would.
type tf32Recorder struct {
	Device
	on, mark bool
	gemms    []tf32Gemm
}

type tf32Gemm struct{ tf32, afterMark bool }

func (d *tf32Recorder) SetTF32(on bool) error {
	d.on = on
	if t, ok := d.Device.(tf32Device); ok {
		return t.SetTF32(on)
	}
	return nil
}

func (d *tf32Recorder) Sgemm(ta, tb Transpose, m, n, k int, alpha float32, a DevicePtr, lda int, b DevicePtr, ldb int,
	beta float32, c DevicePtr, ldc int) error {
	d.gemms = append(d.gemms, tf32Gemm{d.on, d.mark})
	return d.Device.Sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

func (d *tf32Recorder) SgemmStrided(ta, tb Transpose, m, n, k int, alpha float32, a DevicePtr, lda int, strideA int64,
	b DevicePtr, ldb int, strideB int64, beta float32, c DevicePtr, ldc int, strideC int64, batch int) error {
	d.gemms = append(d.gemms, tf32Gemm{d.on, d.mark})
	return d.Device.SgemmStrided(ta, tb, m, n, k, alpha, a, lda, strideA, b, ldb, strideB, beta, c, ldc, strideC, batch)
}

// With TF32 asked for, the forward and backward GEMMs use it and every
// GEMM that forms a released sum is FP32: after a group clip's rule or a
// DP-FERMI step's host half (both passes: the combined backward included),
// and a flat step's last GEMMs (the linear layers' clipped sums). Without
// SetTF32 no GEMM uses it. This is what keeps the clip bound, and the
// receipt's sensitivity, exact under TF32.
func TestTF32LeavesReleasedSumsFP32(t *testing.T) {
	base := deviceUnderTest(t)
	plan := cnnPlan{name: "tf32", c: 1, h: 8, w: 8, convs: []ConvGeom{{OutC: 3, K: 3, Stride: 1, Pad: 1}}, pools: []int{2},
		hidden: []int{5}, classes: 3}
	for _, tf32 := range []bool{false, true} {
		for _, algo := range []string{"dpsgd", "dpsgdf", "fermi"} {
			dev := &tf32Recorder{Device: base}
			r := rand.New(rand.NewPCG(93, 94))
			_, spec := plan.build(r)
			net, err := NewDeviceNet(dev, spec)
			must(t, err)
			net.SetTF32(tf32)
			n := 6
			x, y := mlpBatch(r, n, 64, 3)
			groups, groups32 := make([]int, n), make([]int32, n)
			for i := range groups {
				groups[i], groups32[i] = i%2, int32(i%2)
			}
			switch algo {
			case "dpsgd":
				_, err = net.Step(x, y, DPSGDStep{Clip: 1, NoiseStd: 1, Scale: 0.2, LR: 0.01, Seed: NewNoiseSeed(r)})
				dev.mark = true // not used: the flat step's released GEMMs are its last
			case "dpsgdf":
				rule := func(above, atMost []int32) (GroupRule, error) {
					dev.mark = true
					return GroupRule{Bounds: []float64{1, 1}, Weights: []float64{1, 1}, NoiseStd: 1}, nil
				}
				_, err = net.Step(x, y, DPSGDStep{Clip: 1, NoiseStd: 1, Scale: 0.2, LR: 0.01, Seed: NewNoiseSeed(r),
					Group: &GroupClip{Groups: groups32, Count: 2, Rule: rule}})
			case "fermi":
				f := NewDeviceFermi(net)
				s := FermiStep{Groups: 2, Classes: 3, W: make([]float64, 6), InvSqrt: []float64{1.4, 1.4}, Clip: 1, WWeight: 0.1,
					NoiseStd: 1, Scale: 0.2, LR: 0.01, Clipped: FermiPass{On: true, Loss: 1, Fair: 1, Part: FermiNonSensitive},
					Exact: FermiPass{On: true, Fair: 1, Part: FermiSensitive}}
				_, err = f.Step(x, y, groups, s, func(FermiSums) (NoiseSeed, error) { dev.mark = true; return NewNoiseSeed(r), nil })
				must(t, f.Close())
			}
			must(t, err)
			must(t, net.Close())
			var on, off int
			for i, g := range dev.gemms {
				if g.tf32 {
					on++
				}
				released := g.afterMark && algo != "dpsgd" || algo == "dpsgd" && i >= len(dev.gemms)-4 // two linear layers: W and b each
				if g.tf32 && (released || !tf32) {
					t.Errorf("tf32 %v, %s: GEMM %d of %d used TF32 (released sum: %v)", tf32, algo, i, len(dev.gemms), released)
				}
				if released {
					off++
				}
			}
			if tf32 && on == 0 || off == 0 {
				t.Errorf("tf32 %v, %s: %d GEMMs in TF32 and %d released-sum GEMMs of %d", tf32, algo, on, off, len(dev.gemms))
			}
		}
	}
}

// The trainer's device says in its name (the report's backend) whether
// TF32 was asked for, and that it is a no-op where the device has no TF32
// mode (the emulated device).
func TestTrainerDeviceNamesTF32(t *testing.T) {
	dev := deviceUnderTest(t)
	td := &TrainerDevice{dev: dev, name: dev.Name()}
	if strings.Contains(td.Name(), "TF32") {
		t.Errorf("name %q mentions TF32 without it", td.Name())
	}
	must(t, td.SetTF32(true))
	want := "TF32 tensor-core GEMMs"
	if _, ok := dev.(tf32Device); !ok {
		want = "a no-op on this device"
	}
	if !strings.Contains(td.Name(), want) {
		t.Errorf("name %q, want it to say %q", td.Name(), want)
	}
}

// RoundTF32 is cvt.rna.tf32.f32: to nearest with ties away from zero, 13
// low mantissa bits cleared; infinities and NaNs kept.
func TestRoundTF32(t *testing.T) {
	for _, c := range []struct{ in, want float32 }{
		{1, 1},
		{1 + 0x1p-12, 1},                    // below half an ulp of TF32 (2⁻¹⁰)
		{1 + 0x1p-11, 1 + 0x1p-10},          // a tie: away from zero
		{-(1 + 0x1p-11), -(1 + 0x1p-10)},    // a tie, negative: away from zero
		{1 + 0x1p-11 - 0x1p-23, 1},          // just below the tie
		{1 + 0x1p-10 + 0x1p-11, 1 + 0x1p-9}, // a tie above an odd TF32 value: away, not to even
		{2 - 0x1p-23, 2},                    // carries into the exponent
		{0x1p-130, 0x1p-130},                // a subnormal with no low bits
		{0x1p-140, 0},                       // a subnormal below half a TF32 ulp
		{math.MaxFloat32, float32(math.Inf(1))},
		{float32(math.Inf(-1)), float32(math.Inf(-1))},
	} {
		if got := RoundTF32(c.in); math.Float32bits(got) != math.Float32bits(c.want) {
			t.Errorf("RoundTF32(%g) = %g, want %g", c.in, got, c.want)
		}
	}
	if nan := float32(math.NaN()); !math.IsNaN(float64(RoundTF32(nan))) {
		t.Error("RoundTF32(NaN) is not NaN")
	}
}

// On a device with a TF32 mode (the emulated device too), an Sgemm with it
// on is the FP32 product of the inputs rounded to TF32, bit for bit, and
// with it off the FP32 product again.
func TestTF32GemmRoundsInputs(t *testing.T) {
	dev := deviceUnderTest(t)
	td, ok := dev.(tf32Device)
	if !ok {
		t.Skip("the device has no TF32 mode")
	}
	if _, emu := dev.(interface{ Live() int }); !emu {
		t.Skip("a GPU's TF32 products accumulate in its own order; checked on the emulated device")
	}
	r := rand.New(rand.NewPCG(101, 102))
	const m, n, k = 7, 5, 33
	a, b := make([]float32, m*k), make([]float32, k*n)
	for i := range a {
		a[i] = float32(r.NormFloat64())
	}
	for i := range b {
		b[i] = float32(r.NormFloat64())
	}
	ra, rb := make([]float32, len(a)), make([]float32, len(b))
	for i := range a {
		ra[i] = RoundTF32(a[i])
	}
	for i := range b {
		rb[i] = RoundTF32(b[i])
	}
	da, db, dc := testBuf(t, dev, 4*len(a)), testBuf(t, dev, 4*len(b)), testBuf(t, dev, 4*m*n)
	gemm := func(x, y []float32, tf32 bool) []float32 {
		must(t, CopyIn(dev, da, x))
		must(t, CopyIn(dev, db, y))
		must(t, td.SetTF32(tf32))
		defer func() { must(t, td.SetTF32(false)) }()
		must(t, dev.Sgemm(NoTrans, NoTrans, m, n, k, 1, da, m, db, k, 0, dc, m))
		c := make([]float32, m*n)
		must(t, CopyOut(dev, c, dc))
		return c
	}
	fp32, tf32, rounded := gemm(a, b, false), gemm(a, b, true), gemm(ra, rb, false)
	sameBits32(t, "TF32 product vs the FP32 product of TF32-rounded inputs", tf32, rounded)
	if slices.Equal(fp32, tf32) {
		t.Error("the TF32 product equals the FP32 product: the inputs were not rounded")
	}
	sameBits32(t, "FP32 product after TF32 was switched off", gemm(a, b, false), fp32)
}

// With TF32 on (the emulated device rounds the GEMMs' inputs), a sample's
// clipped contribution is still bounded by the clip: its norm is taken of
// FP32 values and the GEMM that sums it is FP32. One sample whose input
// values all round up under TF32 (1 + 2⁻¹¹ + 2⁻²⁰), a gradient far above
// the bound, no noise, plain SGD at rate 1: the update's norm is the bound
// to FP32 rounding; had the released GEMM used TF32, it would exceed the
// bound by ≈ 2⁻¹¹ relative.
func TestTF32ClippedContributionBounded(t *testing.T) {
	dev := deviceUnderTest(t)
	if _, ok := dev.(tf32Device); !ok {
		t.Skip("the device has no TF32 mode")
	}
	const in, clip = 40, 0.25
	w := make([]float32, in)
	for i := range w {
		w[i] = 0.5
	}
	net, err := NewDeviceMLP(dev, []int{in, 1}, [][]float32{w, {0}})
	must(t, err)
	defer func() { must(t, net.Close()) }()
	net.SetTF32(true)
	x := make([]float32, in)
	for i := range x {
		x[i] = 1 + 0x1p-11 + 0x1p-20
		if RoundTF32(x[i]) <= x[i] {
			t.Fatal("the input does not round up under TF32")
		}
	}
	for step := range 3 {
		before, err := net.Params()
		must(t, err)
		_, err = net.Step(x, []int32{0}, DPSGDStep{Clip: clip, Scale: 1, LR: 1})
		must(t, err)
		after, err := net.Params()
		must(t, err)
		var sq float64
		for j := range after {
			for i := range after[j] {
				d := float64(after[j][i]) - float64(before[j][i])
				sq += d * d
			}
		}
		if norm := math.Sqrt(sq); norm > clip*(1+1e-5) || norm < clip*(1-1e-3) {
			t.Errorf("step %d: the clipped update's norm is %v, want the bound %v (to FP32 rounding)", step, norm, clip)
		}
	}
}
