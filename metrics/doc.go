// Package metrics measures what fairdp promises: accuracy for every group,
// not only on average, and how far a model is from demographic parity and
// equalized odds (as defined in Lowy et al. 2022, appendix F.1).
//
// Every trainer reports through the same few functions so that numbers from
// DP-FERMI, DPSGD-F, Jagielski et al. and budget tailoring are comparable:
// Evaluate builds the per-split object of report.json (Split), WriteTable
// prints it for people, DemographicParity and EqualizedOdds give the
// violations the papers tabulate, ERMIDemographicParity / ERMIEqualizedOdds
// give the soft-prediction quantity DP-FERMI regularises, CostOfPrivacy gives
// DPSGD-F's per-group accuracy cost, and MSPE / GroupMSPE serve regression.
// LinePlot, ScatterPlot and ParetoPlot draw the PNG figures of a run.
//
// The package takes plain slices and imports no other fairdp package, so any
// algorithm can use it. Labels, predictions and groups are integers in
// 0..classes-1 and 0..groups-1; Check validates them with errors that name
// the offending field and index. The metric functions treat invalid input as
// a programming error and panic with the same message, like an out-of-range
// slice index: callers validate user data (loaders do) before it gets here.
//
// Undefined quantities are never NaN in a report, because encoding/json
// cannot write NaN: a group without positives has no TPR and one without
// negatives no FPR, and both are then nil (JSON null) and left out of the
// violations; groups with no records are left out of every violation.
package metrics
