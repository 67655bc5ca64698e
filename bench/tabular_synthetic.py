#!/usr/bin/env python3
"""Synthetic tables for the tabular comparison (bench/results/tabular.md).

usage: python3 bench/tabular_synthetic.py N D POS SEED OUTDIR

Writes OUTDIR/syn_nN_dD_pP_sSEED.csv (header x0..x{D-1},s,y) and its
fairdp schema (.schema.json beside it): D standard-normal features, a label
drawn from a logistic model with weights N(0, 4/D) (so the logit's signal
has variance about 4 whatever D) and the intercept set by bisection so that
the expected positive rate is POS, and a binary sensitive attribute
s = [x0 + N(0, 1) > 0], correlated with the first feature (so a model that
uses x0 has a demographic-parity gap). Needs numpy (Debian python3-numpy).
"""
import json
import sys

import numpy as np


def main():
    n, d, pos, seed, out = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    r = np.random.default_rng(seed)
    x = r.normal(size=(n, d))
    w = r.normal(size=d) * (2.0 / np.sqrt(d))
    m = x @ w
    lo, hi = -20.0, 20.0
    for _ in range(60):
        b = (lo + hi) / 2
        if (1 / (1 + np.exp(-(m + b)))).mean() > pos:
            hi = b
        else:
            lo = b
    y = (r.random(n) < 1 / (1 + np.exp(-(m + b)))).astype(int)
    s = (x[:, 0] + r.normal(size=n) > 0).astype(int)
    name = f"syn_n{n}_d{d}_p{round(pos * 100)}_s{seed}"
    cols = [f"x{j}" for j in range(d)]
    with open(f"{out}/{name}.csv", "w") as f:
        f.write(",".join(cols + ["s", "y"]) + "\n")
        for i in range(n):
            f.write(",".join(f"{v:.5g}" for v in x[i]) + f",{s[i]},{y[i]}\n")
    schema = {"name": name, "files": [f"{name}.csv"], "format": {"header": True},
              "label": {"column": "y", "positive": ["1"], "negative": ["0"], "names": ["neg", "pos"]},
              "sensitive": {"columns": ["s"]}, "numeric": cols}
    with open(f"{out}/{name}.schema.json", "w") as f:
        json.dump(schema, f, indent=1)
    print(name, y.mean())


if __name__ == "__main__":
    main()
