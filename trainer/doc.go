// Package trainer runs one training job end to end: data, model, the
// algorithm's steps, per-epoch evaluation, the progress line, and the results
// contract (report.json, metrics.jsonl, model.ckpt) with its privacy receipt.
//
// It is not in DESIGN.md's first sketch: the loop, the report and the
// checkpoint writing are shared by `fairdp train`, `fairdp sweep` and the
// bench reproductions, and algorithms may not import each other, so the loop
// lives here and each algorithm (non-private SGD, DP-SGD, and later DPSGD-F,
// DP-FERMI, …) plugs in through the Algorithm interface.
//
// What a run writes follows the receipt: a private run releases only noised
// quantities and what DeclareNotCovered and the algorithm's NotCoverer list
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
// (linear.RunJagielski), budget tailoring and DPNoSE (tailoring.Run) and
// `fairdp eval` (EvalReport). Its JSON Schema is report.schema.json
// (ReportSchema); tests validate every algorithm's output against it.
// Report.Config is the configuration actually run, with snake_case keys
// (Config's json tags; JagielskiConfig and TailoringConfig hold the
// pipelines' own settings), so ReadConfig repeats a run from its report;
// DecodeConfig also reads the Go field names reports had before. Extra
// holds each family's typed results under its key (extra.fermi,
// extra.steffle, extra.jagielski, extra.tailoring, extra.eval).
//
// One sweep runner: Sweep runs a grid Workers at a time, training SGD-family
// runs itself or calling Sweep.Pipeline for the pipelines that are not
// Algorithms (post-processing, the oracle learner); SweepLog is the
// resumable, fsynced sweep.csv and CheckSweepSettings the sweep.json that
// keeps a resumed sweep on the same settings.
package trainer
