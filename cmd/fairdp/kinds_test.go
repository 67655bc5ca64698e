package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/dpsgdf"
	"github.com/fairdp/fairdp/fermi"
	"github.com/fairdp/fairdp/fermi/federated"
	"github.com/fairdp/fairdp/trainer"
)

// TestAlgoFlagNamesAreRegistered: every name --algo's help offers is
// registered in this binary (an SGD algorithm's constructor or a
// pipeline), every registered algorithm is offered, the pipelines are
// dispatched to their own flags, and the algorithms the binary imports
// for registration are among the constructors.
func TestAlgoFlagNamesAreRegistered(t *testing.T) {
	fs := newFlagSet("train", "train", nil)
	cfg := trainer.Defaults()
	trainFlags(fs, &cfg)
	usage := fs.Lookup("algo").Usage
	algos, pipes, ok := strings.Cut(strings.TrimPrefix(usage, "algorithm: "), "; linear families (own flags, see -algo X -h): ")
	if !ok {
		t.Fatalf("--algo's help changed shape: %q", usage)
	}
	offered := append(strings.Split(algos, ", "), strings.Split(pipes, ", ")...)
	for _, a := range offered {
		if err := trainer.AlgoName(a).Validate(); err != nil {
			t.Errorf("--algo %s is offered but not registered: %v", a, err)
		}
	}
	constructors := trainer.AlgorithmNames()
	if got := strings.Split(algos, ", "); !slices.Equal(got, constructors) {
		t.Errorf("--algo offers %v, the registered algorithms are %v", got, constructors)
	}
	for _, a := range []trainer.AlgoName{trainer.AlgoSGD, trainer.AlgoDPSGD, fermi.Name, federated.Name, dpsgdf.Name, dpsgdf.NaiveName} {
		if !slices.Contains(constructors, string(a)) {
			t.Errorf("%s has no registered constructor in the binary (registered: %v)", a, constructors)
		}
	}
	for _, p := range pipelineCommands {
		if slices.Contains(constructors, string(p.algo)) {
			t.Errorf("pipeline %s is also an SGD algorithm", p.algo)
		}
		if !slices.Contains(strings.Split(pipes, ", "), string(p.algo)) {
			t.Errorf("pipeline %s is not offered by --algo's help", p.algo)
		}
	}
}

// TestKindFlags: the kinds are parsed once, where their flags are read:
// a bad value is refused with the one-line error Config.Validate gave
// (several together, in its order), before any data is loaded, and
// `fairdp federate` keeps its own prefix.
func TestKindFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"train", "--dtype", "float16"}, `fairdp: --dtype must be float32 or float64 (got "float16")`},
		{[]string{"train", "--device", "y", "--optimizer", "x", "--dtype", "float16"},
			`--dtype must be float32 or float64 (got "float16"); --optimizer must be sgd or adam (got "x"); --device must be cpu or cuda (got "y")`},
		{[]string{"train", "--algo", "magic"}, `--algo "magic" is unknown (algorithms: [`},
		{[]string{"sweep", "--algo", "magic", "--epsilon", "1"}, `--algo "magic" is unknown`},
		{[]string{"federate", "--silos", "127.0.0.1:1", "--dtype", "float16"}, `federate: --dtype must be float32 or float64 (got "float16")`},
	} {
		out, _, err := runCLI(t, tc.args...)
		if err == nil || !strings.Contains("fairdp: "+err.Error(), tc.want) {
			t.Errorf("fairdp %v: error %v, want %q", tc.args, err, tc.want)
		}
		if out != "" {
			t.Errorf("fairdp %v printed before refusing (data loaded?):\n%s", tc.args, out)
		}
	}
	// A good value of each kind reaches the Config.
	fs := newFlagSet("train", "train", nil)
	cfg := trainer.Defaults()
	trainFlags(fs, &cfg)
	if err := parseFlags(fs, []string{"--algo", "dpsgd", "--dtype", "float64", "--optimizer", "sgd", "--device", "cpu"}); err != nil {
		t.Fatal(err)
	}
	if cfg.Algo != trainer.AlgoDPSGD || cfg.DType != trainer.DTypeFloat64 || cfg.Optimizer != trainer.OptimizerSGD || cfg.Device != trainer.DeviceCPU {
		t.Errorf("parsed %s %s %s %s", cfg.Algo, cfg.DType, cfg.Optimizer, cfg.Device)
	}
}
