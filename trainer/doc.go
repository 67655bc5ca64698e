// Package trainer runs one training job end to end: data, model, the
// algorithm's steps, per-epoch evaluation, the progress line, and the results
// contract (report.json, metrics.jsonl, model.ckpt) with its privacy receipt.
//
// # Shape: one loop, one model interface, one DP-SGD
//
// Run is the one training loop. Every algorithm (SGD, DP-SGD, DPSGD-F and
// Naïve from package dpsgdf, DP-FERMI from fermi, SteFFLe from
// fermi/federated) plugs in through Algorithm (Sampler, Step, Receipt, and
// Hooks: the loop's named extension points OnStart, OnEpoch, OnEnd,
// NotCovered, PlannedRunEpsilon, Resume and Resident, in one struct so
// that the loop's contract is read in one place rather than discovered
// through optional interfaces) and
// every model through Model: Forward, Loss, Backward, the taps per-sample
// clipping reads (dpops.Tapped: SqNorms, ParamGrads), Params, ZeroGrads,
// InSize, OutDim. *models.Model (the zoo, a --model-spec network, any stack
// of nn layers) implements Model; so can a caller's own type, which then
// trains under every algorithm but SteFFLe (whose silos rebuild the model
// from its spec) and is not written to a checkpoint. The interface lives
// here, where it is consumed, rather than in models: the loop and the
// algorithms are its only users, and models.Model is one implementation.
// Pass is the one forward/loss/backward pass every algorithm begins a step
// with: SGD and DP-SGD (and so DPSGD-F and Naïve) call Run; DP-FERMI calls
// its parts (Forward, LossGrad or Zero, Backward) to add its fairness term
// to ∂loss/∂logits before back-propagating. A regression output (one
// prediction per record: models.Model.Regression) is the one case where
// the loss is not the model's own: the loop gathers the records' targets
// into Batch.Targets and LossGrad takes the squared error (nn.SquaredError),
// so SGD, DP-SGD, DPSGD-F and Naïve train it with the same clipping, noise
// and receipt (regression.go lists them; DP-FERMI and SteFFLe refuse it).
//
// DPSGD is the one DP-SGD. DPSGD-F and Naïve are DPSGD with a ClipPolicy
// (from the batch's per-group counts of norms above and at most a
// threshold: a clip bound and weight per group, the sum's sensitivity, the
// step's mechanism); sampling, norms, noise, the accountant and the
// receipt are DPSGD's for all three. Receipt returns an
// error: an accountant that cannot state the guarantee fails the run, never
// turns into a "not private" receipt.
//
// # On a device
//
// Config.Device DeviceCUDA runs SGD, DP-SGD, DPSGD-F, Naïve and DP-FERMI
// (float32, with Config's optimizer: SGD, momentum or Adam) on a Device,
// the one interface the loop has for an accelerator: one run's model
// resident on it (Load the nn layers and the nn optimizer; Step a DP-SGD
// step, FermiStep DP-FERMI's model half; Params; Close). The loop never
// imports device code: the binary registers a Device for a Config.Device
// value (RegisterDevice; cmd/fairdp registers package cuda's
// TrainerDevice for "cuda" only in builds with the tag cuda or cudaemu), so
// the default binary links no GPU code and says which build it needs. Why
// the interface looks as it does:
//
//   - cuda sits below the loop and must not import it, so its type
//     satisfies Device structurally; Go matches methods exactly, so no
//     method returns another of the loop's interfaces (one value is the
//     device, the loaded model and its steps), and the values the methods
//     exchange are package devstep's, below both (layers and the optimizer
//     are nn's own).
//   - What a step means privately stays on the host, in the algorithms'
//     own code: the step descriptions carry the clip, the noise std and the
//     run's noise stream (the device draws its noise key from it, in the
//     CPU step's order), a clip policy's rule (DPSGD-F's, Naïve's: it sees
//     only per-group counts) and DP-FERMI's plan; the device returns sums.
//   - DP-FERMI's part (FermiStep) is in the one interface rather than an
//     optional one the loop would have to discover: every device that runs
//     the SGD family runs DP-FERMI's model half with the same buffers.
//
// Train wraps the algorithm in a step that loads the model on the device
// on its first step (ondevice.go), and DPSGD hands its gradient work to
// it. DP-FERMI (package fermi, which the trainer cannot import, recognised
// by its DeviceStep and FinishDeviceStep methods) runs the same way
// (ondevice_fermi.go): the model's half of each step on the device, W's
// step, its noise and the accountant in package fermi. The step's Hooks
// have Resident set, so Run skips its optimizer (the update and its state are
// on the device) and copies the parameters back to the host model (Sync)
// only before each epoch's evaluation, the report and the checkpoint.
// Sampling, a policy's decisions, the accountant and the receipt are the
// host algorithm's; the receipt notes that the noise is Philox on the
// device, keyed from the run's stream. Config.Validate refuses what has no
// device step (other algorithms and pipelines, float64, Baseline): a run
// never falls back to the CPU silently.
//
// # One way in
//
// NewPrivate and TrainPrivate are the one way to train a model privately
// at a target (ε, δ) from a Go program: PrivateOptions names the data (a
// built-in data set, a CSV with a schema, or Data, records held in
// memory), the model when the caller brings none (a zoo name or a Spec;
// TrainPrivate otherwise takes any Model, a lowered Gorgonia graph's
// included) and the Method, a value exported by the package that
// implements it (DPSGDMethod here, dpsgdf.Method, fermi.Method), so that a
// program naming a method links its implementation; its errors are
// FieldErrors naming the field at fault. PrivateOptions.Checkpoint makes
// the run resumable across processes, as `--checkpoint DIR --resume` does.
//
// Below them is one lower entry, the one `fairdp train` uses: Prepare
// turns a Config (the CLI-shaped configuration, every setting a flag has)
// into a Job (the data loaded and split, the run seeded, with
// PrepareOptions: a checkpoint, the data-aware defaults for the settings
// the caller did not fix), and Train runs the job with the algorithm
// Config.Algo names. NewPrivate builds a Config from its options and calls
// Prepare; TrainPrivate calls Train: a library run and a command-line run
// with the same settings are the same run, prepared and trained by the
// same code. The binary uses the lower entry rather than NewPrivate
// because it holds settings PrivateOptions leaves at their defaults
// (fairness, device, optimizer, federation) and prints the prepared data
// before training.
//
// The other exported entries are not ways to train; each has one kind of
// caller, which is why it is exported:
//
//   - RunConfig runs a Config whole, the algorithms (Prepare and Train)
//     and the registered pipelines (post-processing, the oracle learner,
//     objective perturbation, tailoring) alike, as `--config report.json`
//     repeats a run from its report (ReadConfig); `fairdp train --algo
//     objpert` runs through it. LoadData is the one way a run's data is
//     read, for the pipelines, which do not train a Job.
//   - The algorithm packages (dpsgdf, fermi, fermi/federated, linear,
//     tailoring) register with Register, RegisterPipeline, RegisterPreset
//     and RegisterSection, build their steps on Run's types (Algorithm,
//     Hooks, Batch, Pass, Resumable, State) and, for DPSGD-F and Naïve,
//     on NewDPSGDFrom: DP-SGD from its own options (DPSGDOptions: σ for a
//     target ε, PlannedEpsilon), the constructor an algorithm built on
//     DP-SGD calls (`--algo dpsgd` builds the same from the job's Config).
//     Run is the loop they plug into; their tests drive it directly with
//     an Algorithm they built, which Train, choosing the algorithm by
//     name, cannot take. No code outside the package but tests calls
//     Run; it stays exported because those tests (fermi, fermi/federated,
//     dpsgdf, bench) cannot move here: this package cannot import the
//     algorithms they test.
//   - The kinds of Config (AlgoName, DeviceKind, DType, OptimizerName)
//     and their constants are the types of Config's fields, named by
//     whoever fills a Config: the command line and the algorithm
//     packages' presets. PrivateOptions takes a Method, not an AlgoName,
//     so the one way in stays one that cannot name an algorithm the
//     program does not link. CheckDevice says, before any data is read,
//     whether this binary can run a DeviceKind.
//
// A test in the package (TestExportedSurface) lists every exported name,
// so that a new one is a decision rather than an accident.
//
// # Privacy of what a run writes
//
// What a run writes follows the receipt: a private run releases only noised
// quantities and what DeclareNotCovered and the algorithm's Hooks.NotCovered list
// in the receipt's not_covered (exact test metrics, the record count,
// preprocessing fitted on the training records, a non-private baseline).
// Exact training statistics (per-group metrics, the loss, sampled batch
// sizes) are left out unless Config.ReportTrainStats, and then marked not
// private. Warnings flags results that should not be read as normal. Every
// algorithm's default δ is accounting.DefaultDelta (1/n²); sweeps give each
// run its own seed (SweepSeed) over one shared split (Config.SplitSeed).
//
// One results contract: Report is report.json for every algorithm and entry
// point, the SGD family here, DP-FERMI and SteFFLe (fermi, fermi/federated,
// also `fairdp federate`), DP post-processing and the oracle learner
// (linear.RunPostproc), budget tailoring and DPNoSE (tailoring.Run) and
// `fairdp eval` (EvaluateCheckpoint). Its JSON Schema is report.schema.json
// (ReportSchema); tests validate every algorithm's output against it.
// Report.Config is the configuration actually run, with snake_case keys
// (Config's json tags; PostprocConfig holds post-processing's settings, and
// an algorithm above trainer keeps its own settings type as a section of
// Config under its key, RegisterSection, as tailoring does under
// "tailoring"), so ReadConfig repeats a run from its report;
// a report written before the keys were snake_case is refused. Extra
// (Extras) holds each family's typed result under its key (extra.fermi,
// extra.steffle, extra.jagielski, extra.tailoring, extra.eval, …; DPSGD-F's
// fields at its top, an InlineExtra); each family's accessor (fermi.ResultOf,
// …, built on ExtraOf) returns its own type, from a run or from a
// report.json read back.
//
// One sweep runner: OpenSweep opens a grid sweep (SweepGrid, one seed
// rule: SweepPlan's doc), with its resumable, fsynced sweep.csv (SweepLog),
// the sweep.json that keeps a resumed sweep on the same settings
// (CheckSweepSettings) and the receipts and privacy total of every
// published run (SweepPrivacy); SweepPlan.Run trains the runs still to do
// on a Sweep, Workers at a time, training SGD-family runs itself or calling
// Sweep.Pipeline for the pipelines that are not Algorithms
// (post-processing, the oracle learner). SweepPlan.Summary,
// WriteSweepTable and SweepPlan.Plot are the summary, table and
// plot of every sweep. Budget tailoring's ρ comparison is one run's
// release, not a grid of runs: it runs its ρ values on Sweep with its own
// log (rho_runs.csv) and one receipt for every fit.
//
// Evaluation: EvaluateCheckpoint scores a saved model (`fairdp eval`): a
// checkpoint, or a JSON model file read by the reader its algorithm
// registered (RegisterModelFile: package linear's model.json), through the
// same split record, preprocessing and report (eval_saved.go).
//
// # Resumable runs
//
// Prepare with PrepareOptions.Checkpoint (`fairdp train --checkpoint DIR
// --resume`, PrivateOptions.Checkpoint) makes a run span processes: after every epoch Run writes, atomically and with mode
// 0600, training.ckpt with everything the next epoch reads (parameters,
// layer state such as Dropout's generator, the optimizer's moments, the
// sampler, the algorithm's state through Resumable: accountant, W,
// released counts, per-epoch series, the epoch log, the config and a
// fingerprint of the data), and before every epoch ledger.json says the
// epoch has started. A seeded run's checkpoint also holds its streams'
// positions, so its resume is bit-identical to the run uninterrupted. An
// unseeded run's checkpoint holds no stream: the resumed process re-keys
// batches and noise from crypto/rand (the receipt says so), and an epoch
// the ledger shows started but not checkpointed is charged in full before
// it is run again. Prepare's doc is the full statement.
// SGD, DP-SGD, DPSGD-F, Naïve and DP-FERMI are Resumable; SteFFLe and
// device runs are refused.
//
// # Defaults that follow the data, and private tuning
//
// A private SGD-family run (dpsgd, dpsgdf, naive; Adam; tables) with the
// batch, epochs, learning rate or clip left unset takes them from the
// budget per record ε·n (AdaptToData): below 2,000, q = 0.25, 20 epochs,
// η = 0.1, clip C/10; above, q = 0.05, 40 epochs, η = 0.03, clip C. The
// rule comes from a sweep on synthetic tables, credit and adult at
// ε = 0.3, 1 and 3 (datadefaults.go gives the numbers); the fixed defaults
// it replaces (batch 256, η = 0.005) took too few, too small steps on small
// tables and predicted the majority class. It reads n and ε only: the class
// balance would be a release of the labels, so it is not used. DP-FERMI
// takes the same rule with λ = 0.5 below ε·n = 2,000 and λ = 2 up to
// 10,000, and keeps Defaults() (tuned on Adult for a visibly fair model)
// above where they take at least 1,500 steps (n ≥ 19,200; with fewer,
// Adam's steps of 0.005 leave the model short of the data's optimum, so
// the λ = 2 rule applies at every larger budget too); SteFFLe applies the budget rule to one silo's records with its
// own plain-SGD settings (q = 0.05, 40 epochs, η = 0.1 below a silo's
// ε·ñ = 2,000 and 0.5 from it, C as given, λ as DP-FERMI's). Without the rules both returned
// models no better than the majority class on small tables.
//
// Tune searches the same settings privately (Papernot and Steinke 2022):
// K ~ truncated negative binomial trials, each a complete private run on
// the training records, scored by its Gaussian-noised count of correct
// predictions on those same records (TuneOptions.ValidFrac holds a share
// out instead); only the best trial is published, and the receipt's ε is
// Theorem 2's bound on the whole search, accounted in RDP because the
// theorem is an RDP statement (accounting.TunedRDP). Each trial's σ is
// calibrated downward until the search meets the target ε. Its default
// space is a grid around the rule's setting below ε·n = 2,000; from there
// on each trial's learning rate follows its step count, so that it moves
// (η × noisy steps, the distance Adam can carry a weight) a sixth or a
// third as far as the rule's setting (0.03 × 800), at q = 0.05 or 0.1: a
// trial gets about 0.6 of ε, and at that noise the rule's own movement and
// most of a grid of rates × step counts were worse than the majority class
// on a 15,000 × 100 table with 10 % positives (defaultTuneSpace).
// Tune covers DP-SGD, DPSGD-F, Naïve and DP-FERMI (tunable). A DP-FERMI
// trial's curve adds its one-off noisy group counts (multiplier σ·sqrt(T) when σ is
// given) to its steps; λ is searched at λ/2, λ and 2λ, and a trial is
// scored by its noisy accuracy less its noisy violation of the run's
// fairness notion, both read from one Gaussian release of its per-group
// confusion counts (sensitivity 1), since accuracy alone would always
// prefer the smallest λ (tune_fermi.go). --scope sensitive and the
// paper's calibration are refused.
//
// Every private search, Tune's and those of SteFFLe, objective
// perturbation, post-processing, the oracle learner and budget tailoring,
// runs one loop: Search (search.go). It decides once what their privacy
// rests on: δ's default and check, K's law and its draw from stream
// "tune/trials" of the run's seed, the streams the trials' settings, scores
// and randomised predictions draw from ("tune/choice", "tune/score",
// "tune/coins"), that all K trials run, and that only the best (the first
// of the highest score) is kept; the searches supply a trial (draw, run,
// hold to the plan, score) and their own plan, header line and receipt.
//
// # Where this deviates from DESIGN.md
//
//   - DESIGN puts the CLI-shaped configuration in cmd/. Config stays here
//     because it is not only the flags' shape: it is the "config" record
//     of every report.json, checkpoint and sweep.json (Report.Config,
//     the checkpoint's refusal of a changed setting, CheckSweepSettings),
//     and ReadConfig reads it back so that `--config report.json` repeats
//     a run through the library. NewPrivate lowers PrivateOptions to it,
//     Prepare and the pipelines (linear, tailoring) take it, and the
//     algorithm packages build their own options from it once, where they
//     are constructed (dpsgdf.New's Config, fermi's options): all of these
//     sit below cmd, which nothing may import. What cmd holds is the
//     mapping of flags onto Config. Its settings that take one of a few
//     named values are kinds (kinds.go): AlgoName, DeviceKind, DType and
//     OptimizerName, string types whose constants the code compares
//     against (never literals) and whose one Validate each Config.Validate
//     and the command line's flags use; as strings they keep report.json,
//     checkpoints and old reports read by ReadConfig unchanged. An
//     algorithm's name is a constant of the package that implements it
//     (AlgoSGD and AlgoDPSGD here, fermi.Name, dpsgdf.Name, linear's and
//     tailoring's); the loop names the few it treats specially by
//     unexported constants that a test holds to those packages'.
//   - A package DESIGN's table lacks, devstep, holds the values Device's
//     methods exchange (the DP-SGD step, a clip policy's rule, DP-FERMI's
//     plan and sums): package cuda satisfies Device without importing the
//     loop, so those types must live below both.
//   - DESIGN's package table has no trainer: the loop, the report and the
//     checkpoint writing are shared by `fairdp train`, `fairdp sweep`, the
//     library API and the bench reproductions, and algorithms may not import
//     each other, so the loop lives here and the algorithm packages import
//     it (not the other way round: they register with Register).
//   - DP-SGD lives here, not in dpsgdf ("one loop, three clipping
//     policies"): dpsgdf supplies the two group policies on top of it, so
//     that `--algo dpsgd`, DPSGD-F's Flat policy and the library's DP-SGD
//     are one piece of code.
//   - DESIGN's step path builds a Gorgonia graph with fixed shapes and a
//     row mask. The engine is package nn's own layers with taps, which
//     take any batch size, so a Poisson batch is never padded or split;
//     Gorgonia (package graph) is the independent path the tests check the
//     engine against.
package trainer
