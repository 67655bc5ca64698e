package nn

import (
	"fmt"
	"slices"
)

// OptimizerState is what an optimizer keeps between steps, one block per
// parameter block in the order of the params it steps: SGD's velocity,
// Adam's moments m and v and its step count t. A training checkpoint saves
// it, so that a resumed run takes exactly the steps the uninterrupted run
// would have.
type OptimizerState[T Float] struct {
	Blocks []OptimizerBlock[T]
}

// OptimizerBlock is one parameter block's state: its vectors (SGD: the
// velocity; Adam: m then v), nil before the block's first step, and Adam's
// step count.
type OptimizerBlock[T Float] struct {
	Slots [][]T
	Steps int
}

// StatefulOptimizer is an Optimizer whose state can be saved and restored.
type StatefulOptimizer[T Float] interface {
	Optimizer[T]
	// State returns a copy of the state kept for params.
	State(params []*Param[T]) OptimizerState[T]
	// SetState restores a State of the same params (same block sizes).
	SetState(params []*Param[T], s OptimizerState[T]) error
}

var (
	_ StatefulOptimizer[float32] = (*SGD[float32])(nil)
	_ StatefulOptimizer[float64] = (*Adam[float64])(nil)
)

// State implements StatefulOptimizer: the velocity of each block (none
// without momentum).
func (o *SGD[T]) State(params []*Param[T]) OptimizerState[T] {
	s := OptimizerState[T]{Blocks: make([]OptimizerBlock[T], len(params))}
	for i, p := range params {
		if v, ok := o.velocity[p]; ok {
			s.Blocks[i].Slots = [][]T{slices.Clone(v)}
		}
	}
	return s
}

// SetState implements StatefulOptimizer.
func (o *SGD[T]) SetState(params []*Param[T], s OptimizerState[T]) error {
	if err := checkState(params, s, 1); err != nil {
		return fmt.Errorf("nn: SGD state: %w", err)
	}
	o.velocity = nil
	for i, p := range params {
		if b := s.Blocks[i]; b.Slots != nil {
			if o.velocity == nil {
				o.velocity = make(map[*Param[T]][]T)
			}
			o.velocity[p] = slices.Clone(b.Slots[0])
		}
	}
	return nil
}

// State implements StatefulOptimizer: m, v and t of each block.
func (o *Adam[T]) State(params []*Param[T]) OptimizerState[T] {
	s := OptimizerState[T]{Blocks: make([]OptimizerBlock[T], len(params))}
	for i, p := range params {
		if st := o.state[p]; st != nil {
			s.Blocks[i] = OptimizerBlock[T]{Slots: [][]T{slices.Clone(st.m), slices.Clone(st.v)}, Steps: st.t}
		}
	}
	return s
}

// SetState implements StatefulOptimizer.
func (o *Adam[T]) SetState(params []*Param[T], s OptimizerState[T]) error {
	if err := checkState(params, s, 2); err != nil {
		return fmt.Errorf("nn: Adam state: %w", err)
	}
	o.state = make(map[*Param[T]]*adamState[T])
	for i, p := range params {
		if b := s.Blocks[i]; b.Slots != nil {
			o.state[p] = &adamState[T]{m: slices.Clone(b.Slots[0]), v: slices.Clone(b.Slots[1]), t: b.Steps}
		}
	}
	return nil
}

// checkState says why s cannot be the state of params with slots vectors
// per started block.
func checkState[T Float](params []*Param[T], s OptimizerState[T], slots int) error {
	if len(s.Blocks) != len(params) {
		return fmt.Errorf("%d blocks for %d parameter blocks", len(s.Blocks), len(params))
	}
	for i, b := range s.Blocks {
		if b.Slots == nil {
			continue
		}
		if len(b.Slots) != slots {
			return fmt.Errorf("block %d (%s) has %d vectors, want %d", i, params[i].Name, len(b.Slots), slots)
		}
		for _, v := range b.Slots {
			if len(v) != len(params[i].Value) {
				return fmt.Errorf("block %d (%s) has %d values, want %d", i, params[i].Name, len(v), len(params[i].Value))
			}
		}
		if b.Steps < 0 {
			return fmt.Errorf("block %d (%s) has step count %d", i, params[i].Name, b.Steps)
		}
	}
	return nil
}
