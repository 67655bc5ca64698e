package loaders

import (
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"testing"
)

// TestSplitIndicesSizes checks floor(frac·n) training records, as
// scikit-learn's train_test_split: DP-FERMI (Adult n = 33,916 of
// 45,222 at 75 %) and DPSGD-F (n = 36,177 = 80 % of 45,222).
func TestSplitIndicesSizes(t *testing.T) {
	cases := []struct {
		n      int
		frac   float64
		nTrain int
	}{
		{45222, 0.75, 33916}, {45222, 0.8, 36177}, {30000, 0.75, 22500}, {10, 0.7, 7},
		{3, 0.5, 1}, {0, 0.5, 0}, {5, 1, 5}, {5, 0, 0}, {1, 0.99, 0},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range cases {
		for _, strata := range [][]int{nil, make([]int, c.n)} {
			if strata != nil {
				for i := range strata {
					strata[i] = i % 3
				}
			}
			tr, te := splitIndices(c.n, c.frac, strata, rng)
			if len(tr) != c.nTrain || len(te) != c.n-c.nTrain {
				t.Errorf("n=%d frac=%v strata=%v: %d/%d, want %d train", c.n, c.frac, strata != nil, len(tr), len(te), c.nTrain)
			}
			all := append(append([]int(nil), tr...), te...)
			sort.Ints(all)
			for i, v := range all {
				if v != i {
					t.Fatalf("n=%d: train ∪ test is not 0..n-1", c.n)
				}
			}
			if !sort.IntsAreSorted(tr) || !sort.IntsAreSorted(te) {
				t.Errorf("indices not sorted")
			}
		}
	}
}

// TestSplitIndicesUniform: every index is in the training set with
// probability frac. 4000 splits of n = 10 at 0.3: each count is
// Binomial(4000, 0.3), mean 1200, sd 29; allow 5 sd.
func TestSplitIndicesUniform(t *testing.T) {
	const reps, n, frac = 4000, 10, 0.3
	rng := rand.New(rand.NewPCG(7, 7))
	for _, strata := range [][]int{nil, {0, 0, 0, 0, 0, 1, 1, 1, 1, 1}} {
		counts := make([]int, n)
		for r := 0; r < reps; r++ {
			tr, _ := splitIndices(n, frac, strata, rng)
			for _, i := range tr {
				counts[i]++
			}
		}
		sd := math.Sqrt(reps * frac * (1 - frac))
		for i, c := range counts {
			if math.Abs(float64(c)-reps*frac) > 5*sd {
				t.Errorf("strata %v: index %d in train %d times, want %v ± %.0f", strata, i, c, reps*frac, 5*sd)
			}
		}
	}
}

// TestSplitIndicesStratifiedQuotas: each stratum gets floor or ceil of its
// share and the total is exact.
func TestSplitIndicesStratifiedQuotas(t *testing.T) {
	// Strata sizes 5, 3, 2: 0.5·(5, 3, 2) = (2.5, 1.5, 1), total floor(5) = 5.
	strata := []int{0, 0, 0, 0, 0, 1, 1, 1, 2, 2}
	rng := rand.New(rand.NewPCG(3, 4))
	for r := 0; r < 200; r++ {
		tr, _ := splitIndices(len(strata), 0.5, strata, rng)
		per := make([]int, 3)
		for _, i := range tr {
			per[strata[i]]++
		}
		if len(tr) != 5 || per[2] != 1 || per[0] < 2 || per[0] > 3 || per[1] < 1 || per[1] > 2 {
			t.Fatalf("quotas %v (total %d)", per, len(tr))
		}
	}
}

func TestSplitPanicsOnBadFraction(t *testing.T) {
	for _, f := range []float64{-0.1, 1.1, math.NaN()} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("frac %v: no panic", f)
				}
			}()
			splitIndices(3, f, nil, rand.New(rand.NewPCG(1, 1)))
		}()
	}
}

// tinyDataset is a 5-record tabular set with two groups and two labels.
func tinyDataset() *Dataset {
	return &Dataset{
		Name: "tiny", Dim: 2, FeatureNames: []string{"a", "b"},
		X:      []float64{0, 1, 10, 11, 20, 21, 30, 31, 40, 41},
		Labels: []int{0, 1, 1, 0, 1}, LabelNames: []string{"no", "yes"},
		Groups: []int{0, 0, 1, 1, 1}, GroupNames: []string{"F", "M"},
		Row: []int{2, 3, 4, 6, 7}, SourceOf: []int{0, 0, 0, 1, 1}, Sources: []string{"a.csv", "b.csv"},
		Targets: []float64{0.5, 1.5, 2.5, 3.5, 4.5},
	}
}

func TestSubsetCopiesRecords(t *testing.T) {
	d := tinyDataset()
	s := Subset(d, []int{4, 1, 1})
	want := &Dataset{
		Name: "tiny", Dim: 2, FeatureNames: d.FeatureNames,
		X:      []float64{40, 41, 10, 11, 10, 11},
		Labels: []int{1, 1, 1}, LabelNames: d.LabelNames,
		Groups: []int{1, 0, 0}, GroupNames: d.GroupNames,
		Row: []int{7, 3, 3}, SourceOf: []int{1, 0, 0}, Sources: d.Sources,
		Targets: []float64{4.5, 1.5, 1.5},
	}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("Subset = %+v\nwant %+v", s, want)
	}
	s.X[0] = -1
	if d.X[8] != 40 {
		t.Errorf("Subset shares feature storage with its source")
	}
	img := &Dataset{Pix: []uint8{1, 2, 3, 4, 5, 6}, C: 1, H: 1, W: 2, Labels: []int{0, 1, 0}, Groups: []int{0, 0, 0}}
	si := Subset(img, []int{2, 0})
	if !reflect.DeepEqual(si.Pix, []uint8{5, 6, 1, 2}) || !reflect.DeepEqual(si.Labels, []int{0, 0}) || si.X != nil {
		t.Errorf("image subset %+v", si)
	}
}

func TestSplitAndSplitStratified(t *testing.T) {
	d := tinyDataset()
	tr, te := Split(d, 0.6, rand.New(rand.NewPCG(1, 1)))
	if tr.N() != 3 || te.N() != 2 {
		t.Fatalf("split %d/%d, want 3/2", tr.N(), te.N())
	}
	rows := append(append([]int(nil), tr.Row...), te.Row...)
	sort.Ints(rows)
	if !reflect.DeepEqual(rows, d.Row) {
		t.Errorf("rows %v do not partition %v", rows, d.Row)
	}
	// 20 records in cells (group, label) of sizes 8, 4, 6, 2: at 0.5 every
	// cell's share is an integer, so a stratified split hits it exactly.
	big := &Dataset{Dim: 1, LabelNames: []string{"no", "yes"}, GroupNames: []string{"F", "M"}}
	for cell, size := range []int{8, 4, 6, 2} {
		for k := 0; k < size; k++ {
			big.X = append(big.X, float64(len(big.X)))
			big.Groups = append(big.Groups, cell/2)
			big.Labels = append(big.Labels, cell%2)
		}
	}
	for seed := uint64(0); seed < 50; seed++ {
		tr, te := SplitStratified(big, 0.5, rand.New(rand.NewPCG(seed, 9)))
		if got := tr.GroupLabelCounts(); !reflect.DeepEqual(got, [][]int{{4, 2}, {3, 1}}) || te.N() != 10 {
			t.Fatalf("seed %d: stratified train %v", seed, got)
		}
	}
}

func TestBatches(t *testing.T) {
	cases := []struct {
		n, batch int
		sizes    []int
	}{
		{10, 4, []int{4, 4, 2}}, {8, 4, []int{4, 4}}, {3, 5, []int{3}}, {0, 2, []int{}}, {1, 1, []int{1}},
	}
	for _, c := range cases {
		b := Batches(c.n, c.batch, rand.New(rand.NewPCG(1, 2)))
		sizes := []int{}
		var all []int
		for _, x := range b {
			sizes = append(sizes, len(x))
			all = append(all, x...)
		}
		if !reflect.DeepEqual(sizes, c.sizes) {
			t.Errorf("Batches(%d, %d) sizes %v, want %v", c.n, c.batch, sizes, c.sizes)
		}
		sort.Ints(all)
		for i, v := range all {
			if v != i {
				t.Fatalf("Batches(%d, %d) does not cover 0..n-1 once", c.n, c.batch)
			}
		}
	}
	a := Batches(100, 7, rand.New(rand.NewPCG(5, 5)))
	b := Batches(100, 7, rand.New(rand.NewPCG(5, 5)))
	c := Batches(100, 7, rand.New(rand.NewPCG(6, 5)))
	if !reflect.DeepEqual(a, b) || reflect.DeepEqual(a, c) {
		t.Errorf("batches are not a function of the seed")
	}
	defer func() {
		if recover() == nil {
			t.Errorf("batch 0: no panic")
		}
	}()
	Batches(3, 0, rand.New(rand.NewPCG(1, 1)))
}

// TestConcat: the two splits of a data set concatenated hold every record
// once, traced to its own file (sources merged by name), and a set of
// another shape is refused.
func TestConcat(t *testing.T) {
	d := tinyDataset()
	tr, te := Split(d, 0.6, rand.New(rand.NewPCG(1, 1)))
	// The second set names its files in a list of its own, where b.csv
	// is at index 0: merged, it must keep pointing at b.csv.
	te.Sources = []string{"b.csv", "c.csv"}
	for i := range te.SourceOf {
		te.SourceOf[i] = 1 - te.SourceOf[i]
	}
	all, err := Concat(tr, te)
	if err != nil {
		t.Fatal(err)
	}
	if all.N() != d.N() || !reflect.DeepEqual(all.Sources, []string{"a.csv", "b.csv", "c.csv"}) {
		t.Fatalf("Concat: %d records, sources %v", all.N(), all.Sources)
	}
	for i := range all.N() {
		// Each record is d's record with the same row, from the file of the same name.
		j := slices.Index(d.Row, all.Row[i])
		wantFile := d.Sources[d.SourceOf[j]]
		if i >= tr.N() {
			wantFile = te.Sources[te.SourceOf[i-tr.N()]]
		}
		if !reflect.DeepEqual(all.X[2*i:2*i+2], d.X[2*j:2*j+2]) || all.Labels[i] != d.Labels[j] || all.Groups[i] != d.Groups[j] ||
			all.Targets[i] != d.Targets[j] || all.Sources[all.SourceOf[i]] != wantFile {
			t.Errorf("record %d (row %d) differs from the source's", i, all.Row[i])
		}
	}
	all.X[0] = -1
	if tr.X[0] == -1 {
		t.Errorf("Concat shares feature storage with its first set")
	}
	other := Subset(d, []int{0})
	other.Dim, other.FeatureNames = 1, []string{"x"}
	if _, err := Concat(tr, other); err == nil {
		t.Errorf("Concat of sets with different features: no error")
	}
}
