package federated

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"

	"github.com/fairdp/fairdp/atomicfile"
	"github.com/fairdp/fairdp/dpops/accounting"
	"github.com/fairdp/fairdp/fermi"
	"github.com/fairdp/fairdp/loaders"
	"github.com/fairdp/fairdp/trainer"
)

// SiloStateVersion is the format of the state file; a file of another
// version is refused rather than guessed at. Version 3 added Release:
// a version-2 file does not say under which settings its rounds were
// released, so it is refused (see check) instead of being continued under
// whatever the flags say now. Version 4 charges a round under scope
// sensitive at sampling rate 1 (fermi.DPFERMI.AccountedQ: the sample is not
// hidden there); a version-3 file under scope sensitive holds rounds
// charged at the Poisson rate, an ε below the truth, so it is refused, and
// a version-3 file under scope all, whose rounds were charged as now, is
// read as version 4.
const SiloStateVersion = 4

// SiloState is what a silo has released, kept on disk so that a restarted
// silo continues the same accountant instead of starting a new one. It is
// written atomically and synced (package atomicfile) before an answer
// leaves the silo, so no release is ever missing from it:
//
//   - Mechanisms is the accountant's ledger: every distinct release with how
//     often it ran (the group-count release once; each (q, σ) of the round
//     messages with its number of rounds). A restart with other flags (other
//     epochs, hence another σ) adds a new line instead of rewriting history,
//     so the receipt lists exactly what was released.
//   - Counts are the noisy group counts as released; a restart reuses them
//     (fermi.NewWithReleasedCounts), so it releases nothing new.
//   - Budget and Delta are the (ε, δ) the silo was first started with: a
//     restart may lower the budget but never raise it, and a restart with
//     another δ is refused (ε is always reported at the first δ).
//   - Last is the last answered round with a digest of its request, so a
//     server that lost the answer (its own crash, or a network fault) gets
//     the identical message again, with no new noise and no new charge.
//   - Fingerprint identifies the silo's data; state written for other data
//     is refused.
//   - Release (with Private and Delta) is every setting that changes what
//     the silo's messages and counts release, or how the ledger reads its
//     noise multipliers: a restart that changes one is refused (the ledger
//     was charged under the old one), as a central --resume is.
type SiloState struct {
	Version     int                    `json:"version"`
	Silo        int                    `json:"silo"`
	Fingerprint string                 `json:"data_fingerprint"`
	Records     int                    `json:"records"`
	Private     bool                   `json:"private"`
	Release     ReleaseSettings        `json:"release_settings"`
	Budget      float64                `json:"epsilon_budget"`
	Delta       float64                `json:"delta"`
	Rounds      int                    `json:"rounds"`
	Generation  int                    `json:"generation"`
	Counts      []float64              `json:"released_group_counts,omitempty"`
	Mechanisms  []accounting.Mechanism `json:"mechanisms"`
	Last        *Answer                `json:"last,omitempty"`
}

// ReleaseSettings are the silo's settings that change what its messages
// release. The ledger stores each round's noise multiplier, which is only
// the round's privacy loss under the sensitivity these settings give:
// Scope decides whether the loss sum is sent un-noised and whether the
// sensitivity is C or 2C; Clip, Lambda and Calibration (the σ rule) fix the
// sensitivity and how the noise is split between θ and W; Fairness and
// PublicGroupSizes decide which group counts exist and whether they were
// released with noise at all; Sampling decides which accountant formula
// holds; Model decides what θ and the messages are; Accountant is the
// analysis the ledger and σ's calibration use (pld or rdp; "" in a state
// file from before it was recorded: rdp, the only one silos used then, so
// such a file continues only under rdp; the format is unchanged). The σ itself (from
// epochs, ε or an explicit σ) may change: the ledger records every σ.
type ReleaseSettings struct {
	Scope            string  `json:"scope"`
	Fairness         string  `json:"fairness"`
	Clip             float64 `json:"clip"`
	Lambda           float64 `json:"lambda"`
	Calibration      string  `json:"calibration"`
	PublicGroupSizes bool    `json:"public_group_sizes"`
	Sampling         string  `json:"sampling"`
	Model            string  `json:"model"`
	Accountant       string  `json:"accountant,omitempty"`
}

// releaseDiff names every release setting of now that differs from the
// state's (Private and Delta included), as configuration fields, so a
// front end can name its own flags.
func releaseDiff(saved *SiloState, now SiloState) trainer.FieldErrors {
	var errs trainer.FieldErrors
	add := func(field string, old, cur any) {
		errs = append(errs, trainer.FieldError{Field: field, Msg: fmt.Sprintf("is %v in the silo's state and %v now: "+
			"a restarted silo keeps every setting that changes what its messages release (its ledger was charged under the old one); "+
			"restart it with the state's value, or give it a new state file and accept the old file's budget as spent", old, cur)})
	}
	a, b := saved.Release, now.Release
	if a.Scope != b.Scope {
		add("Fair.Scope", a.Scope, b.Scope)
	}
	if a.Fairness != b.Fairness {
		add("Fair.Fairness", a.Fairness, b.Fairness)
	}
	if a.Clip != b.Clip {
		add("Privacy.Clip", a.Clip, b.Clip)
	}
	if a.Lambda != b.Lambda {
		add("Fair.Lambda", a.Lambda, b.Lambda)
	}
	if a.Calibration != b.Calibration {
		add("Fair.Calibration", a.Calibration, b.Calibration)
	}
	if a.PublicGroupSizes != b.PublicGroupSizes {
		add("Fair.PublicGroupSizes", a.PublicGroupSizes, b.PublicGroupSizes)
	}
	if a.Sampling != b.Sampling {
		add("Privacy.Sampling", a.Sampling, b.Sampling)
	}
	if a.Model != b.Model {
		add("Model", a.Model, b.Model)
	}
	if acc := cmp.Or(a.Accountant, accounting.AccountantRDP); acc != cmp.Or(b.Accountant, accounting.AccountantRDP) {
		add("Privacy.Accountant", acc, b.Accountant)
	}
	if saved.Delta != now.Delta {
		add("Privacy.Delta", saved.Delta, now.Delta)
	}
	return errs
}

// Answer is an answered round as released: the request's digest and the
// message sent back.
type Answer struct {
	Round   int     `json:"round"`
	Request string  `json:"request_sha256"`
	Message Message `json:"message"`
}

// LoadSiloState reads a silo's state file. A missing file is (nil, nil): the
// silo starts fresh. Anything else that cannot be read back exactly (a
// truncated or corrupted file, another version, impossible values) is an
// error naming the file: a silo never guesses what it has spent.
func LoadSiloState(path string) (*SiloState, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("silo state %s: %w", path, err)
	}
	st, err := DecodeSiloState(data)
	if err != nil {
		return nil, fmt.Errorf("silo state %s: %w", path, err)
	}
	return st, nil
}

// DecodeSiloState parses and checks a state file's contents.
func DecodeSiloState(data []byte) (*SiloState, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var st SiloState
	if err := dec.Decode(&st); err != nil {
		return nil, fmt.Errorf("not a valid state file (%v); it may be truncated or from an older fairdp: "+
			"keep it (it records spent budget) and start the silo with a new state file only if you accept that budget as lost", err)
	}
	if dec.More() {
		return nil, errors.New("trailing data after the state object")
	}
	if err := st.check(); err != nil {
		return nil, err
	}
	return &st, nil
}

func (st *SiloState) check() error {
	switch {
	case st.Version == 2:
		return errors.New("state version 2 was written by an older fairdp that did not record the settings its rounds were released under " +
			"(scope, clip, λ, σ rule, fairness, public group sizes, sampling, model), so it cannot be continued safely: " +
			"keep it (it records spent budget) and start the silo with a new state file only if you accept that budget as lost")
	case st.Version == 3 && st.Release.Scope == accounting.ScopeSensitive:
		return errors.New("state version 3 under scope sensitive charged its rounds as subsampled, but the exact s-independent " +
			"terms of a round show which records were sampled, so its ledger states less ε than was spent: it cannot be continued; " +
			"keep it (it records spent budget) and start the silo with a new state file only if you accept that budget as lost")
	case st.Version == 3:
		st.Version = SiloStateVersion // scope all: its rounds were charged as version 4 charges them
		return st.check()
	case st.Version != SiloStateVersion:
		return fmt.Errorf("state version %d, this fairdp reads version %d", st.Version, SiloStateVersion)
	case st.Silo < 0 || st.Records < 1 || st.Rounds < 0 || st.Generation < 0:
		return fmt.Errorf("impossible values: silo %d, %d records, %d rounds, generation %d", st.Silo, st.Records, st.Rounds, st.Generation)
	case !(st.Budget > 0) || math.IsNaN(st.Budget):
		return fmt.Errorf("epsilon budget %v, want > 0", st.Budget)
	case !(st.Delta > 0 && st.Delta < 1):
		return fmt.Errorf("delta %v, want in (0,1)", st.Delta)
	case len(st.Fingerprint) != 2*sha256.Size:
		return errors.New("missing or malformed data fingerprint")
	case st.Release.Scope != accounting.ScopeAll && st.Release.Scope != accounting.ScopeSensitive ||
		st.Release.Fairness != "dp" && st.Release.Fairness != "eo" ||
		st.Release.Sampling != accounting.SamplingPoisson && st.Release.Sampling != accounting.SamplingShuffle ||
		st.Release.Calibration == "" || st.Release.Model == "" ||
		!(st.Release.Clip >= 0) || math.IsInf(st.Release.Clip, 1) || !(st.Release.Lambda >= 0) || math.IsInf(st.Release.Lambda, 1):
		return fmt.Errorf("missing or impossible release settings: %+v", st.Release)
	}
	for i, c := range st.Counts {
		if !(c >= 1) || math.IsInf(c, 1) {
			return fmt.Errorf("released group count %d is %v, want a finite number ≥ 1", i, c)
		}
	}
	rounds := 0
	for i, m := range st.Mechanisms {
		if m.Kind != accounting.KindSubsampledGaussian || !(m.SampleRate > 0 && m.SampleRate <= 1) || !(m.NoiseMultiplier > 0) || m.Steps < 1 {
			return fmt.Errorf("mechanism %d is not a valid subsampled Gaussian release: %+v", i, m)
		}
		if !fermi.IsCountRelease(m) {
			rounds += m.Steps
		}
	}
	if st.Private && rounds != st.Rounds {
		return fmt.Errorf("the ledger holds %d round releases but the state says %d rounds", rounds, st.Rounds)
	}
	if st.Last != nil && (st.Last.Round != st.Rounds || len(st.Last.Request) != 2*sha256.Size) {
		return fmt.Errorf("last answer is for round %d, want round %d with a request digest", st.Last.Round, st.Rounds)
	}
	if st.Last == nil && st.Rounds > 0 {
		return errors.New("rounds were answered but the last answer is missing")
	}
	return nil
}

// save writes the state atomically and syncs it to disk.
func (st *SiloState) save(path string) error {
	if err := atomicfile.WriteJSON(path, st); err != nil {
		return fmt.Errorf("silo state: %w", err)
	}
	return nil
}

// DataFingerprint identifies a data set's contents (features, pixels,
// labels, groups), so a silo's state is never applied to other records.
func DataFingerprint(d *loaders.Dataset) string {
	h := sha256.New()
	var buf [8]byte
	put := func(v uint64) {
		binary.LittleEndian.PutUint64(buf[:], v)
		h.Write(buf[:])
	}
	put(uint64(d.N()))
	put(uint64(d.Dim))
	for _, v := range d.X {
		put(math.Float64bits(v))
	}
	h.Write(d.Pix)
	for _, v := range d.Labels {
		put(uint64(v))
	}
	for _, v := range d.Groups {
		put(uint64(v))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// requestDigest identifies a round's request (round, θ and W, bit for bit).
func requestDigest(rq Request) string {
	h := sha256.New()
	var buf [8]byte
	put := func(v uint64) {
		binary.LittleEndian.PutUint64(buf[:], v)
		h.Write(buf[:])
	}
	put(uint64(rq.Round))
	put(uint64(len(rq.Theta)))
	for _, v := range rq.Theta {
		put(math.Float64bits(v))
	}
	put(uint64(len(rq.W)))
	for _, v := range rq.W {
		put(math.Float64bits(v))
	}
	return hex.EncodeToString(h.Sum(nil))
}
