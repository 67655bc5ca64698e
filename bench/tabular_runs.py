#!/usr/bin/env python3
"""Default runs of fairdp's private algorithms on tabular data, one CSV row each.

usage: python3 bench/tabular_runs.py --bin BIN --out CSV --algos dpsgdf,naive
           --sets communities,parkinsons,DIR/syn_n500_d5_p50_s1.csv --eps 0.5,1,4 --seeds 1,2,3
           [--data-dir ../shared/data] [--work DIR] [--extra "--flag value"]

Runs `BIN train --algo A --dataset D [--schema S] --epsilon E --seed S --quiet --out DIR` for every
combination (a CSV path takes the schema beside it, NAME.schema.json), with no other flag: these are
the defaults a new user meets. Seed s seeds the split and the noise, so seed s has the same test split
as every other row of bench/results/tabular*.csv with seed s. Appends one row per run to CSV with the
columns of tabular_more_runs.csv (tag,data,flags,error,majority,sel,dp_violation,eo_violation,seconds)
and skips rows already there, so an interrupted sweep resumes.

The majority class's test error is derived from the report's overall rates: the positive rate p solves
selection = TPR·p + FPR·(1 − p); where the model predicts one class (TPR = FPR) it cannot be, and the
column is left empty (the same split's majority is in the other rows with that seed).
"""
import argparse
import csv
import json
import os
import shlex
import subprocess
import sys
import time

COLUMNS = ["tag", "data", "flags", "error", "majority", "sel", "dp_violation", "eo_violation", "seconds"]


def majority_error(overall):
    """The majority class's test error, derived from a report's overall accuracy, TPR, FPR and selection rate.

    The positive fraction p solves both sel = p*tpr + (1-p)*fpr and acc = p*tpr + (1-p)*(1-fpr); the first has no
    answer for a one-class model (tpr = fpr), the second none for a model at balanced accuracy one half
    (tpr + fpr = 1), so the better-conditioned one is used. Empty when neither is (a model both one-class and at
    chance cannot say)."""
    tpr, fpr = overall["tpr"], overall["fpr"]
    by_sel, by_acc = tpr - fpr, tpr - 1 + fpr
    if max(abs(by_sel), abs(by_acc)) < 1e-12:
        return ""
    if abs(by_sel) >= abs(by_acc):
        p = (overall["selection_rate"] - fpr) / by_sel
    else:
        p = (overall["accuracy"] - 1 + fpr) / by_acc
    return "%.4f" % min(p, 1 - p)


def run_train(cmd, out):
    """Runs a `fairdp train` command line writing to folder out; returns its report.json and the seconds it took, or
    (None, seconds) after printing why when it failed."""
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True)
    secs = time.time() - t0
    if p.returncode != 0:
        print("FAILED:", " ".join(cmd), p.stderr[-2000:], file=sys.stderr)
        return None, secs
    with open(os.path.join(out, "report.json")) as f:
        return json.load(f), secs


def resume_csv(out, fields):
    """The (variant, data, epsilon, seed) keys of the rows already in the results file out (so an interrupted sweep
    resumes), after creating it with the header fields when it does not exist."""
    if os.path.exists(out):
        with open(out) as f:
            return {(r["variant"], r["data"], r["epsilon"], r["seed"]) for r in csv.DictReader(f)}
    with open(out, "w", newline="") as f:
        csv.writer(f).writerow(fields)
    return set()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--algos", required=True)
    ap.add_argument("--sets", required=True)
    ap.add_argument("--eps", default="0.5,1,4")
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--data-dir", default="../shared/data")
    ap.add_argument("--work", default="tabular_runs_work")
    ap.add_argument("--extra", default="")
    ap.add_argument("--tag-suffix", default="")
    a = ap.parse_args()

    done = set()
    if os.path.exists(a.out):
        with open(a.out) as f:
            for r in csv.DictReader(f):
                done.add((r["tag"], r["data"], r["flags"]))
    new = not os.path.exists(a.out)
    out = open(a.out, "a", newline="")
    w = csv.DictWriter(out, COLUMNS)
    if new:
        w.writeheader()
    for algo in a.algos.split(","):
        for eps in a.eps.split(","):
            for data in a.sets.split(","):
                if data.endswith(".csv"):
                    dflags = ["--dataset", data, "--schema", data[:-4] + ".schema.json"]
                else:
                    dflags = ["--dataset", data, "--data-dir", a.data_dir]
                dcol = " ".join(dflags[:4] if data.endswith(".csv") else dflags[:2])
                for seed in a.seeds.split(","):
                    flags = ["--algo", algo, "--epsilon", eps, "--seed", seed] + shlex.split(a.extra)
                    tag = "%s-default-e%s%s" % (algo, eps, a.tag_suffix)
                    key = (tag, dcol, " ".join(flags))
                    if key in done:
                        continue
                    rundir = os.path.join(a.work, "%s_%s_e%s_s%s%s" % (
                        algo, os.path.basename(data).replace(".csv", ""), eps, seed, a.tag_suffix))
                    cmd = [a.bin, "train"] + dflags + flags + ["--quiet", "--overwrite", "--out", rundir]
                    rep, secs = run_train(cmd, rundir)
                    if rep is None:
                        continue
                    t = rep["test"]
                    w.writerow({"tag": tag, "data": dcol, "flags": " ".join(flags),
                                "error": "%.4f" % t["error"], "majority": majority_error(t["overall"]),
                                "sel": "%.4f" % t["overall"]["selection_rate"],
                                "dp_violation": "%.4f" % t["dp_violation"],
                                "eo_violation": "%.4f" % t["eo_violation"], "seconds": "%.1f" % secs})
                    out.flush()
                    print(tag, dcol, seed, "%.4f" % t["error"], "%.0fs" % secs, flush=True)


if __name__ == "__main__":
    main()
