package trainer

import (
	"fmt"
	"math"
	"math/rand/v2"

	"fairdp/dpops"
	"fairdp/dpops/accounting"
	"fairdp/nn"
)

// DPSGD is DP-SGD (Abadi et al. 2016): Poisson-sampled batches, each
// sample's whole gradient clipped to Clip, Gaussian noise of std Sigma·Clip
// added to the clipped sum, divided by the expected batch size q·n. Every
// step is charged to an RDP accountant.
type DPSGD[T nn.Float] struct {
	Clip     float64 // per-sample bound C
	Sigma    float64 // noise multiplier σ
	Delta    float64 // δ of the reported (ε, δ)
	Q        float64 // sampling rate (expected batch / n)
	Sampling string  // "poisson" or "shuffle"
	Batch    int     // expected batch size
	Seed     *uint64 // for the receipt
	Records  int     // training records the guarantee covers (for the receipt's δ check)

	noise   *rand.Rand
	acc     *accounting.RDP
	clipper dpops.Clipper[T]
	pass    Pass[T]
}

// NewDPSGD builds DP-SGD for a job, calibrating σ to --epsilon when --sigma
// is not given.
func NewDPSGD[T nn.Float](job *Job) (*DPSGD[T], error) {
	cfg, n := job.Cfg, job.Train.N()
	p := cfg.Privacy
	a := &DPSGD[T]{Clip: p.Clip, Sigma: p.Sigma, Delta: p.Delta, Sampling: p.Sampling, Batch: cfg.Batch,
		Seed: cfg.Seed, noise: job.Source.Derive("noise")}
	if a.Delta == 0 {
		a.Delta = accounting.DefaultDelta(n)
	}
	if err := accounting.CheckDelta(a.Delta, n, p.AllowLargeDelta); err != nil {
		return nil, err
	}
	a.Records = n
	if cfg.Batch > n {
		return nil, FieldErrors{{Field: "Batch", Msg: fmt.Sprintf("%d is larger than the %d training records", cfg.Batch, n)}}
	}
	a.Q = float64(cfg.Batch) / float64(n)
	steps := cfg.Epochs * stepsPerEpoch(a.Q, n, cfg.Batch, p.Sampling)
	if a.Sigma == 0 {
		if math.IsInf(p.Epsilon, 1) {
			return nil, FieldErrors{{Field: "Privacy.Epsilon", Msg: "must be finite, or Privacy.Sigma given: dpsgd is a private algorithm"}}
		}
		s, err := accounting.CalibrateSigma(p.Epsilon, a.Delta, a.Q, steps)
		if err != nil {
			return nil, fmt.Errorf("calibrating σ for ε = %v, δ = %v, q = %.4g, %d steps: %w", p.Epsilon, a.Delta, a.Q, steps, err)
		}
		a.Sigma = s
	}
	var err error
	if a.acc, err = accounting.NewRDP(nil); err != nil {
		return nil, err
	}
	return a, nil
}

// stepsPerEpoch mirrors the samplers: round(1/q) Poisson steps, or
// ceil(n/batch) shuffled batches.
func stepsPerEpoch(q float64, n, batch int, sampling string) int {
	if sampling == accounting.SamplingShuffle {
		return (n + batch - 1) / batch
	}
	return max(1, int(math.Round(1/q)))
}

// Name implements Algorithm.
func (a *DPSGD[T]) Name() string { return "dpsgd" }

// Sampler implements Algorithm: Poisson with rate q unless --sampling shuffle.
func (a *DPSGD[T]) Sampler(n int, r *rand.Rand) (dpops.Sampler, error) {
	if a.Sampling == accounting.SamplingShuffle {
		return dpops.NewShuffle(n, a.Batch, r)
	}
	return dpops.NewPoisson(n, a.Q, r)
}

// Step implements Algorithm: clip per sample, sum, add noise, average over
// the expected batch size, and charge the accountant (also for an empty
// batch, which still releases noise).
func (a *DPSGD[T]) Step(m Model[T], b Batch[T]) (float64, error) {
	m.ZeroGrads()
	n := b.N()
	lossSum := a.pass.Run(m, b, nil)
	if n > 0 {
		if _, err := a.clipper.Clip(n, dpops.Flat(a.Clip), m); err != nil {
			return 0, err
		}
	}
	if err := dpops.NoiseAndScale(a.noise, m.Params(), a.Sigma*a.Clip, 1/float64(a.Batch)); err != nil {
		return 0, err
	}
	mech := accounting.SubsampledGaussian(a.Q, a.Sigma, a.Clip, "each record's whole gradient")
	return lossSum, a.acc.Step(mech, 1)
}

// Receipt implements Algorithm.
func (a *DPSGD[T]) Receipt() accounting.Receipt {
	r, err := a.acc.Receipt(a.Delta, accounting.RunInfo{Scope: accounting.ScopeAll, Sampling: a.Sampling, Seed: a.Seed, Records: a.Records})
	if err != nil {
		r = accounting.NotPrivate()
		r.Note = "receipt failed: " + err.Error()
	}
	return r
}
