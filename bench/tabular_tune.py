#!/usr/bin/env python3
"""DP-SGD's default against `--tune` on the tables of bench/results/tabular.md.

usage: python3 bench/tabular_tune.py FAIRDP SYN CSV [variant ...]

Runs `FAIRDP train --algo dpsgd [--tune] --dataset D [--schema S] --epsilon E
--seed S --quiet --out DIR` one at a time (seed s: split seed s and noise
seed s, as the earlier sections of tabular.md) for every table, ε in
{0.5, 1, 4} and seed in {1, 2, 3}, and appends one row per run to CSV;
rows already in CSV are skipped, so an interrupted run resumes. SYN is
the folder of bench/tabular_synthetic.py's tables (N D POS 1). variant is
"default" and/or "tune" (both when none is given). FAIRDP_TUNE_SETS (comma
separated table names as in the CSV's data column) and FAIRDP_TUNE_EPS
restrict the runs; FAIRDP_TUNE_SEEDS (comma separated, default 1,2,3) sets
the seeds; FAIRDP_TUNE_ALGO runs another algorithm than dpsgd (fermi: the
chosen column then names λ too). The majority class's error is computed
from the test split's counts in report.json. Needs only the standard
library.
"""
import csv
import json
import os
import sys
import tempfile

from tabular_runs import majority_error, resume_csv, run_train

SYNTH = ["syn_n500_d5_p50_s1", "syn_n5000_d20_p25_s1", "syn_n20000_d100_p10_s1", "syn_n50000_d10_p5_s1"]
BUILTIN = ["communities", "parkinsons", "credit", "dutch", "adult"]
FIELDS = ["variant", "data", "epsilon", "seed", "error", "majority", "selection_rate", "dp_violation", "chosen", "trials",
          "seconds"]


def main():
    fairdp, syn, out = sys.argv[1], sys.argv[2], sys.argv[3]
    variants = sys.argv[4:] or ["default", "tune"]
    sets = [(b, ["--dataset", b]) for b in BUILTIN]
    sets += [(s, ["--dataset", f"{syn}/{s}.csv", "--schema", f"{syn}/{s}.schema.json"]) for s in SYNTH]
    if os.environ.get("FAIRDP_TUNE_SETS"):
        keep = os.environ["FAIRDP_TUNE_SETS"].split(",")
        sets = [s for s in sets if s[0] in keep]
    eps = os.environ.get("FAIRDP_TUNE_EPS", "0.5,1,4").split(",")
    seeds = os.environ.get("FAIRDP_TUNE_SEEDS", "1,2,3").split(",")
    algo = os.environ.get("FAIRDP_TUNE_ALGO", "dpsgd")
    done = resume_csv(out, FIELDS)
    for variant in variants:
        for name, args in sets:
            for e in eps:
                for seed in seeds:
                    if (variant, name, e, seed) in done:
                        continue
                    with tempfile.TemporaryDirectory() as d:
                        cmd = [fairdp, "train", "--algo", algo] + (["--tune"] if variant == "tune" else [])
                        cmd += args + ["--epsilon", e, "--seed", seed, "--quiet", "--out", d]
                        rep, secs = run_train(cmd, d)
                        if rep is None:
                            continue
                    t = rep["test"]
                    tune = rep.get("extra", {}).get("tune", {})
                    c = tune.get("chosen")
                    chosen = f"lr {c['lr']:.4g} epochs {c['epochs']} batch {c['batch']} clip {c['clip']:.4g}" if c else \
                        f"lr {rep['lr']:.4g} epochs {rep['epochs']} batch {rep['batch']} clip {rep['config']['privacy']['clip']:.4g}"
                    if algo == "fermi":
                        chosen += f" lambda {c['lambda'] if c else rep['config']['fair']['lambda']:.4g}"
                    row = [variant, name, e, seed, f"{t['error']:.4f}", majority_error(t["overall"]),
                           f"{t['overall']['selection_rate']:.4f}", f"{t.get('dp_violation', 0):.4f}", chosen,
                           tune.get("trials", ""), f"{secs:.1f}"]
                    with open(out, "a", newline="") as f:
                        csv.writer(f).writerow(row)
                    print(",".join(str(x) for x in row), flush=True)


if __name__ == "__main__":
    main()
