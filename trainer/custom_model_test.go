package trainer_test

import (
	"context"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	_ "github.com/fairdp/fairdp/dpsgdf"          // registers dpsgdf and naive
	_ "github.com/fairdp/fairdp/fermi"           // registers fermi
	_ "github.com/fairdp/fairdp/fermi/federated" // registers steffle
	"github.com/fairdp/fairdp/models"
	"github.com/fairdp/fairdp/nn"
	"github.com/fairdp/fairdp/trainer"
)

// logistic is a hand-written binary logistic regression that is not a
// *models.Model: it implements trainer.Model directly, with its own
// per-sample taps (sample i's gradient is dl_i·(x_i, 1), so its squared norm
// is dl_i²(‖x_i‖²+1)), written with plain loops and no nn layer.
type logistic struct {
	dim    int
	w, b   *nn.Param[float64]
	x, dl  []float64 // taps of the last Forward and Backward
	logits []float64
}

func newLogistic(dim int, w []float64, b float64) *logistic {
	return &logistic{dim: dim,
		w: &nn.Param[float64]{Name: "weight", Shape: []int{dim, 1}, Value: append([]float64(nil), w...), Grad: make([]float64, dim)},
		b: &nn.Param[float64]{Name: "bias", Shape: []int{1}, Value: []float64{b}, Grad: make([]float64, 1)}}
}

func (m *logistic) InSize() int { return m.dim }
func (m *logistic) OutDim() int { return 1 }
func (m *logistic) Forward(x []float64, batch int, train bool) []float64 {
	m.x = x
	m.logits = make([]float64, batch)
	for i := range batch {
		z := m.b.Value[0]
		for j, v := range x[i*m.dim : (i+1)*m.dim] {
			z += v * m.w.Value[j]
		}
		m.logits[i] = z
	}
	return m.logits
}
func (m *logistic) Loss(logits []float64, labels []int, weight, loss, dlogits []float64) {
	nn.SigmoidBCE(logits, labels, weight, loss, dlogits)
}
func (m *logistic) Backward(dl []float64) { m.dl = dl }
func (m *logistic) SqNorms(out []float64) {
	for i, d := range m.dl {
		var sq float64
		for _, v := range m.x[i*m.dim : (i+1)*m.dim] {
			sq += v * v
		}
		out[i] += d * d * (sq + 1)
	}
}
func (m *logistic) ParamGrads(scale []float64) {
	for i, d := range m.dl {
		if scale != nil {
			d *= scale[i]
		}
		for j, v := range m.x[i*m.dim : (i+1)*m.dim] {
			m.w.Grad[j] += d * v
		}
		m.b.Grad[0] += d
	}
}
func (m *logistic) Params() []*nn.Param[float64] { return []*nn.Param[float64]{m.w, m.b} }
func (m *logistic) ZeroGrads()                   { nn.ZeroGrads(m.Params()) }

// TestCustomModelEveryAlgorithm trains a model type of one's own (not a
// *models.Model) under every algorithm of the SGD family and DP-FERMI,
// through the same loop, and checks it against the zoo's logistic
// regression started from the same weights: the same seed gives the same
// batches and noise, so the two must end at the same parameters (up to
// the rounding of the zoo's GEMMs) and the same receipt.
func TestCustomModelEveryAlgorithm(t *testing.T) {
	for _, algo := range []string{"sgd", "dpsgd", "dpsgdf", "naive", "fermi"} {
		t.Run(algo, func(t *testing.T) {
			seed := uint64(3)
			cfg := trainer.Defaults()
			cfg.Algo, cfg.DType, cfg.Epochs, cfg.Seed, cfg.Quiet, cfg.Limit = trainer.AlgoName(algo), "float64", 2, &seed, true, 3000
			cfg.Privacy.Epsilon, cfg.Batch, cfg.LR = 1, 64, 0.05
			if algo == "sgd" {
				cfg.Privacy.Epsilon = math.Inf(1)
			}
			job, err := trainer.Prepare(cfg, trainer.PrepareOptions{Log: io.Discard})
			if err != nil {
				t.Fatal(err)
			}
			zoo, err := models.New[float64](models.Spec{Arch: "logistic", InShape: []int{job.Train.Dim}, Classes: 2},
				rand.New(rand.NewPCG(5, 6)))
			if err != nil {
				t.Fatal(err)
			}
			ps := zoo.Params()
			bias0 := ps[1].Value[0]
			mine := newLogistic(job.Train.Dim, ps[0].Value, bias0)

			repMine, err := trainer.Train(context.Background(), withModel(job, trainer.Model[float64](mine)))
			if err != nil {
				t.Fatal(err)
			}
			repZoo, err := trainer.Train(context.Background(), withModel(job, trainer.Model[float64](zoo)))
			if err != nil {
				t.Fatal(err)
			}
			if got, want := repMine.Privacy.Private(), algo != "sgd"; got != want {
				t.Fatalf("private %v, want %v", got, want)
			}
			if repMine.Privacy.Private() && *repMine.Privacy.Epsilon != *repZoo.Privacy.Epsilon {
				t.Errorf("ε %v, the zoo model's %v", *repMine.Privacy.Epsilon, *repZoo.Privacy.Epsilon)
			}
			var moved bool
			for k, p := range zoo.Params() {
				for j, v := range p.Value {
					got := mine.Params()[k].Value[j]
					if math.Abs(got-v) > 1e-9*max(1, math.Abs(v)) {
						t.Fatalf("param %s[%d] = %v, the zoo model's %v", p.Name, j, got, v)
					}
					if k == 1 && v != bias0 {
						moved = true
					}
				}
			}
			if !moved {
				t.Error("training did not move the bias")
			}
			if repMine.Test.Error != repZoo.Test.Error || repMine.Params != repZoo.Params {
				t.Errorf("test error %v (%d params), the zoo model's %v (%d)", repMine.Test.Error, repMine.Params, repZoo.Test.Error, repZoo.Params)
			}
			if !strings.Contains(repMine.Model, "logistic") {
				t.Errorf("report model %q, want the Go type", repMine.Model)
			}
		})
	}
}

// TestCustomModelRefusals: a model of one's own cannot go into a
// checkpoint (refused before training), and SteFFLe, whose silos rebuild
// the model from its spec, refuses it; each error says why.
func TestCustomModelRefusals(t *testing.T) {
	seed := uint64(3)
	cfg := trainer.Defaults()
	cfg.Algo, cfg.DType, cfg.Epochs, cfg.Seed, cfg.Quiet, cfg.Limit = "dpsgd", "float64", 1, &seed, true, 500
	cfg.Privacy.Epsilon = 1
	cfg.Out = t.TempDir()
	job, err := trainer.Prepare(cfg, trainer.PrepareOptions{Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	mine := newLogistic(job.Train.Dim, make([]float64, job.Train.Dim), 0)
	if _, err := trainer.Train(context.Background(), withModel(job, trainer.Model[float64](mine))); err == nil || !strings.Contains(err.Error(), "checkpoint") {
		t.Errorf("Cfg.Out with a model of one's own: %v, want a checkpoint refusal", err)
	}
	job.Cfg.Out, job.Cfg.Algo, job.Cfg.Optimizer = "", "steffle", "sgd"
	if _, err := trainer.Train(context.Background(), withModel(job, trainer.Model[float64](mine))); err == nil || !strings.Contains(err.Error(), "rebuild") {
		t.Errorf("steffle with a model of one's own: %v, want a refusal", err)
	}
	// A *models.Model whose layers are not the network Config names (the
	// silos build the zoo logistic regression) is refused before a round.
	rng := rand.New(rand.NewPCG(1, 2))
	hidden, out := nn.NewLinear[float64](job.Train.Dim, 4), nn.NewLinear[float64](4, 1)
	hidden.Init(rng)
	out.Init(rng)
	other := &models.Model[float64]{Arch: "my-mlp", InShape: []int{job.Train.Dim}, Classes: 2,
		Layers: []nn.Layer[float64]{hidden, nn.NewReLU[float64](), out}}
	if _, err := trainer.Train(context.Background(), withModel(job, trainer.Model[float64](other))); err == nil || !strings.Contains(err.Error(), "differ from the silos'") {
		t.Errorf("steffle with another network than Config's: %v, want a refusal naming the layers", err)
	}
}

// withModel is job with the caller's model m in Job.Model, on a copy so
// that one prepared job trains several models.
func withModel(job *trainer.Job, m trainer.AnyModel) *trainer.Job {
	j := *job
	j.Model = m
	return &j
}
