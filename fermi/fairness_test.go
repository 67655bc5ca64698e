package fermi

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/fairdp/fairdp/models"
	"github.com/fairdp/fairdp/nn"
	"github.com/fairdp/fairdp/trainer"
)

// addFairnessPerSample is addFairness as the definitions say it, one
// sample at a time through Coefficients, LogitGrad and GradW: the
// reference addFairness's tables and specialised loops must reproduce bit
// for bit.
func addFairnessPerSample[T nn.Float](a *DPFERMI[T], b trainer.Batch[T], out int, part Part, thetaScale, wScale float64, dl []T, perSample bool) {
	reg := a.Reg
	l, size := reg.Classes, reg.Groups*reg.Classes
	coef, row := make([]float64, l), make([]float64, l)
	for i := range b.N() {
		s, y := b.Groups[i], b.Labels[i]
		probs := a.probs[i*l : (i+1)*l]
		for j, p := range probs {
			row[j] = float64(p)
		}
		if thetaScale != 0 {
			reg.Coefficients(s, y, part, coef)
			LogitGrad(probs, coef, out, thetaScale, dl[i*out:(i+1)*out])
		}
		t := reg.MatOf(y)
		dst := a.w.Grad[t*size : (t+1)*size]
		if perSample {
			dst = a.w.row(i, t)
		}
		reg.GradW(row, s, y, part, wScale, dst)
	}
}

// TestAddFairnessMatchesPerSample: every path of addFairness (the default
// shape's loop, the one-logit loop, the general loop, per-sample rows or
// W's sum) against the per-sample definitions, bit for bit: one-logit and
// softmax models, 2 and 3 groups (one of them empty), demographic parity and
// equalized odds, the three parts, with and without θ's term.
func TestAddFairnessMatchesPerSample(t *testing.T) {
	checkAddFairness[float32](t)
	checkAddFairness[float64](t)
}

func checkAddFairness[T nn.Float](t *testing.T) {
	const n = 97
	rng := rand.New(rand.NewPCG(17, 18))
	for _, out := range []int{1, 2, 3} {
		l := max(2, out)
		for _, k := range []int{2, 3} {
			for _, eo := range []bool{false, true} {
				mats := 1
				if eo {
					mats = l
				}
				freq := make([]float64, mats*k) // unequal, one group empty (invSqrt 0) when k = 3
				for t := range mats {
					row := freq[t*k : (t+1)*k]
					row[0], row[1] = 0.25+0.1*float64(t), 0.75-0.1*float64(t)
					if k == 3 {
						row[0], row[2] = 0, row[0]
					}
				}
				reg, err := NewRegularizer(k, l, eo, freq)
				if err != nil {
					t.Fatal(err)
				}
				for i := range reg.W {
					reg.W[i] = rng.NormFloat64()
				}
				var b trainer.Batch[T]
				probs := make([]T, n*l)
				logits := make([]T, n*out)
				for i := range logits {
					logits[i] = T(3 * rng.NormFloat64())
				}
				models.Probabilities(logits, out, n, probs)
				for i := range n {
					b.Idx = append(b.Idx, i)
					b.Labels = append(b.Labels, rng.IntN(l))
					b.Groups = append(b.Groups, rng.IntN(k))
				}
				for _, part := range []Part{Full, NonSensitive, Sensitive} {
					for _, thetaScale := range []float64{0, 1.7} {
						for _, perSample := range []bool{true, false} {
							name := fmt.Sprintf("%T out=%d k=%d eo=%v part=%d θ=%v perSample=%v", probs[0], out, k, eo, part, thetaScale, perSample)
							got, want := fairnessFixture(reg, probs, n), fairnessFixture(reg, probs, n)
							dl, dlWant := make([]T, n*out), make([]T, n*out)
							for i := range dl {
								dl[i] = T(rng.NormFloat64())
								dlWant[i] = dl[i]
							}
							for i := range got.w.Grad {
								got.w.Grad[i] = rng.NormFloat64()
								want.w.Grad[i] = got.w.Grad[i]
							}
							got.addFairness(b, out, part, thetaScale, 0.3, dl, perSample)
							addFairnessPerSample(want, b, out, part, thetaScale, 0.3, dlWant, perSample)
							compareBits(t, name+": ∂/∂logits", dl, dlWant)
							compareBits(t, name+": per-sample W rows", got.w.per, want.w.per)
							compareBits(t, name+": W's sum", got.w.Grad, want.w.Grad)
							for i := range want.w.mat {
								if got.w.mat[i] != want.w.mat[i] {
									t.Fatalf("%s: sample %d's matrix %d, want %d", name, i, got.w.mat[i], want.w.mat[i])
								}
							}
						}
					}
				}
			}
		}
	}
}

// fairnessFixture is a DPFERMI with its own copy of reg, the probabilities
// and a W block started for n samples.
func fairnessFixture[T nn.Float](reg *Regularizer, probs []T, n int) *DPFERMI[T] {
	r := *reg
	r.W = append([]float64(nil), reg.W...)
	a := &DPFERMI[T]{Reg: &r, probs: append([]T(nil), probs...)}
	a.w = newWBlock[T](r.Mats(), r.Groups*r.Classes, 0.5)
	a.w.start(n)
	return a
}

func compareBits[T nn.Float](t *testing.T, what string, got, want []T) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range want {
		if math.Float64bits(float64(got[i])) != math.Float64bits(float64(want[i])) {
			t.Fatalf("%s: value %d is %v, want %v", what, i, got[i], want[i])
		}
	}
}

// TestWBlockTapsMatchLoops: SqNorms and ParamGrads (the 2×2 matrix's
// unrolled loops and the general ones) against the plain loops of their
// definitions, bit for bit, with and without clip factors.
func TestWBlockTapsMatchLoops(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	for _, shape := range [][2]int{{1, 4}, {2, 4}, {1, 6}, {3, 6}} {
		mats, size := shape[0], shape[1]
		const n = 53
		b := newWBlock[float32](mats, size, 0.7)
		b.start(n)
		for i := range n {
			row := b.row(i, rng.IntN(mats))
			for j := range row {
				row[j] = rng.NormFloat64()
			}
		}
		scale := make([]float32, n)
		for i := range scale {
			scale[i] = float32(rng.Float64())
		}
		sq, sqWant := make([]float32, n), make([]float32, n)
		for i := range sq {
			sq[i] = float32(rng.Float64())
			sqWant[i] = sq[i]
		}
		b.SqNorms(sq)
		for i := range n {
			s := 0.0
			for _, v := range b.per[i*size : (i+1)*size] {
				s += v * v
			}
			sqWant[i] += float32(0.7 * 0.7 * s)
		}
		compareBits(t, fmt.Sprintf("%d×%d SqNorms", mats, size), sq, sqWant)
		for _, c := range [][]float32{nil, scale} {
			start := make([]float64, mats*size)
			for i := range start {
				start[i] = rng.NormFloat64()
			}
			copy(b.Grad, start)
			want := append([]float64(nil), start...)
			b.ParamGrads(c)
			for i, t := range b.mat {
				f := 1.0
				if c != nil {
					f = float64(c[i])
				}
				for j, v := range b.per[i*size : (i+1)*size] {
					want[t*size+j] += f * v
				}
			}
			compareBits(t, fmt.Sprintf("%d×%d ParamGrads (factors %v)", mats, size, c != nil), b.Grad, want)
		}
	}
}

// hiddenLossProbs hides a model's LossProbs, so lossProbs takes its
// two-call path.
type hiddenLossProbs[T nn.Float] struct{ trainer.Model[T] }

// TestLossProbsPaths: lossProbs's fused pass (a one-logit models.Model) and
// its two calls (any other model) leave the same loss, gradient and
// probabilities, bit for bit.
func TestLossProbsPaths(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 30))
	m, err := models.New[float32](models.Spec{Arch: "logistic", InShape: []int{3}, Classes: 2}, rng)
	if err != nil {
		t.Fatal(err)
	}
	const n = 40
	var b trainer.Batch[float32]
	b.X = make([]float32, n*3)
	for i := range b.X {
		b.X[i] = float32(3 * rng.NormFloat64())
	}
	for i := range n {
		b.Idx, b.Labels, b.Groups = append(b.Idx, i), append(b.Labels, rng.IntN(2)), append(b.Groups, rng.IntN(2))
	}
	reg, err := NewRegularizer(2, 2, false, []float64{0.5, 0.5})
	if err != nil {
		t.Fatal(err)
	}
	weight := make([]float32, n)
	for i := range weight {
		weight[i] = float32(rng.Float64())
	}
	logits := m.Forward(b.X, n, true)
	for _, w := range [][]float32{nil, weight} {
		fused, plain := &DPFERMI[float32]{Reg: reg}, &DPFERMI[float32]{Reg: reg}
		fused.lossProbs(m, b, logits, 1, w)
		plain.lossProbs(hiddenLossProbs[float32]{m}, b, logits, 1, w)
		compareBits(t, "loss", fused.pass.Loss, plain.pass.Loss)
		compareBits(t, "gradient", fused.pass.DLogits, plain.pass.DLogits)
		compareBits(t, "probabilities", fused.probs, plain.probs)
	}
}
