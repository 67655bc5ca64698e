package federated

import "github.com/fairdp/fairdp/trainer"

// Result is report.json's extra.steffle of a SteFFLe run in one process
// (`fairdp train --algo steffle`): the federation's settings, every silo's
// privacy summary and every lane's size, batch, noise and ε.
type Result struct {
	Silos         int           `json:"silos"`
	ERMI          float64       `json:"test_ermi"` // of the server's model on the test set
	Mode          string        `json:"mode"`
	Heterogeneity float64       `json:"heterogeneity"`
	SiloAttribute string        `json:"silo_attribute"`
	Lambda        float64       `json:"lambda"`
	W             []float64     `json:"w"`
	PerSilo       []SiloPrivacy `json:"per_silo"`
	Lanes         []LaneResult  `json:"lanes"`
	Weighting     string        `json:"weighting"`
	// Checkpoints and CheckpointAverage are set with Settings.AverageEvery.
	Checkpoints       []Checkpoint       `json:"checkpoints,omitempty"`
	CheckpointAverage *CheckpointAverage `json:"checkpoint_average,omitempty"`
	// LRDecay is set when the learning rate decays (Settings.LRDecay).
	LRDecay *LRDecayResult `json:"lr_decay,omitempty"`
}

// LaneResult is one lane of Result: the silos holding its features and
// its sensitive attribute, its records, batch, rounds, ε, σ and group
// frequencies.
type LaneResult struct {
	FeaturesSilo  int       `json:"features_silo"`
	SensitiveSilo int       `json:"sensitive_silo"`
	Records       int       `json:"records"`
	Batch         int       `json:"batch"`
	Rounds        int       `json:"rounds"`
	Epsilon       float64   `json:"epsilon"`
	Sigma         float64   `json:"sigma"`
	GroupFreq     []float64 `json:"group_freq"`
}

// LRDecayResult is Result's learning-rate decay: the factor, how often it
// applies (in rounds and epochs) and the last learning rate used.
type LRDecayResult struct {
	Factor      float64 `json:"factor"`
	EveryRounds int     `json:"every_rounds"`
	EveryEpochs int     `json:"every_epochs"`
	LastLR      float64 `json:"last_lr"`
}

// TestERMI implements trainer.ERMIResult.
func (r *Result) TestERMI() float64 { return r.ERMI }

// ResultOf is a one-process SteFFLe report's extra.steffle, from a run or
// read from report.json (nil for other reports, a federation's included).
func ResultOf(rep *trainer.Report) *Result {
	r, _ := trainer.ExtraOf[*Result](rep, Name)
	return r
}

// ServerResult is report.json's extra.steffle of a federation (`fairdp
// federate`): the silos' addresses, the rounds run, every silo's privacy
// line, the final W and the server's settings.
type ServerResult struct {
	Silos      []string      `json:"silos"`
	Rounds     int           `json:"rounds"`
	PerSilo    []SiloPrivacy `json:"per_silo"`
	W          []float64     `json:"w"`
	Lambda     float64       `json:"lambda"`
	Checkpoint string        `json:"checkpoint"`
	Weighting  string        `json:"weighting"`
	Train      string        `json:"train"`
}

// ServerResultOf is a federation's extra.steffle, from Server.Report or
// read from report.json (nil for other reports).
func ServerResultOf(rep *trainer.Report) *ServerResult {
	r, _ := trainer.ExtraOf[*ServerResult](rep, Name)
	return r
}
