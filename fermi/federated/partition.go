package federated

import (
	"cmp"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/fairdp/fairdp/loaders"
)

// Heterogeneous splits records 0..len(attr)-1 over silos by the silo
// attribute attr with heterogeneity h ∈ [0, 1], as the SteFFLe paper does: sort the
// records by attr, cut them into silos blocks of (almost) equal size, keep a
// random fraction h of each block in its silo and deal the rest uniformly
// at random from the pool of all records not kept. h = 0 is an i.i.d. split,
// h = 1 gives every silo one contiguous range of the attribute. Silo sizes
// equal the block sizes; each silo's record ids are returned sorted.
func Heterogeneous(attr []float64, silos int, h float64, r *rand.Rand) ([][]int, error) {
	n := len(attr)
	switch {
	case silos < 1:
		return nil, fmt.Errorf("federated: %d silos; want at least 1", silos)
	case n < silos:
		return nil, fmt.Errorf("federated: %d records cannot fill %d silos", n, silos)
	case !(h >= 0 && h <= 1):
		return nil, fmt.Errorf("federated: heterogeneity %v; want a value in [0, 1]", h)
	}
	for i, v := range attr {
		if math.IsNaN(v) {
			return nil, fmt.Errorf("federated: silo attribute of record %d is NaN", i)
		}
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(attr[a], attr[b]) })
	parts := make([][]int, silos)
	sizes := make([]int, silos)
	var pool []int
	for s := range silos {
		block := slices.Clone(order[s*n/silos : (s+1)*n/silos])
		sizes[s] = len(block)
		r.Shuffle(len(block), func(i, j int) { block[i], block[j] = block[j], block[i] })
		keep := int(math.Round(h * float64(len(block))))
		parts[s] = block[:keep:keep]
		pool = append(pool, block[keep:]...)
	}
	r.Shuffle(len(pool), func(i, j int) { pool[i], pool[j] = pool[j], pool[i] })
	for s := range silos {
		need := sizes[s] - len(parts[s])
		parts[s] = append(parts[s], pool[:need]...)
		pool = pool[need:]
		slices.Sort(parts[s])
	}
	return parts, nil
}

// FeatureColumn returns the values of d's feature named name (case
// insensitive), e.g. the silo attribute "age"; for a one-hot category it is
// the name of one indicator column.
func FeatureColumn(d *loaders.Dataset, name string) ([]float64, error) {
	col := -1
	for j, f := range d.FeatureNames {
		if strings.EqualFold(f, name) {
			col = j
			break
		}
	}
	if col < 0 || d.X == nil {
		return nil, fmt.Errorf("federated: data set %s has no feature %q (features: %s)", d.Name, name, strings.Join(d.FeatureNames, ", "))
	}
	out := make([]float64, d.N())
	for i := range out {
		out[i] = d.X[i*d.Dim+col]
	}
	return out, nil
}

// Mapping says which silo holds each part of each record (by record id):
// NonSensitive[i] holds record i's features and label, Sensitive[i] its
// sensitive attribute. Horizontal federation (every silo holds whole
// records) has both equal; the paper's hybrid mode has one silo holding all
// sensitive attributes and several silos holding the non-sensitive parts.
type Mapping struct {
	Silos                   int
	NonSensitive, Sensitive []int
}

// HorizontalMapping maps whole records to silos by the parts Heterogeneous
// (or any other split) produced.
func HorizontalMapping(n int, parts [][]int) (Mapping, error) {
	m := Mapping{Silos: len(parts), NonSensitive: make([]int, n), Sensitive: make([]int, n)}
	for i := range n {
		m.NonSensitive[i], m.Sensitive[i] = -1, -1
	}
	for s, ids := range parts {
		for _, i := range ids {
			if i < 0 || i >= n {
				return Mapping{}, fmt.Errorf("federated: silo %d holds record %d, outside 0..%d", s, i, n-1)
			}
			if m.NonSensitive[i] >= 0 {
				return Mapping{}, fmt.Errorf("federated: record %d is in silo %d and silo %d", i, m.NonSensitive[i], s)
			}
			m.NonSensitive[i], m.Sensitive[i] = s, s
		}
	}
	return m, m.Validate()
}

// SensitiveSiloMapping is the hybrid mode: silo sensitiveSilo holds every
// record's sensitive attribute and the parts (over silos 0..len(parts)-1,
// the non-sensitive silos) hold their features and labels.
func SensitiveSiloMapping(n int, parts [][]int, sensitiveSilo int) (Mapping, error) {
	m, err := HorizontalMapping(n, parts)
	if err != nil {
		return Mapping{}, err
	}
	if sensitiveSilo < 0 {
		return Mapping{}, fmt.Errorf("federated: sensitive silo %d; want ≥ 0", sensitiveSilo)
	}
	m.Silos = max(m.Silos, sensitiveSilo+1)
	for i := range m.Sensitive {
		m.Sensitive[i] = sensitiveSilo
	}
	return m, nil
}

// Validate checks that every record has both parts on a silo in range.
func (m Mapping) Validate() error {
	if len(m.NonSensitive) != len(m.Sensitive) {
		return fmt.Errorf("federated: mapping has %d non-sensitive and %d sensitive entries", len(m.NonSensitive), len(m.Sensitive))
	}
	for i := range m.NonSensitive {
		for _, s := range []int{m.NonSensitive[i], m.Sensitive[i]} {
			if s < 0 || s >= m.Silos {
				return fmt.Errorf("federated: record %d is mapped to silo %d; want 0..%d", i, s, m.Silos-1)
			}
		}
	}
	return nil
}

// Lane is one DP-FERMI computation of a federation: the records whose
// features and label live on silo Features and whose sensitive attribute
// lives on silo Sensitive. The feature silo samples the lane's batches and,
// when the two silos differ, ships the sampled records' features and labels
// (not private under --scope sensitive) to the sensitive silo, which runs
// DP-FERMI's step on them with its own noise and accountant and sends the
// server the lane's message. Lanes hold disjoint records, so a silo's
// lanes compose in parallel: its ε is the largest of its lanes'.
type Lane struct {
	Features, Sensitive int
	Records             []int // training-set ids, ascending
}

// Split reports whether the lane's records are split over two silos.
func (l Lane) Split() bool { return l.Features != l.Sensitive }

// Lanes groups the records by (feature silo, sensitive silo), in that
// order; lanes without records are left out. A horizontal mapping gives one
// lane per silo, in silo order.
func (m Mapping) Lanes() []Lane {
	idx := map[[2]int]int{}
	var lanes []Lane
	for i := range m.NonSensitive {
		key := [2]int{m.NonSensitive[i], m.Sensitive[i]}
		j, ok := idx[key]
		if !ok {
			j = len(lanes)
			idx[key] = j
			lanes = append(lanes, Lane{Features: key[0], Sensitive: key[1]})
		}
		lanes[j].Records = append(lanes[j].Records, i)
	}
	slices.SortFunc(lanes, func(a, b Lane) int {
		return cmp.Or(cmp.Compare(a.Features, b.Features), cmp.Compare(a.Sensitive, b.Sensitive))
	})
	return lanes
}

// ReadMapping reads a mapping of n records from a CSV file with the header
// record,features_silo,sensitive_silo and one row per record (record =
// 0-based index in the training split, each exactly once). Silos are
// numbered from 0; the federation has as many silos as the largest number
// + 1.
func ReadMapping(path string, n int) (Mapping, error) {
	f, err := os.Open(path)
	if err != nil {
		return Mapping{}, fmt.Errorf("mapping file: %w", err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = 3
	header, err := r.Read()
	if err != nil {
		return Mapping{}, fmt.Errorf("mapping file %s: %w", path, err)
	}
	want := []string{"record", "features_silo", "sensitive_silo"}
	for i := range header {
		header[i] = strings.TrimSpace(strings.TrimPrefix(header[i], "\ufeff"))
	}
	if !slices.Equal(header, want) {
		return Mapping{}, fmt.Errorf("mapping file %s: header %q, want %q", path, strings.Join(header, ","), strings.Join(want, ","))
	}
	m := Mapping{NonSensitive: make([]int, n), Sensitive: make([]int, n)}
	seen := make([]int, n) // line of each record's row, 0 = none yet
	for line := 2; ; line++ {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Mapping{}, fmt.Errorf("mapping file %s: %w", path, err)
		}
		var v [3]int
		for j, cell := range rec {
			x, err := strconv.Atoi(strings.TrimSpace(cell))
			if err != nil || x < 0 {
				return Mapping{}, fmt.Errorf("mapping file %s line %d: %s %q is not a non-negative integer", path, line, want[j], cell)
			}
			v[j] = x
		}
		switch {
		case v[0] >= n:
			return Mapping{}, fmt.Errorf("mapping file %s line %d: record %d, but the training split has records 0..%d", path, line, v[0], n-1)
		case seen[v[0]] > 0:
			return Mapping{}, fmt.Errorf("mapping file %s line %d: record %d was already mapped on line %d", path, line, v[0], seen[v[0]])
		}
		seen[v[0]] = line
		m.NonSensitive[v[0]], m.Sensitive[v[0]] = v[1], v[2]
		m.Silos = max(m.Silos, v[1]+1, v[2]+1)
	}
	if i := slices.Index(seen, 0); i >= 0 {
		return Mapping{}, fmt.Errorf("mapping file %s: record %d has no row (every record of the %d-record training split needs one)", path, i, n)
	}
	return m, m.Validate()
}

// WriteMapping writes m in ReadMapping's format.
func WriteMapping(path string, m Mapping) error {
	var b strings.Builder
	b.WriteString("record,features_silo,sensitive_silo\n")
	for i := range m.NonSensitive {
		fmt.Fprintf(&b, "%d,%d,%d\n", i, m.NonSensitive[i], m.Sensitive[i])
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// Horizontal returns the record ids of every silo when each silo holds
// whole records, and an error naming the first split record otherwise
// (for code that needs whole records per silo, such as the gRPC silos;
// in-process runs train split records through Lanes).
func (m Mapping) Horizontal() ([][]int, error) {
	parts := make([][]int, m.Silos)
	for i := range m.NonSensitive {
		if m.NonSensitive[i] != m.Sensitive[i] {
			return nil, fmt.Errorf("federated: record %d has its sensitive attribute on silo %d but its features on silo %d: across processes only horizontal federations are implemented", i, m.Sensitive[i], m.NonSensitive[i])
		}
		parts[m.NonSensitive[i]] = append(parts[m.NonSensitive[i]], i)
	}
	return parts, nil
}
