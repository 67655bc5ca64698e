package nn

// A sequential model keeps every layer's output and input gradient alive in
// buffers the layers own. An element-wise layer needs no buffer of its own
// when the buffer it reads is free to overwrite: on the VGG-like network at
// batch 64 the ReLUs' own outputs and input gradients were 0.9 of the DP
// step's 2.1 GB. The two interfaces below let the model (models.Model) say,
// call by call, that a buffer is free: one marks the layers whose buffers
// may be given away, the other the layers that can run over them.

// InPlace is implemented by layers that can use a buffer they are handed
// instead of one of their own, with the same results as Forward and
// Backward.
//
// ForwardInPlace is Forward told that x is the layer's to overwrite until
// its next Forward: nobody else reads it afterwards except the layers after
// this one, and only through what this layer returns. An element-wise layer
// (ReLU, Tanh) writes its output over x and returns x; MaxPool2d keeps x to
// write its input gradient into. BackwardInPlace is Backward (with the
// input gradient) told that dy is the layer's to overwrite: an element-wise
// layer writes its input gradient over dy and returns dy.
type InPlace[T Float] interface {
	ForwardInPlace(x []T, batch int, train bool) []T
	BackwardInPlace(dy []T) []T
}

// Disowning is implemented by layers that never read the output their
// Forward returned, nor the input gradient their Backward returned, after
// returning them: Backward, ParamGrads and SqNorms read only the taps (the
// input and the output gradient), so the next layer may overwrite the
// output and the previous layer the input gradient.
type Disowning interface {
	// DisownsOutputs is a marker; it does nothing.
	DisownsOutputs()
}

// DisownsOutputs implements Disowning: Conv2d's Backward and norms read x
// and dy only (the transposed convolution of backwardAsConv is private).
func (c *Conv2d[T]) DisownsOutputs() {}

// DisownsOutputs implements Disowning: Linear reads x and dy only.
func (l *Linear[T]) DisownsOutputs() {}

// DisownsOutputs implements Disowning: MaxPool2d's Backward reads the
// arg-max indices and dy only.
func (m *MaxPool2d[T]) DisownsOutputs() {}

// ForwardInPlace implements InPlace: y = max(x, 0) over x; Backward's gate
// reads y, which is then x's buffer.
func (r *ReLU[T]) ForwardInPlace(x []T, batch int, train bool) []T {
	return r.forward(x, x, batch)
}

// BackwardInPlace implements InPlace.
func (r *ReLU[T]) BackwardInPlace(dy []T) []T { return r.backward(dy, dy) }

// ForwardInPlace implements InPlace: y = tanh(x) over x; Backward reads y.
func (t *Tanh[T]) ForwardInPlace(x []T, batch int, train bool) []T {
	return t.forward(x, x, batch)
}

// BackwardInPlace implements InPlace.
func (t *Tanh[T]) BackwardInPlace(dy []T) []T { return t.backward(dy, dy) }

// ForwardInPlace implements InPlace: the output goes to the pool's own
// buffer, and Backward writes the input gradient over x, which the pool no
// longer reads once the arg-max indices are taken.
func (m *MaxPool2d[T]) ForwardInPlace(x []T, batch int, train bool) []T {
	y := m.Forward(x, batch, train)
	m.xFree = true
	return y
}

// BackwardInPlace implements InPlace: dy is smaller than the input
// gradient, so it is Backward.
func (m *MaxPool2d[T]) BackwardInPlace(dy []T) []T { return m.Backward(dy, true) }
