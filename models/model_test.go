package models

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/fairdp/fairdp/nn"
)

// teacherData is a tiny learnable problem: standard-normal inputs labelled
// by the arg-max of a fixed random linear map.
func teacherData[T nn.Float](rng *rand.Rand, batch, inSize, classes int) ([]T, []int) {
	proj := make([]float64, inSize*classes)
	for i := range proj {
		proj[i] = rng.NormFloat64()
	}
	x := make([]T, batch*inSize)
	labels := make([]int, batch)
	for i := range batch {
		score := make([]float64, classes)
		for j := range inSize {
			v := rng.NormFloat64()
			x[i*inSize+j] = T(v)
			for c := range classes {
				score[c] += v * proj[j*classes+c]
			}
		}
		for c := range classes {
			if score[c] > score[labels[i]] {
				labels[i] = c
			}
		}
	}
	return x, labels
}

// meanLoss runs forward and returns the batch's mean loss, leaving the
// gradient of the mean loss in every Param.Grad.
func meanLoss[T nn.Float](m *Model[T], x []T, labels []int) float64 {
	batch := len(labels)
	logits := m.Forward(x, batch, true)
	loss := make([]T, batch)
	dlogits := make([]T, len(logits))
	m.Loss(logits, labels, nil, loss, dlogits)
	m.Backward(dlogits)
	m.ZeroGrads()
	scale := make([]T, batch)
	for i := range scale {
		scale[i] = 1 / T(batch)
	}
	m.ParamGrads(scale)
	var sum float64
	for _, l := range loss {
		sum += float64(l)
	}
	return sum / float64(batch)
}

func trainSteps[T nn.Float](t *testing.T, spec Spec, opt nn.Optimizer[T], steps int, factor float64) {
	rng := rand.New(rand.NewPCG(21, 22))
	m, err := New[T](spec, rng)
	if err != nil {
		t.Fatal(err)
	}
	x, labels := teacherData[T](rng, 8, m.InSize(), spec.Classes)
	first := meanLoss(m, x, labels)
	last := first
	for range steps {
		opt.Step(m.Params())
		last = meanLoss(m, x, labels)
	}
	t.Logf("%s: loss %.4f → %.4f after %d steps", spec, first, last, steps)
	if math.IsNaN(last) || last > factor*first {
		t.Errorf("%s: loss %.4f → %.4f after %d steps of %T, want below %.4f", spec, first, last, steps, opt, factor*first)
	}
}

// TestTrainingLowersLoss: a few full-batch steps on a tiny teacher problem
// (8 samples) must lower every arch's training loss, in both precisions.
//
// The VGG-like network is the exception that needs Adam to get far: with
// PyTorch's default initialisation each of its 8 hidden layers shrinks the
// input signal's variance about 6-fold against the biases', so SGD (with or
// without momentum) first only learns the label prior (loss 1.090 → 0.974,
// the labels' entropy) and the test asks it for 5 %; Adam rescales the tiny
// weight gradients and gets well below the prior in 30 steps.
func TestTrainingLowersLoss(t *testing.T) {
	tests := []struct {
		spec   Spec
		adam   bool
		lr     float64
		steps  int
		factor float64
	}{
		{Spec{Arch: "logistic", InShape: []int{10}, Classes: 2}, false, 0.5, 10, 0.5},
		{Spec{Arch: "logistic", InShape: []int{10}, Classes: 3}, false, 0.5, 10, 0.5},
		{Spec{Arch: "mlp", InShape: []int{10}, Classes: 2, Hidden: []int{16, 8}}, false, 0.5, 10, 0.5},
		{Spec{Arch: "mnist-cnn", InShape: []int{1, 16, 16}, Classes: 3}, false, 0.1, 15, 0.5},
		{Spec{Arch: "vgg", InShape: []int{3, 16, 16}, Classes: 3}, false, 0.5, 5, 0.95},
		{Spec{Arch: "vgg", InShape: []int{3, 16, 16}, Classes: 3}, true, 0.001, 30, 0.8},
	}
	for _, tc := range tests {
		name := fmt.Sprintf("%s/%d-classes/adam=%v", tc.spec.Arch, tc.spec.Classes, tc.adam)
		t.Run(name+"/float32", func(t *testing.T) {
			trainSteps(t, tc.spec, optimizer[float32](tc.adam, tc.lr), tc.steps, tc.factor)
		})
		if tc.adam {
			continue // one precision is enough for the slow Adam run
		}
		t.Run(name+"/float64", func(t *testing.T) {
			trainSteps(t, tc.spec, optimizer[float64](tc.adam, tc.lr), tc.steps, tc.factor)
		})
	}
}

// optimizer is Adam or SGD with momentum 0.9.
func optimizer[T nn.Float](adam bool, lr float64) nn.Optimizer[T] {
	if adam {
		return nn.NewAdam(T(lr))
	}
	sgd := nn.NewSGD(T(lr))
	sgd.Momentum = 0.9
	return sgd
}

// TestInit checks PyTorch's default initialisation: every weight and bias
// of a layer lies in ±1/√fan_in, the draws look uniform (mean 0, variance
// bound²/3 within 5 standard errors), and a seed reproduces the model.
func TestInit(t *testing.T) {
	spec := Spec{Arch: "mnist-cnn", InShape: []int{1, 28, 28}, Classes: 10}
	m, err := New[float64](spec, rand.New(rand.NewPCG(31, 32)))
	if err != nil {
		t.Fatal(err)
	}
	// fan_in per parameter block: conv1 1·5·5, conv2 20·5·5, fc1 800, fc2 500.
	fanIn := []int{25, 25, 500, 500, 800, 800, 500, 500}
	for i, p := range m.Params() {
		bound := 1 / math.Sqrt(float64(fanIn[i]))
		var sum, sq float64
		for _, v := range p.Value {
			if math.Abs(v) > bound {
				t.Fatalf("param %d (%s %v): %v outside ±%v", i, p.Name, p.Shape, v, bound)
			}
			sum += v
			sq += v * v
		}
		n := float64(len(p.Value))
		if n < 1000 {
			continue
		}
		// U(−b, b): mean 0, sd b/√3; v² has mean b²/3 and sd b²·√(4/45).
		mean, meanSq := sum/n, sq/n
		if math.Abs(mean) > 5*bound/math.Sqrt(3*n) || math.Abs(meanSq-bound*bound/3) > 5*bound*bound*math.Sqrt(4.0/45/n) {
			t.Errorf("param %d (%s): mean %.3g, mean square %.4g; want 0 and %.4g", i, p.Name, mean, meanSq, bound*bound/3)
		}
	}
	again, _ := New[float64](spec, rand.New(rand.NewPCG(31, 32)))
	for i, p := range m.Params() {
		for j, v := range p.Value {
			if again.Params()[i].Value[j] != v {
				t.Fatalf("same seed, different param %d value %d", i, j)
			}
		}
	}
}

func TestPredictAndProbabilities(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	binary, _ := New[float64](Spec{Arch: "logistic", InShape: []int{2}, Classes: 2}, rng)
	multi, _ := New[float64](Spec{Arch: "logistic", InShape: []int{2}, Classes: 3}, rng)
	tests := []struct {
		name      string
		m         *Model[float64]
		logits    []float64
		wantClass []int
		wantProb  []float64
	}{
		{"sigmoid", binary, []float64{-2, 0, 3},
			[]int{0, 0, 1},
			[]float64{0.8807970779778824, 0.11920292202211755, 0.5, 0.5, 0.047425873177566635, 0.9525741268224334}},
		{"softmax", multi, []float64{1, 2, 3, 0, 0, 0, 5, -1, 5},
			[]int{2, 0, 0},
			[]float64{0.09003057317038046, 0.24472847105479764, 0.6652409557748218,
				1.0 / 3, 1.0 / 3, 1.0 / 3,
				0.49938107903168216, 0.001237841936635777, 0.49938107903168216}},
	}
	for _, tc := range tests {
		batch := len(tc.wantClass)
		got := make([]int, batch)
		tc.m.Predict(tc.logits, batch, got)
		probs := make([]float64, batch*tc.m.Classes)
		tc.m.Probabilities(tc.logits, batch, probs)
		for i := range got {
			if got[i] != tc.wantClass[i] {
				t.Errorf("%s: Predict[%d] = %d, want %d", tc.name, i, got[i], tc.wantClass[i])
			}
		}
		for i := range probs {
			if math.Abs(probs[i]-tc.wantProb[i]) > 1e-15 {
				t.Errorf("%s: probs[%d] = %v, want %v", tc.name, i, probs[i], tc.wantProb[i])
			}
		}
	}
}

// Example builds the DPSGD-F MNIST network and runs a batch through it; a
// bad spec gets an error that lists the known architectures.
func Example() {
	rng := rand.New(rand.NewPCG(1, 2)) // fairdp seeds from crypto/rand unless --seed is given
	m, err := New[float32](Spec{Arch: "mnist-cnn", InShape: []int{1, 28, 28}, Classes: 10}, rng)
	if err != nil {
		fmt.Println(err)
		return
	}
	const batch = 2
	logits := m.Forward(make([]float32, batch*m.InSize()), batch, false)
	pred := make([]int, batch)
	m.Predict(logits, batch, pred)
	fmt.Println(m.NumParams(), "parameters,", m.OutDim(), "logits per sample,", len(pred), "predictions")

	_, err = New[float32](Spec{Arch: "resnet", InShape: []int{3, 32, 32}, Classes: 10}, rng)
	fmt.Println(err)
	// Output:
	// 431080 parameters, 10 logits per sample, 2 predictions
	// models: unknown arch "resnet" (known: logistic, mlp, mnist-cnn, vgg, linear-regression)
}
