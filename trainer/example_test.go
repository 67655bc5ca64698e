package trainer_test

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/fermi"
	"github.com/fairdp/fairdp/models"
	"github.com/fairdp/fairdp/nn"
	"github.com/fairdp/fairdp/trainer"
)

// The one-call private API: validated options, the data loaded, and a
// model of one's own trained with DP-SGD at ε = 1 through the same loop as
// `fairdp train`, returning the report with its receipt.
func ExampleTrainPrivate() {
	seed := uint64(1)
	p, err := trainer.NewPrivate(trainer.PrivateOptions{Dataset: "adult", Limit: 4000, Epsilon: 1, Epochs: 2, Seed: &seed})
	if err != nil {
		fmt.Println(err)
		return
	}
	rng := rand.New(rand.NewPCG(1, 2))
	hidden, out := nn.NewLinear[float32](p.Train.Dim, 16), nn.NewLinear[float32](16, 1)
	hidden.Init(rng)
	out.Init(rng)
	m := &models.Model[float32]{Arch: "my-mlp", InShape: []int{p.Train.Dim}, Classes: 2,
		Layers: []nn.Layer[float32]{hidden, nn.NewReLU[float32](), out}}
	rep, err := trainer.TrainPrivate(context.Background(), p, m)
	if err != nil {
		fmt.Println(err)
		return
	}
	r := rep.Privacy
	fmt.Printf("%s: ε = %.2f, δ = %.2g, %d mechanism\n", rep.Algorithm, *r.Epsilon, r.Delta, len(r.Mechanisms))
	// Output: dpsgd: ε = 1.00, δ = 6.2e-08, 1 mechanism
}

// DP-FERMI (private and fair: demographic parity, λ = 1) on a CSV file
// read with a schema that names its label and sensitive columns.
func ExampleTrainPrivate_fermi() {
	seed := uint64(2)
	p, err := trainer.NewPrivate(trainer.PrivateOptions{
		Dataset: "../loaders/testdata/adult_sample.data", Schema: "../loaders/testdata/adult_sample.schema.json",
		Method: fermi.Method{Lambda: 1}, Epsilon: 2, Batch: 32, Epochs: 3, Seed: &seed})
	if err != nil {
		fmt.Println(err)
		return
	}
	m, err := models.New[float64](models.Spec{Arch: "logistic", InShape: []int{p.Train.Dim}, Classes: 2}, rand.New(rand.NewPCG(3, 4)))
	if err != nil {
		fmt.Println(err)
		return
	}
	rep, err := trainer.TrainPrivate(context.Background(), p, m)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s on %d training records, groups %v: ε = %.2f\n", rep.Algorithm, rep.TrainRecords, p.Train.GroupNames, *rep.Privacy.Epsilon)
	// Output: fermi on 186 training records, groups [Female Male]: ε = 2.00
}

// Computing σ for a target ε, and the ε a given σ spends, before any
// training: DP-SGD on 30,000 records, batches of 256, 10 epochs, with the
// default PLD accountant (RDP's classic conversion alongside; RDP's own
// calibration, Accountant "rdp", gives σ = 1.422 and ε = 0.627).
func ExampleNewDPSGDFrom() {
	seed := uint64(1)
	_, src := dpops.NewRand(&seed)
	a, err := trainer.NewDPSGDFrom[float32](trainer.DPSGDOptions{Records: 30000, Batch: 256, Epochs: 10, Clip: 1,
		Epsilon: 1, Delta: 1e-5}, src)
	if err != nil {
		fmt.Println(err)
		return
	}
	eps, _ := a.PlannedEpsilon(10)
	fmt.Printf("ε = 1 needs σ = %.3f (%d steps per epoch); it spends ε = %.3f\n", a.Sigma, a.StepsPerEpoch(), eps)
	b, err := trainer.NewDPSGDFrom[float32](trainer.DPSGDOptions{Records: 30000, Batch: 256, Epochs: 10, Clip: 1,
		Sigma: 2, Delta: 1e-5}, src)
	if err != nil {
		fmt.Println(err)
		return
	}
	eps, classic := b.PlannedEpsilon(10)
	fmt.Printf("σ = 2 spends ε = %.3f (classic conversion %.3f)\n", eps, classic)
	// Output:
	// ε = 1 needs σ = 1.331 (117 steps per epoch); it spends ε = 1.000
	// σ = 2 spends ε = 0.569 (classic conversion 0.790)
}
