package loaders

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
)

// Split divides d at random into a training set of floor(trainFrac·N)
// records and a test set of the rest; both keep the records in d's order.
// For tabular data read through a schema prefer LoadCSV, which splits
// before fitting the preprocessing; Split is for data whose features need no
// fitting (images, already-encoded sets). It panics unless 0 ≤ trainFrac ≤ 1.
func Split(d *Dataset, trainFrac float64, rng *rand.Rand) (train, test *Dataset) {
	tr, te := splitIndices(d.N(), trainFrac, nil, rng)
	return Subset(d, tr), Subset(d, te)
}

// SplitStratified is Split with the group×label proportions kept: each
// group×label cell gives floor or ceil of its share of the
// floor(trainFrac·N) training records, rounded at random so that every
// record still has the same chance of being in training.
func SplitStratified(d *Dataset, trainFrac float64, rng *rand.Rand) (train, test *Dataset) {
	strata := make([]int, d.N())
	labels := max(1, len(d.LabelNames))
	for i := range strata {
		strata[i] = d.Groups[i] * labels
		if d.Labels != nil {
			strata[i] += d.Labels[i]
		}
	}
	tr, te := splitIndices(d.N(), trainFrac, strata, rng)
	return Subset(d, tr), Subset(d, te)
}

// splitIndices returns sorted train and test index lists over 0..n-1 with
// floor(frac·n) training indices; strata (nil for none) are split
// proportionally.
func splitIndices(n int, frac float64, strata []int, rng *rand.Rand) (train, test []int) {
	if math.IsNaN(frac) || frac < 0 || frac > 1 {
		panic(fmt.Sprintf("loaders: train fraction %v outside [0, 1]", frac))
	}
	nTrain := int(math.Floor(frac*float64(n) + 1e-9))
	inTrain := make([]bool, n)
	if strata == nil {
		for _, i := range rng.Perm(n)[:nTrain] {
			inTrain[i] = true
		}
	} else if n > 0 {
		// Stratum k gets floor or ceil of its exact share nTrain·size_k/n:
		// systematic rounding of the cumulative shares with one uniform
		// offset keeps the total at nTrain and gives every stratum its
		// exact share in expectation, so each record is in training with
		// probability nTrain/n, as without strata. (Integer arithmetic:
		// floor((nTrain·cum + U)/n) with U uniform in 0..n-1 is the same
		// as floor(nTrain·cum/n + u) with u uniform in [0,1).)
		members := map[int][]int{}
		var ids []int
		for i, s := range strata {
			if _, ok := members[s]; !ok {
				ids = append(ids, s)
			}
			members[s] = append(members[s], i)
		}
		sort.Ints(ids)
		offset := int64(rng.IntN(n))
		cum, prev := int64(0), int64(0)
		for _, s := range ids {
			m := members[s]
			cum += int64(len(m))
			next := (int64(nTrain)*cum + offset) / int64(n)
			quota := int(next - prev)
			prev = next
			rng.Shuffle(len(m), func(a, b int) { m[a], m[b] = m[b], m[a] })
			for _, i := range m[:quota] {
				inTrain[i] = true
			}
		}
	}
	train = make([]int, 0, nTrain)
	test = make([]int, 0, n-nTrain)
	for i, in := range inTrain {
		if in {
			train = append(train, i)
		} else {
			test = append(test, i)
		}
	}
	return train, test
}

// Subset returns the records idx of d (in that order, repeats allowed) as a
// new Dataset; names, sources and notes are shared with d.
func Subset(d *Dataset, idx []int) *Dataset {
	out := &Dataset{
		Name: d.Name, Dim: d.Dim, FeatureNames: d.FeatureNames,
		C: d.C, H: d.H, W: d.W, Standardise: d.Standardise, Mean: d.Mean, Std: d.Std,
		LabelNames: d.LabelNames, GroupNames: d.GroupNames, Sources: d.Sources, Notes: d.Notes,
		NotesCountRecords: d.NotesCountRecords,
	}
	if d.X != nil {
		out.X = make([]float64, 0, len(idx)*d.Dim)
		for _, i := range idx {
			out.X = append(out.X, d.X[i*d.Dim:(i+1)*d.Dim]...)
		}
	}
	if d.Pix != nil {
		size := d.C * d.H * d.W
		out.Pix = make([]uint8, 0, len(idx)*size)
		for _, i := range idx {
			out.Pix = append(out.Pix, d.Pix[i*size:(i+1)*size]...)
		}
	}
	out.Labels = pickInts(d.Labels, idx)
	out.Groups = pickInts(d.Groups, idx)
	out.Row = pickInts(d.Row, idx)
	out.SourceOf = pickInts(d.SourceOf, idx)
	if d.Targets != nil {
		out.Targets = make([]float64, len(idx))
		for k, i := range idx {
			out.Targets[k] = d.Targets[i]
		}
	}
	return out
}

func pickInts(src, idx []int) []int {
	if src == nil {
		return nil
	}
	out := make([]int, len(idx))
	for k, i := range idx {
		out[k] = src[i]
	}
	return out
}

// Batches shuffles 0..n-1 and cuts it into batches of the given size, for
// one epoch of shuffled fixed-size mini-batches: every index appears once,
// and the last batch is shorter when batch does not divide n. (Poisson
// sampling, which the privacy accounting assumes, lives in dpops.) It panics
// if batch < 1.
func Batches(n, batch int, rng *rand.Rand) [][]int {
	if batch < 1 {
		panic(fmt.Sprintf("loaders: batch size %d, expected at least 1", batch))
	}
	perm := rng.Perm(n)
	out := make([][]int, 0, (n+batch-1)/batch)
	for start := 0; start < n; start += batch {
		out = append(out, perm[start:min(start+batch, n)])
	}
	return out
}

// Concat returns the records of a followed by those of b as a new Dataset,
// for scoring a whole file that was loaded as two splits. Both must have
// the same form, features, labels and groups (the two splits of one load
// always do); their sources are merged, so Row and SourceOf still trace
// every record to its file. Notes are a's followed by b's that a lacks.
func Concat(a, b *Dataset) (*Dataset, error) {
	if a.Dim != b.Dim || a.C != b.C || a.H != b.H || a.W != b.W || (a.X == nil) != (b.X == nil) || (a.Pix == nil) != (b.Pix == nil) ||
		!slices.Equal(a.FeatureNames, b.FeatureNames) || !slices.Equal(a.LabelNames, b.LabelNames) ||
		!slices.Equal(a.GroupNames, b.GroupNames) || (a.Targets == nil) != (b.Targets == nil) {
		return nil, fmt.Errorf("loaders: cannot concatenate %s and %s: their features, labels or groups differ", a.Name, b.Name)
	}
	all := make([]int, a.N())
	for i := range all {
		all[i] = i
	}
	out := Subset(a, all) // a copy, so appending never writes into a's arrays
	out.X = append(out.X, b.X...)
	out.Pix = append(out.Pix, b.Pix...)
	out.Labels = append(out.Labels, b.Labels...)
	out.Groups = append(out.Groups, b.Groups...)
	out.Targets = append(out.Targets, b.Targets...)
	out.Row = append(out.Row, b.Row...)
	out.Sources = slices.Clone(a.Sources)
	if b.SourceOf != nil {
		// b's source k becomes the index of the same name in the merged list.
		at := make([]int, len(b.Sources))
		for k, s := range b.Sources {
			if j := slices.Index(out.Sources, s); j >= 0 {
				at[k] = j
			} else {
				at[k] = len(out.Sources)
				out.Sources = append(out.Sources, s)
			}
		}
		for _, k := range b.SourceOf {
			out.SourceOf = append(out.SourceOf, at[k])
		}
	}
	out.NotesCountRecords = a.NotesCountRecords || b.NotesCountRecords
	out.Notes = slices.Clone(a.Notes)
	for _, n := range b.Notes {
		if !slices.Contains(out.Notes, n) {
			out.Notes = append(out.Notes, n)
		}
	}
	return out, nil
}
