package nn

import (
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
)

// recorder notes which participant ran each chunk; participant 0 dawdles
// on its first chunk, which under dynamic hand-out let the other
// participants take over its chunks.
type recorder struct {
	mu    sync.Mutex
	owner []int
	slow  sync.Once
}

func (r *recorder) run(worker, lo, hi int) {
	if worker == 0 {
		r.slow.Do(func() { time.Sleep(20 * time.Millisecond) })
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for u := lo; u < hi; u++ {
		r.owner[u] = worker
	}
}

// TestParallelForFixedSplit checks that participant p always gets the same
// contiguous run of chunks, whatever the scheduling: the layers' per-
// participant partial sums are then the same on every run.
func TestParallelForFixedSplit(t *testing.T) {
	defer func(workers int) { SetWorkers(workers) }(Workers())
	SetWorkers(3)
	for _, c := range []struct{ n, grain, parts int }{{40, 1, 3}, {41, 4, 2}, {7, 3, 3}, {5, 1, 5}, {9, 2, 1}} {
		r := &recorder{owner: make([]int, c.n)}
		parallelFor(r, c.n, c.grain, c.parts)
		chunks := (c.n + c.grain - 1) / c.grain
		parts := min(c.parts, chunks)
		want := make([]int, c.n)
		for p := range parts {
			for ch := p * chunks / parts; ch < (p+1)*chunks/parts; ch++ {
				for u := ch * c.grain; u < min((ch+1)*c.grain, c.n); u++ {
					want[u] = p
				}
			}
		}
		if !slices.Equal(r.owner, want) {
			t.Errorf("n %d grain %d parts %d: chunk owners %v, want %v", c.n, c.grain, c.parts, r.owner, want)
		}
	}
}

// TestConvGradsBitReproducible runs the same parallel conv step many times:
// every run must give the same bits (a seeded run is promised to be
// bit-reproducible).
func TestConvGradsBitReproducible(t *testing.T) {
	defer func(old, workers int) { helperNs = old; SetWorkers(workers) }(helperNs, Workers())
	helperNs = 0
	SetWorkers(2)
	rng := rand.New(rand.NewPCG(3, 4))
	const batch = 16
	x := make([]float32, batch*3*12*12)
	dy := make([]float32, batch*8*12*12)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	for i := range dy {
		dy[i] = float32(rng.NormFloat64())
	}
	c := NewConv2d[float32](3, 12, 12, 8, 3, 1, 1)
	c.Init(rand.New(rand.NewPCG(1, 1)))
	var first []float32
	for run := range 20 {
		for _, p := range c.Params() {
			clear(p.Grad)
		}
		c.Forward(x, batch, true)
		c.Backward(dy, true)
		c.ParamGrads(nil)
		got := append(append([]float32(nil), c.Params()[0].Grad...), c.Params()[1].Grad...)
		if run == 0 {
			first = got
			continue
		}
		if !slices.Equal(got, first) {
			t.Fatalf("run %d: conv parameter gradients differ from run 0 in their bits", run)
		}
	}
}
