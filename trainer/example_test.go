package trainer_test

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"

	"fairdp/models"
	"fairdp/nn"
	"fairdp/trainer"
)

// DP-SGD at ε = 1 on a model of one's own (a small MLP built from nn
// layers), on part of the embedded Adult data.
func ExampleTrainModel() {
	seed := uint64(1)
	cfg := trainer.Defaults()
	cfg.Algo, cfg.Privacy.Epsilon, cfg.Epochs, cfg.Seed, cfg.Quiet, cfg.Limit = "dpsgd", 1, 2, &seed, true, 4000
	job, err := trainer.Prepare(cfg, io.Discard)
	if err != nil {
		fmt.Println(err)
		return
	}
	rng := rand.New(rand.NewPCG(1, 2))
	hidden, out := nn.NewLinear[float32](job.Train.Dim, 16), nn.NewLinear[float32](16, 1)
	hidden.Init(rng)
	out.Init(rng)
	m := &models.Model[float32]{Arch: "my-mlp", InShape: []int{job.Train.Dim}, Classes: 2,
		Layers: []nn.Layer[float32]{hidden, nn.NewReLU[float32](), out}}
	rep, err := trainer.TrainModel(context.Background(), job, m)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("private:", rep.Privacy.Private(), "ε ≤ 1:", *rep.Privacy.Epsilon <= 1, "beats the majority class:", len(rep.Warnings) == 0)
	// Output: private: true ε ≤ 1: true beats the majority class: true
}
