package trainer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
)

// Config is one training job. The zero value is not usable; start from
// Defaults() (what `fairdp train` with no arguments runs).
type Config struct {
	Algo    string // "sgd", "dpsgd", …
	Dataset string // built-in name (adult, credit, parkinsons, dutch, mnist, mnist-unbalanced, utkface) or a CSV path
	Schema  string // schema JSON for a CSV path
	DataDir string // where built-in data lives ("" = $FAIRDP_DATA, then ../shared/data)
	Model   string // logistic, mlp, mnist-cnn, vgg ("" = the dataset's default)
	Hidden  []int  // MLP widths
	// ModelSpecFile names a JSON models.Spec of a network outside the zoo
	// (its "layers"); it replaces Model. in_shape and classes default to
	// the data's.
	ModelSpecFile string  `json:",omitempty"`
	DType         string  // float32 or float64
	Epochs        int     // passes over the training set
	Batch         int     // batch size (expected size under Poisson sampling)
	LR            float64 // learning rate
	Optimizer     string  // sgd or adam
	Momentum      float64 // SGD momentum
	TrainFrac     float64 // train fraction of a random split (0.75 for DP-FERMI)
	ImageSize     int     // UTKFace resize
	Limit         int     // use at most this many records (0 = all), for quick runs
	Seed          *uint64 // nil: crypto-seeded
	// SplitSeed, if set, seeds the train/test split alone (Seed then seeds
	// everything else), so a sweep's runs share one split while each draws
	// its own noise; nil: the split comes from Seed.
	SplitSeed *uint64 `json:",omitempty"`
	Out       string  // output directory ("" = no files)
	Quiet     bool    // no progress lines
	Device    string  // "cpu" (default) or "cuda" (needs a build with -tags cuda and a GPU)
	Baseline  bool    // also train the non-private twin and report the cost of privacy
	// ReportTrainStats writes exact statistics of the training split (per
	// group metrics, loss, sampled batch sizes) for a private run too,
	// marked not private; by default a private run leaves them out.
	ReportTrainStats bool       `json:",omitempty"`
	Tau              float64    // "equal cost" tolerance for the cost of privacy (DPSGD-F's τ)
	Privacy          DPConfig   `json:"privacy"` // used by the private algorithms
	Fair             FairConfig `json:"fair"`
	Preset           string     // name of the preset applied first (recorded for the report)
	// Federation is SteFFLe's (--algo steffle) split of the training data
	// over silos; other algorithms ignore it, and sweeps of them zero it so
	// it is left out of their settings JSON.
	Federation FederationConfig `json:"federation,omitzero"`
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
// (REFERENCE §5). It lives in Config so that --algo steffle runs through
// the ordinary Train path and its settings land in report.json.
type FederationConfig struct {
	Silos         int     // N silos holding records (features and labels)
	Heterogeneity float64 // h ∈ [0, 1] of the split by SiloAttribute
	// SiloAttribute is the feature the heterogeneity split sorts by (the
	// paper: age).
	SiloAttribute string
	// Mode is FederationHorizontal (default), FederationSensitiveSilo or
	// FederationMapping.
	Mode string
	// MappingFile is the CSV of FederationMapping: header
	// record,features_silo,sensitive_silo and one row per training record
	// (record = 0-based index in the training split).
	MappingFile string
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
		errs.add("Federation.Silos", "must be ≥ 1 (got %d)", f.Silos)
	}
	if !(f.Heterogeneity >= 0 && f.Heterogeneity <= 1) {
		errs.add("Federation.Heterogeneity", "must be in [0,1] (got %v)", f.Heterogeneity)
	}
	switch f.Mode {
	case FederationHorizontal, FederationSensitiveSilo:
		if f.MappingFile != "" {
			errs.add("Federation.MappingFile", "is only read with Federation.Mode %s (got Federation.Mode %s)", FederationMapping, f.Mode)
		}
	case FederationMapping:
		if f.MappingFile == "" {
			errs.add("Federation.Mode", "mapping needs Federation.MappingFile FILE.csv (columns record,features_silo,sensitive_silo)")
		}
	default:
		errs.add("Federation.Mode", "must be %s, %s or %s (got %q)", FederationHorizontal, FederationSensitiveSilo, FederationMapping, f.Mode)
	}
	return errs.err()
}

// FairConfig holds the fairness flags (DP-FERMI, SteFFLe, DPSGD-F).
type FairConfig struct {
	Lambda           float64 // fairness weight λ ≥ 0
	Fairness         string  // "dp" (demographic parity) or "eo" (equalized odds)
	Scope            string  // "all" or "sensitive": what the privacy guarantee covers
	LRW              float64 // ascent learning rate η_W (DP-FERMI)
	Radius           float64 // D, radius of the Frobenius ball W is projected on; also its clip bound
	PublicGroupSizes bool    // treat group frequencies p̂_S as public (no budget spent on them)
	Calibration      string  // "accountant" (RDP, default) or "paper" (Theorem 3.3 closed form)
	WeightDecay      float64 // L2 regularisation
	CountNoiseRatio  float64 // DPSGD-F: σ1 = ratio·σ2 for the clipped/unclipped counts
}

// DPConfig holds the differential-privacy flags shared by the private algorithms.
type DPConfig struct {
	Epsilon float64 // target ε (+Inf = not private)
	Delta   float64 // target δ (0 = accounting.DefaultDelta: 1/n² of the training records)
	// AllowLargeDelta accepts a δ ≥ 1/n (refused otherwise); the receipt
	// then says the guarantee is weak.
	AllowLargeDelta bool    `json:",omitempty"`
	Clip            float64 // per-sample clip bound C
	Sigma           float64 // noise multiplier; 0 = calibrate from Epsilon
	// Sampling is "poisson" (default; RDP accounting valid) or "shuffle".
	Sampling string
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
		Algo: "fermi", Dataset: "adult", DType: "float32", Epochs: 20, Batch: 256, LR: 0.005,
		Optimizer: "adam", TrainFrac: 0.75, ImageSize: 64, Tau: 0.05, Device: "cpu",
		Privacy: DPConfig{Epsilon: 1, Clip: 1, Sampling: "poisson"},
		Fair: FairConfig{Lambda: 10, Fairness: "dp", Scope: "all", LRW: 0.01, Radius: 5, Calibration: "accountant",
			CountNoiseRatio: 10},
		Federation: DefaultFederation(),
	}
}

// Validate reports every problem with c at once, as FieldErrors naming the
// Config fields (the command line names its flags instead).
func (c *Config) Validate() error {
	var errs FieldErrors
	if c.Epochs < 1 {
		errs.add("Epochs", "must be ≥ 1 (got %d)", c.Epochs)
	}
	if c.Batch < 1 {
		errs.add("Batch", "must be ≥ 1 (got %d)", c.Batch)
	}
	if !(c.LR > 0) || math.IsInf(c.LR, 0) {
		errs.add("LR", "must be a positive number (got %v)", c.LR)
	}
	if c.DType != "float32" && c.DType != "float64" {
		errs.add("DType", "must be float32 or float64 (got %q)", c.DType)
	}
	if c.Optimizer != "sgd" && c.Optimizer != "adam" {
		errs.add("Optimizer", "must be sgd or adam (got %q)", c.Optimizer)
	}
	if !(c.TrainFrac > 0 && c.TrainFrac < 1) {
		errs.add("TrainFrac", "must be in (0,1) (got %v)", c.TrainFrac)
	}
	if c.Limit < 0 {
		errs.add("Limit", "must be ≥ 0")
	}
	p := c.Privacy
	if !(p.Epsilon > 0) {
		errs.add("Privacy.Epsilon", "must be > 0 or inf (got %v)", p.Epsilon)
	}
	if p.Delta < 0 || p.Delta >= 1 {
		errs.add("Privacy.Delta", "must be in [0,1) (got %v)", p.Delta)
	}
	if !(p.Clip > 0) {
		errs.add("Privacy.Clip", "must be > 0 (got %v)", p.Clip)
	}
	if p.Sigma < 0 {
		errs.add("Privacy.Sigma", "must be ≥ 0 (got %v)", p.Sigma)
	}
	if p.Sampling != "poisson" && p.Sampling != "shuffle" {
		errs.add("Privacy.Sampling", "must be poisson or shuffle (got %q)", p.Sampling)
	}
	if c.Device != "cpu" && c.Device != "cuda" {
		errs.add("Device", "must be cpu or cuda (got %q)", c.Device)
	}
	f := c.Fair
	if f.Lambda < 0 || math.IsNaN(f.Lambda) {
		errs.add("Fair.Lambda", "must be ≥ 0 (got %v)", f.Lambda)
	}
	if f.Fairness != "dp" && f.Fairness != "eo" {
		errs.add("Fair.Fairness", "must be dp or eo (got %q)", f.Fairness)
	}
	if f.Scope != "all" && f.Scope != "sensitive" {
		errs.add("Fair.Scope", "must be all or sensitive (got %q)", f.Scope)
	}
	if f.Calibration != "accountant" && f.Calibration != "paper" {
		errs.add("Fair.Calibration", "must be accountant or paper (got %q)", f.Calibration)
	}
	if !(f.Radius > 0) {
		errs.add("Fair.Radius", "must be > 0 (got %v)", f.Radius)
	}
	if !(f.CountNoiseRatio > 0) {
		errs.add("Fair.CountNoiseRatio", "must be > 0 (got %v)", f.CountNoiseRatio)
	}
	if !(f.LRW >= 0) {
		errs.add("Fair.LRW", "must be ≥ 0 (got %v)", f.LRW)
	}
	if f.WeightDecay < 0 {
		errs.add("Fair.WeightDecay", "must be ≥ 0 (got %v)", f.WeightDecay)
	}
	if c.Algo == "steffle" {
		var fe FieldErrors
		if errors.As(c.Federation.Validate(), &fe) {
			errs = append(errs, fe...)
		}
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

func (es *FieldErrors) add(field, format string, a ...any) {
	*es = append(*es, FieldError{Field: field, Msg: fmt.Sprintf(format, a...)})
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
	var s []string
	for k := range presets {
		s = append(s, k)
	}
	sort.Strings(s)
	return s
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
		Epsilon any `json:"Epsilon"`
	}{plain(p), eps})
}

// UnmarshalJSON reads what MarshalJSON writes ("inf" for an infinite ε).
func (p *DPConfig) UnmarshalJSON(data []byte) error {
	type plain DPConfig
	aux := struct {
		*plain
		Epsilon json.RawMessage `json:"Epsilon"`
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
			return fmt.Errorf("privacy Epsilon: %w", err)
		}
	}
	return nil
}

// ReadConfig reads a run's configuration from path: a report.json (its
// "config", which records every setting of the run) or a bare Config JSON.
// Settings the file leaves out keep their Defaults. It is how a reported
// run is repeated (`fairdp train --config report.json`).
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
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return Config{}, fmt.Errorf("config %s: %w", path, err)
	}
	return cfg, nil
}
