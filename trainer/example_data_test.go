package trainer_test

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/fairdp/fairdp/trainer"
)

// syntheticTable is n records of four features, a label that a linear
// model predicts (x0 + x1/2 > 0, flipped for one record in ten) and a
// sensitive group (x2 > 0), drawn from seed.
func syntheticTable(n int, seed uint64) *trainer.Data {
	r := rand.New(rand.NewPCG(seed, 7))
	d := &trainer.Data{LabelNames: []string{"no", "yes"}, GroupNames: []string{"a", "b"}}
	for range n {
		x := []float64{r.NormFloat64(), r.NormFloat64(), r.NormFloat64(), r.NormFloat64()}
		y := 0
		if x[0]+x[1]/2 > 0 {
			y = 1
		}
		if r.IntN(10) == 0 {
			y = 1 - y
		}
		g := 0
		if x[2] > 0 {
			g = 1
		}
		d.Features, d.Labels, d.Groups = append(d.Features, x), append(d.Labels, y), append(d.Groups, g)
	}
	return d
}

// DP-SGD at ε = 1 on records the program holds in memory: 400 rows of
// features, labels and sensitive groups, split 75/25 from the run's seed;
// the model is the logistic regression fairdp builds for the data (nil).
func ExampleTrainPrivate_data() {
	seed := uint64(3)
	p, err := trainer.NewPrivate(trainer.PrivateOptions{Data: syntheticTable(400, 1), Epsilon: 1, Seed: &seed})
	if err != nil {
		fmt.Println(err)
		return
	}
	rep, err := trainer.TrainPrivate[float64](context.Background(), p, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s %s on %d of %d records: ε = %.2f, test accuracy above 0.7: %v\n", rep.Algorithm, rep.Model,
		rep.TrainRecords, rep.TrainRecords+p.Test.N(), *rep.Privacy.Epsilon, 1-rep.Test.Error > 0.7)
	// Output: dpsgd logistic on 300 of 400 records: ε = 1.00, test accuracy above 0.7: true
}
