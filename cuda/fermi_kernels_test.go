// The DP-FERMI kernels against package fermi's CPU maths. An external test
// (package fermi imports trainer, which imports cuda), run on the emulated
// device by `make test-gpu-emulated` and on GPU 0 by `make test-gpu`.

package cuda_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/fairdp/fairdp/cuda"
	"github.com/fairdp/fairdp/fermi"
	"github.com/fairdp/fairdp/models"
)

// deviceForTest opens the device under test: the emulated device in a
// `cudaemu` build (FAIRDP_DEVICE=emu, the default here), GPU 0 in a `cuda`
// build. Without one it skips, or fails when FAIRDP_REQUIRE_DEVICE is set.
func deviceForTest(t *testing.T) cuda.Device {
	t.Helper()
	if os.Getenv("FAIRDP_DEVICE") == "" {
		t.Setenv("FAIRDP_DEVICE", "emu")
	}
	dev, err := cuda.OpenDevice()
	if err != nil {
		if os.Getenv("FAIRDP_REQUIRE_DEVICE") != "" {
			t.Fatal(err)
		}
		t.Skipf("no device under test (make test-gpu-emulated, make test-gpu), the DP-FERMI kernels are not tested: %v", err)
	}
	t.Cleanup(func() { dev.Close() })
	return dev
}

// onDevice copies s into a new device buffer (nil: the null pointer).
func onDevice[E any](t *testing.T, dev cuda.Device, s []E) cuda.DevicePtr {
	t.Helper()
	if s == nil {
		return 0
	}
	var z E
	p, err := dev.Alloc(int64(max(len(s), 1)) * int64(sizeOf(z)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Free(p) })
	if err := cuda.CopyIn(dev, p, s); err != nil {
		t.Fatal(err)
	}
	return p
}

func sizeOf(v any) int {
	switch v.(type) {
	case float64:
		return 8
	default:
		return 4
	}
}

// fromDevice copies len(dst) values of p into dst.
func fromDevice[E any](t *testing.T, dev cuda.Device, dst []E, p cuda.DevicePtr) {
	t.Helper()
	if err := dev.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if err := cuda.CopyOut(dev, dst, p); err != nil {
		t.Fatal(err)
	}
}

// launch runs kernel over units with the given number of blocks of 256
// threads (FAIRDP_BLOCK); nothing for no units or no blocks.
func launch(t *testing.T, dev cuda.Device, kernel string, blocks int, args ...cuda.Arg) {
	t.Helper()
	if blocks < 1 {
		return
	}
	if err := dev.Launch(kernel, cuda.D1(blocks), cuda.D1(256), 0, args...); err != nil {
		t.Fatal(err)
	}
}

func closeTo(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if d := math.Abs(got - want); !(d <= tol*math.Max(1, math.Abs(want))) {
		t.Errorf("%s = %v, want %v (difference %.3g)", what, got, want, d)
	}
}

// ermiCase is one random regularizer and batch.
type ermiCase struct {
	n, out, k int
	eo        bool
	part      fermi.Part
	grid      int // blocks of thread-per-sample launches; 0: enough for one thread per sample
}

func (c ermiCase) String() string {
	return fmt.Sprintf("n=%d out=%d k=%d eo=%v part=%d grid=%d", c.n, c.out, c.k, c.eo, c.part, c.grid)
}

// fairdp_fermi_grad against package fermi's CPU maths (models.Probabilities,
// Regularizer.Coefficients, LogitGrad, GradW, Psi) on random shapes: one
// logit and softmax, one to three groups (one of them empty: its 1/sqrt(p)
// is 0), demographic parity and equalized odds, every part, batches of 0, 1,
// 255, 257 and 300 (not multiples of the block size), and grids of one
// block (each thread several samples). The probabilities use exp and log,
// so the comparison is to 1e-6, not bit for bit.
func TestFermiGradKernelMatchesCPU(t *testing.T) {
	dev := deviceForTest(t)
	r := rand.New(rand.NewPCG(61, 62))
	var cases []ermiCase
	for _, n := range []int{0, 1, 255, 257, 300} {
		for _, out := range []int{1, 3} {
			for _, part := range []fermi.Part{fermi.Full, fermi.NonSensitive, fermi.Sensitive} {
				cases = append(cases, ermiCase{n: n, out: out, k: 1 + r.IntN(3), eo: r.IntN(2) == 0, part: part, grid: r.IntN(2)})
			}
		}
	}
	for _, c := range cases {
		t.Run(c.String(), func(t *testing.T) { checkFermiGrad(t, dev, r, c) })
	}
}

func checkFermiGrad(t *testing.T, dev cuda.Device, r *rand.Rand, c ermiCase) {
	n, out, k := c.n, c.out, c.k
	l := max(2, out)
	mats := 1
	if c.eo {
		mats = l
	}
	// Group frequencies per matrix, the last group empty when k > 1.
	freq := make([]float64, mats*k)
	for m := range mats {
		row, total := freq[m*k:(m+1)*k], 0.0
		for g := range row {
			if k == 1 || g < k-1 {
				row[g] = 0.1 + r.Float64()
				total += row[g]
			}
		}
		for g := range row {
			row[g] /= total
		}
	}
	reg, err := fermi.NewRegularizer(k, l, c.eo, freq)
	if err != nil {
		t.Fatal(err)
	}
	inv := make([]float64, len(freq))
	for i, p := range freq {
		if p > 0 {
			inv[i] = 1 / math.Sqrt(p)
		}
	}
	for i := range reg.W {
		reg.W[i] = r.NormFloat64()
	}
	z, dl := make([]float32, n*out), make([]float32, n*out)
	for i := range z {
		z[i], dl[i] = float32(2*r.NormFloat64()), float32(r.NormFloat64())
	}
	labels, groups := make([]int32, n), make([]int32, n)
	for i := range n {
		labels[i] = int32(r.IntN(l))
		if k > 1 {
			groups[i] = int32(r.IntN(k - 1)) // members of the non-empty groups
		}
	}
	lossW, fairW := r.Float64(), 3*r.NormFloat64()
	width := k * l
	eo := 0
	if c.eo {
		eo = 1
	}
	// The CPU maths.
	probs := make([]float32, n*l)
	if n > 0 {
		models.Probabilities(z, out, n, probs)
	}
	wantDz, wantW, wantPsi := make([]float32, n*out), make([]float64, n*width), make([]float64, n)
	coef, row := make([]float64, l), make([]float64, l)
	for i := range n {
		s, y := int(groups[i]), int(labels[i])
		for j := range out {
			wantDz[i*out+j] = float32(lossW * float64(dl[i*out+j]))
		}
		reg.Coefficients(s, y, c.part, coef)
		fermi.LogitGrad(probs[i*l:(i+1)*l], coef, out, fairW, wantDz[i*out:(i+1)*out])
		for j := range l {
			row[j] = float64(probs[i*l+j])
		}
		reg.GradW(row, s, y, c.part, 1, wantW[i*width:(i+1)*width])
		wantPsi[i] = reg.Psi(row, s, y)
	}
	// The kernel; dz written over dl's copy (in place).
	grid := c.grid
	if grid == 0 {
		grid = (n + 255) / 256
	}
	if n == 0 {
		grid = 0
	}
	dz := make([]float32, n*out)
	dDz := onDevice(t, dev, append([]float32{0}, dl...)[1:])
	dW, dPsi := onDevice(t, dev, make([]float64, n*width+1)), onDevice(t, dev, make([]float64, n+1))
	launch(t, dev, "fairdp_fermi_grad", grid, cuda.Ptr(dDz), cuda.Ptr(dW), cuda.Ptr(dPsi), cuda.Ptr(onDevice(t, dev, append(z, 0))),
		cuda.Ptr(dDz), cuda.Ptr(onDevice(t, dev, append(labels, 0))), cuda.Ptr(onDevice(t, dev, append(groups, 0))),
		cuda.Ptr(onDevice(t, dev, reg.W)), cuda.Ptr(onDevice(t, dev, inv)), cuda.Int(n), cuda.Int(out), cuda.Int(k),
		cuda.Int(l), cuda.Int(eo), cuda.F64(lossW), cuda.F64(fairW), cuda.Int(int(c.part)))
	gotW, gotPsi := make([]float64, n*width), make([]float64, n)
	fromDevice(t, dev, dz, dDz)
	fromDevice(t, dev, gotW, dW)
	fromDevice(t, dev, gotPsi, dPsi)
	for i := range dz {
		closeTo(t, fmt.Sprintf("dz[%d]", i), float64(dz[i]), float64(wantDz[i]), 1e-6)
	}
	for i := range gotW {
		closeTo(t, fmt.Sprintf("wrow[%d]", i), gotW[i], wantW[i], 1e-6)
	}
	for i := range gotPsi {
		closeTo(t, fmt.Sprintf("psi[%d]", i), gotPsi[i], wantPsi[i], 1e-6)
	}
}

// The small kernels of a DP-FERMI step against their definitions, on
// batches of 0, 1, 255, 257 and 600 samples: W's share of the joint norms
// and the clipped-count (bit for bit: the same operations in the same
// order), the per-matrix sums of scaled rows (a block reduction in another
// order: to 1e-12) and the combined output gradient (bit for bit).
func TestFermiSmallKernels(t *testing.T) {
	dev := deviceForTest(t)
	r := rand.New(rand.NewPCG(63, 64))
	for _, n := range []int{0, 1, 255, 257, 600} {
		for _, mats := range []int{1, 3} {
			t.Run(fmt.Sprintf("n=%d mats=%d", n, mats), func(t *testing.T) {
				width, out := 1+r.IntN(7), 1+r.IntN(4)
				rows, sq, norms := make([]float64, n*width), make([]float64, n), make([]float64, n)
				scale, labels := make([]float32, n), make([]int32, n)
				dz, extra := make([]float32, n*out), make([]float32, n*out)
				for i := range rows {
					rows[i] = r.NormFloat64()
				}
				for i := range n {
					sq[i], norms[i], scale[i], labels[i] = r.Float64(), 2*r.Float64(), float32(r.Float64()), int32(r.IntN(mats))
				}
				if n > 0 {
					norms[n/2] = 1 // exactly at the bound: not clipped
				}
				for i := range dz {
					dz[i], extra[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
				}
				const w2, bound, a = 0.37, 1.0, 0.625
				threads := (n + 255) / 256
				// W's share of the squared norms.
				dSq := onDevice(t, dev, append(sq, 0))
				launch(t, dev, "fairdp_fermi_w_sqnorms", threads, cuda.Ptr(dSq), cuda.Ptr(onDevice(t, dev, append(rows, 0))),
					cuda.Int(n), cuda.Int(width), cuda.F64(w2))
				got := make([]float64, n)
				fromDevice(t, dev, got, dSq)
				for i := range n {
					s := 0.0
					for _, v := range rows[i*width : (i+1)*width] {
						s += v * v
					}
					if want := sq[i] + w2*s; got[i] != want {
						t.Errorf("sq[%d] = %v, want %v", i, got[i], want)
					}
				}
				// Per-matrix sums, scaled and not.
				for _, scaled := range []bool{true, false} {
					var dScale cuda.DevicePtr
					if scaled {
						dScale = onDevice(t, dev, append(scale, 0))
					}
					dSum := onDevice(t, dev, make([]float64, mats*width))
					launch(t, dev, "fairdp_fermi_sums", 1+r.IntN(mats*width), cuda.Ptr(dSum), cuda.Ptr(onDevice(t, dev, append(rows, 0))),
						cuda.Ptr(dScale), cuda.Ptr(onDevice(t, dev, append(labels, 0))), cuda.Int(n), cuda.Int(width), cuda.Int(mats))
					sums := make([]float64, mats*width)
					fromDevice(t, dev, sums, dSum)
					want := make([]float64, mats*width)
					for i := range n {
						t0 := 0
						if mats > 1 {
							t0 = int(labels[i])
						}
						c := 1.0
						if scaled {
							c = float64(scale[i])
						}
						for j := range width {
							want[t0*width+j] += c * rows[i*width+j]
						}
					}
					for o := range want {
						closeTo(t, fmt.Sprintf("scaled %v sum[%d]", scaled, o), sums[o], want[o], 1e-12)
					}
				}
				// The clipped count.
				dCount := onDevice(t, dev, []float64{-1})
				launch(t, dev, "fairdp_count_above", 1, cuda.Ptr(dCount), cuda.Ptr(onDevice(t, dev, append(norms, 0))), cuda.Int(n), cuda.F64(bound))
				count := make([]float64, 1)
				fromDevice(t, dev, count, dCount)
				want := 0
				for _, v := range norms {
					if v > bound {
						want++
					}
				}
				if count[0] != float64(want) {
					t.Errorf("count above %v = %v, want %d", bound, count[0], want)
				}
				// The combined output gradient.
				dDz := onDevice(t, dev, append(dz, 0))
				launch(t, dev, "fairdp_fermi_combine", 1+r.IntN(max(1, (n*out+255)/256)), cuda.Ptr(dDz),
					cuda.Ptr(onDevice(t, dev, append(extra, 0))), cuda.Ptr(onDevice(t, dev, append(scale, 0))), cuda.Int(n), cuda.Int(out), cuda.F64(a))
				comb := make([]float32, n*out)
				fromDevice(t, dev, comb, dDz)
				for e := range comb {
					if want := float32(a*float64(scale[e/out])*float64(dz[e])) + extra[e]; comb[e] != want {
						t.Errorf("combined dz[%d] = %v, want %v", e, comb[e], want)
					}
				}
			})
		}
	}
}
