package linear_test

import (
	"context"
	"fmt"

	"github.com/fairdp/fairdp/linear"
	"github.com/fairdp/fairdp/trainer"
)

// DP post-processing (Jagielski et al. 2019) in one call, as `fairdp train
// --algo postproc` runs it: logistic regression on Adult without the
// sensitive attribute, then a post-processor for equalized odds (γ = 0.01)
// whose group-label statistics are released with ε = 2. The report is
// fairdp's results contract: the receipt, the configuration run, and
// extra.jagielski with the rates expected over the classifier's coins.
func ExampleRunPostproc() {
	seed := uint64(3)
	cfg := trainer.Defaults()
	cfg.Algo, cfg.Seed, cfg.Limit = "postproc", &seed, 20000
	pc := linear.PostprocDefaults()
	pc.Gamma, cfg.Privacy.Epsilon = 0.01, 2
	cfg = linear.WithPostprocConfig(cfg, pc)
	rep, err := linear.RunPostproc(context.Background(), cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	res := linear.FairExtra(rep)
	fmt.Printf("base classifier: test error %.3f, EO violation %.3f\n", res.BaseTest.Error, res.BaseTest.EOViolation)
	fmt.Printf("post-processed (expected): test error %.3f, EO violation %.3f\n", res.ExpectedTest.Error, res.ExpectedTest.EOViolation)
	fmt.Printf("receipt: ε = %g, δ = %g, protects the %s attribute\n", *rep.Privacy.Epsilon, rep.Privacy.Delta, rep.Privacy.Scope)
	// Output:
	// base classifier: test error 0.148, EO violation 0.068
	// post-processed (expected): test error 0.164, EO violation 0.021
	// receipt: ε = 2, δ = 0, protects the sensitive attribute
}
