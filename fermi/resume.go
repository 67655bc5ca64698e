package fermi

import (
	"fmt"
	"slices"

	"github.com/fairdp/fairdp/trainer"
)

// Checkpoint state names.
const (
	stateNoise      = "fermi.noise"
	stateAccountant = "fermi.accountant"
	stateW          = "fermi.w"
	stateReleased   = "fermi.released"
)

// restoredCounts is the noisy group counts of the checkpoint job resumes
// (nil for a new run, or when none were released).
func restoredCounts(job *trainer.Job) ([]float64, error) {
	st := job.Restored()
	if st == nil {
		return nil, nil
	}
	var released []float64
	if err := st.Get(stateReleased, &released); err != nil {
		return nil, fmt.Errorf("fermi: %w", err)
	}
	if len(released) == 0 {
		return nil, nil
	}
	return released, nil
}

// SaveState implements trainer.Resumable: the noise stream and accountant
// of a private run, W, and the released group counts (which New reuses on
// resume, so they are released once).
func (a *DPFERMI[T]) SaveState(s *trainer.State) error {
	if a.Private {
		if err := s.PutRand(stateNoise, a.noiseSrc); err != nil {
			return err
		}
		if err := trainer.PutLedger(s, stateAccountant, a.acc); err != nil {
			return err
		}
	}
	if err := s.Put(stateW, a.Reg.W); err != nil {
		return err
	}
	return s.Put(stateReleased, a.released)
}

// LoadState implements trainer.Resumable.
func (a *DPFERMI[T]) LoadState(s *trainer.State) error {
	if a.Private {
		if err := s.GetRand(stateNoise, a.noiseSrc); err != nil {
			return err
		}
		if err := trainer.GetLedger(s, stateAccountant, a.acc); err != nil {
			return err
		}
		if err := a.checkRestoredSteps(); err != nil {
			return err
		}
	}
	var w []float64
	if err := s.Get(stateW, &w); err != nil {
		return err
	}
	if len(w) != len(a.Reg.W) {
		return fmt.Errorf("fermi: checkpoint W has %d values, this run's %d", len(w), len(a.Reg.W))
	}
	var released []float64
	if err := s.Get(stateReleased, &released); err != nil {
		return err
	}
	if !slices.Equal(released, a.released) && (len(released) > 0 || len(a.released) > 0) {
		return fmt.Errorf("fermi: the checkpoint's released group counts are not the ones this run was built with")
	}
	copy(a.Reg.W, w)
	return nil
}

// checkRestoredSteps refuses a restored ledger whose training steps were
// charged at another sampling rate than this run charges (AccountedQ): a
// checkpoint of an older fairdp charged --scope sensitive steps with the
// amplification by sampling that scope does not have, so its ε is below
// what was spent and continuing it would carry that into the receipt.
func (a *DPFERMI[T]) checkRestoredSteps() error {
	for _, m := range a.acc.History() {
		if !IsCountRelease(m) && m.SampleRate != a.AccountedQ() {
			return fmt.Errorf("fermi: the checkpoint charged its %d steps at sampling rate %v, this run charges %v (--scope %s: "+
				"a checkpoint of an older fairdp credited amplification by sampling that this scope does not have): it cannot be resumed; "+
				"start the run again", m.Steps, m.SampleRate, a.AccountedQ(), a.Scope)
		}
	}
	return nil
}

// ChargeLost implements trainer.Resumable: steps more private steps.
func (a *DPFERMI[T]) ChargeLost(steps int) error {
	if !a.Private {
		return nil
	}
	return a.acc.Step(a.StepMechanism(), steps)
}

var _ trainer.Resumable = (*DPFERMI[float32])(nil)
