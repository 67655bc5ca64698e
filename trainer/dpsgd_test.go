package trainer

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fairdp/models"
)

// TestDPSGDEmptyBatch: an empty Poisson batch is legal; it still releases
// noise and is still charged to the accountant (issue 3, Sampling).
func TestDPSGDEmptyBatch(t *testing.T) {
	job, a := smallDPSGD(t, nil)
	m, err := models.New[float64](ModelSpec(job.Cfg, job.Train), rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	loss, err := a.Step(m, Batch[float64]{Idx: []int{}})
	if err != nil || loss != 0 {
		t.Fatalf("empty batch: loss %v, err %v", loss, err)
	}
	nonzero := 0
	for _, p := range m.Params() {
		for _, g := range p.Grad {
			if g != 0 {
				nonzero++
			}
		}
	}
	if nonzero != m.NumParams() {
		t.Errorf("empty batch: %d of %d gradient values noised", nonzero, m.NumParams())
	}
	h := a.acc.History()
	if len(h) != 1 || h[0].Steps != 1 {
		t.Errorf("empty batch not charged: history %+v", h)
	}
}

// TestShuffleReceiptIsFlagged: shuffled batches are not covered by the RDP
// analysis and the receipt must say so.
func TestShuffleReceiptIsFlagged(t *testing.T) {
	rep, _ := quick(t, func(c *Config) {
		c.Algo, c.Privacy.Epsilon, c.Privacy.Sampling, c.Epochs = "dpsgd", 3, "shuffle", 1
	})
	r := rep.Privacy
	if r.Sampling != "shuffle" || r.RDPValid == nil || *r.RDPValid || r.Note == "" {
		t.Errorf("shuffle receipt not flagged: %+v", r)
	}
}

// TestReceiptFailureFailsTheRun: when the accountant cannot state the
// guarantee (here a δ the conversion refuses), the run fails with the
// accountant's error; it never writes or returns a "not private" report.
func TestReceiptFailureFailsTheRun(t *testing.T) {
	job, a := smallDPSGD(t, func(c *Config) { c.Epochs, c.Quiet, c.Out = 1, true, t.TempDir() })
	a.Delta = 1.5
	rep, m, err := Run[float64](context.Background(), job, a)
	if err == nil || !strings.Contains(err.Error(), "delta") || rep != nil || m != nil {
		t.Fatalf("Run = %v, %v, %v; want the accountant's error and no report", rep, m, err)
	}
	if _, err := os.Stat(filepath.Join(job.Cfg.Out, "report.json")); !os.IsNotExist(err) {
		t.Errorf("report.json written after a receipt failure (stat: %v)", err)
	}
}

// smallDPSGD is DP-SGD (σ = 1) on 300 Adult records, seeded.
func smallDPSGD(t *testing.T, mutate func(*Config)) (*Job, *DPSGD[float64]) {
	t.Helper()
	cfg := Defaults()
	seed := uint64(1)
	cfg.Seed, cfg.Algo, cfg.Limit = &seed, "dpsgd", 300
	cfg.Privacy.Sigma = 1
	if mutate != nil {
		mutate(&cfg)
	}
	job, err := Prepare(cfg, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewDPSGD[float64](job)
	if err != nil {
		t.Fatal(err)
	}
	return job, a
}
