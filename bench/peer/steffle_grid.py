#!/usr/bin/env python3
"""The SteFFLe grid, the authors' code and fairdp side by side, resumable.

Runs Credit for every (N, h, seed) of the grid with ε = 1 and appends one row
per run to the CSV (columns source,N,h,epsilon,seed,error,violation,command):
source "authors" is bench/peer/steffle_authors.py (the authors' public code,
run from an unpacked snapshot: --src), source "fairdp" is `fairdp train
--preset steffle-credit-authors --calibration accountant` (the preset's own
Theorem 6 calibration is refused at ε = 1 by fairdp's accountant:
bench/results/steffle_authors_code.md). Both report the test error and
demographic-parity violation averaged over the checkpoints after epochs 20,
30, …, 60 (N = 1: 15 epochs, after epochs 6, 9, 12, 15).

Rows already in the CSV (same source, N, h, ε, seed) are skipped, so an
interrupted grid resumes; seeds are the outer loop, and within a seed the
cells run extremes first (h = 0 and 0.9), so a partial grid is still a
comparison. Each run's details (checkpoint lists, noise, the code's group
maps per silo) go to the --details JSON-lines file.

    SRC=$(mktemp -d)
    git --git-dir=<mirror of the authors' repository> archive HEAD '*.py' | tar x -C $SRC
    nice /usr/bin/python3 bench/peer/steffle_grid.py --source authors --src $SRC --seeds 1
    nice /usr/bin/python3 bench/peer/steffle_grid.py --source fairdp --seeds 1
"""
import argparse
import csv
import fcntl
import json
import os
import subprocess
import sys
import tempfile

HEADER = ["source", "N", "h", "epsilon", "seed", "error", "violation", "command"]


def cells(silos, hs):
    first = [h for h in hs if h in (0.0, 0.9)]
    rest = [h for h in hs if h not in first]
    order_n = [n for n in (3, 12, 1, 6) if n in silos] + [n for n in silos if n not in (3, 12, 1, 6)]
    return [(n, h) for h in first + rest for n in order_n]


def fmt(x):
    return ("%g" % x)


def done_keys(path):
    keys = set()
    if os.path.exists(path):
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                keys.add((r["source"], int(r["N"]), float(r["h"]), float(r["epsilon"]), int(r["seed"])))
    return keys


def append(path, row, details_path, details):
    new = not os.path.exists(path) or os.path.getsize(path) == 0
    with open(path, "a", newline="") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        w = csv.writer(f, lineterminator="\n")
        if new:
            w.writerow(HEADER)
        w.writerow(row)
    with open(details_path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.write(json.dumps(details) + "\n")


def run_authors(o, n, h, eps, seed):
    # The code orders its features by a Python set (args of get_dummies and
    # the model's input), so the hash seed fixes the column order and with it
    # the run: pinned to the seed (rows without it in their command ran with
    # a random one).
    shown = ["PYTHONHASHSEED=%d" % seed, "/usr/bin/python3", "bench/peer/steffle_authors.py", "--src", "$SRC", "--credit", o.credit_shown,
             "--workdir", "$WORK", "--silos", str(n), "--heterogeneity", fmt(h), "--epsilon", fmt(eps),
             "--seed", str(seed)] + o.authors_args
    argv = [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "steffle_authors.py"),
            "--src", o.src, "--credit", o.credit, "--workdir", o.workdir] + shown[9:]
    env = dict(os.environ, PYTHONHASHSEED=str(seed))
    p = subprocess.run(argv, capture_output=True, text=True, env=env)
    res = [l for l in p.stdout.splitlines() if l.startswith("RESULT ")]
    if p.returncode != 0 or not res:
        raise RuntimeError(f"authors N={n} h={h} seed={seed}: rc {p.returncode}\n{p.stderr[-3000:]}")
    r = json.loads(res[-1][len("RESULT "):])
    return r["error"], r["violation"], " ".join(shown), r


def run_fairdp(o, n, h, eps, seed):
    extra = ["--epochs", "15", "--average-every", "3", "--average-from", "6", "--lr-decay-every", "5"] if n == 1 else []
    shown = ["bin/fairdp", "train", "--preset", "steffle-credit-authors", "--calibration", "accountant",
             "--silos", str(n), "--heterogeneity", fmt(h), "--epsilon", fmt(eps), "--seed", str(seed)] + extra
    with tempfile.TemporaryDirectory(prefix="steffle-fd-") as out:
        argv = [o.fairdp] + shown[1:] + ["--out", out]
        p = subprocess.run(argv, capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"fairdp N={n} h={h} seed={seed}: rc {p.returncode}\n{p.stderr[-3000:]}")
        with open(os.path.join(out, "report.json")) as f:
            rep = json.load(f)
    ca = rep["extra"]["steffle"]["checkpoint_average"]
    det = {"checkpoint_epochs": ca["epochs"], "last_error": rep["test"]["error"],
           "last_violation": rep["test"]["dp_violation"], "epsilon_spent": rep["privacy"].get("epsilon")}
    return ca["test_error"], ca["test_dp_violation"], " ".join(shown + ["--out", "$OUT"]), det


def table(path):
    """The CSV as markdown: error / violation per (source, N) and h, mean over seeds (count in brackets)."""
    rows = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            rows.setdefault((r["source"], int(r["N"]), float(r["h"])), []).append(
                (float(r["error"]), float(r["violation"])))
    hs = sorted({k[2] for k in rows})
    print("| source | N | " + " | ".join("h = %g" % h for h in hs) + " |")
    print("|---|---|" + "---|" * len(hs))
    for src, n in sorted({(k[0], k[1]) for k in rows}):
        cellv = []
        for h in hs:
            v = rows.get((src, n, h))
            if not v:
                cellv.append("—")
                continue
            e = sum(x[0] for x in v) / len(v)
            d = sum(x[1] for x in v) / len(v)
            cellv.append("%.4f / %.4f%s" % (e, d, "" if len(v) == 1 else " (%d)" % len(v)))
        print("| %s | %d | %s |" % (src, n, " | ".join(cellv)))


def read_cells(path):
    """The CSV as {source: {(N, h, seed): (error, violation)}}."""
    rows = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            rows.setdefault(r["source"], {})[(int(r["N"]), float(r["h"]), int(r["seed"]))] = (
                float(r["error"]), float(r["violation"]))
    return rows


def effects(path, pairs_n=((1, 12), (3, 12)), pairs_h=((0.0, 0.9),)):
    """Seed-paired effects of N and h per source, against the seeds' own spread.

    For each source it prints the pooled within-cell standard deviation over
    seeds (error and violation; cells with ≥ 2 seeds) and, for each pair of
    N at fixed h and each pair of h at fixed N, the per-seed differences
    (seeds present in both cells), their mean and whether every seed moves
    the same way.
    """
    rows = read_cells(path)
    for src in sorted(rows):
        cells = rows[src]
        by_cell = {}
        for (n, h, seed), v in cells.items():
            by_cell.setdefault((n, h), []).append(v)
        ss, dof = [0.0, 0.0], 0
        for vs in by_cell.values():
            if len(vs) < 2:
                continue
            for j in (0, 1):
                m = sum(v[j] for v in vs) / len(vs)
                ss[j] += sum((v[j] - m) ** 2 for v in vs)
            dof += len(vs) - 1
        sd = "n/a" if dof == 0 else "error %.4f, violation %.4f (%d degrees of freedom)" % (
            (ss[0] / dof) ** 0.5, (ss[1] / dof) ** 0.5, dof)
        print("%s: seed-to-seed SD within a cell: %s" % (src, sd))
        comps = [((a, h), (b, h)) for h in sorted({k[1] for k in by_cell}) for a, b in pairs_n] + \
            [((n, a), (n, b)) for n in sorted({k[0] for k in by_cell}) for a, b in pairs_h]
        for c0, c1 in comps:
            seeds = sorted({k[2] for k in cells if k[:2] == c0} & {k[2] for k in cells if k[:2] == c1})
            if not seeds:
                continue
            for j, what in ((0, "error"), (1, "violation")):
                d = [cells[c1 + (s_,)][j] - cells[c0 + (s_,)][j] for s_ in seeds]
                same = len(d) > 1 and (all(x > 0 for x in d) or all(x < 0 for x in d))
                print("  N %d→%d, h %g→%g, %s: mean %+.4f over seeds %s (%s)%s" % (
                    c0[0], c1[0], c0[1], c1[1], what, sum(d) / len(d), ",".join(map(str, seeds)),
                    " ".join("%+.4f" % x for x in d), "; every seed the same sign" if same else ""))


def trends(path, silos=(3, 6, 12)):
    """The grid's N and h trends per source: per-seed least-squares slopes, then their mean over seeds.

    The paper's claim is that error and violation grow with N and with h. For
    each source and seed with a full block (every N in silos × every h of
    the CSV), a two-way fit metric ~ a + b·log2(N) + c·h over that block
    gives the seed's slopes b (per doubling of N) and c (per unit of h); the
    mean over seeds and their standard error say whether a trend stands out
    of the seed noise. N = 1 is left out: it runs the code's 15-epoch
    schedule, not the 60 epochs of N > 1, and h has no meaning for one silo.
    """
    import math
    rows = read_cells(path)
    for src in sorted(rows):
        cells = rows[src]
        hs = sorted({k[1] for k in cells})
        per_seed = []
        for seed in sorted({k[2] for k in cells}):
            block = [(n, h) for n in silos for h in hs]
            if len(hs) < 2 or any((n, h, seed) not in cells for n, h in block):
                continue
            xs = [(math.log2(n), h) for n, h in block]
            mx = [sum(x[i] for x in xs) / len(xs) for i in (0, 1)]
            # The block is a full factorial, so the two centred regressors are orthogonal and each slope is
            # its own one-variable fit.
            slopes = []
            for j in (0, 1):
                ys = [cells[(n, h, seed)][j] for n, h in block]
                my = sum(ys) / len(ys)
                slopes.append([sum((x[i] - mx[i]) * (y - my) for x, y in zip(xs, ys)) /
                               sum((x[i] - mx[i]) ** 2 for x in xs) for i in (0, 1)])
            per_seed.append((seed, slopes))
        if not per_seed:
            print("%s: no seed with every N in %s at every h %s" % (src, silos, hs))
            continue
        print("%s: %d seed(s) with the full block N %s × h %s" % (
            src, len(per_seed), ",".join(map(str, silos)), ",".join("%g" % h for h in hs)))
        for j, what in ((0, "error"), (1, "violation")):
            for i, per in ((0, "per doubling of N"), (1, "per unit of h")):
                v = [sl[j][i] for _, sl in per_seed]
                m = sum(v) / len(v)
                se = (sum((x - m) ** 2 for x in v) / (len(v) - 1) / len(v)) ** 0.5 if len(v) > 1 else float("nan")
                print("  %s %s: mean slope %+.4f (standard error %.4f; seeds %s)" % (
                    what, per, m, se, " ".join("%+.4f" % x for x in v)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--source", choices=["authors", "fairdp"])
    ap.add_argument("--table", action="store_true", help="print the CSV as a markdown table and stop")
    ap.add_argument("--effects", action="store_true", help="print the seed-paired N and h effects and stop")
    ap.add_argument("--trends", action="store_true", help="print the per-seed N and h slopes over the full grid and stop")
    ap.add_argument("--csv", default="bench/results/steffle_authors_code.csv")
    ap.add_argument("--details", default="bench/results/steffle_authors_code_runs.jsonl")
    ap.add_argument("--src", help="unpacked snapshot of the authors' code (source authors)")
    ap.add_argument("--credit", default="../shared/data/credit_default/credit_card_clients_named.csv")
    ap.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "steffle-authors-work"))
    ap.add_argument("--fairdp", default="bin/fairdp")
    ap.add_argument("--silos", default="1,3,6,12")
    ap.add_argument("--h", default="0,0.25,0.5,0.75,0.9")
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--tag", default="", help="appended to the source name (a variant of the settings)")
    ap.add_argument("--lam", type=float, help="source authors: the code's λ (default: the preset's 0.5)")
    ap.add_argument("--lr-theta", type=float, help="source authors: the code's η_θ (default: the preset's 0.05)")
    o = ap.parse_args()
    if o.table:
        table(o.csv)
        return
    if o.effects:
        effects(o.csv)
        return
    if o.trends:
        trends(o.csv)
        return
    if not o.source:
        ap.error("--source is needed to run")
    o.authors_args = (["--lam", fmt(o.lam)] if o.lam is not None else []) + \
        (["--lr-theta", fmt(o.lr_theta)] if o.lr_theta is not None else [])
    source = o.source + o.tag
    o.credit_shown = o.credit if not os.path.isabs(o.credit) else "$CREDIT"
    if o.source == "authors" and not o.src:
        ap.error("--source authors needs --src")
    silos = [int(x) for x in o.silos.split(",")]
    hs = [float(x) for x in o.h.split(",")]
    for seed in [int(x) for x in o.seeds.split(",")]:
        for n, h in cells(silos, hs):
            key = (source, n, h, o.epsilon, seed)
            if key in done_keys(o.csv):
                continue
            run = run_authors if o.source == "authors" else run_fairdp
            err, viol, cmd, det = run(o, n, h, o.epsilon, seed)
            row = [source, n, fmt(h), fmt(o.epsilon), seed, "%.6f" % err, "%.6f" % viol, cmd]
            append(o.csv, row, o.details, dict(zip(HEADER[:7], row[:7]), **det))
            print(",".join(str(x) for x in row[:7]), flush=True)


if __name__ == "__main__":
    main()
