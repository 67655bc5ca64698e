package trainer

import (
	"math/rand/v2"

	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/dpops/accounting"
	"github.com/fairdp/fairdp/nn"
)

// Batch is one sampled mini-batch, already gathered into model input form.
type Batch[T nn.Float] struct {
	Idx    []int // record indices in the training set
	X      []T   // len(Idx)·prod(InShape) inputs
	Labels []int
	Groups []int
	// Targets are the records' regression targets when the model is a
	// regression (one prediction per record): the loss is then the squared
	// error against them (Pass.LossGrad), not m.Loss. nil for a classifier.
	Targets []T
}

// N is the number of records in the batch (0 is legal under Poisson sampling).
func (b Batch[T]) N() int { return len(b.Idx) }

// Algorithm is what a training method supplies to the loop: how it samples,
// how it turns a batch into the gradient the optimizer applies, and what
// privacy it has spent.
type Algorithm[T nn.Float] interface {
	// Name is the report's "algorithm" value.
	Name() string
	// Sampler yields the batches; steps = epochs · StepsPerEpoch.
	Sampler(n int, r *rand.Rand) (dpops.Sampler, error)
	// Step writes the update direction into every Param.Grad of m (averaged,
	// and clipped and noised where the algorithm is private) and returns the
	// sum of the per-sample losses of the batch.
	Step(m Model[T], b Batch[T]) (lossSum float64, err error)
	// Receipt is the privacy spent so far (accounting.NotPrivate() for
	// SGD). An error (the accountant could not state the guarantee) fails
	// the run: it is never turned into a "not private" receipt.
	Receipt() (accounting.Receipt, error)
	// Hooks is what the algorithm adds to the loop (see Hooks); Run asks
	// once, before the first step.
	Hooks() Hooks[T]
}

// SGD is ordinary non-private minibatch training on shuffled batches.
type SGD[T nn.Float] struct {
	BatchSize int
	pass      Pass[T]
	w         []T
}

// Name implements Algorithm.
func (a *SGD[T]) Name() string { return "sgd" }

// Sampler implements Algorithm: shuffled fixed-size batches, refusing a
// batch larger than the data (as the private algorithms do).
func (a *SGD[T]) Sampler(n int, r *rand.Rand) (dpops.Sampler, error) {
	if err := checkBatch(a.BatchSize, n); err != nil {
		return nil, err
	}
	return dpops.NewShuffle(n, a.BatchSize, r)
}

// Step implements Algorithm: the mean loss gradient of the batch.
func (a *SGD[T]) Step(m Model[T], b Batch[T]) (float64, error) {
	m.ZeroGrads()
	n := b.N()
	if n == 0 {
		return 0, nil
	}
	a.w = grow(a.w, n)
	for i := range a.w {
		a.w[i] = T(1) / T(n)
	}
	loss := a.pass.Run(m, b, a.w)
	m.ParamGrads(nil)
	return loss, nil
}

// Receipt implements Algorithm: SGD is not private.
func (a *SGD[T]) Receipt() (accounting.Receipt, error) { return accounting.NotPrivate(), nil }

// Hooks implements Algorithm: SGD only resumes from a checkpoint.
func (a *SGD[T]) Hooks() Hooks[T] { return Hooks[T]{Resume: a} }

// SaveState implements Resumable: SGD keeps nothing between steps (the
// optimizer and the sampler are the loop's).
func (a *SGD[T]) SaveState(*State) error { return nil }

// LoadState implements Resumable.
func (a *SGD[T]) LoadState(*State) error { return nil }

// ChargeLost implements Resumable: SGD spends no privacy.
func (a *SGD[T]) ChargeLost(int) error { return nil }

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

func sum[T nn.Float](s []T) float64 {
	var t float64
	for _, v := range s {
		t += float64(v)
	}
	return t
}
