package federated

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"

	"fairdp/atomicfile"
	"fairdp/dpops/accounting"
	"fairdp/loaders"
)

// SiloStateVersion is the format of the state file; a file of another
// version is refused rather than guessed at.
const SiloStateVersion = 2

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
//     restart may lower the budget but never raise it, and ε is always
//     reported at the first δ.
//   - Last is the last answered round with a digest of its request, so a
//     server that lost the answer (its own crash, or a network fault) gets
//     the identical message again, with no new noise and no new charge.
//   - Fingerprint identifies the silo's data; state written for other data
//     is refused.
type SiloState struct {
	Version     int                    `json:"version"`
	Silo        int                    `json:"silo"`
	Fingerprint string                 `json:"data_fingerprint"`
	Records     int                    `json:"records"`
	Private     bool                   `json:"private"`
	Budget      float64                `json:"epsilon_budget"`
	Delta       float64                `json:"delta"`
	Rounds      int                    `json:"rounds"`
	Generation  int                    `json:"generation"`
	Counts      []float64              `json:"released_group_counts,omitempty"`
	Mechanisms  []accounting.Mechanism `json:"mechanisms"`
	Last        *Answer                `json:"last,omitempty"`
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
		if m.SampleRate < 1 {
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
