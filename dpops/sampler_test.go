package dpops_test

import (
	"fmt"
	"math"
	mrand "math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/dpops"
)

func seededRand(seed uint64) *mrand.Rand {
	r, _ := dpops.NewRand(&seed)
	return r
}

// within6 fails when got is more than 6 standard deviations sd from want; the
// tolerances come from the variance of each statistic, so with the fixed
// seeds used here the tests are deterministic and would essentially never
// fail for a correct sampler with another seed.
func within6(t *testing.T, what string, got, want, sd float64) {
	t.Helper()
	if math.Abs(got-want) > 6*sd {
		t.Errorf("%s = %.6g, want %.6g ± %.3g (6σ)", what, got, want, 6*sd)
	}
}

func TestSamplerConstructorErrors(t *testing.T) {
	r := seededRand(1)
	_, p1 := dpops.NewPoisson(0, 0.1, r)
	_, p2 := dpops.NewPoisson(-5, 0.1, r)
	_, p3 := dpops.NewPoisson(10, 0, r)
	_, p4 := dpops.NewPoisson(10, 1.5, r)
	_, p5 := dpops.NewPoisson(10, math.NaN(), r)
	_, p6 := dpops.NewPoisson(10, -0.1, r)
	_, p7 := dpops.NewPoisson(10, 0.1, nil)
	_, s1 := dpops.NewShuffle(0, 4, r)
	_, s2 := dpops.NewShuffle(10, 0, r)
	_, s3 := dpops.NewShuffle(10, -3, r)
	_, s4 := dpops.NewShuffle(10, 4, nil)
	_, s5 := dpops.NewShuffle(10, 11, r, dpops.DropLast())
	tests := []struct {
		name    string
		err     error
		mention string
	}{
		{"poisson n=0", p1, "n = 0 records"},
		{"poisson n<0", p2, "n = -5 records"},
		{"poisson q=0", p3, "q = 0, want 0 < q ≤ 1"},
		{"poisson q>1", p4, "q = 1.5"},
		{"poisson q NaN", p5, "q = NaN"},
		{"poisson q<0", p6, "q = -0.1"},
		{"poisson nil rand", p7, "nil *rand.Rand"},
		{"shuffle n=0", s1, "n = 0 records"},
		{"shuffle batch=0", s2, "batch = 0, want batch > 0"},
		{"shuffle batch<0", s3, "batch = -3"},
		{"shuffle nil rand", s4, "nil *rand.Rand"},
		{"shuffle batch>n with DropLast", s5, "batch = 11 > n = 10"},
	}
	for _, tc := range tests {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.mention) {
			t.Errorf("%s: error = %v, want one mentioning %q", tc.name, tc.err, tc.mention)
		}
	}
}

func TestSamplerDescriptions(t *testing.T) {
	mustP := func(n int, q float64) dpops.Sampler {
		s, err := dpops.NewPoisson(n, q, seededRand(1))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	mustS := func(n, batch int, opts ...dpops.ShuffleOption) dpops.Sampler {
		s, err := dpops.NewShuffle(n, batch, seededRand(1), opts...)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	tests := []struct {
		name  string
		s     dpops.Sampler
		kind  string
		rate  float64
		steps int
	}{
		{"poisson q=0.04", mustP(1000, 0.04), "poisson", 0.04, 25},
		{"poisson q=0.3", mustP(1000, 0.3), "poisson", 0.3, 3},
		{"poisson q=0.6", mustP(1000, 0.6), "poisson", 0.6, 2},
		{"poisson q=1", mustP(1000, 1), "poisson", 1, 1},
		{"poisson q=0.001", mustP(1000, 0.001), "poisson", 0.001, 1000},
		{"shuffle 103/10", mustS(103, 10), "shuffle", 10.0 / 103, 11},
		{"shuffle 103/10 drop", mustS(103, 10, dpops.DropLast()), "shuffle", 10.0 / 103, 10},
		{"shuffle 100/10", mustS(100, 10), "shuffle", 0.1, 10},
		{"shuffle 5/8", mustS(5, 8), "shuffle", 1, 1},
	}
	for _, tc := range tests {
		if tc.s.Kind() != tc.kind || tc.s.Rate() != tc.rate || tc.s.StepsPerEpoch() != tc.steps {
			t.Errorf("%s: Kind, Rate, StepsPerEpoch = %q, %v, %d; want %q, %v, %d",
				tc.name, tc.s.Kind(), tc.s.Rate(), tc.s.StepsPerEpoch(), tc.kind, tc.rate, tc.steps)
		}
	}
}

// Batch sizes are Binomial(n, q): mean nq, variance nq(1−q). The variance of
// the sample variance is ≈ 2σ⁴/T (normal fourth moment; excess kurtosis
// (1−6q(1−q))/(nq(1−q)) ≈ 0.01 here is covered by the 6σ margin).
func TestPoissonBatchSizeMoments(t *testing.T) {
	const n, q, steps = 2000, 0.05, 20000
	p, err := dpops.NewPoisson(n, q, seededRand(11))
	if err != nil {
		t.Fatal(err)
	}
	var sum, sumSq float64
	for range steps {
		k := float64(len(p.Next()))
		sum += k
		sumSq += k * k
	}
	mean := sum / steps
	variance := sumSq/steps - mean*mean
	wantVar := n * q * (1 - q)
	within6(t, "mean batch size", mean, n*q, math.Sqrt(wantVar/steps))
	within6(t, "batch size variance", variance, wantVar, wantVar*math.Sqrt(2.0/steps))
}

// Every record is included with probability q, independently of its
// neighbour (a wrong skip length shows up as a correlation between i and i+1),
// and batches are strictly increasing indices in [0, n).
func TestPoissonInclusion(t *testing.T) {
	const n, q, steps = 200, 0.1, 20000
	p, err := dpops.NewPoisson(n, q, seededRand(12))
	if err != nil {
		t.Fatal(err)
	}
	count := make([]float64, n)
	adjacent := 0.0 // steps × pairs (i, i+1) with both included
	for range steps {
		b := p.Next()
		for j, i := range b {
			if i < 0 || i >= n || (j > 0 && i <= b[j-1]) {
				t.Fatalf("batch %v is not strictly increasing in [0, %d)", b, n)
			}
			count[i]++
			if j > 0 && b[j-1] == i-1 {
				adjacent++
			}
		}
	}
	sd := math.Sqrt(steps * q * (1 - q))
	chi2 := 0.0
	for i, c := range count {
		within6(t, fmt.Sprintf("inclusions of record %d", i), c, steps*q, sd)
		z := (c - steps*q) / sd
		chi2 += z * z
	}
	// Σz² over n records is ≈ χ²(n): mean n, sd √(2n).
	within6(t, "Σ z² over records", chi2, n, math.Sqrt(2*n))
	pairs := steps * (n - 1.0)
	within6(t, "adjacent pairs both included", adjacent, pairs*q*q, math.Sqrt(pairs*q*q*(1+2*q)))
}

// The geometric-skip sampler against the slow path it replaces (n Bernoulli
// draws): the batch-size histogram must match the closed-form Binomial(n, q)
// pmf, χ² over all sizes with expected count ≥ 5.
func TestPoissonMatchesBinomial(t *testing.T) {
	const n, q, steps = 20, 0.3, 100_000
	p, err := dpops.NewPoisson(n, q, seededRand(13))
	if err != nil {
		t.Fatal(err)
	}
	hist := make([]float64, n+1)
	for range steps {
		hist[len(p.Next())]++
	}
	// Pool consecutive sizes until each bin expects ≥ 5 batches; a leftover
	// high tail joins the last bin.
	var obs, exp []float64
	pooledObs, pooledExp := 0.0, 0.0
	for k := 0; k <= n; k++ {
		lnChoose := lgamma(n+1) - lgamma(float64(k)+1) - lgamma(float64(n-k)+1)
		pooledObs += hist[k]
		pooledExp += steps * math.Exp(lnChoose+float64(k)*math.Log(q)+float64(n-k)*math.Log(1-q))
		if pooledExp >= 5 {
			obs, exp = append(obs, pooledObs), append(exp, pooledExp)
			pooledObs, pooledExp = 0, 0
		}
	}
	obs[len(obs)-1] += pooledObs
	exp[len(exp)-1] += pooledExp
	chi2, bins := 0.0, len(obs)
	for i := range obs {
		chi2 += (obs[i] - exp[i]) * (obs[i] - exp[i]) / exp[i]
	}
	df := float64(bins - 1)
	if limit := df + 6*math.Sqrt(2*df); chi2 > limit {
		t.Errorf("batch-size χ² = %.1f over %d bins, want ≤ %.1f", chi2, bins, limit)
	}
}

func lgamma(x float64) float64 {
	v, _ := math.Lgamma(x)
	return v
}

func TestPoissonEdgeRates(t *testing.T) {
	all, err := dpops.NewPoisson(7, 1, seededRand(1))
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if b := all.Next(); !slices.Equal(b, []int{0, 1, 2, 3, 4, 5, 6}) {
			t.Fatalf("q = 1 gave batch %v, want every record", b)
		}
	}
	rare, err := dpops.NewPoisson(3, 1e-12, seededRand(1))
	if err != nil {
		t.Fatal(err)
	}
	for range 100 {
		if b := rare.Next(); b == nil || len(b) != 0 {
			t.Fatalf("q = 1e-12 gave %#v, want an empty non-nil batch", b)
		}
	}
	huge, err := dpops.NewPoisson(1<<40, 1e-11, seededRand(1)) // no O(n) work or memory
	if err != nil {
		t.Fatal(err)
	}
	for range 100 {
		for _, i := range huge.Next() {
			if i < 0 || i >= 1<<40 {
				t.Fatalf("index %d out of range", i)
			}
		}
	}
}

// Every record appears exactly once per epoch, batches have the promised
// sizes, and each epoch is a new permutation.
func TestShuffleCoversEveryRecordOncePerEpoch(t *testing.T) {
	const n, batch = 103, 10
	s, err := dpops.NewShuffle(n, batch, seededRand(21))
	if err != nil {
		t.Fatal(err)
	}
	var prev []int
	for epoch := range 5 {
		var order []int
		for step := range s.StepsPerEpoch() {
			b := s.Next()
			want := batch
			if step == s.StepsPerEpoch()-1 {
				want = n % batch
			}
			if len(b) != want {
				t.Fatalf("epoch %d step %d: batch of %d, want %d", epoch, step, len(b), want)
			}
			order = append(order, b...)
		}
		sorted := slices.Sorted(slices.Values(order))
		for i, v := range sorted {
			if v != i {
				t.Fatalf("epoch %d does not visit every record once: sorted indices %v", epoch, sorted)
			}
		}
		if slices.Equal(order, prev) {
			t.Errorf("epoch %d repeated the previous order", epoch)
		}
		prev = order
	}
}

func TestShuffleDropLast(t *testing.T) {
	const n, batch, epochs = 23, 5, 400
	s, err := dpops.NewShuffle(n, batch, seededRand(22), dpops.DropLast())
	if err != nil {
		t.Fatal(err)
	}
	seen := make([]float64, n)
	for range epochs {
		inEpoch := map[int]bool{}
		for range s.StepsPerEpoch() {
			b := s.Next()
			if len(b) != batch {
				t.Fatalf("DropLast gave a batch of %d, want %d", len(b), batch)
			}
			for _, i := range b {
				if inEpoch[i] {
					t.Fatalf("record %d twice in one epoch", i)
				}
				inEpoch[i] = true
				seen[i]++
			}
		}
	}
	// Each record is dropped with probability 3/23 per epoch, a different
	// subset each time.
	p := float64(n-n%batch) / n
	for i, c := range seen {
		within6(t, fmt.Sprintf("epochs that used record %d", i), c, epochs*p, math.Sqrt(epochs*p*(1-p)))
	}
}

// Every record is equally likely to land in the first batch of an epoch:
// a check that the permutation is uniform, not just a permutation.
func TestShuffleIsUniform(t *testing.T) {
	const n, batch, epochs = 20, 5, 20000
	s, err := dpops.NewShuffle(n, batch, seededRand(23))
	if err != nil {
		t.Fatal(err)
	}
	first := make([]float64, n)
	for range epochs {
		for _, i := range s.Next() {
			first[i]++
		}
		for range s.StepsPerEpoch() - 1 {
			s.Next()
		}
	}
	p := float64(batch) / n
	for i, c := range first {
		within6(t, fmt.Sprintf("first-batch count of record %d", i), c, epochs*p, math.Sqrt(epochs*p*(1-p)))
	}
}

func TestSamplersAreReproducible(t *testing.T) {
	makers := map[string]func(r *mrand.Rand) dpops.Sampler{
		"poisson": func(r *mrand.Rand) dpops.Sampler { s, _ := dpops.NewPoisson(500, 0.03, r); return s },
		"shuffle": func(r *mrand.Rand) dpops.Sampler { s, _ := dpops.NewShuffle(500, 32, r); return s },
	}
	for name, mk := range makers {
		a, b := mk(seededRand(5)), mk(seededRand(5))
		c := mk(seededRand(6))
		differs := false
		for step := range 100 {
			x, y, z := a.Next(), b.Next(), c.Next()
			if !slices.Equal(x, y) {
				t.Fatalf("%s step %d: same seed gave %v and %v", name, step, x, y)
			}
			differs = differs || !slices.Equal(x, z)
		}
		if !differs {
			t.Errorf("%s: seeds 5 and 6 gave the same 100 batches", name)
		}
	}
}

// Poisson sampling at q = 0.25 over 12 records, with its own stream.
func ExampleNewPoisson() {
	seed := uint64(1)
	_, src := dpops.NewRand(&seed)
	s, err := dpops.NewPoisson(12, 0.25, src.Derive("sampling"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s.Kind(), s.Rate(), s.StepsPerEpoch())
	for range 3 {
		fmt.Println(s.Next())
	}
	// Output:
	// poisson 0.25 4
	// [4]
	// [1 6]
	// [4 9]
}

func BenchmarkPoissonNext(b *testing.B) {
	// Adult-sized data at the DP-FERMI default rate: n = 45222, q = 256/n.
	const n = 45222
	p, _ := dpops.NewPoisson(n, 256.0/n, seededRand(1))
	for b.Loop() {
		_ = p.Next()
	}
}

func BenchmarkPoissonNextMNIST(b *testing.B) {
	const n = 60000
	p, _ := dpops.NewPoisson(n, 0.04, seededRand(1))
	for b.Loop() {
		_ = p.Next()
	}
}

// TestSamplerStateResumes: a Shuffle restored (with its stream) from the
// state of one stopped mid-epoch yields the same batches; a state of
// another size or not a permutation is refused; Poisson's state checks n
// and q.
func TestSamplerStateResumes(t *testing.T) {
	src := mrand.NewChaCha8([32]byte{1})
	a, _ := dpops.NewShuffle(10, 3, mrand.New(src))
	a.Next()
	a.Next()
	st, _ := a.MarshalBinary()
	rs, _ := src.MarshalBinary()
	src2 := mrand.NewChaCha8([32]byte{2})
	if err := src2.UnmarshalBinary(rs); err != nil {
		t.Fatal(err)
	}
	b, _ := dpops.NewShuffle(10, 3, mrand.New(src2))
	if err := b.UnmarshalBinary(st); err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		if x, y := a.Next(), b.Next(); !slices.Equal(x, y) {
			t.Fatalf("batch %d after the restore: %v, want %v", i, y, x)
		}
	}
	other, _ := dpops.NewShuffle(11, 3, mrand.New(src))
	if err := other.UnmarshalBinary(st); err == nil {
		t.Error("a state of 10 records restored into a sampler of 11")
	}
	st[8*3], st[8*4] = 0, 0 // two zeros: not a permutation
	if err := b.UnmarshalBinary(st); err == nil || !strings.Contains(err.Error(), "not a permutation") {
		t.Errorf("a broken permutation: %v", err)
	}
	p, _ := dpops.NewPoisson(100, 0.1, mrand.New(src))
	ps, _ := p.MarshalBinary()
	q, _ := dpops.NewPoisson(100, 0.2, mrand.New(src))
	if err := p.UnmarshalBinary(ps); err != nil {
		t.Error(err)
	}
	if err := q.UnmarshalBinary(ps); err == nil {
		t.Error("a Poisson state of q = 0.1 restored into q = 0.2")
	}
}
