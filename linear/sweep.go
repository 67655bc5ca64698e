package linear

import (
	"slices"
	"strconv"

	"github.com/fairdp/fairdp/trainer"
)

// FairSweepColumns is sweep.csv's header: realised (sampled) and
// expected metrics of every run; the first four cells name a run. The
// demographic-parity columns come last, after the columns of
// FairSweepOldColumns, so a sweep.csv written before them still resumes
// (trainer.SweepOptions.OldColumns) and readers by position still work.
var FairSweepColumns = append(slices.Clone(fairSweepColumnsEO), "train_dp", "test_dp", "expected_train_dp", "expected_test_dp")

// fairSweepColumnsEO is sweep.csv's header before the demographic-parity
// columns.
var fairSweepColumnsEO = []string{"algorithm", "epsilon", "gamma", "seed", "failed", "train_error", "train_eo", "test_error",
	"test_eo", "expected_train_error", "expected_train_eo", "expected_test_error", "expected_test_eo", "epsilon_spent", "reason"}

// FairSweepOldColumns are the headers earlier fairdp versions wrote for
// sweep.csv (for trainer.SweepOptions.OldColumns).
var FairSweepOldColumns = [][]string{fairSweepColumnsEO}

// FairSweepRow is one run's sweep.csv row (with rep nil: its key cells,
// algorithm, ε, γ and seed). A private run's training
// statistics are not released: their cells stay empty.
func FairSweepRow(cfg trainer.Config, rep *trainer.Report) []string {
	f := FormatSweepCell
	// The key cells are written as trainer's grid sweep writes a run's key.
	g := trainer.FormatSweepValue
	key := []string{string(cfg.Algo), g(cfg.Privacy.Epsilon), g(PostprocConfigOf(cfg).Gamma), strconv.FormatUint(*cfg.Seed, 10)}
	if rep == nil {
		return key
	}
	res := FairExtra(rep)
	spent := "inf"
	if rep.Privacy.Epsilon != nil {
		spent = f(*rep.Privacy.Epsilon)
	}
	rec := append(key, strconv.FormatBool(res.Failed))
	dp := make([]string, 4) // train, test, expected train, expected test
	switch {
	case res.Failed:
		rec = append(rec, "", "", "", "", "", "", "", "")
	case rep.Train == nil:
		rec = append(rec, "", "", f(rep.Test.Error), f(rep.Test.EOViolation),
			"", "", f(res.ExpectedTest.Error), f(res.ExpectedTest.EOViolation))
		dp[1], dp[3] = f(rep.Test.DPViolation), f(res.ExpectedTest.DPViolation)
	default:
		rec = append(rec, f(rep.Train.Error), f(rep.Train.EOViolation), f(rep.Test.Error), f(rep.Test.EOViolation),
			f(res.ExpectedTrain.Error), f(res.ExpectedTrain.EOViolation), f(res.ExpectedTest.Error), f(res.ExpectedTest.EOViolation))
		dp = []string{f(rep.Train.DPViolation), f(rep.Test.DPViolation), f(res.ExpectedTrain.DPViolation), f(res.ExpectedTest.DPViolation)}
	}
	return append(append(rec, spent, res.Reason), dp...)
}

// FormatSweepCell writes a number of sweep.csv.
func FormatSweepCell(x float64) string { return strconv.FormatFloat(x, 'g', 8, 64) }
