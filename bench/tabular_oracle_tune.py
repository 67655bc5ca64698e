#!/usr/bin/env python3
"""The DP oracle learner's default against its `--fallback error` and its `--tune` search.

usage: python3 bench/tabular_oracle_tune.py FAIRDP SYN CSV [variant ...]

Runs `FAIRDP train --algo oracle [--fallback error | --tune] --dataset D
[--schema S] --epsilon E --seed S --quiet --out DIR` (seed s: split seed s
and noise seed s) for Adult and the 3,750-record synthetic table
(SYN/syn_n5000_d20_p25_s1.csv), and appends one row per run to CSV with the
expected test error and violations over the mixture's coins
(extra.jagielski.expected_test) and the majority class's test error (from
the report's sampled test rates, tabular_runs.majority_error); rows already
in CSV are skipped, so an interrupted run resumes. variant is "default",
"fallback" and/or "tune" (all three when none is given).
FAIRDP_ORACLE_TUNE_EPS (default 1) and FAIRDP_ORACLE_TUNE_SEEDS (default
1,2,3) set ε and the seeds. Needs only the standard library.
"""
import csv
import itertools
import os
import sys
import tempfile

from tabular_runs import majority_error, resume_csv, run_train

FIELDS = ["variant", "data", "epsilon", "seed", "error", "dp_violation", "eo_violation", "majority_error", "chosen",
          "trials", "seconds"]
FLAGS = {"default": [], "fallback": ["--fallback", "error"], "tune": ["--tune"]}


def main():
    fairdp, syn, out = sys.argv[1], sys.argv[2], sys.argv[3]
    variants = sys.argv[4:] or list(FLAGS)
    s = "syn_n5000_d20_p25_s1"
    sets = [("adult", ["--dataset", "adult"]),
            (s, ["--dataset", f"{syn}/{s}.csv", "--schema", f"{syn}/{s}.schema.json"])]
    eps = os.environ.get("FAIRDP_ORACLE_TUNE_EPS", "1").split(",")
    seeds = os.environ.get("FAIRDP_ORACLE_TUNE_SEEDS", "1,2,3").split(",")
    done = resume_csv(out, FIELDS)
    for variant, (name, args), e, seed in itertools.product(variants, sets, eps, seeds):
        if (variant, name, e, seed) in done:
            continue
        with tempfile.TemporaryDirectory() as d:
            cmd = [fairdp, "train", "--algo", "oracle"] + FLAGS[variant]
            cmd += args + ["--epsilon", e, "--seed", seed, "--quiet", "--out", d]
            rep, secs = run_train(cmd, d)
            if rep is None:
                continue
        t = rep["extra"]["jagielski"]["expected_test"]
        tune = rep.get("extra", {}).get("tune", {})
        c = tune.get("chosen")
        chosen = (f"rounds {c['rounds']} bound {c['bound']:g} eta {c['eta']:g} fallback {c['fallback']} "
                  f"eps' {c['per_round_epsilon']:.4g}") if c else ""
        row = [variant, name, e, seed, f"{t['error']:.4f}", f"{t['dp_violation']:.4f}", f"{t['eo_violation']:.4f}",
               majority_error(rep["test"]["overall"]), chosen, tune.get("trials", ""), f"{secs:.1f}"]
        with open(out, "a", newline="") as f:
            csv.writer(f).writerow(row)
        print(",".join(str(x) for x in row), flush=True)


if __name__ == "__main__":
    main()
