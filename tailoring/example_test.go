package tailoring_test

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/fairdp/fairdp/linear"
	"github.com/fairdp/fairdp/tailoring"
	"github.com/fairdp/fairdp/trainer"
)

// Budget tailoring on three synthetic groups: the small group whose slope
// differs from the others is served worst by a common fit, so stage 1 gives
// it the largest share of stage 2's budget.
func ExampleTrain() {
	data, err := linear.Synthetic(rand.New(rand.NewPCG(1, 1)), "demo", []linear.SyntheticGroup{
		{Name: "large", N: 2000, Slope: []float64{1}, NoiseStd: 1},
		{Name: "small", N: 100, Slope: []float64{-4}, NoiseStd: 1},
		{Name: "medium", N: 500, Slope: []float64{1}, NoiseStd: 1},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	train, err := tailoring.NewData(data, linear.Squared, true)
	if err != nil {
		fmt.Println(err)
		return
	}
	opts := tailoring.DefaultOptions(2, linear.Bounds{XNorm: 4, Y: 20}) // ρ = 2: τ = 0.4, μ = 1.6
	r := rand.New(rand.NewPCG(7, 7))                                    // in a real run: dpops.NewRand(nil)
	res, err := tailoring.Train(r, train, opts)
	if err != nil {
		fmt.Println(err)
		return
	}
	for k, name := range train.Names {
		fmt.Printf("%-6s n=%4d share %.1f\n", name, train.Sizes[k], res.Shares[k])
	}
	fmt.Printf("spent τ = %.1f, μ = %.1f, ρ = %.1f\n", res.StageOneRho, res.StageTwoRho, res.Accountant.Rho())
	// Output:
	// large  n=2000 share 0.1
	// small  n= 100 share 0.8
	// medium n= 500 share 0.0
	// spent τ = 0.4, μ = 1.6, ρ = 2.0
}

// The whole pipeline in one call, as `fairdp train --algo tailoring` runs
// it: three synthetic groups, ρ = 2, 4 Monte Carlo trials, a seeded run.
// The report is fairdp's results contract (trainer.Report): the receipt,
// the configuration run, and extra.tailoring with each group's budget
// share and mean test MSPE.
func ExampleRun() {
	seed := uint64(7)
	cfg := tailoring.Defaults(trainer.Defaults())
	cfg.Algo, cfg.Seed = "tailoring", &seed
	t := tailoring.ConfigOf(cfg)
	t.Groups, t.Slopes = []float64{2000, 100, 500}, []float64{1, -4, 1}
	t.Trials, t.Steps = 4, 50
	cfg = tailoring.WithConfig(cfg, t)
	rep, err := tailoring.Run(context.Background(), cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, g := range tailoring.Extra(rep).Test.Groups {
		fmt.Printf("%s n=%4v budget share %.2f\n", g["group"], g["n"], g["budget_share"])
	}
	// The report summarises all 4 fits, so its receipt charges all of them.
	fmt.Printf("4 fits released: ρ = %.1f, ε = %.2f at δ = %.2g\n", *rep.Privacy.Rho, *rep.Privacy.Epsilon, rep.Privacy.Delta)
	fit := tailoring.Extra(rep).FitPrivacy
	fmt.Printf("one fit: ρ = %.1f, ε = %.2f\n", *fit.Rho, *fit.Epsilon)
	// Output:
	// g1 n=2000 budget share 0.05
	// g2 n= 100 budget share 0.85
	// g3 n= 500 budget share 0.10
	// 4 fits released: ρ = 8.0, ε = 29.26 at δ = 1.5e-07
	// one fit: ρ = 2.0, ε = 12.42
}
