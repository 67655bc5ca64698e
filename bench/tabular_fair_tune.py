#!/usr/bin/env python3
"""The private fair pipeline's default against its `--tune` search.

usage: python3 bench/tabular_fair_tune.py FAIRDP SYN CSV [variant ...]

Runs `FAIRDP train --algo postproc --base dpsgd --fairness dp [--tune]
--dataset D [--schema S] --epsilon E --seed S --quiet --out DIR` (the
README's recommended fair model; seed s: split seed s and noise seed s, as
the earlier sections of bench/results/tabular.md) and, as the unfair
private model on the same split, `--algo objpert`, for Adult and the
3,750-record synthetic table (SYN/syn_n5000_d20_p25_s1.csv, from
bench/tabular_synthetic.py 5000 20 0.25 1), and appends one row per run to
CSV; rows already in CSV are skipped, so an interrupted run resumes.
variant is "objpert", "default" and/or "tune" (all three when none is
given). FAIRDP_FAIR_TUNE_EPS (default 1) and FAIRDP_FAIR_TUNE_SEEDS
(default 1,2,3) set ε and the seeds; FAIRDP_FAIR_TUNE_BASE the base
(default dpsgd). FAIRDP_FAIR_TUNE_ARGS (space separated) are added to the
tuned runs' flags (e.g. "--tune-trials 5") and FAIRDP_FAIR_TUNE_LABEL
names their variant in the CSV (default "tune"). The errors and violations are the expected ones over the
post-processed model's coins (extra.jagielski.expected_test). Needs only the
standard library.
"""
import csv
import itertools
import os
import sys
import tempfile

from tabular_runs import resume_csv, run_train

FIELDS = ["variant", "data", "epsilon", "seed", "error", "dp_violation", "eo_violation", "chosen", "trials", "seconds"]


def main():
    fairdp, syn, out = sys.argv[1], sys.argv[2], sys.argv[3]
    variants = sys.argv[4:] or ["objpert", "default", "tune"]
    s = "syn_n5000_d20_p25_s1"
    sets = [("adult", ["--dataset", "adult"]),
            (s, ["--dataset", f"{syn}/{s}.csv", "--schema", f"{syn}/{s}.schema.json"])]
    eps = os.environ.get("FAIRDP_FAIR_TUNE_EPS", "1").split(",")
    seeds = os.environ.get("FAIRDP_FAIR_TUNE_SEEDS", "1,2,3").split(",")
    base = os.environ.get("FAIRDP_FAIR_TUNE_BASE", "dpsgd")
    extra = os.environ.get("FAIRDP_FAIR_TUNE_ARGS", "").split()
    label = os.environ.get("FAIRDP_FAIR_TUNE_LABEL", "tune")
    done = resume_csv(out, FIELDS)
    for variant, (name, args), e, seed in itertools.product(variants, sets, eps, seeds):
        name_v = label if variant == "tune" else variant
        if (name_v, name, e, seed) in done:
            continue
        with tempfile.TemporaryDirectory() as d:
            if variant == "objpert":
                cmd = [fairdp, "train", "--algo", "objpert"]
            else:
                cmd = [fairdp, "train", "--algo", "postproc", "--base", base, "--fairness", "dp"]
                cmd += ["--tune"] + extra if variant == "tune" else []
            cmd += args + ["--epsilon", e, "--seed", seed, "--quiet", "--out", d]
            rep, secs = run_train(cmd, d)
            if rep is None:
                continue
        if variant == "objpert":
            t = rep["test"]
            err, dp, eo = t["error"], t.get("dp_violation", 0), t.get("eo_violation", 0)
        else:
            t = rep["extra"]["jagielski"]["expected_test"]
            err, dp, eo = t["error"], t["dp_violation"], t["eo_violation"]
        tune = rep.get("extra", {}).get("tune", {})
        c = tune.get("chosen")
        chosen = (f"base share {c['base_share']:g} bins {c['bins']} gamma share {c['gamma_share']:g} "
                  f"slack {c['slack']} trial eps {c['trial_epsilon']:.4g}") if c else ""
        row = [name_v, name, e, seed, f"{err:.4f}", f"{dp:.4f}", f"{eo:.4f}", chosen, tune.get("trials", ""),
               f"{secs:.1f}"]
        with open(out, "a", newline="") as f:
            csv.writer(f).writerow(row)
        print(",".join(str(x) for x in row), flush=True)


if __name__ == "__main__":
    main()
