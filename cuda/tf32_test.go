package cuda

import (
	"math/rand/v2"
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
