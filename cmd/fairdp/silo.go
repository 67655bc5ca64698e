package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/fairdp/fairdp/fermi/federated"
	"github.com/fairdp/fairdp/trainer"
)

// federationFlags adds SteFFLe's split of the data over silos to a flag
// set (train and sweep).
func federationFlags(fs *flag.FlagSet, f *trainer.FederationConfig) {
	fs.IntVar(&f.Silos, "silos", f.Silos, "SteFFLe: number of silos N holding records (features and labels)")
	fs.Float64Var(&f.Heterogeneity, "heterogeneity", f.Heterogeneity, "SteFFLe: heterogeneity h in [0,1] of the split by --silo-attribute")
	fs.StringVar(&f.SiloAttribute, "silo-attribute", f.SiloAttribute, "SteFFLe: feature the heterogeneity split sorts by")
	fs.StringVar(&f.Mode, "federation", f.Mode, "SteFFLe: horizontal (silos hold whole records), sensitive-silo (one more silo holds every sensitive attribute; needs --scope sensitive) or mapping (--mapping file)")
	fs.StringVar(&f.MappingFile, "mapping", f.MappingFile, "SteFFLe --federation mapping: CSV record,features_silo,sensitive_silo (record = index in the training split)")
	fs.Float64Var(&f.LRDecay, "lr-decay", f.LRDecay, "SteFFLe: multiply the server's θ learning rate by this factor in (0,1] every --lr-decay-every epochs (0: constant)")
	fs.IntVar(&f.LRDecayEvery, "lr-decay-every", f.LRDecayEvery, "SteFFLe: epochs between two --lr-decay steps")
	fs.IntVar(&f.AverageEvery, "average-every", f.AverageEvery, "SteFFLe: also report test metrics averaged over the models after every N-th epoch (0: off; the authors' code: 10)")
	fs.IntVar(&f.AverageFrom, "average-from", f.AverageFrom, "SteFFLe: first epoch the --average-every average includes (the authors' code: 20)")
	fs.BoolVar(&f.TotalDelta, "total-delta", f.TotalDelta, "SteFFLe: each silo's default δ is 1/n² of all n training records (the authors' code), not 1/ñ² of its own")
}

// federationFlagNames are the flags only --algo steffle reads.
var federationFlagNames = []string{"silos", "heterogeneity", "silo-attribute", "federation", "mapping",
	"lr-decay", "lr-decay-every", "average-every", "average-from", "total-delta"}

// rejectFederationFlags refuses SteFFLe's flags for other algorithms, which
// would silently ignore them.
func rejectFederationFlags(fs *flag.FlagSet, algo trainer.AlgoName) error {
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
	cfg.Algo, cfg.Optimizer = federated.Name, trainer.OptimizerSGD
	if err := applyPreset(&cfg, args); err != nil {
		return err
	}
	fs := newFlagSet("silo serve", "silo serve --dataset FILE.csv --schema S.json --listen ADDR --certs DIR [train flags]", stderr)
	trainFlags(fs, &cfg)
	listen := fs.String("listen", "127.0.0.1:7070", "address to listen on")
	certs := fs.String("certs", "", "directory made by `fairdp silo certs` (required unless --insecure)")
	insecure := fs.Bool("insecure", false, "no TLS (loopback tests only)")
	index := fs.Int("silo-index", 0, "this silo's index in the federation (distinct per silo)")
	statePath := fs.String("state", "", "file where the silo keeps what it has released (its privacy ledger, released group counts, last answer) across restarts, "+
		"and the settings it released under (--scope, --clip, --lambda, --calibration, --fairness, --public-group-sizes, --sampling, --model, --delta), which a restart must keep")
	if err := refuseRemoteTune("silo serve", args); err != nil {
		return err
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	job, err := trainer.Prepare(cfg, trainer.PrepareOptions{Log: stdout})
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
	if cfg.DType == trainer.DTypeFloat64 {
		return serveSilo[float64](ctx, cfg, job, *index, st, *statePath, *listen, tlsCfg, stdout)
	}
	return serveSilo[float32](ctx, cfg, job, *index, st, *statePath, *listen, tlsCfg, stdout)
}

// serveSilo builds the silo (which writes its state file first, so a silo
// that cannot record its spending never listens) and serves it.
func serveSilo[T float32 | float64](ctx context.Context, cfg trainer.Config, job *trainer.Job, index int, st *federated.SiloState, statePath, listen string,
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
	info, err := silo.Info()
	if err != nil {
		return err
	}
	lis, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "silo %d: %d records from %s, listening on %s (%d rounds answered before, ε spent %.4g of %.4g)\n",
		index, job.Train.N(), cfg.Dataset, lis.Addr(), silo.Spent(), silo.SpentEpsilon(), info.Epsilon)
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
