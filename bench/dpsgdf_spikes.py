#!/usr/bin/env python3
"""Where DPSGD-F's test error jumps: per-epoch noise bound against Δ error, and the bound's tail.

DPSGD-F (Xu, Du and Wu 2021) sets each group's clip bound from noisy counts,
C^k = C0 (1 + f^k / r) with r = min(1, m̃ / b) and m̃ the sum over groups of
the noisy clipped counts, and scales the gradient noise by max_k C^k. As
f^k ≤ 1, max_k C^k ≤ C0 (1 + b / m̃) when 0 < m̃ < b: a noisy total that
lands just above 0 gives a bound of hundreds or thousands of C0, and the
Gaussian noise of that step with it. This script reads fairdp's metrics.jsonl
(one line per epoch: test_error and, under algo, the epoch's mean
noise_bound, mean clip_bounds per group and all_unclipped_steps, the steps
whose m̃ was ≤ 0) and prints:

1. per run, the epochs whose mean noise bound is above 1.25 times the median
   of the 10 epochs around it, with the test error before and after, the
   excess of the epoch's summed bound over that median (what one step
   would have to carry if it alone made the spike), and the rank correlation
   of the excess with the change in test error over all epochs;
2. the tail of the per-step bound: with m̃ ~ N(μ, K σ1²), μ fitted to the
   share of steps with m̃ ≤ 0 (all_unclipped_steps) over a range of epochs,
   the analytic bound P(max_k C^k ≥ x) ≤ P(0 < m̃ ≤ b / (x/C0 − 1)) per step
   and per epoch, checked against a Monte Carlo of the bound rule itself
   (fairdp's default count guard, from K groups' noisy clipped and
   unclipped counts).

    python3 bench/dpsgdf_spikes.py --run s1=RUN1/metrics.jsonl --run s2=RUN2/metrics.jsonl \
        --batch 256 --clip 1 --count-sigma 8 --from-epoch 20
"""
import argparse
import json
import math
import random


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def median(xs):
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


def ranks(xs):
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    r = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2.0
        i = j + 1
    return r


def spearman(a, b):
    ra, rb = ranks(a), ranks(b)
    ma, mb = sum(ra) / len(ra), sum(rb) / len(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    va = math.sqrt(sum((x - ma) ** 2 for x in ra))
    vb = math.sqrt(sum((y - mb) ** 2 for y in rb))
    return cov / (va * vb)


def phi_cdf(z):
    return 0.5 * math.erfc(-z / math.sqrt(2))


def probit(p):
    """Inverse of phi_cdf by bisection (p in (0, 1))."""
    lo, hi = -40.0, 40.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if phi_cdf(mid) < p:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def spikes(name, rows, window=5, ratio=1.25):
    nb = [r["algo"]["noise_bound"] for r in rows]
    err = [r["test_error"] for r in rows]
    steps = [r["steps"] for r in rows]
    excess, derr, out = [], [], []
    for i in range(1, len(rows)):
        near = [nb[j] for j in range(max(0, i - window), min(len(rows), i + window + 1)) if j != i]
        base = median(near)
        ex = (nb[i] - base) * steps[i]
        excess.append(ex)
        derr.append(err[i] - err[i - 1])
        if nb[i] > ratio * base:
            cb = rows[i]["algo"]["clip_bounds"]
            top = max(cb, key=lambda k: cb[k])
            out.append("  epoch %2d: noise bound %6.2f (median around %.2f), excess %7.0f C0·steps; "
                       "largest mean C^k: group %s %.2f; test error %.4f -> %.4f"
                       % (rows[i]["epoch"], nb[i], base, ex, top, cb[top], err[i - 1], err[i]))
    print("%s: %d epochs; spikes (noise bound > %.2f × median of the %d epochs around):" % (name, len(rows), ratio, 2 * window))
    print("\n".join(out) if out else "  none")
    print("  Spearman rank correlation of the excess with the change in test error, epochs 2..%d: %.3f"
          % (len(rows), spearman(excess, derr)))
    big = sorted(range(len(excess)), key=lambda i: -excess[i])[:5]
    print("  the 5 largest excesses and their Δ error: " +
          ", ".join("epoch %d %+.0f / %+.4f" % (rows[i + 1]["epoch"], excess[i], derr[i]) for i in big))


def bound_c0(c0, b, clipped, unclipped):
    """fairdp's default count guard (GuardC0), written out again: max_k C^k of one step."""
    total = sum(clipped)
    if not total > 0:
        return c0
    r = min(1.0, total / b)
    best = c0
    for m, o in zip(clipped, unclipped):
        size = m + o
        f = 0.0 if not size > 0 else max(0.0, min(1.0, m / size))
        best = max(best, c0 * (1 + f / r))
    return best


def tail(runs, from_epoch, b, c0, sigma1, groups, xs, draws, seed):
    u = n = 0
    for rows in runs.values():
        for r in rows:
            if r["epoch"] >= from_epoch:
                u += r["algo"]["all_unclipped_steps"]
                n += r["steps"]
    s = sigma1 * math.sqrt(groups)
    p0 = u / n
    mu = -probit(p0) * s
    per_epoch = n / sum(1 for rows in runs.values() for r in rows if r["epoch"] >= from_epoch)
    print("tail of the per-step noise bound, epochs ≥ %d of %d runs: %d of %d steps had m̃ ≤ 0 (%.4f)"
          % (from_epoch, len(runs), u, n, p0))
    print("  m̃ ~ N(μ, (σ1·√K)²) with σ1 = %g, K = %d: sd %.1f, fitted μ = %.1f clipped records per batch of %g"
          % (sigma1, groups, s, mu, b))
    # Monte Carlo: K equal groups, true clipped counts μ/K each, unclipped
    # (b − μ)/K each, every count plus N(0, σ1²); the bound rule as above.
    rng = random.Random(seed)
    mc = []
    for _ in range(draws):
        cl = [mu / groups + rng.gauss(0, sigma1) for _ in range(groups)]
        un = [(b - mu) / groups + rng.gauss(0, sigma1) for _ in range(groups)]
        mc.append(bound_c0(c0, b, cl, un))
    print("  %8s  %14s  %14s  %12s" % ("x (·C0)", "P(≥x) bound", "P(≥x) MC", "per epoch"))
    for x in xs:
        hi = b / (x / c0 - 1)
        p = phi_cdf((hi - mu) / s) - phi_cdf(-mu / s)
        q = sum(1 for v in mc if v >= x) / draws
        print("  %8g  %14.2e  %14.2e  %12.3f" % (x, p, q, 1 - (1 - p) ** per_epoch))
    print("  (MC: %d draws; the bound holds for any split of the counts among groups, MC for equal groups)" % draws)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--run", action="append", required=True, help="NAME=path/to/metrics.jsonl (repeatable)")
    ap.add_argument("--batch", type=float, default=256)
    ap.add_argument("--clip", type=float, default=1.0)
    ap.add_argument("--count-sigma", type=float, default=8.0)
    ap.add_argument("--groups", type=int, default=10)
    ap.add_argument("--from-epoch", type=int, default=20)
    ap.add_argument("--draws", type=int, default=200000)
    ap.add_argument("--seed", type=int, default=1)
    o = ap.parse_args()
    runs = {}
    for spec in o.run:
        name, path = spec.split("=", 1)
        runs[name] = load(path)
    for name, rows in runs.items():
        spikes(name, rows)
    tail(runs, o.from_epoch, o.batch, o.clip, o.count_sigma, o.groups, [10, 30, 100, 300, 1000, 3000], o.draws, o.seed)


if __name__ == "__main__":
    main()
