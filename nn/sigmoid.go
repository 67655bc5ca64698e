package nn

import (
	"fmt"
	"math"
	"slices"
)

// SigmoidLayer is the logistic function σ(x) = 1/(1+e^−x) element-wise, as
// a hidden layer (a one-logit model's output sigmoid is part of its loss,
// SigmoidBCE, not a layer). It is what a Gorgonia graph's Sigmoid in the
// middle of a network lowers to (package graph). It is named SigmoidLayer
// because Sigmoid is the function that turns one logit into two class
// probabilities.
type SigmoidLayer[T Float] struct {
	y, dx []T // output (the tap the backward pass reads) and input gradient
}

// NewSigmoid returns a SigmoidLayer; like every activation it works on any
// per-sample shape.
func NewSigmoid[T Float]() *SigmoidLayer[T] { return &SigmoidLayer[T]{} }

// Name implements Layer.
func (s *SigmoidLayer[T]) Name() string { return "Sigmoid" }

// OutShape implements Layer: the input shape.
func (s *SigmoidLayer[T]) OutShape(in []int) []int { return slices.Clone(in) }

// Forward implements Layer. σ is computed without overflow on both sides
// (e^−|x| only), as the loss's sigmoid is.
func (s *SigmoidLayer[T]) Forward(x []T, batch int, train bool) []T {
	if batch == 0 && len(x) != 0 || batch > 0 && len(x)%batch != 0 {
		panic(fmt.Sprintf("nn: %s: %d values are not a batch of %d", s.Name(), len(x), batch))
	}
	s.y = grow(s.y, len(x))
	for i, v := range x {
		s.y[i] = T(sigmoid(float64(v)))
	}
	return s.y
}

// Backward implements Layer: dx = dy·σ(x)(1−σ(x)), from the stored output.
func (s *SigmoidLayer[T]) Backward(dy []T, needInput bool) []T {
	mustLen(s, "output gradient", dy, len(s.y))
	if !needInput {
		return nil
	}
	s.dx = grow(s.dx, len(dy))
	for i, g := range dy {
		y := s.y[i]
		s.dx[i] = g * y * (1 - y)
	}
	return s.dx
}

// Params implements Layer: SigmoidLayer has none.
func (s *SigmoidLayer[T]) Params() []*Param[T] { return nil }

// ParamGrads implements Layer (no-op).
func (s *SigmoidLayer[T]) ParamGrads(scale []T) {}

// SqNorms implements Layer (no-op).
func (s *SigmoidLayer[T]) SqNorms(out []T) {}

// Spec implements Describer.
func (s *SigmoidLayer[T]) Spec() LayerSpec { return LayerSpec{Kind: KindSigmoid} }

// SigmoidBCEProbs is SigmoidBCE followed by Sigmoid, in one pass: the loss,
// its gradient and the class probabilities (1 − σ(z), σ(z)) into probs
// (batch×2), every value the one the two calls write. A caller that needs
// all three (DP-FERMI's step: its fairness term reads the probabilities)
// computes e^{−|z|} and σ(z) once per sample instead of twice: the
// exponential is most of the cost of the probabilities.
func SigmoidBCEProbs[T Float](logits []T, labels []int, weight, loss, dlogits, probs []T) {
	if len(probs) != 2*len(labels) {
		panic(fmt.Sprintf("nn.SigmoidBCEProbs: %d logits need %d probabilities, got %d", len(labels), 2*len(labels), len(probs)))
	}
	sigmoidBCE("SigmoidBCEProbs", logits, labels, weight, loss, dlogits, probs)
}

// sigmoidBCE is SigmoidBCE (fn names the caller in panics) and, unless probs
// is nil, Sigmoid into probs, from one e^{−|z|} per sample shared by
// softplus, σ(z) and σ(−z).
func sigmoidBCE[T Float](fn string, logits []T, labels []int, weight, loss, dlogits, probs []T) {
	n := len(labels)
	checkLossArgs(fn, logits, n, weight, loss, dlogits, n)
	for i, y := range labels {
		if y != 0 && y != 1 {
			panic(fmt.Sprintf("nn.%s: sample %d has label %d, want 0 or 1", fn, i, y))
		}
		z := float64(logits[i])
		e := math.Exp(-math.Abs(z)) // shared by softplus and σ: one exp per sample
		if loss != nil {
			loss[i] = T(softplusExp(z, e) - float64(y)*z)
		}
		if dlogits == nil && probs == nil {
			continue
		}
		p := sigmoidExp(z, e) // σ(z), the gradient's and the probabilities'
		if dlogits != nil {
			w := 1.0
			if weight != nil {
				w = float64(weight[i])
			}
			dlogits[i] = T(w * (p - float64(y)))
		}
		if probs != nil {
			probs[2*i] = T(sigmoidExp(-z, e))
			probs[2*i+1] = T(p)
		}
	}
}
