package dpops

import (
	"encoding/binary"
	"fmt"
	"math"
	mrand "math/rand/v2"
)

// Sampler kinds, as written in privacy receipts.
const (
	KindPoisson = "poisson" // covered by the RDP accountant
	KindShuffle = "shuffle" // fixed-size shuffled batches: NOT covered by RDP accounting
)

// Sampler chooses the records of each training step. The privacy analysis
// depends on how batches are drawn, so the trainer asks the sampler for its
// Kind and Rate and writes them into the receipt.
type Sampler interface {
	// Next returns the record indices of the next step, in increasing order
	// for Poisson and in shuffled order for shuffle. The slice is the
	// caller's; it may be empty but is never nil.
	Next() []int
	// StepsPerEpoch is the number of Next calls that make one (expected) pass
	// over the data.
	StepsPerEpoch() int
	// Kind is KindPoisson or KindShuffle.
	Kind() string
	// Rate is the sampling rate q (expected batch / n) the accountant uses.
	Rate() float64
}

// Poisson includes every record in every step independently with
// probability q, the sampling that the RDP analysis of the subsampled
// Gaussian mechanism assumes. Batch sizes vary (Binomial(n, q)) and may be
// zero; the trainer must not pad, truncate or resample them.
type Poisson struct {
	n     int
	q     float64
	logNo float64 // ln(1−q): log-probability that a record is skipped
	r     *mrand.Rand
}

// NewPoisson returns a Poisson sampler over records 0..n-1 with rate q ∈ (0, 1].
// r should be a stream of its own (Source.Derive("sampling")).
func NewPoisson(n int, q float64, r *mrand.Rand) (*Poisson, error) {
	if n <= 0 {
		return nil, fmt.Errorf("dpops.NewPoisson: n = %d records, want n > 0", n)
	}
	if !(q > 0 && q <= 1) {
		return nil, fmt.Errorf("dpops.NewPoisson: sampling rate q = %v, want 0 < q ≤ 1", q)
	}
	if r == nil {
		return nil, fmt.Errorf("dpops.NewPoisson: nil *rand.Rand (make one with NewRand or Source.Derive)")
	}
	return &Poisson{n: n, q: q, logNo: math.Log1p(-q), r: r}, nil
}

// Next draws one Poisson batch. Instead of n Bernoulli draws it jumps over
// the skipped records: the number of records skipped before the next
// included one is Geometric(q), drawn as ⌊ln U / ln(1−q)⌋ with U uniform on
// (0, 1], so a step costs O(nq) draws rather than O(n).
func (p *Poisson) Next() []int {
	mean := float64(p.n) * p.q
	batch := make([]int, 0, min(p.n, int(mean+4*math.Sqrt(mean)+1)))
	last := -1
	for {
		u := 1 - p.r.Float64() // (0, 1]
		skip := math.Floor(math.Log(u) / p.logNo)
		if skip >= float64(p.n-1-last) { // next index would be ≥ n
			return batch
		}
		last += 1 + int(skip)
		batch = append(batch, last)
	}
}

// StepsPerEpoch is round(1/q) (at least 1): the expected number of steps to
// see n records.
func (p *Poisson) StepsPerEpoch() int { return max(1, int(math.Round(1/p.q))) }

// Kind is KindPoisson.
func (p *Poisson) Kind() string { return KindPoisson }

// Rate is q.
func (p *Poisson) Rate() float64 { return p.q }

// Shuffle cuts a fresh random permutation of the records into fixed-size
// batches every epoch, as most papers' reference code does. Its privacy is
// NOT what the RDP accountant computes (that assumes Poisson sampling), so
// receipts flag it through Kind() == KindShuffle.
type Shuffle struct {
	n, batch int
	dropLast bool
	r        *mrand.Rand
	perm     []int
	pos      int // next position in perm; ≥ end means a new epoch starts
}

// ShuffleOption changes how NewShuffle batches an epoch.
type ShuffleOption func(*Shuffle)

// DropLast drops the short final batch of each epoch (n mod batch records,
// different ones every epoch) so that every batch has exactly batch records.
func DropLast() ShuffleOption { return func(s *Shuffle) { s.dropLast = true } }

// NewShuffle returns a sampler that visits every record exactly once per
// epoch in shuffled batches of size batch; the last batch of an epoch is
// short when batch does not divide n, unless DropLast is given.
// r should be a stream of its own (Source.Derive("sampling")).
func NewShuffle(n, batch int, r *mrand.Rand, opts ...ShuffleOption) (*Shuffle, error) {
	if n <= 0 {
		return nil, fmt.Errorf("dpops.NewShuffle: n = %d records, want n > 0", n)
	}
	if batch <= 0 {
		return nil, fmt.Errorf("dpops.NewShuffle: batch = %d, want batch > 0", batch)
	}
	if r == nil {
		return nil, fmt.Errorf("dpops.NewShuffle: nil *rand.Rand (make one with NewRand or Source.Derive)")
	}
	s := &Shuffle{n: n, batch: batch, r: r}
	for _, o := range opts {
		o(s)
	}
	if s.dropLast && batch > n {
		return nil, fmt.Errorf("dpops.NewShuffle: batch = %d > n = %d records with DropLast, so every epoch would be empty", batch, n)
	}
	s.perm = make([]int, n)
	for i := range s.perm {
		s.perm[i] = i
	}
	s.pos = n // the first Next starts an epoch
	return s, nil
}

// end is the position in perm where an epoch stops.
func (s *Shuffle) end() int {
	if s.dropLast {
		return s.n - s.n%s.batch
	}
	return s.n
}

// Next returns the next batch, reshuffling at the start of each epoch.
func (s *Shuffle) Next() []int {
	if s.pos >= s.end() {
		s.r.Shuffle(s.n, func(i, j int) { s.perm[i], s.perm[j] = s.perm[j], s.perm[i] })
		s.pos = 0
	}
	hi := min(s.pos+s.batch, s.n)
	out := append([]int(nil), s.perm[s.pos:hi]...)
	s.pos = hi
	return out
}

// StepsPerEpoch is ⌈n/batch⌉, or ⌊n/batch⌋ with DropLast.
func (s *Shuffle) StepsPerEpoch() int {
	if s.dropLast {
		return s.n / s.batch
	}
	return (s.n + s.batch - 1) / s.batch
}

// Kind is KindShuffle.
func (s *Shuffle) Kind() string { return KindShuffle }

// Rate is the nominal rate batch/n (at most 1). For shuffled batches it is
// only a label: the RDP accountant's guarantee does not apply to it.
func (s *Shuffle) Rate() float64 { return min(1, float64(s.batch)/float64(s.n)) }

// MarshalBinary implements encoding.BinaryMarshaler: a Poisson sampler
// keeps nothing between steps but its stream (saved by its owner), so this
// records n and q only, for UnmarshalBinary to check.
func (p *Poisson) MarshalBinary() ([]byte, error) {
	b := binary.LittleEndian.AppendUint64(nil, uint64(p.n))
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(p.q)), nil
}

// UnmarshalBinary implements encoding.BinaryUnmarshaler: it refuses a
// state of a sampler over other records or at another rate.
func (p *Poisson) UnmarshalBinary(b []byte) error {
	if len(b) != 16 {
		return fmt.Errorf("dpops: Poisson state of %d bytes, want 16", len(b))
	}
	n, q := int(binary.LittleEndian.Uint64(b)), math.Float64frombits(binary.LittleEndian.Uint64(b[8:]))
	if n != p.n || q != p.q {
		return fmt.Errorf("dpops: Poisson state is of n = %d, q = %v; this sampler has n = %d, q = %v", n, q, p.n, p.q)
	}
	return nil
}

// MarshalBinary implements encoding.BinaryMarshaler: the current
// permutation and position in it (with n and the batch size for
// UnmarshalBinary to check). The permutation says which records the
// current epoch's batches hold: it is randomness of the run, saved only
// where the run's streams are (a seeded run's checkpoint).
func (s *Shuffle) MarshalBinary() ([]byte, error) {
	b := make([]byte, 0, 8*(3+len(s.perm)))
	for _, v := range []int{s.n, s.batch, s.pos} {
		b = binary.LittleEndian.AppendUint64(b, uint64(v))
	}
	for _, v := range s.perm {
		b = binary.LittleEndian.AppendUint64(b, uint64(v))
	}
	return b, nil
}

// UnmarshalBinary implements encoding.BinaryUnmarshaler: it restores what
// MarshalBinary saved, refusing a state of another n or batch size or one
// whose permutation is not a permutation of 0..n-1.
func (s *Shuffle) UnmarshalBinary(b []byte) error {
	if len(b) != 8*(3+s.n) {
		return fmt.Errorf("dpops: shuffle state of %d bytes, want %d for %d records", len(b), 8*(3+s.n), s.n)
	}
	word := func(i int) int { return int(binary.LittleEndian.Uint64(b[8*i:])) }
	if word(0) != s.n || word(1) != s.batch {
		return fmt.Errorf("dpops: shuffle state is of n = %d, batch %d; this sampler has n = %d, batch %d", word(0), word(1), s.n, s.batch)
	}
	pos := word(2)
	if pos < 0 || pos > s.n {
		return fmt.Errorf("dpops: shuffle state position %d outside 0..%d", pos, s.n)
	}
	perm := make([]int, s.n)
	seen := make([]bool, s.n)
	for i := range perm {
		v := word(3 + i)
		if v < 0 || v >= s.n || seen[v] {
			return fmt.Errorf("dpops: shuffle state is not a permutation of 0..%d", s.n-1)
		}
		perm[i], seen[v] = v, true
	}
	s.perm, s.pos = perm, pos
	return nil
}
