package metrics_test

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/fairdp/fairdp/metrics"
)

// Evaluate gives the per-split object of report.json; WriteTable prints it.
func ExampleEvaluate() {
	y := []int{1, 1, 0, 0, 0, 1, 1, 1, 0}
	pred := []int{1, 0, 1, 0, 0, 1, 1, 0, 0}
	sex := []int{0, 0, 0, 0, 0, 1, 1, 1, 1}
	sp := metrics.Evaluate(pred, y, sex, 2, []string{"Male", "Female"})
	if err := metrics.WriteTable(os.Stdout, "test", sp); err != nil {
		fmt.Println(err)
	}
	b, _ := json.Marshal(sp.Groups[1])
	fmt.Println(string(b))
	// Output:
	// test
	// group    n  accuracy  TPR     FPR     selection rate
	// Male     5  0.6000    0.5000  0.3333  0.4000
	// Female   4  0.7500    0.6667  0.0000  0.5000
	// overall  9  0.6667    0.6000  0.2500  0.4444
	// error 0.3333  DP violation 0.1000  EO violation 0.3333
	// {"group":"Female","n":4,"accuracy":0.75,"tpr":0.6666666666666666,"fpr":0,"selection_rate":0.5}
}

// Demographic parity compares how often each group receives each class.
func ExampleDemographicParity() {
	// Group 0 is predicted positive 3 times in 4, group 1 once in 4.
	pred := []int{1, 1, 1, 0, 1, 0, 0, 0}
	group := []int{0, 0, 0, 0, 1, 1, 1, 1}
	if err := metrics.Check(pred, nil, group, 2, 2); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%.2f\n", metrics.DemographicParity(pred, group, 2, 2))
	// Output: 0.50
}

// ERMI measures the dependence of soft predictions on the group; DP-FERMI
// adds λ·ERMI to the loss.
func ExampleERMIDemographicParity() {
	// Two records per group, two classes, rows of class probabilities.
	probs := []float64{
		0.8, 0.2, 0.6, 0.4, // group 0
		0.3, 0.7, 0.5, 0.5, // group 1
	}
	group := []int{0, 0, 1, 1}
	fmt.Printf("%.4f\n", metrics.ERMIDemographicParity(probs, group, 2, 2))
	// Output: 0.0909
}

// DPSGD-F's question: does privacy cost every group about the same?
func ExampleCostOfPrivacy() {
	// Adult, DPSGD against SGD (Xu, Du and Wu 2021, Table 1).
	baseline := []metrics.GroupMetrics{{Group: "M", N: 6000, Accuracy: .7610}, {Group: "F", N: 3000, Accuracy: .9117}}
	private := []metrics.GroupMetrics{{Group: "M", N: 6000, Accuracy: .6870}, {Group: "F", N: 3000, Accuracy: .8836}}
	rep := metrics.CostOfPrivacy(private, baseline, metrics.EqualCostTau)
	fmt.Printf("gap %.4f, equal cost: %v\n", rep.MaxGap, rep.Equal)
	// Output: gap 0.0459, equal cost: true
}
