package trainer

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/fairdp/fairdp/loaders"
)

// Config is one training job. The zero value is not usable; start from
// Defaults() (what `fairdp train` with no arguments runs).
type Config struct {
	Algo    AlgoName `json:"algorithm"` // AlgoSGD, AlgoDPSGD, or an algorithm package's name (fermi.Name, …)
	Dataset string   `json:"dataset"`   // built-in name (adult, credit, parkinsons, dutch, mnist, mnist-unbalanced, utkface) or a CSV path
	Schema  string   `json:"schema"`    // schema JSON for a CSV path
	DataDir string   `json:"data_dir"`  // where built-in data lives ("" = $FAIRDP_DATA, then ../shared/data)
	Model   string   `json:"model"`     // logistic, mlp, mnist-cnn, vgg ("" = the dataset's default)
	Hidden  []int    `json:"hidden"`    // MLP widths
	// ModelSpecFile names a JSON models.Spec of a network outside the zoo
	// (its "layers"); it replaces Model. in_shape and classes default to
	// the data's.
	ModelSpecFile string        `json:"model_spec_file,omitempty"`
	DType         DType         `json:"dtype"`      // DTypeFloat32 or DTypeFloat64
	Epochs        int           `json:"epochs"`     // passes over the training set
	Batch         int           `json:"batch"`      // batch size (expected size under Poisson sampling)
	LR            float64       `json:"lr"`         // learning rate
	Optimizer     OptimizerName `json:"optimizer"`  // OptimizerSGD or OptimizerAdam
	Momentum      float64       `json:"momentum"`   // SGD momentum
	TrainFrac     float64       `json:"train_frac"` // train fraction of a random split (0: the data's own, see ResolveTrainFrac)
	ImageSize     int           `json:"image_size"` // UTKFace resize
	Limit         int           `json:"limit"`      // use at most this many records (0 = all), for quick runs
	Seed          *uint64       `json:"seed"`       // nil: crypto-seeded
	// SplitSeed, if set, seeds the train/test split alone (Seed then seeds
	// everything else), so a sweep's runs share one split while each draws
	// its own noise; nil: the split comes from Seed.
	SplitSeed *uint64    `json:"split_seed,omitempty"`
	Out       string     `json:"out"`      // output directory ("" = no files)
	Quiet     bool       `json:"quiet"`    // no progress lines
	Device    DeviceKind `json:"device"`   // DeviceCPU (default) or DeviceCUDA (needs a build with -tags cuda and a GPU)
	Baseline  bool       `json:"baseline"` // also train the non-private twin and report the cost of privacy
	// ReportTrainStats writes exact statistics of the training split (per
	// group metrics, loss, sampled batch sizes) for a private run too,
	// marked not private; by default a private run leaves them out.
	ReportTrainStats bool       `json:"report_train_stats,omitempty"`
	Tau              float64    `json:"tau"`     // "equal cost" tolerance for the cost of privacy (DPSGD-F's τ)
	Privacy          DPConfig   `json:"privacy"` // used by the private algorithms
	Fair             FairConfig `json:"fair"`
	Preset           string     `json:"preset"` // name of the preset applied first (recorded for the report)
	// Federation is SteFFLe's (--algo steffle) split of the training data
	// over silos; other algorithms ignore it, and sweeps of them zero it so
	// it is left out of their settings JSON.
	Federation FederationConfig `json:"federation,omitzero"`

	// ImageMean and ImageStd, when given (one value per channel), feed
	// image models (p/255 − ImageMean[c]) / ImageStd[c] instead of the data
	// set's own scaling (p/255; ImageNet's constants for UTKFace), e.g.
	// 0.1307 and 0.3081 for MNIST as Bagdasaryan et al. 2019's code does.
	// They are public constants, not fitted on the data: no privacy spent.
	ImageMean []float64 `json:"image_mean,omitempty"`
	ImageStd  []float64 `json:"image_std,omitempty"`

	// TF32 lets Device cuda's forward and backward GEMMs use TF32 tensor
	// cores (faster on Ampere and later; inputs rounded to 10-bit
	// mantissas). The released sums stay FP32, so the clip bound and the
	// receipt hold as without it; the model's numbers change slightly.
	TF32 bool `json:"tf32,omitempty"`

	// sections holds the settings of algorithms above trainer by their
	// report.json key (budget tailoring's "tailoring", post-processing's
	// "jagielski", objective perturbation's "objpert"), as JSON of the
	// owning package's type; see RegisterSection. Never written in place:
	// WithSection and UnmarshalJSON replace the map, so Configs copied by
	// value do not share changes.
	sections map[string]json.RawMessage
}

// Federation modes: who holds which part of each record.
const (
	// FederationHorizontal: every silo holds whole records (the paper's setting).
	FederationHorizontal = "horizontal"
	// FederationSensitiveSilo: Silos silos hold the records' features and
	// labels and one more silo holds every record's sensitive attribute.
	FederationSensitiveSilo = "sensitive-silo"
	// FederationMapping: a file maps each record's features/label and its
	// sensitive attribute to silos by record id.
	FederationMapping = "mapping"
)

// FederationConfig says how SteFFLe splits the training set over silos
// (the SteFFLe paper). It lives in Config so that --algo steffle runs through
// the ordinary Train path and its settings land in report.json.
type FederationConfig struct {
	Silos         int     `json:"silos"`         // N silos holding records (features and labels)
	Heterogeneity float64 `json:"heterogeneity"` // h ∈ [0, 1] of the split by SiloAttribute
	// SiloAttribute is the feature the heterogeneity split sorts by (the
	// paper: age).
	SiloAttribute string `json:"silo_attribute"`
	// Mode is FederationHorizontal (default), FederationSensitiveSilo or
	// FederationMapping.
	Mode string `json:"mode"`
	// MappingFile is the CSV of FederationMapping: header
	// record,features_silo,sensitive_silo and one row per training record
	// (record = 0-based index in the training split).
	MappingFile string `json:"mapping_file"`
	// The SteFFLe authors' code's protocol (bench/results/steffle.md), all
	// off at their zero values. LRDecay multiplies the server's θ step
	// size η_θ by this factor every LRDecayEvery epochs (a step decay;
	// 0 or 1: constant η_θ). AverageEvery and AverageFrom also evaluate
	// the model on the test split at every AverageEvery-th epoch from
	// epoch AverageFrom on and report the checkpoints' mean test metrics
	// (extra.steffle.checkpoint_average) beside the last iterate's.
	// TotalDelta makes each silo's default δ 1/n² of the federation's n
	// training records instead of 1/ñ² of its own ñ (smaller, so never a
	// weaker guarantee); it has no effect when Privacy.Delta is given.
	LRDecay      float64 `json:"lr_decay,omitempty"`
	LRDecayEvery int     `json:"lr_decay_every,omitempty"`
	AverageEvery int     `json:"average_every,omitempty"`
	AverageFrom  int     `json:"average_from,omitempty"`
	TotalDelta   bool    `json:"total_delta,omitempty"`
}

// DefaultFederation is the paper's setting: N = 3 silos holding whole
// records, h = 0, silo attribute age.
func DefaultFederation() FederationConfig {
	return FederationConfig{Silos: 3, SiloAttribute: "age", Mode: FederationHorizontal}
}

// Validate reports what is wrong with the federation settings.
func (f FederationConfig) Validate() error {
	var errs FieldErrors
	if f.Silos < 1 {
		errs.Add("Federation.Silos", "must be ≥ 1 (got %d)", f.Silos)
	}
	if !(f.Heterogeneity >= 0 && f.Heterogeneity <= 1) {
		errs.Add("Federation.Heterogeneity", "must be in [0,1] (got %v)", f.Heterogeneity)
	}
	switch f.Mode {
	case FederationHorizontal, FederationSensitiveSilo:
		if f.MappingFile != "" {
			errs.Add("Federation.MappingFile", "is only read with Federation.Mode %s (got Federation.Mode %s)", FederationMapping, f.Mode)
		}
	case FederationMapping:
		if f.MappingFile == "" {
			errs.Add("Federation.Mode", "mapping needs Federation.MappingFile FILE.csv (columns record,features_silo,sensitive_silo)")
		}
	default:
		errs.Add("Federation.Mode", "must be %s, %s or %s (got %q)", FederationHorizontal, FederationSensitiveSilo, FederationMapping, f.Mode)
	}
	if !(f.LRDecay >= 0 && f.LRDecay <= 1) {
		errs.Add("Federation.LRDecay", "must be in (0,1], or 0 for none (got %v)", f.LRDecay)
	}
	if f.LRDecayEvery < 0 || f.LRDecay != 0 && f.LRDecay != 1 && f.LRDecayEvery == 0 {
		errs.Add("Federation.LRDecayEvery", "must be ≥ 1 epoch when Federation.LRDecay is set (got %d)", f.LRDecayEvery)
	}
	if f.AverageEvery < 0 {
		errs.Add("Federation.AverageEvery", "must be ≥ 0 epochs (got %d)", f.AverageEvery)
	}
	if f.AverageFrom < 0 || f.AverageFrom > 0 && f.AverageEvery == 0 {
		errs.Add("Federation.AverageFrom", "must be ≥ 0, and needs Federation.AverageEvery ≥ 1 (got %d, AverageEvery %d)", f.AverageFrom, f.AverageEvery)
	}
	return errs.err()
}

// FairConfig holds the fairness flags (DP-FERMI, SteFFLe, DPSGD-F).
type FairConfig struct {
	Lambda           float64 `json:"lambda"`             // fairness weight λ ≥ 0
	Fairness         string  `json:"fairness"`           // "dp" (demographic parity) or "eo" (equalized odds)
	Scope            string  `json:"scope"`              // "all" or "sensitive": what the privacy guarantee covers
	LRW              float64 `json:"lr_w"`               // ascent learning rate η_W (DP-FERMI)
	Radius           float64 `json:"radius"`             // D, radius of the Frobenius ball W is projected on; also its clip bound
	PublicGroupSizes bool    `json:"public_group_sizes"` // treat group frequencies p̂_S as public (no budget spent on them)
	Calibration      string  `json:"calibration"`        // "accountant" (Privacy.Accountant's, default) or "paper" (Theorem 3.3 closed form)
	WeightDecay      float64 `json:"weight_decay"`       // L2 regularisation
	CountNoiseRatio  float64 `json:"count_noise_ratio"`  // DPSGD-F: σ1 = ratio·σ2 for the clipped/unclipped counts
	// CountGuard is DPSGD-F's rule for a group whose noisy counts are ≤ 0
	// (package dpsgdf's CountGuard: c0, floor or smooth; "" its default).
	CountGuard string `json:"count_guard,omitempty"`
	// NaiveGuard is Naïve's rule for turning a noisy group count into a
	// weight (package dpsgdf's NaiveGuard: one or smooth; "" its default).
	NaiveGuard string `json:"naive_guard,omitempty"`
}

// DPConfig holds the differential-privacy flags shared by the private algorithms.
type DPConfig struct {
	Epsilon float64 `json:"epsilon"` // target ε (+Inf = not private)
	Delta   float64 `json:"delta"`   // target δ (0 = accounting.DefaultDelta: 1/n² of the training records)
	// AllowLargeDelta accepts a δ ≥ 1/n (refused otherwise); the receipt
	// then says the guarantee is weak.
	AllowLargeDelta bool    `json:"allow_large_delta,omitempty"`
	Clip            float64 `json:"clip"` // per-sample clip bound C
	// Sigma is the noise multiplier; 0 calibrates it to Epsilon. Given with
	// a finite Epsilon, Epsilon is a cap: Train refuses a Sigma that spends
	// more (Hooks.PlannedRunEpsilon); Epsilon +Inf runs Sigma uncapped.
	Sigma float64 `json:"sigma"`
	// Sampling is "poisson" (default; RDP accounting valid) or "shuffle".
	Sampling string `json:"sampling"`
	// Accountant calibrates σ and states the receipt: "pld" (also when
	// empty: accounting.DefaultAccountant) or "rdp".
	Accountant string `json:"accountant,omitempty"`
}

// Defaults is the job `fairdp train` runs with no arguments: DP-FERMI
// (--algo fermi, registered by package fermi) with demographic parity,
// ε = 1, λ = 10 and δ = 1/n² (DP-FERMI's default when Delta is 0), every
// record protected (scope all), logistic regression (Adam, η_θ = 0.005,
// the low end of the paper's [0.005, 0.01]) on the embedded Adult data,
// 75/25 split. λ and η_θ come from a sweep at ε = 1 (bench/results/
// fermi.md, "The default run"): over 40 seeds this run's test DP violation
// is .012 ± .012 (97 % of runs ≤ .03) at test error .179 ± .005, against
// .18 / .157 without the regulariser; λ = 1 cut the violation only to ≈ .12.
// --algo sgd with the same settings is the non-private baseline.
func Defaults() Config {
	return Config{
		Algo: algoFermi, Dataset: "adult", DType: DTypeFloat32, Epochs: 20, Batch: 256, LR: 0.005,
		Optimizer: OptimizerAdam, TrainFrac: DefaultTrainFrac, ImageSize: 64, Tau: 0.05, Device: DeviceCPU,
		Privacy: DPConfig{Epsilon: 1, Clip: 1, Sampling: "poisson"},
		Fair: FairConfig{Lambda: 10, Fairness: "dp", Scope: "all", LRW: 0.01, Radius: 5, Calibration: "accountant",
			CountNoiseRatio: 10},
		Federation: DefaultFederation(),
	}
}

// DefaultTrainFrac is the training fraction of data that names none
// (DP-FERMI's 75/25 split).
const DefaultTrainFrac = 0.75

// ResolveTrainFrac returns cfg with a TrainFrac of 0 replaced by the data's
// own: the schema's train_frac for a CSV, the built-in data set's, else
// DefaultTrainFrac. A TrainFrac set (a flag, a preset, a report's config)
// wins. Prepare does this itself; a caller that needs the fraction before
// (a pipeline of its own) calls it.
func ResolveTrainFrac(cfg Config) (Config, error) { return resolveTrainFrac(cfg, nil) }

// resolveTrainFrac is ResolveTrainFrac; fitted, if set, is a checkpoint's
// preprocessing, whose schema reads a CSV given without one.
func resolveTrainFrac(cfg Config, fitted *loaders.Preprocessor) (Config, error) {
	if cfg.TrainFrac != 0 {
		return cfg, nil
	}
	cfg.TrainFrac = DefaultTrainFrac
	var s loaders.Schema
	switch {
	case loaders.IsBuiltin(cfg.Dataset):
		s, _ = loaders.Builtin(cfg.Dataset)
	case slices.Contains(loaders.ImageSets, cfg.Dataset):
		return cfg, nil
	case cfg.Schema != "":
		var err error
		if s, err = loaders.LoadSchema(cfg.Schema); err != nil {
			return cfg, err
		}
	case fitted != nil:
		s = fitted.Schema()
	}
	if s.TrainFrac > 0 {
		cfg.TrainFrac = s.TrainFrac
	}
	return cfg, nil
}

// Validate reports every problem with c at once, as FieldErrors naming the
// Config fields (the command line names its flags instead).
func (c *Config) Validate() error {
	var errs FieldErrors
	if c.Epochs < 1 {
		errs.Add("Epochs", "must be ≥ 1 (got %d)", c.Epochs)
	}
	if c.Batch < 1 {
		errs.Add("Batch", "must be ≥ 1 (got %d)", c.Batch)
	}
	if !(c.LR > 0) || math.IsInf(c.LR, 0) {
		errs.Add("LR", "must be a positive number (got %v)", c.LR)
	}
	errs.addErr(c.DType.Validate())
	errs.addErr(c.Optimizer.Validate())
	if !(c.TrainFrac >= 0 && c.TrainFrac < 1) {
		errs.Add("TrainFrac", "must be in (0,1), or 0 for the data's own (got %v)", c.TrainFrac)
	}
	if c.Limit < 0 {
		errs.Add("Limit", "must be ≥ 0")
	}
	errs = append(errs, validateImageNorm(c.ImageMean, c.ImageStd)...)
	p := c.Privacy
	errs = append(errs, CheckPrivacy(p.Epsilon, p.Delta, p.Clip, p.Sigma)...)
	if p.Sampling != "poisson" && p.Sampling != "shuffle" {
		errs.Add("Privacy.Sampling", "must be poisson or shuffle (got %q)", p.Sampling)
	}
	if p.Accountant != "" && p.Accountant != "pld" && p.Accountant != "rdp" {
		errs.Add("Privacy.Accountant", "must be pld or rdp (got %q)", p.Accountant)
	}
	errs.addErr(c.Device.Validate())
	checkDeviceConfig(c, &errs)
	f := c.Fair
	if f.Lambda < 0 || math.IsNaN(f.Lambda) {
		errs.Add("Fair.Lambda", "must be ≥ 0 (got %v)", f.Lambda)
	}
	if f.Fairness != "dp" && f.Fairness != "eo" {
		errs.Add("Fair.Fairness", "must be dp or eo (got %q)", f.Fairness)
	}
	if f.Scope != "all" && f.Scope != "sensitive" {
		errs.Add("Fair.Scope", "must be all or sensitive (got %q)", f.Scope)
	}
	if f.Calibration != "accountant" && f.Calibration != "paper" {
		errs.Add("Fair.Calibration", "must be accountant or paper (got %q)", f.Calibration)
	}
	if !(f.Radius > 0) {
		errs.Add("Fair.Radius", "must be > 0 (got %v)", f.Radius)
	}
	if !(f.CountNoiseRatio > 0) {
		errs.Add("Fair.CountNoiseRatio", "must be > 0 (got %v)", f.CountNoiseRatio)
	}
	if !(f.LRW >= 0) {
		errs.Add("Fair.LRW", "must be ≥ 0 (got %v)", f.LRW)
	}
	if f.WeightDecay < 0 {
		errs.Add("Fair.WeightDecay", "must be ≥ 0 (got %v)", f.WeightDecay)
	}
	if c.Algo == algoSteffle {
		errs.addErr(c.Federation.Validate())
	}
	return errs.err()
}

// FieldError is one invalid Config setting: the field's path (e.g.
// "Privacy.Epsilon") and what is wrong with it. Messages name fields, not
// command-line flags, so library users read their own names; the fairdp
// command renders the flags.
type FieldError struct {
	Field string
	Msg   string
}

func (e FieldError) Error() string { return strings.TrimSpace(e.Field + " " + e.Msg) }

// FieldErrors are all the problems Validate found.
type FieldErrors []FieldError

// Add appends the problem of one setting: field, and a message formatted
// from format and a (fmt.Sprintf). Validators outside this package
// (pipelines' own settings, search spaces) collect their problems with it.
func (es *FieldErrors) Add(field, format string, a ...any) {
	*es = append(*es, FieldError{Field: field, Msg: fmt.Sprintf(format, a...)})
}

// addErr appends err's FieldErrors (a kind's Validate); err is nil or
// FieldErrors.
func (es *FieldErrors) addErr(err error) {
	var fe FieldErrors
	if errors.As(err, &fe) {
		*es = append(*es, fe...)
	}
}

func (es FieldErrors) Error() string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = e.Error()
	}
	return strings.Join(s, "; ")
}

// err is es as an error (nil when empty).
func (es FieldErrors) err() error {
	if len(es) == 0 {
		return nil
	}
	return es
}

// presets maps --preset names to functions that set a paper's settings.
var presets = map[string]func(*Config){}

// RegisterPreset adds a named preset (e.g. "dpsgdf-mnist"); algorithm
// packages call it from init. It panics on a duplicate name.
func RegisterPreset(name string, apply func(*Config)) {
	if _, dup := presets[name]; dup {
		panic("trainer: preset " + name + " registered twice")
	}
	presets[name] = apply
}

// ApplyPreset sets cfg to the named preset's settings; flags given
// explicitly are applied after it by the caller, so they win.
func ApplyPreset(cfg *Config, name string) error {
	apply, ok := presets[name]
	if !ok {
		return FieldErrors{{Field: "Preset", Msg: fmt.Sprintf("%q is unknown (known: %s)", name, strings.Join(PresetNames(), ", "))}}
	}
	apply(cfg)
	cfg.Preset = name
	return nil
}

// PresetNames lists the registered presets, sorted.
func PresetNames() []string {
	return slices.Sorted(maps.Keys(presets))
}

// MarshalJSON writes an infinite ε as the string "inf" (JSON has no ∞).
func (p DPConfig) MarshalJSON() ([]byte, error) {
	type plain DPConfig
	var eps any = p.Epsilon
	if math.IsInf(p.Epsilon, 1) {
		eps = "inf"
	}
	return json.Marshal(struct {
		plain
		Epsilon any `json:"epsilon"`
	}{plain(p), eps})
}

// UnmarshalJSON reads what MarshalJSON writes ("inf" for an infinite ε).
func (p *DPConfig) UnmarshalJSON(data []byte) error {
	type plain DPConfig
	aux := struct {
		*plain
		Epsilon json.RawMessage `json:"epsilon"`
	}{plain: (*plain)(p)}
	if err := json.Unmarshal(data, &aux); err != nil {
		return err
	}
	switch e := strings.TrimSpace(string(aux.Epsilon)); e {
	case "":
	case `"inf"`, `"+Inf"`:
		p.Epsilon = math.Inf(1)
	default:
		if err := json.Unmarshal(aux.Epsilon, &p.Epsilon); err != nil {
			return fmt.Errorf("privacy epsilon: %w", err)
		}
	}
	return nil
}

// ReadConfig reads a run's configuration from path: a report.json (its
// "config", which records every setting of the run) or a bare Config JSON.
// Settings the file leaves out keep their Defaults. It is how a reported
// run is repeated (`fairdp train --config report.json`). Its keys are
// the snake_case json names; a key Config lacks is refused.
func ReadConfig(path string) (Config, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return Config{}, fmt.Errorf("config %s: %w", path, err)
	}
	if c, ok := top["config"]; ok {
		raw = c
	}
	cfg := Defaults()
	if err := decodeConfigStrict(raw, &cfg); err != nil {
		return Config{}, fmt.Errorf("config %s: %w", path, err)
	}
	return cfg, nil
}

// decodeConfigStrict decodes a Config JSON into cfg (keys it leaves out keep
// cfg's values), refusing unknown keys.
func decodeConfigStrict(raw []byte, cfg *Config) error {
	return decodeConfig(raw, cfg, true)
}
