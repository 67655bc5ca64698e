// Package atomicfile writes files so that a crash, a full disk or a killed
// process never leaves a half-written file under the real name, and so that a
// file reported as written survives a power loss.
//
// Every file fairdp produces that a later run or a user relies on (reports,
// checkpoints, a silo's spent privacy budget, sweep tables, plots, caches)
// goes through here, because the privacy contract depends on it: spent budget
// must be on disk before the release it pays for leaves the process. A file
// is written under a temporary name in the target directory, synced, renamed
// over the target and the directory is synced, so the name holds either the
// old contents or the complete new ones.
package atomicfile
