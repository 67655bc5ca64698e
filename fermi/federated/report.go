package federated

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/fairdp/fairdp/dpops/accounting"
	"github.com/fairdp/fairdp/trainer"
)

// Report is report.json of a federation (`fairdp federate`), in the one
// results contract: the server's settings, the model's metrics on the
// evaluation data's held-out split (job), the federation's receipt and
// every silo's line, and the warnings `fairdp train` gives
// (trainer.Warnings: worse than the majority class, one class for everyone,
// small groups). silos are the silos' addresses.
func (s *Server[T]) Report(job *trainer.Job, silos []string, receipt accounting.Receipt, perSilo []SiloPrivacy, seconds float64) (*trainer.Report, error) {
	test, err := trainer.Evaluate(s.Model, job.Test)
	if err != nil {
		return nil, fmt.Errorf("federate: evaluation data: %w", err)
	}
	sc := s.Cfg
	cfg := job.Cfg
	cfg.Algo, cfg.Optimizer, cfg.LR, cfg.Epochs, cfg.Batch = Name, trainer.OptimizerSGD, sc.LR, 0, 0
	cfg.Fair.Lambda, cfg.Fair.LRW, cfg.Fair.Radius, cfg.Fair.WeightDecay = sc.Lambda, sc.LRW, sc.Radius, sc.WeightDecay
	cfg.Federation = trainer.FederationConfig{Silos: len(silos), Mode: trainer.FederationHorizontal}
	// The silos set their own privacy (see extra.steffle.per_silo); the
	// federation's (ε, δ) is the receipt's: the largest silo ε and δ.
	cfg.Privacy = trainer.DPConfig{Epsilon: math.Inf(1), Delta: receipt.Delta}
	if receipt.Epsilon != nil {
		cfg.Privacy.Epsilon = *receipt.Epsilon
	}
	info := s.Infos[0]
	records := 0
	for _, in := range s.Infos {
		records += in.Records
	}
	if receipt.Private() {
		trainer.DeclareNotCovered(&receipt, records, nil, trainer.Config{})
		receipt.AddNotCovered("silo_record_counts", "each silo's record count ñ_i is treated as public: the server weights the silos' messages by ñ_i / n")
		receipt.AddNotCovered(accounting.NotCoveredPreprocessing, "each silo preprocesses its records with statistics fitted on "+
			"them without noise (the schema's z-scores and category lists); they stay on the silo but shape its messages")
	}
	rep := &trainer.Report{TrainRecords: records, Algorithm: Name, Dataset: job.Test.Name, Model: info.Spec.Arch, Params: s.Model.NumParams(),
		DType: string(cfg.DType), Backend: trainer.BackendName(), LR: sc.LR, Test: test, Privacy: receipt, Seconds: seconds,
		Version: trainer.Version, Config: cfg, Warnings: trainer.Warnings(test, job.Test.Labels, job.Test.GroupNames),
		Extra: trainer.Extras{Name: &ServerResult{Silos: silos, Rounds: s.Round, PerSilo: perSilo,
			W: append([]float64(nil), s.Reg.W...), Lambda: sc.Lambda, Checkpoint: sc.Checkpoint,
			Weighting: "messages averaged with weights ñ_i / n (record counts)",
			Train:     "empty: the server holds no training records; test is the held-out split of the evaluation data"}}}
	return rep, nil
}

// RoundLine is one line of a federation's metrics.jsonl.
type RoundLine struct {
	Round       int       `json:"round"`
	Loss        float64   `json:"loss_sum"` // summed batch losses the silos sent (0 under scope all)
	SiloEpsilon []float64 `json:"silo_epsilon"`
	WNorm       float64   `json:"w_norm"`
	Seconds     float64   `json:"seconds"`
	TestError   *float64  `json:"test_error,omitempty"`
	TestDP      *float64  `json:"test_dp_violation,omitempty"`
	TestEO      *float64  `json:"test_eo_violation,omitempty"`
}

// RoundLog is a federation's metrics.jsonl: one line per round, appended
// with a single write and synced, so a stopped server leaves at most a torn
// last line; on resume, lines after the checkpoint's round (which will be
// run again) and a torn line are cut off.
type RoundLog struct{ f *os.File }

// OpenRoundLog opens path for a server that resumes after resumeRound (0:
// a new federation, the file is emptied).
func OpenRoundLog(path string, resumeRound int) (*RoundLog, error) {
	raw, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	keep := 0
	for off := 0; resumeRound > 0 && off < len(raw); {
		end := bytes.IndexByte(raw[off:], '\n')
		if end < 0 {
			break // torn last line
		}
		var l RoundLine
		if json.Unmarshal(raw[off:off+end], &l) != nil || l.Round > resumeRound {
			break
		}
		off += end + 1
		keep = off
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("metrics.jsonl: %w", err)
	}
	if err := f.Truncate(int64(keep)); err != nil {
		f.Close()
		return nil, fmt.Errorf("metrics.jsonl: %w", err)
	}
	if _, err := f.Seek(int64(keep), io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	return &RoundLog{f}, nil
}

// Append writes one round's line and syncs it.
func (l *RoundLog) Append(line RoundLine) error {
	b, err := json.Marshal(line)
	if err != nil {
		return err
	}
	if _, err := l.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("metrics.jsonl: %w", err)
	}
	return l.f.Sync()
}

// Close closes the file.
func (l *RoundLog) Close() error { return l.f.Close() }
