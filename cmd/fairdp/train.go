package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/fairdp/fairdp/fermi/federated"
	"github.com/fairdp/fairdp/linear"
	"github.com/fairdp/fairdp/loaders"
	"github.com/fairdp/fairdp/tailoring"
	"github.com/fairdp/fairdp/trainer"
)

// dataFlags registers the flags that name a data set.
func dataFlags(fs *flag.FlagSet, c *trainer.Config) {
	fs.StringVar(&c.Dataset, "dataset", c.Dataset, "built-in data set ("+strings.Join(loaders.Names(), ", ")+") or a CSV path")
	fs.StringVar(&c.Schema, "schema", c.Schema, "schema JSON for a CSV --dataset")
	fs.StringVar(&c.DataDir, "data-dir", c.DataDir, "directory of the built-in data (default $FAIRDP_DATA, then ../shared/data; Adult is embedded)")
	fs.Float64Var(&c.TrainFrac, "train-frac", c.TrainFrac, "fraction of records in the training split (not given: the schema's train_frac, else the built-in data set's, else this)")
	fs.IntVar(&c.ImageSize, "image-size", c.ImageSize, "UTKFace images are resized to this many pixels square")
	fs.Var(floatsFlag{p: &c.ImageMean}, "image-mean", "image data: per-channel mean m, inputs become (p/255 - m)/sd (e.g. 0.1307 for MNIST; needs --image-std; default: p/255)")
	fs.Var(floatsFlag{p: &c.ImageStd}, "image-std", "image data: per-channel deviation sd for --image-mean (e.g. 0.3081 for MNIST)")
	fs.IntVar(&c.Limit, "limit", c.Limit, "use at most this many records (0: all), for quick runs")
	fs.Var(seedFlag{&c.Seed}, "seed", "seed for a bit-reproducible run (default: crypto-seeded, not reproducible)")
	fs.Var(seedFlag{&c.SplitSeed}, "split-seed", "seed of the train/test split alone (default: from --seed); a sweep row's run is --seed ROW_SEED --split-seed SWEEP_SEED")
}

func trainFlags(fs *flag.FlagSet, c *trainer.Config) {
	dataFlags(fs, c)
	kindVar(fs, &c.Algo, "algo", "algorithm: "+strings.Join(trainer.AlgorithmNames(), ", ")+"; linear families (own flags, see -algo X -h): "+pipelineList())
	fs.StringVar(&c.Model, "model", c.Model, "model: logistic, mlp, mnist-cnn, vgg (default: by data set)")
	fs.StringVar(&c.ModelSpecFile, "model-spec", c.ModelSpecFile, "JSON description of a network of your own ({\"layers\": [{\"kind\": \"linear\", \"in\": 102, \"out\": 1}]}); replaces --model")
	fs.Var(intsFlag{&c.Hidden}, "hidden", "MLP hidden widths, e.g. 64,32 (default 64 for --model mlp)")
	kindVar(fs, &c.DType, "dtype", "float32 or float64")
	kindVar(fs, &c.Device, "device", "cpu, or cuda: sgd, dpsgd, dpsgdf, naive and fermi (float32; --optimizer sgd or adam, --momentum) on a GPU (binary built with -tags cuda; in a test build with -tags cudaemu, the emulated device with FAIRDP_DEVICE=emu)")
	fs.BoolVar(&c.TF32, "tf32", c.TF32, "with --device cuda: TF32 tensor cores for the forward and backward matrix products (the released sums stay float32, so the privacy guarantee is unchanged)")
	fs.IntVar(&c.Epochs, "epochs", c.Epochs, "passes over the training data")
	fs.IntVar(&c.Batch, "batch", c.Batch, "batch size (expected size under Poisson sampling)")
	fs.Float64Var(&c.LR, "lr", c.LR, "learning rate")
	kindVar(fs, &c.Optimizer, "optimizer", "sgd or adam")
	fs.Float64Var(&c.Momentum, "momentum", c.Momentum, "SGD momentum")
	fs.StringVar(&c.Out, "out", c.Out, "directory for report.json, metrics.jsonl and model.ckpt (train refuses one holding an earlier run's unless --overwrite)")
	fs.BoolVar(&c.Quiet, "quiet", c.Quiet, "no progress output")
	fs.BoolVar(&c.ReportTrainStats, "report-train-stats", c.ReportTrainStats, "also report exact statistics of the private training split (marked NOT PRIVATE); a private run leaves them out by default")
	fs.BoolVar(&c.Baseline, "baseline", c.Baseline, "also train the identical non-private model and report the cost of privacy per group")
	fs.Float64Var(&c.Tau, "tau", c.Tau, "cost-of-privacy tolerance: equal when max |Δ^i − Δ^j| ≤ tau")
	fs.Var(epsilonFlag{&c.Privacy.Epsilon}, "epsilon", "target ε for private algorithms (inf: not private)")
	fs.Float64Var(&c.Privacy.Delta, "delta", c.Privacy.Delta, "target δ (0: 1/n², n = training records); δ ≥ 1/n is refused unless --allow-large-delta")
	fs.BoolVar(&c.Privacy.AllowLargeDelta, "allow-large-delta", c.Privacy.AllowLargeDelta, "accept δ ≥ 1/n (a weak guarantee; the receipt says so)")
	fs.Float64Var(&c.Privacy.Clip, "clip", c.Privacy.Clip, "per-sample clip bound C")
	fs.Float64Var(&c.Privacy.Sigma, "sigma", c.Privacy.Sigma, "noise multiplier (0: calibrate from --epsilon; given with --epsilon, refused unless it spends at most that ε)")
	fs.Float64Var(&c.Fair.Lambda, "lambda", c.Fair.Lambda, "fairness weight λ ≥ 0 (DP-FERMI, SteFFLe)")
	fs.StringVar(&c.Fair.Fairness, "fairness", c.Fair.Fairness, "fairness notion: dp (demographic parity) or eo (equalized odds)")
	fs.StringVar(&c.Fair.Scope, "scope", c.Fair.Scope, "what privacy protects: all (whole record) or sensitive (only the sensitive attribute)")
	fs.Float64Var(&c.Fair.LRW, "lr-w", c.Fair.LRW, "ascent learning rate η_W of the fairness player (DP-FERMI)")
	fs.Float64Var(&c.Fair.Radius, "radius", c.Fair.Radius, "radius D of the ball W is projected on (DP-FERMI)")
	fs.BoolVar(&c.Fair.PublicGroupSizes, "public-group-sizes", c.Fair.PublicGroupSizes, "treat group frequencies as public (spend no budget on them)")
	fs.StringVar(&c.Fair.Calibration, "calibration", c.Fair.Calibration, "noise calibration: accountant (--accountant's, PLD by default) or paper (DP-FERMI Theorem 3.3)")
	fs.Float64Var(&c.Fair.WeightDecay, "weight-decay", c.Fair.WeightDecay, "L2 regularisation")
	fs.Float64Var(&c.Fair.CountNoiseRatio, "count-noise-ratio", c.Fair.CountNoiseRatio, "DPSGD-F: σ1 = ratio·σ2 on the clipped/unclipped counts")
	fs.StringVar(&c.Fair.CountGuard, "count-guard", c.Fair.CountGuard, "DPSGD-F: bound of a group whose noisy counts are ≤ 0: c0 (its bound is C0), floor (counts floored at 0, 0/0 read as 1), smooth (fraction shrunk towards the pooled one, σ1 pseudo-counts); empty: c0, or smooth where the defaults adapt to a table. Post-processing: no extra ε")
	fs.StringVar(&c.Fair.NaiveGuard, "naive-guard", c.Fair.NaiveGuard, "Naive: weight of a group from its noisy count: one (counts below 1 raised to 1), smooth (σ1 pseudo-records at the even share b/K); empty: one, or smooth where the defaults adapt to a table. Post-processing: no extra ε")
	fs.String("preset", "", "paper settings to start from: "+strings.Join(trainer.PresetNames(), ", ")+" (flags given after it win)")
	fs.String("config", "", "repeat a run: its report.json (or a config JSON); flags given with it win")
	fs.StringVar(&c.Privacy.Sampling, "sampling", c.Privacy.Sampling, "poisson (RDP-valid) or shuffle (paper fidelity; flagged in the receipt)")
	fs.StringVar(&c.Privacy.Accountant, "accountant", c.Privacy.Accountant, "pld (default when empty: the privacy-loss-distribution accountant, tighter) or rdp: calibrates σ and states the receipt")
}

// pipelineCommands are the --algo values of `fairdp train` that are not
// SGD algorithms (trainer.RegisterPipeline): each has its own flags and
// runner. --algo's help lists them from here.
var pipelineCommands = []struct {
	algo trainer.AlgoName
	run  func(ctx context.Context, cfg trainer.Config, args []string, stdout, stderr io.Writer) error
}{
	{tailoring.Name, runTailoring}, {tailoring.DPNoSEName, runTailoring},
	{linear.PostprocName, runPostproc}, {linear.OracleName, runPostproc},
	{linear.ObjPertName, runObjPert},
}

// pipelineList is pipelineCommands' names, for --algo's help.
func pipelineList() string {
	names := make([]string, len(pipelineCommands))
	for i, p := range pipelineCommands {
		names[i] = string(p.algo)
	}
	return strings.Join(names, ", ")
}

func newFlagSet(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: fairdp %s\n\nflags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args. A bad flag is one line (main prints the error)
// with a pointer to -h, not the whole flag list above it: package flag
// prints both to the set's output, silenced here while parsing; -h alone
// prints the usage.
func parseFlags(fs *flag.FlagSet, args []string) error {
	out, usage := fs.Output(), fs.Usage
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.SetOutput(out)
	fs.Usage = usage
	switch {
	case errors.Is(err, flag.ErrHelp):
		usage()
		return err
	case err != nil:
		return fmt.Errorf("%w (-h lists the flags)", err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (flags start with -)", fs.Arg(0))
	}
	if err := kindRefusals(fs); err != nil {
		return err
	}
	// --schema without --dataset means the schema's own files, not the
	// default built-in data set next to a schema that is then ignored.
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["schema"] && !set["dataset"] && fs.Lookup("dataset") != nil {
		return fs.Set("dataset", "")
	}
	return nil
}

func runTrain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg := defaultsFor(args)
	if err := applyPreset(&cfg, args); err != nil {
		return err
	}
	// Post-processing, the oracle learner and budget tailoring are not
	// SGD algorithms: they have their own flags (regression tasks, γ, ρ)
	// and library calls. --algo, or the --config file, says which.
	algo := cfg.Algo
	if a, ok := flagValue(args, "algo"); ok {
		algo = trainer.AlgoName(a) // parsed with the flags below (kindFlag)
	}
	for _, p := range pipelineCommands {
		if p.algo == algo {
			if !slices.Contains(trainer.Tunable(), algo) {
				if err := refuseTune(algo, args); err != nil {
					return err
				}
			}
			cfg.Algo = algo
			return p.run(ctx, cfg, args, stdout, stderr)
		}
	}
	fs := newFlagSet("train", "train [flags]", stderr)
	trainFlags(fs, &cfg)
	federationFlags(fs, &cfg.Federation)
	var ck trainer.CheckpointOptions
	fs.StringVar(&ck.Dir, "checkpoint", "", "directory to save the run in after every epoch (resumable; refused if it holds a checkpoint, unless --resume)")
	fs.BoolVar(&ck.Resume, "resume", false, "with --checkpoint: continue the run the directory holds, or start it if it holds none")
	overwrite := overwriteFlag(fs)
	tune := tuneFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := rejectFederationFlags(fs, cfg.Algo); err != nil {
		return err
	}
	uncapSigma(fs, &cfg)
	dataOwnTrainFrac(fs, args, &cfg)
	if err := configRelativePaths(fs, args, &cfg); err != nil {
		return err
	}
	if err := checkOut(cfg.Out, *overwrite, ck); err != nil {
		return err
	}
	job, err := prepareTrain(fs, cfg, stdout, ck)
	if err != nil {
		return err
	}
	title := string(cfg.Algo)
	if cfg.Algo == federated.Name {
		title += " with " + describeFederation(cfg.Federation)
	}
	backend := trainer.ProductPath()
	if cfg.Device != trainer.DeviceCPU {
		backend = "device " + string(cfg.Device) + " (CPU " + backend + " for evaluation)"
	}
	fmt.Fprintf(stdout, "fairdp %s: %s on %s (%d train / %d test records), %s, %s, %s\n",
		versionString(), title, job.Train.Name, job.Train.N(), job.Test.N(), cfg.DType,
		backend, job.Source)
	for _, n := range job.Train.Notes {
		fmt.Fprintln(stdout, "data:", n)
	}
	rep, err := trainOrTune(ctx, job, tune, ck.Dir, stdout)
	if errors.Is(err, context.Canceled) && ck.Dir != "" {
		return fmt.Errorf("%w (the run is saved after its last completed epoch: the same command with --resume continues it)", err)
	}
	if err != nil {
		return err
	}
	printReport(stdout, rep)
	if rep.CostOfPrivacy != nil {
		rep.CostOfPrivacy.WriteText(stdout)
	}
	if cfg.Out != "" {
		fmt.Fprintf(stdout, "wrote %s/report.json, metrics.jsonl and model.ckpt\n", cfg.Out)
	}
	return nil
}

// prepareTrain is trainer.Prepare with the command line's settings: a
// resumable run with --checkpoint, and the data-aware defaults
// (trainer.AdaptToData) for the settings no flag gave; a --config or
// --preset run keeps its settings.
func prepareTrain(fs *flag.FlagSet, cfg trainer.Config, stdout io.Writer, ck trainer.CheckpointOptions) (*trainer.Job, error) {
	if ck.Resume && ck.Dir == "" {
		return nil, fmt.Errorf("--resume needs --checkpoint DIR")
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return trainer.Prepare(cfg, trainer.PrepareOptions{Log: stdout, Checkpoint: ck, Adapt: !set["config"] && !set["preset"],
		Fixed: map[string]bool{"Batch": set["batch"], "Epochs": set["epochs"], "LR": set["lr"], "Privacy.Clip": set["clip"],
			"Fair.Lambda": set["lambda"]}})
}

// printSplits prints the train table (when the report has one) and the
// test table, each title followed by what (e.g. " (randomised predictions)").
func printSplits(w io.Writer, rep *trainer.Report, what string) {
	if rep.Train != nil {
		fmt.Fprintln(w)
		rep.Train.WriteTable(w, trainTableTitle("train"+what, rep.TrainNotPrivate))
	}
	fmt.Fprintln(w)
	rep.Test.WriteTable(w, "test"+what)
	fmt.Fprintln(w)
}

func printReport(w io.Writer, rep *trainer.Report) {
	printSplits(w, rep, "")
	fmt.Fprintf(w, "%s, %s (%d parameters), %.1f s\n", rep.Algorithm, rep.Model, rep.Params, rep.Seconds)
	rep.Privacy.WriteText(w) // the full receipt: guarantee, mechanisms, assumptions
	printWarnings(w, rep.Warnings)
}

// printWarnings prints a report's warnings where a reader of the results
// will see them.
func printWarnings(w io.Writer, warnings []string) {
	for _, s := range warnings {
		fmt.Fprintln(w, "warning:", s)
	}
}

func versionString() string { return trainer.Version }

// trainTableTitle marks exact training statistics of a private run.
func trainTableTitle(title string, notPrivate bool) string {
	if notPrivate {
		return title + " — NOT PRIVATE: exact statistics of the private training data (--report-train-stats)"
	}
	return title
}

// defaultsFor is trainer.Defaults adjusted for the --algo in args: SteFFLe's
// server takes plain SGD steps, so --algo steffle defaults to --optimizer sgd.
func defaultsFor(args []string) trainer.Config {
	cfg := trainer.Defaults()
	if algo, _ := flagValue(args, "algo"); trainer.AlgoName(algo) == federated.Name {
		cfg.Algo, cfg.Optimizer = federated.Name, trainer.OptimizerSGD
	}
	return cfg
}

// applyPreset applies --preset NAME (if present in args) before the other
// flags are parsed, so that explicit flags override the preset.
func applyPreset(cfg *trainer.Config, args []string) error {
	if path, ok := flagValue(args, "config"); ok {
		c, err := trainer.ReadConfig(path)
		if err != nil {
			return err
		}
		*cfg = c
	}
	if name, ok := flagValue(args, "preset"); ok {
		return trainer.ApplyPreset(cfg, name)
	}
	return nil
}

// flagValue finds -name/--name VALUE or --name=VALUE in args before they
// are parsed (the value decides which parser or preset applies).
func flagValue(args []string, name string) (string, bool) {
	for i, a := range args {
		if a == "--" {
			break
		}
		for _, p := range []string{"--" + name, "-" + name} {
			switch {
			case a == p && i+1 < len(args):
				return args[i+1], true
			case strings.HasPrefix(a, p+"="):
				return a[len(p)+1:], true
			}
		}
	}
	return "", false
}
