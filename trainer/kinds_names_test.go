package trainer_test

import (
	"testing"

	"github.com/fairdp/fairdp/dpsgdf"
	"github.com/fairdp/fairdp/fermi"
	"github.com/fairdp/fairdp/fermi/federated"
	"github.com/fairdp/fairdp/linear"
	"github.com/fairdp/fairdp/trainer"
)

// TestAlgoNamesMatchTheirPackages: the names trainer uses for algorithms
// it cannot import (data-aware defaults, the device's algorithms, the
// registering package a refusal names) are the names those packages
// register, and each is registered once they are linked.
func TestAlgoNamesMatchTheirPackages(t *testing.T) {
	theirs := map[string]trainer.AlgoName{
		"fermi.Name": fermi.Name, "federated.Name": federated.Name, "dpsgdf.Name": dpsgdf.Name,
		"dpsgdf.NaiveName": dpsgdf.NaiveName, "linear.ObjPertName": linear.ObjPertName,
	}
	if len(theirs) != len(trainer.AlgoNamesOfOtherPackages) {
		t.Fatalf("%d names in trainer, %d here: hold every one to its package", len(trainer.AlgoNamesOfOtherPackages), len(theirs))
	}
	for name, ours := range trainer.AlgoNamesOfOtherPackages {
		if theirs[name] != ours {
			t.Errorf("trainer says %q, %s is %q", ours, name, theirs[name])
		}
		if err := ours.Validate(); err != nil {
			t.Errorf("%s with its package linked: %v", ours, err)
		}
	}
	for _, a := range []trainer.AlgoName{linear.PostprocName, linear.OracleName} {
		if err := a.Validate(); err != nil {
			t.Errorf("%s: %v", a, err)
		}
	}
}
