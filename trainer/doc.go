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
package trainer
