package accounting

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Mechanism kinds. A receipt lists every mechanism a run used by kind, so a
// reader can tell which analysis applies to each.
const (
	// KindSubsampledGaussian is a Gaussian mechanism applied to a Poisson
	// sample of the data (DPSGD's noisy gradient sum, DPSGD-F's noisy counts).
	KindSubsampledGaussian = "subsampled-gaussian"
	// KindGaussian is a Gaussian mechanism on the whole data set, charged in
	// zCDP (privacy-budget tailoring).
	KindGaussian = "gaussian"
	// KindZCDP is a zCDP charge given directly as ρ.
	KindZCDP = "zcdp"
	// KindLaplace is a Laplace mechanism, charged in pure ε-DP.
	KindLaplace = "laplace"
	// KindPureDP is a pure ε-DP charge given directly as ε.
	KindPureDP = "pure-dp"
)

// Mechanism describes one noisy release and how often it ran, in the terms a
// receipt reports: which kind, its parameters and what it protects.
// The accountant that records it fills in the privacy cost (Rho, Epsilon).
type Mechanism struct {
	Kind string
	// SampleRate is the Poisson sampling rate q (subsampled-gaussian).
	SampleRate float64
	// NoiseMultiplier is σ: the noise standard deviation divided by the
	// sensitivity (subsampled-gaussian, gaussian).
	NoiseMultiplier float64
	// Sensitivity is the L2 (Gaussian) or L1 (Laplace) sensitivity, i.e. the
	// clip norm for DPSGD; informational, 0 when not given.
	Sensitivity float64
	// Steps is how many times the mechanism ran.
	Steps int
	// Protects says what the noise protects, e.g. "gradients" or "counts".
	Protects string
	// Rho is the total zCDP cost (gaussian, zcdp).
	Rho float64
	// Epsilon is the total pure-DP cost (laplace, pure-dp).
	Epsilon float64
	// Parts are the releases of a joint subsampled Gaussian (see
	// JointSubsampledGaussian): several noisy quantities computed on the
	// same Poisson sample, charged once with NoiseMultiplier = σ_eff. Nil
	// for a single release.
	Parts []Part
}

// Part is one release inside a joint subsampled-Gaussian mechanism: its
// own noise multiplier (noise std / its L2 sensitivity) and what it
// protects.
type Part struct {
	NoiseMultiplier float64 `json:"sigma"`
	Sensitivity     float64 `json:"sensitivity,omitempty"`
	Protects        string  `json:"protects,omitempty"`
}

// JointSubsampledGaussian is the mechanism of one step that releases several
// Gaussian-noised quantities computed on the SAME Poisson sample, e.g.
// DPSGD-F's noisy group counts (σ1) and its clipped gradient sum (σ2).
//
// Charging them as separately subsampled mechanisms and adding their RDP
// understates the cost, because the two releases are not sampled
// independently: a record is in both or in neither. Stacked, the releases
// are one Gaussian mechanism whose per-record sensitivity, in units of each
// part's noise, is sqrt(Σ 1/σ_i²), i.e. one Gaussian with noise multiplier
// σ_eff = (Σ σ_i⁻²)^(-1/2), subsampled once (as in adaptive-clipping
// accounting, Andrew et al. 2021). The returned
// mechanism carries σ_eff as its NoiseMultiplier, so every accountant and
// calibration treats it as one subsampled Gaussian, and lists the parts for
// the receipt.
func JointSubsampledGaussian(q float64, parts ...Part) Mechanism {
	m := Mechanism{Kind: KindSubsampledGaussian, SampleRate: q, NoiseMultiplier: JointSigma(partSigmas(parts)...),
		Parts: slices.Clone(parts)}
	names := make([]string, len(parts))
	for i, p := range parts {
		names[i] = p.Protects
	}
	m.Protects = "jointly, on one Poisson sample: " + strings.Join(names, "; ")
	return m
}

func partSigmas(parts []Part) []float64 {
	s := make([]float64, len(parts))
	for i, p := range parts {
		s[i] = p.NoiseMultiplier
	}
	return s
}

// JointSigma is σ_eff = (Σ σ_i⁻²)^(-1/2), the noise multiplier of releases
// with noise multipliers σ_i made on one sample (see
// JointSubsampledGaussian). A part with σ = +Inf adds nothing; no parts, or
// only infinite ones, give +Inf; a part with σ ≤ 0 gives 0 (no privacy).
func JointSigma(sigmas ...float64) float64 {
	var inv float64
	for _, s := range sigmas {
		if !(s > 0) {
			return 0
		}
		inv += 1 / (s * s)
	}
	return 1 / math.Sqrt(inv)
}

// SubsampledGaussian is the mechanism DPSGD runs each step: noise multiplier
// sigma on a Poisson sample with rate q, protecting what protects names.
func SubsampledGaussian(q, sigma, clip float64, protects string) Mechanism {
	return Mechanism{Kind: KindSubsampledGaussian, SampleRate: q, NoiseMultiplier: sigma, Sensitivity: clip, Protects: protects}
}

// mechanismJSON is Mechanism's wire form: parameters that do not apply to a
// kind are left out instead of being written as misleading zeros.
type mechanismJSON struct {
	Kind        string   `json:"kind"`
	Q           *float64 `json:"q,omitempty"`
	Sigma       *float64 `json:"sigma,omitempty"`
	Sensitivity *float64 `json:"sensitivity,omitempty"`
	Steps       int      `json:"steps"`
	Protects    string   `json:"protects,omitempty"`
	Rho         *float64 `json:"rho,omitempty"`
	Epsilon     *float64 `json:"epsilon,omitempty"`
	// Composition and Parts describe a joint mechanism: how its parts were
	// charged, and each part.
	Composition string `json:"composition,omitempty"`
	Parts       []Part `json:"parts,omitempty"`
}

// jointComposition is the receipt's statement for a joint mechanism.
const jointComposition = "joint: every part is computed on the same Poisson sample, so they are charged as one " +
	"subsampled Gaussian with sigma = (sum of part sigma^-2)^(-1/2)"

// MarshalJSON writes the parameters that apply to m's kind.
func (m Mechanism) MarshalJSON() ([]byte, error) {
	out := mechanismJSON{Kind: m.Kind, Steps: m.Steps, Protects: m.Protects, Parts: m.Parts}
	if len(m.Parts) > 0 {
		out.Composition = jointComposition
	}
	if m.Sensitivity != 0 {
		out.Sensitivity = &m.Sensitivity
	}
	switch m.Kind {
	case KindSubsampledGaussian:
		out.Q, out.Sigma = &m.SampleRate, &m.NoiseMultiplier
	case KindGaussian:
		out.Sigma, out.Rho = &m.NoiseMultiplier, &m.Rho
	case KindZCDP:
		out.Rho = &m.Rho
	case KindLaplace, KindPureDP:
		out.Epsilon = &m.Epsilon
	default:
		return nil, fmt.Errorf("accounting: cannot write mechanism of unknown kind %q", m.Kind)
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads what MarshalJSON writes; absent parameters are 0.
func (m *Mechanism) UnmarshalJSON(data []byte) error {
	var in mechanismJSON
	if err := json.Unmarshal(data, &in); err != nil {
		return err
	}
	get := func(p *float64) float64 {
		if p == nil {
			return 0
		}
		return *p
	}
	*m = Mechanism{Kind: in.Kind, SampleRate: get(in.Q), NoiseMultiplier: get(in.Sigma),
		Sensitivity: get(in.Sensitivity), Steps: in.Steps, Protects: in.Protects,
		Rho: get(in.Rho), Epsilon: get(in.Epsilon), Parts: in.Parts}
	return nil
}

// sameRelease reports whether a and b are the same release apart from how
// often it ran, so that a history can merge them.
func sameRelease(a, b Mechanism) bool {
	return a.Kind == b.Kind && a.SampleRate == b.SampleRate && a.NoiseMultiplier == b.NoiseMultiplier &&
		a.Sensitivity == b.Sensitivity && a.Protects == b.Protects && slices.Equal(a.Parts, b.Parts)
}
