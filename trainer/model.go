package trainer

import (
	"fmt"

	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/models"
	"github.com/fairdp/fairdp/nn"
)

// Model is what the loop and every algorithm need from a network: a
// forward pass that keeps the per-sample taps, the loss and its gradient
// on the logits, a backward pass, and the taps that per-sample clipping
// reads (dpops.Tapped: SqNorms and ParamGrads), without ever copying a
// per-sample gradient. *models.Model (the zoo, a --model-spec network, or
// any stack of nn layers) implements it; so may a caller's own type.
//
// Logits are read the way fairdp's losses read them (models.Probabilities):
// one logit is a sigmoid over two classes, more are a softmax, so the
// model predicts max(2, OutDim()) classes. The fairness terms of DP-FERMI
// are differentiated through that reading; a Loss of one's own must agree
// with it (be a per-sample loss of those probabilities) for DP-FERMI's
// gradient to be correct.
type Model[T nn.Float] interface {
	dpops.Tapped[T]
	// InSize is the number of input values per sample.
	InSize() int
	// OutDim is the number of logits per sample.
	OutDim() int
	// Forward runs batch samples of x (batch·InSize values) and returns
	// the logits (batch·OutDim), keeping what Backward needs when train.
	Forward(x []T, batch int, train bool) []T
	// Loss writes each sample's loss of logits into loss and its gradient
	// ∂loss/∂logits into dlogits, scaled by weight[i] (nil: 1).
	Loss(logits []T, labels []int, weight, loss, dlogits []T)
	// Backward back-propagates dlogits from the last Forward, leaving the
	// per-sample taps ready for SqNorms and ParamGrads.
	Backward(dlogits []T)
	// Params lists the parameter blocks the optimizer updates; ParamGrads
	// adds into their Grad.
	Params() []*nn.Param[T]
	// ZeroGrads clears every Param.Grad.
	ZeroGrads()
}

// AnyModel is a Model of either element type: the methods of Model that
// do not name the element type. Job is not generic (the algorithm
// constructors and the command line share one Job for float32 and
// float64 runs), so Job.Model holds an AnyModel rather than a Model[T];
// an AnyModel rather than an any, so that a value that is no model at all
// (a spec, a data set, a Gorgonia graph not yet lowered) does not compile.
// Run asserts the Model[T] of the run's element type, naming the mismatch.
type AnyModel interface {
	InSize() int
	OutDim() int
	ZeroGrads()
}

var (
	_ AnyModel       = Model[float32](nil)
	_ AnyModel       = Model[float64](nil)
	_ Model[float32] = (*models.Model[float32])(nil)
	_ Model[float64] = (*models.Model[float64])(nil)
)

// Classes is the number of classes m predicts: max(2, OutDim).
func Classes[T nn.Float](m Model[T]) int { return max(2, m.OutDim()) }

// NumParams is the number of parameter values of m.
func NumParams[T nn.Float](m Model[T]) int {
	n := 0
	for _, p := range m.Params() {
		n += len(p.Value)
	}
	return n
}

// modelName is the report's "model": the zoo or spec name of a
// *models.Model, else the Go type of a caller's own model.
func modelName[T nn.Float](m Model[T]) string {
	if mm, ok := m.(*models.Model[T]); ok {
		return mm.Arch
	}
	return fmt.Sprintf("%T", m)
}

// Pass is the forward, loss and backward pass every Step begins with, with
// its buffers kept between steps: one implementation for every algorithm,
// so that they all read a batch the same way.
//
// Run is the whole pass. An algorithm that changes ∂loss/∂logits before
// back-propagating (DP-FERMI adds its fairness term there), or that
// back-propagates more than once from one forward pass, calls its parts
// instead: Forward, then LossGrad or Zero, its own additions to DLogits,
// then Backward.
type Pass[T nn.Float] struct {
	Loss    []T // each sample's (weighted) loss from the last LossGrad
	DLogits []T // ∂loss/∂logits from the last LossGrad (zero after Zero)
}

// Run runs batch b through m in training mode, computes the per-sample
// losses (weight nil: 1 each) and back-propagates them, leaving m's taps
// ready for clipping or ParamGrads. It returns the sum of the weighted
// losses; an empty batch does nothing and returns 0.
func (p *Pass[T]) Run(m Model[T], b Batch[T], weight []T) float64 {
	loss := p.LossGrad(m, b, p.Forward(m, b), weight)
	p.Backward(m)
	return loss
}

// Forward runs batch b through m in training mode and returns the logits
// (nil for an empty batch, which runs nothing).
func (p *Pass[T]) Forward(m Model[T], b Batch[T]) []T {
	n := b.N()
	if n == 0 {
		return nil
	}
	return m.Forward(b.X, n, true)
}

// LossGrad computes, from logits (m's training-mode output for b), each
// sample's loss (weight nil: 1 each) into p.Loss and ∂loss/∂logits into
// p.DLogits, and returns the sum of the weighted losses (0 for an empty
// batch). A batch with regression targets (b.Targets, set by the loop for a
// regression model) takes the squared error (p − y)² of its one output per
// record (nn.SquaredError) instead of m.Loss's cross-entropy: the clipping
// after it bounds each record's gradient whatever the targets are.
func (p *Pass[T]) LossGrad(m Model[T], b Batch[T], logits []T, weight []T) float64 {
	if !p.size(m, b.N()) {
		return 0
	}
	if b.Targets != nil {
		nn.SquaredError(logits, b.Targets, weight, p.Loss, p.DLogits)
	} else {
		m.Loss(logits, b.Labels, weight, p.Loss, p.DLogits)
	}
	return sum(p.Loss)
}

// Zero sizes p's buffers for b and zeroes them, in place of LossGrad for a
// backward pass of terms other than the loss.
func (p *Pass[T]) Zero(m Model[T], b Batch[T]) {
	p.size(m, b.N())
	clear(p.Loss)
	clear(p.DLogits)
}

// Backward back-propagates p.DLogits through m (after LossGrad or Zero for
// the same batch), leaving m's taps ready for clipping or ParamGrads; after
// an empty batch it does nothing.
func (p *Pass[T]) Backward(m Model[T]) {
	if len(p.Loss) > 0 {
		m.Backward(p.DLogits)
	}
}

// size sizes p's buffers for n samples of m and reports whether n > 0.
func (p *Pass[T]) size(m Model[T], n int) bool {
	p.Loss = grow(p.Loss, n)
	p.DLogits = grow(p.DLogits, n*m.OutDim())
	return n > 0
}
