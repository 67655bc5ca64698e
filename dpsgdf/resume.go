package dpsgdf

import (
	"fmt"

	"github.com/fairdp/fairdp/trainer"
)

// savedStats is what a checkpoint keeps of epochStats and the last step's
// per-group vector: functions of the released counts only.
type savedStats struct {
	Sum          []float64
	NoiseSum     float64
	Steps        int
	AllUnclipped int
	History      [][]float64
	Last         []float64
}

// SaveState implements trainer.Resumable: the trainer's DP-SGD (its noise
// stream and accountant), the count-noise stream and the per-epoch series
// Finish plots.
func (a *Algorithm[T]) SaveState(s *trainer.State) error {
	if err := a.core.SaveState(s); err != nil {
		return err
	}
	if err := s.PutRand("dpsgdf.count-noise", a.countSrc); err != nil {
		return err
	}
	st := a.stats
	return s.Put("dpsgdf.stats", savedStats{Sum: st.sum, NoiseSum: st.noiseSum, Steps: st.steps,
		AllUnclipped: st.allUnclipped, History: st.history, Last: a.last})
}

// LoadState implements trainer.Resumable.
func (a *Algorithm[T]) LoadState(s *trainer.State) error {
	if err := a.core.LoadState(s); err != nil {
		return err
	}
	if err := s.GetRand("dpsgdf.count-noise", a.countSrc); err != nil {
		return err
	}
	var st savedStats
	if err := s.Get("dpsgdf.stats", &st); err != nil {
		return err
	}
	k := len(a.cfg.Groups)
	if len(st.Sum) != k || len(st.Last) != k {
		return fmt.Errorf("dpsgdf: checkpoint state of %d groups, the data has %d", len(st.Sum), k)
	}
	for _, row := range st.History {
		if len(row) != k {
			return fmt.Errorf("dpsgdf: checkpoint history row of %d groups, the data has %d", len(row), k)
		}
	}
	copy(a.stats.sum, st.Sum)
	copy(a.last, st.Last)
	a.stats.noiseSum, a.stats.steps, a.stats.allUnclipped, a.stats.history = st.NoiseSum, st.Steps, st.AllUnclipped, st.History
	return nil
}

// ChargeLost implements trainer.Resumable: steps more of the step's joint
// mechanism (gradient and counts).
func (a *Algorithm[T]) ChargeLost(steps int) error { return a.core.ChargeLost(steps) }

var _ trainer.Resumable = (*Algorithm[float32])(nil)
