#!/usr/bin/env python3
"""Expected test error of a private threshold choice after objpert.

usage: python3 bench/objpert_intercept.py DIR/objpert_intercept.csv

Reads the rows of bench/objpert_intercept_test.go (per seed, ε and share s:
the training and test errors of objpert's default, fitted at ε(1 − s), with
its logit shifted by each value of a public grid) and prints, per data set
and ε, the mean test error of the model as fitted (shift 0, s = 0) and the
expected test error when the exponential mechanism (McSherry and Talwar
2007) chooses the shift at ε·s from the training errors (utility −errors,
sensitivity 1 under replace-one neighbours: P(k) ∝ π_k exp(−ε·s·err_k/2)),
with a uniform base measure π (bonus 0) or shift 0 favoured by e^bonus
(still ε·s-DP: the base measure is public). Also the best shift on the test
split (an oracle, not private). Standard library only.
"""
import collections
import csv
import math
import statistics
import sys


def expected(tr, te, nte, eps, bonus, zero):
    best = min(tr)
    w = [math.exp(-eps * (e - best) / 2 + (bonus if k == zero else 0)) for k, e in enumerate(tr)]
    return sum(wk * te[k] / nte for k, wk in enumerate(w)) / sum(w)


def main():
    rows = collections.defaultdict(list)
    for r in csv.DictReader(open(sys.argv[1])):
        shifts = [float(v) for v in r["shifts"].split()]
        tr = [int(v) for v in r["train_errors"].split()]
        te = [int(v) for v in r["test_errors"].split()]
        rows[(r["dataset"], float(r["epsilon"]))].append((float(r["share"]), int(r["test_records"]), shifts.index(0.0), tr, te))
    rules = [(0.05, 0), (0.05, 3), (0.1, 0), (0.1, 3)]
    print("| data | ε | model (s = 0) | oracle shift | " + " | ".join(f"s = {s:g}, bonus {b:g}" for s, b in rules) + " |")
    print("|---|---|---|---|" + "---|" * len(rules))
    for (ds, eps), v in sorted(rows.items()):
        base = [te[z] / n for s, n, z, tr, te in v if s == 0]
        oracle = [min(te) / n for s, n, z, tr, te in v if s == 0]
        cells = []
        for share, bonus in rules:
            e = [expected(tr, te, n, eps * s, bonus, z) for s, n, z, tr, te in v if abs(s - share) < 1e-12]
            cells.append(f"{statistics.mean(e):.4f} ({statistics.mean(e) - statistics.mean(base):+.4f})" if e else "")
        print(f"| {ds} | {eps:g} | {statistics.mean(base):.4f} | {statistics.mean(oracle):.4f} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
