package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"fairdp/fermi/federated"
	"fairdp/metrics"
	"fairdp/nn"
	"fairdp/trainer"
)

// federationFlags adds SteFFLe's split of the data over silos to a flag
// set (train and sweep).
func federationFlags(fs *flag.FlagSet, f *trainer.FederationConfig) {
	fs.IntVar(&f.Silos, "silos", f.Silos, "SteFFLe: number of silos N holding records (features and labels)")
	fs.Float64Var(&f.Heterogeneity, "heterogeneity", f.Heterogeneity, "SteFFLe: heterogeneity h in [0,1] of the split by --silo-attribute")
	fs.StringVar(&f.SiloAttribute, "silo-attribute", f.SiloAttribute, "SteFFLe: feature the heterogeneity split sorts by")
	fs.StringVar(&f.Mode, "federation", f.Mode, "SteFFLe: horizontal (silos hold whole records), sensitive-silo (one more silo holds every sensitive attribute; needs --scope sensitive) or mapping (--mapping file)")
	fs.StringVar(&f.MappingFile, "mapping", f.MappingFile, "SteFFLe --federation mapping: CSV record,features_silo,sensitive_silo (record = index in the training split)")
}

// federationFlagNames are the flags only --algo steffle reads.
var federationFlagNames = []string{"silos", "heterogeneity", "silo-attribute", "federation", "mapping"}

// rejectFederationFlags refuses SteFFLe's flags for other algorithms, which
// would silently ignore them.
func rejectFederationFlags(fs *flag.FlagSet, algo string) error {
	if algo == federated.Name {
		return nil
	}
	var set []string
	fs.Visit(func(f *flag.Flag) {
		if slices.Contains(federationFlagNames, f.Name) {
			set = append(set, "--"+f.Name)
		}
	})
	if len(set) > 0 {
		return fmt.Errorf("%s applies to --algo steffle only (got --algo %s)", strings.Join(set, ", "), algo)
	}
	return nil
}

// describeFederation is the line train prints for a SteFFLe run.
func describeFederation(f trainer.FederationConfig) string {
	switch f.Mode {
	case trainer.FederationSensitiveSilo:
		return fmt.Sprintf("%d feature silos (h = %v by %s) and one silo holding every sensitive attribute", f.Silos, f.Heterogeneity, f.SiloAttribute)
	case trainer.FederationMapping:
		return "silos mapped by " + f.MappingFile
	}
	return fmt.Sprintf("%d silos (h = %v by %s)", f.Silos, f.Heterogeneity, f.SiloAttribute)
}

// runSilo is `fairdp silo serve|certs`.
func runSilo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: fairdp silo serve [flags] | fairdp silo certs [flags]")
	}
	switch args[0] {
	case "certs":
		fs := newFlagSet("silo certs", "silo certs --out DIR --hosts 127.0.0.1,silo.example.org", stderr)
		out := fs.String("out", "", "directory for ca.pem, silo.pem, server.pem and their keys")
		hosts := fs.String("hosts", "127.0.0.1,localhost", "comma-separated addresses and DNS names the silos listen on")
		days := fs.Int("days", 365, "validity in days")
		if err := parseFlags(fs, args[1:]); err != nil {
			return err
		}
		if *out == "" {
			return errors.New("silo certs: --out DIR is required")
		}
		if err := federated.GenerateCerts(*out, strings.Split(*hosts, ","), time.Duration(*days)*24*time.Hour); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote ca.pem, silo.pem, server.pem (and keys) to %s: give silo*.pem and ca.pem to each silo, server*.pem and ca.pem to the federation server\n", *out)
		return nil
	case "serve":
		return runSiloServe(ctx, args[1:], stdout, stderr)
	}
	return fmt.Errorf("silo: unknown command %q (want serve or certs)", args[0])
}

func runSiloServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg := trainer.Defaults()
	cfg.Algo, cfg.Optimizer = federated.Name, "sgd"
	if err := applyPreset(&cfg, args); err != nil {
		return err
	}
	fs := newFlagSet("silo serve", "silo serve --dataset FILE.csv --schema S.json --listen ADDR --certs DIR [train flags]", stderr)
	trainFlags(fs, &cfg)
	listen := fs.String("listen", "127.0.0.1:7070", "address to listen on")
	certs := fs.String("certs", "", "directory made by `fairdp silo certs` (required unless --insecure)")
	insecure := fs.Bool("insecure", false, "no TLS (loopback tests only)")
	index := fs.Int("silo-index", 0, "this silo's index in the federation (distinct per silo)")
	statePath := fs.String("state", "", "file where the silo keeps what it has released (its privacy ledger, released group counts, last answer) across restarts")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	job, err := trainer.Prepare(cfg, stdout)
	if err != nil {
		return err
	}
	var st *federated.SiloState
	if *statePath != "" {
		if st, err = federated.LoadSiloState(*statePath); err != nil {
			return err
		}
	}
	tlsCfg, err := siloTLS(*certs, *insecure, "silo")
	if err != nil {
		return err
	}
	if cfg.DType == "float64" {
		return serveSilo[float64](ctx, cfg, job, *index, st, *statePath, *listen, tlsCfg, stdout)
	}
	return serveSilo[float32](ctx, cfg, job, *index, st, *statePath, *listen, tlsCfg, stdout)
}

// serveSilo builds the silo (which writes its state file first, so a silo
// that cannot record its spending never listens) and serves it.
func serveSilo[T nn.Float](ctx context.Context, cfg trainer.Config, job *trainer.Job, index int, st *federated.SiloState, statePath, listen string,
	tlsCfg *tls.Config, stdout io.Writer) error {
	gen := 0
	if st != nil {
		gen = st.Generation + 1
	}
	silo, err := federated.NewSilo[T](cfg, job.Train, federated.SiloSource(job.Source, index, gen),
		federated.SiloOptions{Index: index, State: st, StatePath: statePath})
	if err != nil {
		if statePath != "" {
			return fmt.Errorf("--state %s: %w", statePath, err)
		}
		return err
	}
	lis, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "silo %d: %d records from %s, listening on %s (%d rounds answered before, ε spent %.4g of %.4g)\n",
		index, job.Train.N(), cfg.Dataset, lis.Addr(), silo.Spent(), silo.SpentEpsilon(), silo.Info().Epsilon)
	return federated.Serve(ctx, lis, silo, tlsCfg, nil)
}

func siloTLS(dir string, insecure bool, role string) (*tls.Config, error) {
	if insecure {
		return nil, nil
	}
	if dir == "" {
		return nil, errors.New("--certs DIR is required (create it with `fairdp silo certs`), or --insecure for loopback tests")
	}
	return federated.LoadTLS(dir, role)
}

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
	fs.StringVar(&evalCfg.DType, "dtype", "float32", "float32 or float64 (as the silos)")
	fs.StringVar(&evalCfg.Out, "out", "", "directory for report.json, metrics.jsonl and model.ckpt")
	evalEvery := fs.Int("eval-every", 10, "rounds between test evaluations in metrics.jsonl (the last round is always evaluated)")
	var sc federated.ServerConfig
	fs.IntVar(&sc.Rounds, "rounds", 0, "rounds to run (0: as many as every silo was calibrated for)")
	fs.Float64Var(&sc.LR, "lr", 0.005, "θ learning rate (plain SGD)")
	fs.Float64Var(&sc.WeightDecay, "weight-decay", 0, "L2 regularisation")
	fs.Float64Var(&sc.Lambda, "lambda", 1, "fairness weight λ (as the silos)")
	fs.Float64Var(&sc.LRW, "lr-w", 0.01, "W ascent learning rate η_W")
	fs.Float64Var(&sc.Radius, "radius", 5, "radius D of W's ball")
	fs.StringVar(&sc.Checkpoint, "checkpoint", "", "file written after every round (default: DIR/federation.ckpt.json with --out, else federation.ckpt.json)")
	fs.BoolVar(&sc.Resume, "resume", false, "continue from --checkpoint if it exists")
	fs.IntVar(&sc.Retries, "retries", 5, "attempts per silo and round before stopping")
	fs.DurationVar(&sc.Backoff, "backoff", 200*time.Millisecond, "first retry delay (doubled each time)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case *addrs == "":
		return errors.New("federate: --silos ADDR1,ADDR2,... is required")
	case evalCfg.DType != "float32" && evalCfg.DType != "float64":
		return fmt.Errorf("federate: --dtype must be float32 or float64 (got %q)", evalCfg.DType)
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
	sc.Seed, sc.Log = evalCfg.Seed, stderr
	var job *trainer.Job
	if evalCfg.Dataset != "" {
		var err error
		if job, err = trainer.Prepare(evalCfg, io.Discard); err != nil {
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
	if evalCfg.DType == "float64" {
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

func federate[T nn.Float](ctx context.Context, f federation) error {
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
	metrics.WriteTable(f.stdout, "test ("+f.job.Test.Name+")", rep.Test)
	fmt.Fprintln(f.stdout)
	rep.Privacy.WriteText(f.stdout)
	if out == "" {
		return nil
	}
	if err := trainer.WriteOutputs(out, rep, srv.Model, f.job); err != nil {
		return err
	}
	fmt.Fprintf(f.stdout, "wrote %s/report.json, metrics.jsonl and model.ckpt\n", out)
	return nil
}
