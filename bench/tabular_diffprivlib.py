#!/usr/bin/env python3
"""The Python half of bench/tabular_test.go (TestTabularObjPert).

Reads the splits the Go half wrote (label, encoded features, group per row)
and fits scikit-learn's non-private LogisticRegression and IBM diffprivlib's
LogisticRegression(epsilon, data_norm=B, C=1) on exactly those features, B
being the row bound objpert used (objpert.csv). Writes
DIR/diffprivlib.csv and prints the side-by-side table of mean test errors.

usage: PYTHONPATH=<diffprivlib source> python3 bench/tabular_diffprivlib.py DIR
"""
import csv
import math
import sys
import warnings
from collections import defaultdict

import numpy as np
from sklearn.linear_model import LogisticRegression as SkLR

import sklearn
import diffprivlib
import diffprivlib.models.logistic_regression as dplr
from diffprivlib.models import LogisticRegression as DpLR


def average_loss_shim():
    """diffprivlib 0.6.6 needs scikit-learn >= 1.4, whose LinearModelLoss
    averages the per-sample losses; Debian's 1.2 sums them, which would
    shrink diffprivlib's noise term b.w/n by a further factor n. With 1.2,
    give it normalised sample weights: the same average, penalty unchanged."""
    major, minor = (int(v) for v in sklearn.__version__.split(".")[:2])
    if (major, minor) >= (1, 4):
        return False

    class AveragingLoss(dplr.LinearModelLoss):
        def loss_gradient(self, coef, X, y, sample_weight=None, l2_reg_strength=0.0, **kw):
            sw = np.ones(X.shape[0]) if sample_weight is None else np.asarray(sample_weight, dtype=float)
            return super().loss_gradient(coef, X, y, sample_weight=sw / sw.sum(),
                                         l2_reg_strength=l2_reg_strength, **kw)

    dplr.LinearModelLoss = AveragingLoss
    return True


def load(path):
    a = np.loadtxt(path, delimiter=",")
    return a[:, 1:-1], a[:, 0].astype(int)


def main(out):
    shim = average_loss_shim()
    rows = list(csv.DictReader(open(f"{out}/objpert.csv")))
    ours = defaultdict(list)
    bound = {}
    for r in rows:
        key = (r["dataset"], float(r["epsilon"]))
        ours[key].append(float(r["test_error"]))
        bound[(r["dataset"], int(r["seed"]))] = float(r["row_bound"])
    theirs = defaultdict(list)
    with open(f"{out}/diffprivlib.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["dataset", "seed", "epsilon", "row_bound", "model", "test_error"])
        for (ds, seed), b in sorted(bound.items()):
            xtr, ytr = load(f"{out}/{ds}_{seed}_train.csv")
            xte, yte = load(f"{out}/{ds}_{seed}_test.csv")
            sk = SkLR(max_iter=5000).fit(xtr, ytr)
            err = 1 - sk.score(xte, yte)
            theirs[(ds, math.inf)].append(err)
            w.writerow([ds, seed, "inf", b, "sklearn", f"{err:.6f}"])
            for eps in sorted({k[1] for k in ours if k[0] == ds and k[1] != math.inf}):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    dp = DpLR(epsilon=eps, data_norm=b, random_state=seed).fit(xtr, ytr)
                err = 1 - dp.score(xte, yte)
                theirs[(ds, eps)].append(err)
                w.writerow([ds, seed, eps, b, "diffprivlib", f"{err:.6f}"])
    print(f"diffprivlib {diffprivlib.__version__}, scikit-learn {sklearn.__version__}"
          f"{' with the averaging-loss shim' if shim else ''}; mean test error over seeds")
    print("dataset  epsilon  objpert  diffprivlib(inf: sklearn)  objpert-minus-other")
    for key in sorted(ours):
        a, b = np.mean(ours[key]), np.mean(theirs[key])
        print(f"{key[0]:8} {key[1]:7} {a:.4f}   {b:.4f}   {a - b:+.4f}  (n={len(ours[key])})")


if __name__ == "__main__":
    main(sys.argv[1])
