package nn

import "fmt"

// MaxPool2d takes the maximum over non-overlapping k×k windows (stride k,
// trailing rows/columns that do not fill a window are dropped, as in
// PyTorch's floor mode). It remembers each window's arg-max so Backward is
// a scatter.
type MaxPool2d[T Float] struct {
	c, h, w, k int
	outH, outW int
	batch      int
	y, dx, dy  []T
	x          []T
	arg        []int32 // per output: index of the max within its input plane
	back       bool
	// xFree says the input of the last Forward was handed over
	// (ForwardInPlace), so Backward writes the input gradient over it
	// instead of into ownDx.
	xFree bool
	ownDx []T
}

// NewMaxPool2d returns a k×k max-pool with stride k over c×h×w inputs.
func NewMaxPool2d[T Float](c, h, w, k int) *MaxPool2d[T] {
	if c < 1 || k < 1 || h < k || w < k {
		panic(fmt.Sprintf("nn.NewMaxPool2d: bad geometry %d×%d×%d with window %d", c, h, w, k))
	}
	return &MaxPool2d[T]{c: c, h: h, w: w, k: k, outH: h / k, outW: w / k}
}

// Name implements Layer.
func (m *MaxPool2d[T]) Name() string {
	return fmt.Sprintf("MaxPool2d(%d, in %dx%dx%d)", m.k, m.c, m.h, m.w)
}

// OutShape implements Layer: {c, h/k, w/k}.
func (m *MaxPool2d[T]) OutShape(in []int) []int {
	mustSize("MaxPool2d", in, m.c*m.h*m.w)
	return []int{m.c, m.outH, m.outW}
}

// Forward implements Layer.
func (m *MaxPool2d[T]) Forward(x []T, batch int, train bool) []T {
	mustLen(m, "input", x, batch*m.c*m.h*m.w)
	m.batch, m.x, m.xFree = batch, x, false
	n := batch * m.c * m.outH * m.outW
	m.y = grow(m.y, n)
	m.arg = grow(m.arg, n)
	m.back = false
	m.dispatch()
	return m.y
}

// Backward implements Layer: each output gradient goes to its window's max.
func (m *MaxPool2d[T]) Backward(dy []T, needInput bool) []T {
	mustLen(m, "output gradient", dy, m.batch*m.c*m.outH*m.outW)
	if !needInput {
		return nil
	}
	m.dy = dy
	if m.xFree {
		m.dx = m.x
	} else {
		m.ownDx = grow(m.ownDx, m.batch*m.c*m.h*m.w)
		m.dx = m.ownDx
	}
	m.back = true
	m.dispatch()
	return m.dx
}

func (m *MaxPool2d[T]) dispatch() {
	planes := m.batch * m.c
	ns := m.h * m.w // per plane
	parallelFor(m, planes, max(1, helperNs/4/ns), partsFor(planes*ns))
}

// run implements ranger over planes (sample, channel) [lo, hi).
func (m *MaxPool2d[T]) run(_, lo, hi int) {
	in, out := m.h*m.w, m.outH*m.outW
	for p := lo; p < hi; p++ {
		arg := m.arg[p*out : (p+1)*out]
		if m.back {
			dx := m.dx[p*in : (p+1)*in]
			clear(dx)
			for j, g := range m.dy[p*out : (p+1)*out] {
				dx[arg[j]] += g
			}
			continue
		}
		x := m.x[p*in : (p+1)*in]
		y := m.y[p*out : (p+1)*out]
		if m.k == 2 {
			m.pool2(x, y, arg)
			continue
		}
		for oh := 0; oh < m.outH; oh++ {
			for ow := 0; ow < m.outW; ow++ {
				top := oh*m.k*m.w + ow*m.k
				mx := x[top]
				for ki := 0; ki < m.k; ki++ {
					for _, v := range x[top+ki*m.w : top+ki*m.w+m.k] {
						mx = max(mx, v)
					}
				}
				// Scan backwards so the first maximum wins; the
				// conditional moves compile without branches.
				best := top
				for ki := m.k - 1; ki >= 0; ki-- {
					row := top + ki*m.w
					for kj := m.k - 1; kj >= 0; kj-- {
						if x[row+kj] == mx {
							best = row + kj
						}
					}
				}
				y[oh*m.outW+ow] = mx
				arg[oh*m.outW+ow] = int32(best)
			}
		}
	}
}

// pool2 is the 2×2 case (every CNN here), without inner loops: max first,
// then the arg-max by equality, which compiles to conditional moves instead
// of the unpredictable branches of a running comparison (3–4× faster).
// float32 planes go four outputs at a time through pool2Asm (AVX2; the
// same bits), and this loop does the columns it leaves.
func (m *MaxPool2d[T]) pool2(x, y []T, arg []int32) {
	w := m.w
	ow0 := pool2Asm(x, y, arg, m.outH, w, m.outW)
	for oh := 0; oh < m.outH; oh++ {
		r0 := x[2*oh*w : 2*oh*w+w]
		r1 := x[(2*oh+1)*w : (2*oh+1)*w+w]
		yo := y[oh*m.outW : (oh+1)*m.outW]
		ao := arg[oh*m.outW : (oh+1)*m.outW]
		for ow := ow0; ow < len(yo); ow++ {
			a, b, c, d := r0[2*ow], r0[2*ow+1], r1[2*ow], r1[2*ow+1]
			mx := max(max(a, b), max(c, d))
			k := 0
			if d == mx {
				k = w + 1
			}
			if c == mx {
				k = w
			}
			if b == mx {
				k = 1
			}
			if a == mx {
				k = 0
			}
			yo[ow] = mx
			ao[ow] = int32(2*oh*w + 2*ow + k)
		}
	}
}

// Params implements Layer: MaxPool2d has none.
func (m *MaxPool2d[T]) Params() []*Param[T] { return nil }

// ParamGrads implements Layer (no-op).
func (m *MaxPool2d[T]) ParamGrads(scale []T) {}

// SqNorms implements Layer (no-op).
func (m *MaxPool2d[T]) SqNorms(out []T) {}
