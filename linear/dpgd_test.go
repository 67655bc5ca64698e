package linear

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/dpops/accounting"
	"gonum.org/v1/gonum/mat"
)

func logisticData(r *rand.Rand, n, d int) (*mat.Dense, []float64) {
	x, score, _ := randomRegression(r, n, d, 0)
	y := make([]float64, n)
	for i, s := range score {
		if r.Float64() < 1/(1+math.Exp(-s/2)) {
			y[i] = 1
		}
	}
	return x, y
}

// TestClippedSumsFiniteDifferences: without clipping, the gradient sum is
// the gradient of the loss sum; checked against central differences.
func TestClippedSumsFiniteDifferences(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for _, loss := range []Loss{Squared, Logistic} {
		x, y := logisticData(r, 40, 3)
		ex, err := NewExamples(x, y)
		if err != nil {
			t.Fatal(err)
		}
		beta := []float64{0.3, -0.7, 1.1}
		grad := make([]float64, 3)
		inf := math.Inf(1)
		ex.ClippedSums(beta, loss, inf, inf, grad)
		const h = 1e-6
		scratch := make([]float64, 3)
		for j := range beta {
			up := append([]float64(nil), beta...)
			down := append([]float64(nil), beta...)
			up[j] += h
			down[j] -= h
			fd := (ex.ClippedSums(up, loss, inf, inf, scratch) - ex.ClippedSums(down, loss, inf, inf, scratch)) / (2 * h)
			if math.Abs(grad[j]-fd) > 1e-6*math.Max(1, math.Abs(fd)) {
				t.Errorf("%v: ∂/∂β%d = %.10g, finite difference %.10g", loss, j, grad[j], fd)
			}
		}
	}
}

// TestClippedSumsBruteForce compares the clipped sums with a per-example
// loop that materialises every gradient and clips it.
func TestClippedSumsBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	x, y, _ := randomRegression(r, 60, 4, 3)
	ex, err := NewExamples(x, y)
	if err != nil {
		t.Fatal(err)
	}
	beta := []float64{1, -1, 0.5, 0}
	for _, loss := range []Loss{Squared, Logistic} {
		for _, clip := range []struct{ grad, loss float64 }{{0.5, 2}, {3, 10}, {100, 1000}} {
			wantGrad := make([]float64, 4)
			wantLoss := 0.0
			for i := range 60 {
				m := 0.0
				for j := range 4 {
					m += x.At(i, j) * beta[j]
				}
				g := make([]float64, 4)
				norm := 0.0
				for j := range 4 {
					g[j] = loss.Derivative(m, y[i]) * x.At(i, j)
					norm += g[j] * g[j]
				}
				scale := math.Min(1, clip.grad/math.Sqrt(norm))
				for j := range 4 {
					wantGrad[j] += scale * g[j]
				}
				wantLoss += math.Min(loss.Value(m, y[i]), clip.loss)
			}
			grad := make([]float64, 4)
			gotLoss := ex.ClippedSums(beta, loss, clip.grad, clip.loss, grad)
			what := fmt.Sprintf("%v clip %v", loss, clip)
			closeSlices(t, what+" gradient", grad, wantGrad, 1e-12)
			closeSlices(t, what+" loss", []float64{gotLoss}, []float64{wantLoss}, 1e-12)
			noLoss := make([]float64, 4)
			if l := ex.ClippedSums(beta, loss, clip.grad, 0, noLoss); l != 0 {
				t.Errorf("%s: loss sum %v with loss clip 0, want 0", what, l)
			}
			closeSlices(t, what+" gradient without the loss", noLoss, wantGrad, 1e-12)
		}
	}
}

func TestProjectBox(t *testing.T) {
	for _, tc := range []struct {
		in, want []float64
		bound    float64
	}{
		{[]float64{-7, 0.5, 6}, []float64{-5, 0.5, 5}, 5},
		{[]float64{-7, 6}, []float64{-7, 6}, 0},
		{[]float64{-7, 6}, []float64{-7, 6}, math.Inf(1)},
	} {
		b := append([]float64(nil), tc.in...)
		ProjectBox(b, tc.bound)
		closeSlices(t, fmt.Sprintf("ProjectBox(%v, %g)", tc.in, tc.bound), b, tc.want, 0)
	}
}

// plainGD is projected full-batch gradient descent on the mean loss with
// per-example gradients computed and clipped one by one: the noiseless slow
// path DPGD must reproduce as ρ → ∞.
func plainGD(x *mat.Dense, y []float64, loss Loss, steps int, lr, clip, box float64) []float64 {
	n, d := x.Dims()
	beta := make([]float64, d)
	for range steps {
		grad := make([]float64, d)
		for i := range n {
			m := 0.0
			for j := range d {
				m += x.At(i, j) * beta[j]
			}
			dv := loss.Derivative(m, y[i])
			norm := 0.0
			for j := range d {
				norm += dv * x.At(i, j) * dv * x.At(i, j)
			}
			scale := math.Min(1, clip/math.Sqrt(norm))
			for j := range d {
				grad[j] += scale * dv * x.At(i, j)
			}
		}
		for j := range beta {
			beta[j] -= lr * grad[j] / float64(n)
			if box > 0 {
				beta[j] = math.Max(-box, math.Min(box, beta[j]))
			}
		}
	}
	return beta
}

func TestDPGDConvergesToPlainGD(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 26))
	for _, loss := range []Loss{Squared, Logistic} {
		x, y := logisticData(r, 200, 3)
		ex, err := NewExamples(x, y)
		if err != nil {
			t.Fatal(err)
		}
		opts := DPGDOptions{Loss: loss, Steps: 50, LR: 0.3, Clip: 1, Box: 0.8, Rho: 1e24}
		acct, _ := accounting.NewZCDP(opts.Rho)
		got, err := DPGD(rand.New(rand.NewPCG(1, 1)), ex, opts, acct)
		if err != nil {
			t.Fatal(err)
		}
		want := plainGD(x, y, loss, opts.Steps, opts.LR, opts.Clip, opts.Box)
		closeSlices(t, loss.String()+" DP-GD at ρ=1e24 vs plain GD", got, want, 1e-9)
	}
}

func TestDPGDReachesOLS(t *testing.T) {
	r := rand.New(rand.NewPCG(27, 28))
	x, y, _ := randomRegression(r, 300, 2, 0.5)
	ex, _ := NewExamples(x, y)
	want, _ := OLS(x, y)
	acct, _ := accounting.NewZCDP(math.Inf(1))
	got, err := DPGD(rand.New(rand.NewPCG(2, 2)), ex, DPGDOptions{Loss: Squared, Steps: 400, LR: 0.2, Clip: 1e3, Rho: 1e20}, acct)
	if err != nil {
		t.Fatal(err)
	}
	closeSlices(t, "DP-GD (ρ=1e20, no clipping) vs OLS", got, want, 1e-8)
}

// TestDPGDSpendsExactly: T releases of ρ/T each, one mechanism in the
// receipt with Steps = T and noise multiplier 1/√(2ρ/T).
func TestDPGDSpendsExactly(t *testing.T) {
	r := rand.New(rand.NewPCG(29, 30))
	x, y, _ := randomRegression(r, 50, 2, 1)
	ex, _ := NewExamples(x, y)
	acct, _ := accounting.NewZCDP(2)
	if _, err := DPGD(r, ex, DPGDOptions{Loss: Squared, Steps: 40, LR: 0.1, Clip: 2, Box: 5, Rho: 2, Label: "demo"}, acct); err != nil {
		t.Fatal(err)
	}
	if math.Abs(acct.Rho()-2) > 1e-13 {
		t.Errorf("ρ spent = %.17g, want 2", acct.Rho())
	}
	spends := acct.Spends()
	if len(spends) != 1 || spends[0].Steps != 40 || spends[0].Protects != "gradient demo" ||
		math.Abs(spends[0].NoiseMultiplier-1/math.Sqrt(2*2.0/40)) > 1e-12 {
		t.Errorf("spends = %+v, want one gradient mechanism ×40 with σ = %.6g", spends, 1/math.Sqrt(0.1))
	}
}

func TestDPGDErrors(t *testing.T) {
	ex, _ := NewExamples(mat.NewDense(2, 1, []float64{1, 2}), []float64{1, 2})
	ok := DPGDOptions{Loss: Squared, Steps: 1, LR: 0.1, Clip: 1, Rho: 1}
	for _, tc := range []struct {
		name string
		edit func(*DPGDOptions)
		want string
	}{
		{"steps", func(o *DPGDOptions) { o.Steps = 0 }, "Steps"},
		{"lr", func(o *DPGDOptions) { o.LR = math.NaN() }, "LR"},
		{"clip", func(o *DPGDOptions) { o.Clip = 0 }, "Clip"},
		{"rho", func(o *DPGDOptions) { o.Rho = math.Inf(1) }, "Rho"},
		{"box", func(o *DPGDOptions) { o.Box = -1 }, "Box"},
		{"init", func(o *DPGDOptions) { o.Init = []float64{1, 2} }, "Init"},
		{"loss", func(o *DPGDOptions) { o.Loss = 7 }, "unknown loss"},
	} {
		o := ok
		tc.edit(&o)
		acct, _ := accounting.NewZCDP(1)
		_, err := DPGD(rand.New(rand.NewPCG(1, 1)), ex, o, acct)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to mention %q", tc.name, err, tc.want)
		}
	}
	acct, _ := accounting.NewZCDP(0.5)
	if _, err := DPGD(rand.New(rand.NewPCG(1, 1)), ex, ok, acct); err == nil {
		t.Error("DPGD over budget: no error")
	}
	if _, err := NewExamples(mat.NewDense(2, 1, []float64{1, math.NaN()}), []float64{1, 2}); err == nil || !strings.Contains(err.Error(), "X[1][0]") {
		t.Errorf("NewExamples with NaN: %v", err)
	}
}
