#!/usr/bin/env python3
"""Dutch under the old and the new positive label, DPSGD and DPSGD-F, side by side.

The built-in Dutch schema made occupation 5_4_9 the positive class (label 1)
until the loader was corrected to 2_1, the high-level class (ISCO-88 major
groups 1 and 2; bench/results/dutch_label.md). This runs the paper's Dutch
settings (`--preset dpsgdf-dutch`, 37 features; DPSGD 20 epochs, DPSGD-F 19:
equal ε) for each seed under both labels and appends one row per run, for the
encodings ours37 (the preset's 37 features) and cit35 (dutch35-dpsgdf):

  old: --dataset DATA/dutch/dutch.csv --schema bench/results/dutch_encodings/E.json
       (the schema file the earlier rows ran with: label 1 = 5_4_9)
  new: the built-in data set, dutch-dpsgdf or dutch35-dpsgdf (label 1 = 2_1)

Columns: encoding,label,method,epochs,seed,epsilon,total,male,female,baseline_total,
baseline_male,baseline_female,dp_violation,eo_violation,tpr_male,tpr_female,
fpr_male,fpr_female,selection_male,selection_female,command (test split;
TPR, FPR and selection rate are of label 1, so they change meaning with the
label). Rows already in the CSV are skipped.

    nice python3 bench/dutch_label_runs.py --fairdp bin/fairdp --data-dir ../shared/data --seeds 1,2,3
"""
import argparse
import csv
import json
import os
import subprocess
import tempfile

HEADER = ["encoding", "label", "method", "epochs", "seed", "epsilon", "total", "male", "female", "baseline_total",
          "baseline_male", "baseline_female", "dp_violation", "eo_violation", "tpr_male", "tpr_female",
          "fpr_male", "fpr_female", "selection_male", "selection_female", "command"]
EPOCHS = {"dpsgd": 20, "dpsgdf": 19}
BUILTIN = {"ours37": "dutch-dpsgdf", "cit35": "dutch35-dpsgdf"}


def row_from_report(rep):
    t, b = rep["test"], rep["baseline_test"]
    g = {x["group"]: x for x in t["groups"]}
    bg = {x["group"]: x for x in b["groups"]}
    f = lambda v: "%.4f" % v
    return [f(rep["privacy"]["epsilon"]), f(t["accuracy"]), f(g["Male"]["accuracy"]), f(g["Female"]["accuracy"]),
            f(b["accuracy"]), f(bg["Male"]["accuracy"]), f(bg["Female"]["accuracy"]), f(t["dp_violation"]),
            f(t["eo_violation"]), f(g["Male"]["tpr"]), f(g["Female"]["tpr"]), f(g["Male"]["fpr"]),
            f(g["Female"]["fpr"]), f(g["Male"]["selection_rate"]), f(g["Female"]["selection_rate"])]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fairdp", default="bin/fairdp")
    ap.add_argument("--data-dir", default="../shared/data")
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--csv", default="bench/results/dutch_label.csv")
    ap.add_argument("--encodings", default="ours37,cit35")
    o = ap.parse_args()
    done = set()
    if os.path.exists(o.csv):
        with open(o.csv, newline="") as f:
            done = {(r["encoding"], r["label"], r["method"], r["seed"]) for r in csv.DictReader(f)}
    for enc in o.encodings.split(","):
        for seed in o.seeds.split(","):
            for method in ("dpsgd", "dpsgdf"):
                for label in ("old", "new"):
                    if (enc, label, method, seed) not in done:
                        run(o, enc, label, method, seed)


def run(o, enc, label, method, seed):
    schema = "bench/results/dutch_encodings/%s.json" % enc
    data = (["--dataset", os.path.join(o.data_dir, "dutch", "dutch.csv"), "--schema", schema]
            if label == "old" else ["--dataset", BUILTIN[enc], "--data-dir", o.data_dir])
    shown = ["fairdp", "train", "--preset", "dpsgdf-dutch"] + \
        (["--dataset", "DATA/dutch/dutch.csv", "--schema", schema]
         if label == "old" else ["--dataset", BUILTIN[enc], "--data-dir", "DATA"]) + \
        ["--algo", method, "--epochs", str(EPOCHS[method]), "--seed", seed, "--baseline"]
    with tempfile.TemporaryDirectory(prefix="dutch-label-") as out:
        argv = [o.fairdp, "train", "--preset", "dpsgdf-dutch"] + data + \
            ["--algo", method, "--epochs", str(EPOCHS[method]), "--seed", seed, "--baseline", "--out", out]
        subprocess.run(argv, check=True, capture_output=True)
        with open(os.path.join(out, "report.json")) as f:
            rep = json.load(f)
    new = not os.path.exists(o.csv)
    with open(o.csv, "a", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        if new:
            w.writerow(HEADER)
        w.writerow([enc, label, method, EPOCHS[method], seed] + row_from_report(rep) + [" ".join(shown)])
    print(enc, label, method, seed, flush=True)


if __name__ == "__main__":
    main()
