// Command fairdp trains differentially private and fair models.
//
//	fairdp train [flags]          train a model (no flags: the embedded Adult demo)
//	fairdp eval --model FILE ...  score a saved model on its held-out records
//	fairdp data describe ...      rows, features, groups and label balance
//	fairdp privacy epsilon|sigma  the accountant on its own
//
// The command keeps flags, printing and exit codes: every pipeline is a
// library call (trainer.Train, linear.RunFair, tailoring.Run,
// federated.Server), every run writes trainer.Report (report.json, schema
// trainer/report.schema.json), and library errors naming Config fields are
// rendered with the flags that set them (flagError).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/fairdp/fairdp/trainer"
)

const usage = `fairdp: differentially private and fair model training

usage:
  fairdp train [flags]            train (no flags: logistic regression on the embedded Adult data)
  fairdp eval --model FILE [flags] evaluate a saved model (model.ckpt, model.json) on its held-out split
  fairdp sweep --algo A [grid]    run a grid (λ × ε × seeds, or γ × ε), resumable; sweep.csv + pareto.png
  fairdp data describe [flags]    describe a data set (rows, features, groups, label balance)
  fairdp privacy epsilon|sigma    compute ε for a noise level, or σ for a target ε
  fairdp silo serve|certs         run one SteFFLe silo (gRPC + mutual TLS), or make its certificates
  fairdp federate --silos A,B,..  run the SteFFLe server across silos
  fairdp version

Run 'fairdp COMMAND -h' for the flags of a command.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return // -h: the usage was printed
		}
		fmt.Fprintln(os.Stderr, "fairdp:", err)
		os.Exit(2)
	}
}

// run runs one command; library errors that name an option get the flag
// that sets it (flagError).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return flagError(runCommand(ctx, args, stdout, stderr))
}

func runCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("missing command")
	}
	switch args[0] {
	case "train":
		return runTrain(ctx, args[1:], stdout, stderr)
	case "eval":
		return runEval(args[1:], stdout, stderr)
	case "data":
		return runData(args[1:], stdout, stderr)
	case "privacy":
		return runPrivacy(args[1:], stdout, stderr)
	case "sweep":
		return runSweep(ctx, args[1:], stdout, stderr)
	case "silo":
		return runSilo(ctx, args[1:], stdout, stderr)
	case "federate":
		return runFederate(ctx, args[1:], stdout, stderr)
	case "version", "--version":
		fmt.Fprintln(stdout, "fairdp", versionString())
		fmt.Fprintln(stdout, "matrix products:", trainer.MatrixBackend())
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown command %q", args[0])
}
