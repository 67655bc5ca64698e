package federated

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/dpops/accounting"
	"github.com/fairdp/fairdp/fermi"
	"github.com/fairdp/fairdp/loaders"
	"github.com/fairdp/fairdp/models"
	"github.com/fairdp/fairdp/nn"
	"github.com/fairdp/fairdp/trainer"
)

// Name is SteFFLe's --algo value.
const Name = "steffle"

// Settings are the federation's settings, trainer.Config.Federation
// (SiloAttribute "" with h = 0 splits uniformly at random; Mode "" is
// horizontal).
type Settings = trainer.FederationConfig

// DefaultSettings are the paper's: N = 3, h = 0, silo attribute age.
func DefaultSettings() Settings { return trainer.DefaultFederation() }

// Steffle simulates the federation in one process as a trainer.Algorithm:
// every trainer step is one round in which each lane (see Lane; with whole
// records per silo, each silo) samples its own batch and answers with its
// DP-FERMI message; the trainer's model is the server's, and the trainer's
// optimizer takes the θ step (use plain SGD to match Server). The
// arithmetic is the same as Server's with gRPC silos, so a seeded run gives
// the same model either way.
type Steffle[T nn.Float] struct {
	Settings Settings
	Mapping  Mapping
	Lanes    []Lane     // the computations, in the server's aggregation order
	Silos    []*Silo[T] // one DP-FERMI party per lane, run by the lane's sensitive silo
	server   *Server[T]

	// The authors' protocol (Settings.AverageEvery, …): the test split,
	// the epochs whose end-of-epoch model is evaluated, the epochs seen so
	// far and the checkpoints taken.
	test        *loaders.Dataset
	averageAt   []int
	epoch       int
	checkpoints []Checkpoint
}

// New splits job.Train over the silos as set says (Mode horizontal:
// Heterogeneous by the silo attribute; sensitive-silo: the same split of the
// features and labels plus one silo, number set.Silos, holding every
// sensitive attribute; mapping: set.MappingFile) and builds one DP-FERMI
// party per lane. Every lane's expected batch is cfg.Batch scaled by its
// share of a feature silo's average size, so all lanes sample at about the
// same rate.
func New[T nn.Float](job *trainer.Job, set Settings) (*Steffle[T], error) {
	return newSteffle[T](job, set, nil)
}

// newSteffle is New over a given mapping of the training records to silos
// (nil: split them as set says). A private search (Tune) fixes the mapping
// once for all its trials: the silos are the same organisations in every
// trial, and each silo's guarantee is stated for its own records.
func newSteffle[T nn.Float](job *trainer.Job, set Settings, given *Mapping) (*Steffle[T], error) {
	cfg, train := job.Cfg, job.Train
	// DP-FERMI's settings (ε, δ, clip, σ, the accountant, …), read from the
	// job's Config once and passed to every silo as values.
	o := fermi.OptionsOf(cfg)
	n := train.N()
	if set.Mode == "" {
		set.Mode = trainer.FederationHorizontal
	}
	if err := set.Validate(); err != nil {
		return nil, fmt.Errorf("steffle: %w", err)
	}
	if cfg.Optimizer != trainer.OptimizerSGD || cfg.Momentum != 0 {
		return nil, fmt.Errorf("steffle: the server takes plain SGD steps; use Optimizer sgd and Momentum 0 (got %s, momentum %v)", cfg.Optimizer, cfg.Momentum)
	}
	var mapping Mapping
	if given != nil {
		mapping = *given
	} else {
		var err error
		if mapping, err = splitRecords(job, set); err != nil {
			return nil, fmt.Errorf("steffle: %w", err)
		}
	}
	lanes := mapping.Lanes()
	private := o.Private()
	for _, l := range lanes {
		if l.Split() && private && cfg.Fair.Scope != accounting.ScopeSensitive {
			return nil, fmt.Errorf("steffle: %w", trainer.FieldErrors{{Field: "Fair.Scope", Msg: fmt.Sprintf("%s is refused: Federation.Mode %s splits records over silos (record %d has its features on silo %d and its sensitive attribute on silo %d): the feature silo must ship each sampled record's features and label to the sensitive silo, which that scope promises to protect; use Fair.Scope sensitive (only the sensitive attribute private)",
				cfg.Fair.Scope, set.Mode, l.Records[0], l.Features, l.Sensitive)}})
		}
	}
	featureSilos := 0
	for _, l := range lanes {
		featureSilos = max(featureSilos, l.Features+1)
	}
	if set.TotalDelta && o.Delta == 0 {
		// The authors' code: δ = 1/n² of all n records for every silo,
		// smaller than a silo's own 1/ñ².
		o.Delta = accounting.DefaultDelta(n)
	}
	a := &Steffle[T]{Settings: set, Mapping: mapping, Lanes: lanes, test: job.Test}
	clients := make([]Client, len(lanes))
	mean := float64(n) / float64(featureSilos)
	for i, l := range lanes {
		ids := l.Records
		batch := max(1, int(math.Round(float64(o.Batch)*float64(len(ids))/mean)))
		data := train
		if len(ids) < n {
			data = loaders.Subset(train, ids)
		}
		s, err := newSilo[T](cfg, o, data, SiloSource(job.Source, i, 0), SiloOptions{Index: i, Batch: batch})
		if err != nil {
			return nil, fmt.Errorf("steffle: lane %d (features on silo %d, sensitive attributes on silo %d): %w", i, l.Features, l.Sensitive, err)
		}
		a.Silos = append(a.Silos, s)
		clients[i] = Local(s)
	}
	decay, at, err := protocol(set, cfg.Epochs, a.roundsPerEpoch())
	if err != nil {
		return nil, fmt.Errorf("steffle: %w", err)
	}
	a.averageAt = at
	f := cfg.Fair
	a.server, err = NewServer[T](context.Background(), ServerConfig{LR: cfg.LR, Decay: decay, WeightDecay: f.WeightDecay, Lambda: f.Lambda,
		LRW: f.LRW, Radius: f.Radius, Seed: cfg.Seed, Accountant: cmp.Or(o.Accountant, accounting.DefaultAccountant)}, clients)
	if err != nil {
		return nil, fmt.Errorf("steffle: %w", err)
	}
	return a, nil
}

// splitRecords maps the training records to silos as set says.
func splitRecords(job *trainer.Job, set Settings) (Mapping, error) {
	train := job.Train
	n := train.N()
	if set.Mode == trainer.FederationMapping {
		return ReadMapping(set.MappingFile, n)
	}
	var attr []float64
	var err error
	if set.Heterogeneity > 0 || set.SiloAttribute != "" && set.Silos > 1 {
		if attr, err = FeatureColumn(train, set.SiloAttribute); err != nil && set.Heterogeneity > 0 {
			return Mapping{}, fmt.Errorf("Federation.SiloAttribute: %w", err)
		}
	}
	if attr == nil {
		attr = make([]float64, n) // all ties: with h = 0 the split is uniform anyway
	}
	parts := [][]int{seq(n)}
	if set.Silos > 1 {
		if parts, err = Heterogeneous(attr, set.Silos, set.Heterogeneity, silosRand(job.Source)); err != nil {
			return Mapping{}, err
		}
	}
	if set.Mode == trainer.FederationSensitiveSilo {
		return SensitiveSiloMapping(n, parts, len(parts))
	}
	return HorizontalMapping(n, parts)
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// Name implements trainer.Algorithm.
func (a *Steffle[T]) Name() string { return Name }

// Sampler implements trainer.Algorithm: each Next is one round, the union
// of the silos' own batches (drawn with their own streams) in training-set
// ids, so the trainer's loss and batch statistics cover all silos. The
// trainer's stream r is not used.
func (a *Steffle[T]) Sampler(n int, _ *rand.Rand) (dpops.Sampler, error) {
	return &roundSampler[T]{a: a, steps: a.roundsPerEpoch(), n: n}, nil
}

// roundsPerEpoch is the rounds of one trainer epoch: the fewest steps per
// epoch of any silo, so that no silo samples more than its epoch.
func (a *Steffle[T]) roundsPerEpoch() int {
	steps := a.Silos[0].sample.StepsPerEpoch()
	for _, s := range a.Silos {
		steps = min(steps, s.sample.StepsPerEpoch())
	}
	return steps
}

type roundSampler[T nn.Float] struct {
	a     *Steffle[T]
	steps int
	n     int
}

func (r *roundSampler[T]) Next() []int {
	var out []int
	for i, s := range r.a.Silos {
		for _, j := range s.draw() {
			out = append(out, r.a.Lanes[i].Records[j])
		}
	}
	if out == nil {
		out = []int{}
	}
	return out
}
func (r *roundSampler[T]) StepsPerEpoch() int { return r.steps }
func (r *roundSampler[T]) Kind() string       { return r.a.Silos[0].sample.Kind() }
func (r *roundSampler[T]) Rate() float64      { return r.a.Silos[0].sample.Rate() }

// Step implements trainer.Algorithm: one federation round at the trainer's
// model. The batch b is the union the sampler returned; each silo uses its
// own part of it.
func (a *Steffle[T]) Step(m trainer.Model[T], _ trainer.Batch[T]) (float64, error) {
	mm, ok := m.(*models.Model[T])
	if !ok {
		// The silos rebuild the model from its spec; a model only the
		// caller's code can build has no spec to rebuild it from.
		return 0, fmt.Errorf("steffle: the model is a %T; its silos rebuild the model from a spec, so it must be a *models.Model", m)
	}
	if got, want := layerNames(mm), layerNames(a.Silos[0].model); !slices.Equal(got, want) {
		// Each silo trains the network it built from Config; a different
		// network here would otherwise fail later as a θ-length mismatch,
		// or silently train another network on the silos.
		return 0, fmt.Errorf("steffle: the model's layers %v differ from the silos' %v (built from the configuration, %s); SteFFLe trains the network Config names",
			got, want, a.Silos[0].info.Spec)
	}
	a.server.Model = mm
	loss, msgs, err := a.server.exchange(context.Background())
	if err != nil {
		return 0, err
	}
	a.server.finish(loss, msgs)
	return loss, nil
}

// Receipt implements trainer.Algorithm: the receipt of the lane that has
// spent the most ε, with every silo's ε, δ, σ and rounds in the note. Every
// message is DP with respect to the records of the silo that sent it, and a
// silo's lanes hold disjoint records (parallel composition), so this is the
// run's record-level guarantee (ISRL-DP).
func (a *Steffle[T]) Receipt() (accounting.Receipt, error) {
	worst, best := 0, math.Inf(-1)
	for i, s := range a.Silos {
		if e := s.SpentEpsilon(); e > best {
			worst, best = i, e
		}
	}
	r, err := a.Silos[worst].Receipt()
	if err != nil {
		return accounting.Receipt{}, err
	}
	return FederationReceipt(r, a.SiloPrivacy(), a.Settings.Mode), nil
}

// SiloPrivacy is every silo's privacy summary: a silo's ε is the largest
// of the lanes whose sensitive attributes it holds.
func (a *Steffle[T]) SiloPrivacy() []SiloPrivacy {
	out := make([]SiloPrivacy, a.Mapping.Silos)
	for q := range out {
		out[q] = SiloPrivacy{Silo: q}
	}
	for i, l := range a.Lanes {
		s := a.Silos[i]
		out[l.Features].FeatureRecords += len(l.Records)
		p := &out[l.Sensitive]
		p.Lanes = append(p.Lanes, i)
		p.Records += len(l.Records)
		if !s.alg.Private {
			continue
		}
		e := s.SpentEpsilon()
		p.Delta = max(p.Delta, s.alg.Delta) // parallel composition: (largest ε, largest δ)
		if p.Epsilon == nil || e > *p.Epsilon {
			p.Epsilon = &e
			p.Sigma, p.SampleRate, p.Rounds = s.alg.Sigma, s.alg.AccountedQ(), s.Spent()
		}
	}
	return out
}

// Hooks implements trainer.Algorithm: every silo's ε and ‖W‖ per epoch,
// the federation's results, and what its receipt does not cover.
func (a *Steffle[T]) Hooks() trainer.Hooks[T] {
	return trainer.Hooks[T]{OnEpoch: a.EpochFields, OnEnd: a.Finish, NotCovered: a.NotCovered}
}

// NotCovered is trainer.Hooks.NotCovered: the silos' record counts weight
// the average and are public; a hybrid federation ships the sampled
// records' features and labels between silos; public group sizes are
// exact.
func (a *Steffle[T]) NotCovered() []accounting.NotCovered {
	out := []accounting.NotCovered{{Item: "silo_record_counts", Detail: "each silo's record count ñ_i is treated as public: " +
		"the server weights the silos' messages by ñ_i / n"}}
	if a.Settings.Mode != trainer.FederationHorizontal {
		out = append(out, accounting.NotCovered{Item: "shipped_features", Detail: "in this hybrid federation a feature silo ships " +
			"the sampled records' features and labels to the silo holding their sensitive attribute; that is allowed under scope " +
			"sensitive (only the sensitive attribute is private) and is not covered by any receipt"})
	}
	return append(out, a.Silos[0].alg.NotCovered()...)
}

// EpochFields is trainer.Hooks.OnEpoch: every silo's ε so far and ‖W‖.
// The trainer calls it once at the end of every epoch, after the epoch's
// last step, so it is also where the model of a checkpoint epoch
// (Settings.AverageEvery) is evaluated on the test split; that checkpoint's
// metrics are logged too.
func (a *Steffle[T]) EpochFields() map[string]any {
	eps := make([]float64, a.Mapping.Silos)
	for i, l := range a.Lanes {
		eps[l.Sensitive] = max(eps[l.Sensitive], a.server.Epsilon[i])
	}
	out := map[string]any{"silo_epsilon": eps, "w_norm": a.server.Reg.Norm()}
	a.epoch++
	if slices.Contains(a.averageAt, a.epoch) && a.server.Model != nil && a.test != nil {
		sp, err := trainer.Evaluate(a.server.Model, a.test)
		if err != nil {
			out["checkpoint_error"] = err.Error()
			return out
		}
		c := Checkpoint{Epoch: a.epoch, Error: sp.Error, DPViolation: sp.DPViolation, EOViolation: sp.EOViolation}
		a.checkpoints = append(a.checkpoints, c)
		out["checkpoint"] = c
	}
	return out
}

// Checkpoints is the test metrics of the checkpoints taken so far
// (Settings.AverageEvery), in epoch order.
func (a *Steffle[T]) Checkpoints() []Checkpoint { return slices.Clone(a.checkpoints) }

// Finish is trainer.Hooks.OnEnd: the federation's settings, every
// silo's privacy summary and every lane's size, batch, noise and ε go into
// the report's "extra" object.
func (a *Steffle[T]) Finish(m trainer.Model[T], job *trainer.Job, rep *trainer.Report) error {
	var lanes []LaneResult
	for i, s := range a.Silos {
		lanes = append(lanes, LaneResult{FeaturesSilo: a.Lanes[i].Features, SensitiveSilo: a.Lanes[i].Sensitive,
			Records: len(a.Lanes[i].Records), Batch: s.alg.Batch, Rounds: s.Spent(),
			Epsilon: s.SpentEpsilon(), Sigma: s.alg.Sigma, GroupFreq: s.alg.Reg.Freq()})
	}
	ermi := a.Silos[0].alg.ERMI(m, job.Test) // of the server's model; every lane has the same regulariser shape
	res := &Result{Silos: a.Mapping.Silos, ERMI: ermi, Mode: a.Settings.Mode, Heterogeneity: a.Settings.Heterogeneity,
		SiloAttribute: a.Settings.SiloAttribute, Lambda: job.Cfg.Fair.Lambda, W: append([]float64(nil), a.server.Reg.W...),
		PerSilo: a.SiloPrivacy(), Lanes: lanes,
		Weighting: "lane messages averaged with weights ñ_i / n (record counts)"}
	if a.Settings.AverageEvery > 0 {
		if len(a.checkpoints) != len(a.averageAt) {
			return fmt.Errorf("steffle: %d of the %d checkpoints at epochs %v were evaluated (the trainer must call EpochFields once per epoch)",
				len(a.checkpoints), len(a.averageAt), a.averageAt)
		}
		avg := AverageCheckpoints(a.checkpoints)
		res.Checkpoints, res.CheckpointAverage = a.Checkpoints(), &avg
	}
	if a.Settings.LRDecay != 0 && a.Settings.LRDecay != 1 {
		res.LRDecay = &LRDecayResult{Factor: a.server.Cfg.Decay.Factor, EveryRounds: a.server.Cfg.Decay.Every,
			EveryEpochs: a.Settings.LRDecayEvery, LastLR: job.Cfg.LR * a.server.Cfg.Decay.Scale(a.server.Round)}
	}
	rep.SetExtra(Name, res)
	return nil
}

// layerNames lists m's layers by name ("Linear(102→8)", "ReLU", …): two
// models with the same list compute the same function of the same θ.
func layerNames[T nn.Float](m *models.Model[T]) []string {
	names := make([]string, len(m.Layers))
	for i, l := range m.Layers {
		names[i] = l.Name()
	}
	return names
}
