package main

// `fairdp federate`: the SteFFLe server across silos (flags and printing;
// the server, its report and round log are in fermi/federated).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fairdp/fairdp/fermi/federated"
	"github.com/fairdp/fairdp/trainer"
)

const federateSynopsis = `federate --silos ADDR1,ADDR2,... --certs DIR [--dataset D --schema S --seed S] [--out DIR] [flags]

Runs the SteFFLe server against silos started with "fairdp silo serve": every
round it sends θ and W, averages the silos' DP messages (weighted by their
record counts) and steps; --checkpoint is written after every round and
--resume continues from it. With --out DIR it writes the results contract of
"fairdp train": report.json (test metrics on the held-out split of --dataset,
the server's own evaluation data, split and preprocessed as "fairdp train
--dataset D --seed S" would; "train" is empty: the server holds no training
records), metrics.jsonl (one line per round: loss, every silo's ε, ‖W‖, and
test metrics every --eval-every rounds and at the end) and model.ckpt whose
receipt is the federation's: the silo with the largest ε as the headline and
every silo's ε, δ, σ and rounds in the note and in report.json. --seed also
seeds the model's initialisation (give the silos' --seed for a reproducible
run).`

// runFederate is `fairdp federate --silos ADDR1,ADDR2,...`: the server.
func runFederate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("federate", federateSynopsis, stderr)
	addrs := fs.String("silos", "", "comma-separated silo addresses")
	certs := fs.String("certs", "", "directory made by `fairdp silo certs`")
	insecure := fs.Bool("insecure", false, "no TLS (loopback tests only)")
	evalCfg := trainer.Defaults()
	evalCfg.Dataset = ""
	dataFlags(fs, &evalCfg) // the server's evaluation data (and --seed)
	evalCfg.DType = trainer.DTypeFloat32
	kindVar(fs, &evalCfg.DType, "dtype", "float32 or float64 (as the silos)")
	fs.StringVar(&evalCfg.Out, "out", "", "directory for report.json, metrics.jsonl and model.ckpt")
	evalEvery := fs.Int("eval-every", 10, "rounds between test evaluations in metrics.jsonl (the last round is always evaluated)")
	var sc federated.ServerConfig
	fs.IntVar(&sc.Rounds, "rounds", 0, "rounds to run (0: as many as every silo was calibrated for)")
	fs.Float64Var(&sc.LR, "lr", 0.005, "θ learning rate (plain SGD)")
	fs.Float64Var(&sc.Decay.Factor, "lr-decay", 0, "multiply the θ learning rate by this factor in (0,1] every --lr-decay-rounds rounds (0: constant)")
	fs.IntVar(&sc.Decay.Every, "lr-decay-rounds", 0, "rounds between two --lr-decay steps")
	fs.Float64Var(&sc.WeightDecay, "weight-decay", 0, "L2 regularisation")
	fs.Float64Var(&sc.Lambda, "lambda", 1, "fairness weight λ (as the silos)")
	fs.Float64Var(&sc.LRW, "lr-w", 0.01, "W ascent learning rate η_W")
	fs.Float64Var(&sc.Radius, "radius", 5, "radius D of W's ball")
	fs.StringVar(&sc.Checkpoint, "checkpoint", "", "file written after every round (default: DIR/federation.ckpt.json with --out, else federation.ckpt.json)")
	fs.BoolVar(&sc.Resume, "resume", false, "continue from --checkpoint if it exists")
	fs.IntVar(&sc.Retries, "retries", 5, "attempts per silo and round before stopping")
	fs.DurationVar(&sc.Backoff, "backoff", 200*time.Millisecond, "first retry delay (doubled each time)")
	fs.StringVar(&sc.Accountant, "accountant", "", "pld or rdp: refuse silos that state ε with another accountant (empty: any, as long as every silo uses the same)")
	overwrite := overwriteFlag(fs)
	if err := refuseRemoteTune("federate", args); err != nil {
		return err
	}
	if err := parseFlags(fs, args); err != nil {
		if evalCfg.DType.Validate() != nil {
			return fmt.Errorf("federate: %w", err) // --dtype's refusal, as the other settings' below
		}
		return err
	}
	switch {
	case *addrs == "":
		return errors.New("federate: --silos ADDR1,ADDR2,... is required")
	case *evalEvery < 1:
		return fmt.Errorf("federate: --eval-every must be ≥ 1 (got %d)", *evalEvery)
	case evalCfg.Out != "" && evalCfg.Dataset == "":
		return errors.New("federate: --out needs --dataset (and --schema for a CSV): the data the server evaluates the model on")
	}
	if sc.Checkpoint == "" {
		sc.Checkpoint = "federation.ckpt.json"
		if evalCfg.Out != "" {
			sc.Checkpoint = filepath.Join(evalCfg.Out, "federation.ckpt.json")
		}
	}
	// --resume continues the federation whose checkpoint is there: its
	// outputs are its own. Otherwise an earlier run's model and report stay.
	if _, err := os.Stat(sc.Checkpoint); !sc.Resume || err != nil {
		if err := checkOut(evalCfg.Out, *overwrite, trainer.CheckpointOptions{}); err != nil {
			return err
		}
	}
	sc.Seed, sc.Log = evalCfg.Seed, stderr
	var job *trainer.Job
	if evalCfg.Dataset != "" {
		var err error
		if job, err = trainer.Prepare(evalCfg, trainer.PrepareOptions{Log: io.Discard}); err != nil {
			return fmt.Errorf("federate: evaluation data: %w", err)
		}
	}
	tlsCfg, err := siloTLS(*certs, *insecure, "server")
	if err != nil {
		return err
	}
	var clients []federated.Client
	for _, a := range strings.Split(*addrs, ",") {
		c, closeFn, err := federated.Dial(strings.TrimSpace(a), tlsCfg)
		if err != nil {
			return err
		}
		defer closeFn()
		clients = append(clients, c)
	}
	run := federation{sc: sc, clients: clients, job: job, evalEvery: *evalEvery, stdout: stdout}
	if evalCfg.DType == trainer.DTypeFloat64 {
		return federate[float64](ctx, run)
	}
	return federate[float32](ctx, run)
}

// federation is one `fairdp federate` run.
type federation struct {
	sc        federated.ServerConfig
	clients   []federated.Client
	job       *trainer.Job // evaluation data (nil: none)
	evalEvery int
	stdout    io.Writer
}

func federate[T float32 | float64](ctx context.Context, f federation) error {
	out := ""
	if f.job != nil {
		out = f.job.Cfg.Out
	}
	var log *federated.RoundLog
	start := time.Now()
	var srv *federated.Server[T]
	f.sc.AfterRound = func() error {
		if log == nil {
			return nil
		}
		line := federated.RoundLine{Round: srv.Round, Loss: srv.Loss[len(srv.Loss)-1], SiloEpsilon: srv.Epsilon, WNorm: srv.Reg.Norm(),
			Seconds: time.Since(start).Seconds()}
		if srv.Round%f.evalEvery == 0 || srv.Round == srv.Cfg.Rounds {
			sp, err := trainer.Evaluate(srv.Model, f.job.Test)
			if err != nil {
				return fmt.Errorf("evaluation data: %w", err)
			}
			line.TestError, line.TestDP, line.TestEO = &sp.Error, &sp.DPViolation, &sp.EOViolation
		}
		return log.Append(line)
	}
	srv, err := federated.NewServer[T](ctx, f.sc, f.clients)
	if err != nil {
		return err
	}
	if out != "" {
		if err := os.MkdirAll(out, 0o755); err != nil {
			return err
		}
		if log, err = federated.OpenRoundLog(filepath.Join(out, "metrics.jsonl"), srv.Round); err != nil {
			return err
		}
		defer log.Close()
	}
	fmt.Fprintf(f.stdout, "federation of %d silos: %d rounds (starting after round %d)\n", len(f.clients), srv.Cfg.Rounds, srv.Round)
	if err := srv.Run(ctx); err != nil {
		return fmt.Errorf("federate: %w (checkpoint %s holds round %d)", err, f.sc.Checkpoint, srv.Round)
	}
	receipt, silos, err := srv.Privacy(ctx)
	if err != nil {
		return fmt.Errorf("federate: collecting the silos' receipts: %w", err)
	}
	fmt.Fprintf(f.stdout, "done: %d rounds, silo ε %v, ‖W‖ = %.4g; server state in %s\n", srv.Round, srv.Epsilon, srv.Reg.Norm(), f.sc.Checkpoint)
	if f.job == nil {
		receipt.WriteText(f.stdout)
		return nil
	}
	var addrs []string
	for _, c := range f.clients {
		addrs = append(addrs, c.Name())
	}
	rep, err := srv.Report(f.job, addrs, receipt, silos, time.Since(start).Seconds())
	if err != nil {
		return err
	}
	fmt.Fprintln(f.stdout)
	rep.Test.WriteTable(f.stdout, "test ("+f.job.Test.Name+")")
	fmt.Fprintln(f.stdout)
	rep.Privacy.WriteText(f.stdout)
	printWarnings(f.stdout, rep.Warnings)
	if out == "" {
		return nil
	}
	if err := trainer.WriteOutputs(out, rep, srv.Model, f.job); err != nil {
		return err
	}
	fmt.Fprintf(f.stdout, "wrote %s/report.json, metrics.jsonl and model.ckpt\n", out)
	return nil
}
