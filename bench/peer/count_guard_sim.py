#!/usr/bin/env python3
"""DPSGD-F's class-8 bound under each count guard, by simulation (numpy only).

An implementation independent of fairdp's Go code (dpsgdf.CountGuard.Bounds) of
C^k = C0 (1 + f^k / r), r = min(1, m/b) (Xu, Du and Wu 2021), on the unbalanced
MNIST profile: b = 256 Poisson batches, nine classes of ~25.7 records and class 8
with ~2.34 (500 of 54,649 images), every count noised with N(0, sigma1^2), sigma1 =
10 * 0.8 = 8. For a few clipped fractions (the share of gradients above C0 = 1:
all of them in the first epochs, fewer later) it prints the mean of C^8, how often
C^8 = C0, the mean bound of the other classes, the mean noise bound max_k C^k and
the mean of C^8 / max_k C^k (class 8's share of the noise scale), for each guard
and for exact counts (sigma1 = 0, no guard needed).

    python3 bench/peer/count_guard_sim.py [--steps 4000] [--seed 1]
"""
import argparse

import numpy as np


def bounds(guard, m, o, b=256.0, a=8.0):
    if guard != "c0":
        m, o = np.maximum(0, m), np.maximum(0, o)
    tot = m.sum()
    if tot <= 0:
        return np.ones_like(m)
    r = min(1.0, tot / b)
    c = np.empty_like(m)
    for k in range(len(m)):
        s = m[k] + o[k]
        if guard == "c0":
            f = 0.0 if s <= 0 else min(1.0, max(0.0, m[k] / s))
        elif guard == "floor":
            f = 1.0 if s <= 0 else m[k] / s
        else:  # smooth
            d = s + a
            f = r if d <= 0 else (m[k] + a * r) / d
        c[k] = 1 + f / r
    return c


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=4000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--sigma1", type=float, default=8.0)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    sizes = np.array([(54649 - 500) / 9] * 8 + [500] + [(54649 - 500) / 9]) * 256 / 54649
    print("others_clipped,class8_clipped,guard,mean_C8,P_C8_is_C0,mean_C_others,mean_max_C,mean_C8_over_max")
    for p_other, p8 in [(1.0, 1.0), (0.5, 0.9), (0.3, 0.9), (0.2, 0.5)]:
        p = np.array([p_other] * 8 + [p8] + [p_other])
        for guard in ["exact", "c0", "floor", "smooth"]:
            c8, cmax, co, at_c0 = [], [], [], 0
            for _ in range(args.steps):
                n = rng.poisson(sizes)
                m = rng.binomial(n, p).astype(float)
                o = n - m
                if guard == "exact":
                    c = bounds("c0", m, o)
                else:
                    c = bounds(guard, m + rng.normal(0, args.sigma1, 10), o + rng.normal(0, args.sigma1, 10), a=args.sigma1)
                c8.append(c[8])
                cmax.append(c.max())
                co.append(np.delete(c, 8).mean())
                at_c0 += c[8] <= 1 + 1e-12
            c8, cmax = np.array(c8), np.array(cmax)
            print(f"{p_other},{p8},{guard},{c8.mean():.2f},{at_c0 / args.steps:.2f},{np.mean(co):.2f},{cmax.mean():.2f},{np.mean(c8 / cmax):.2f}")


if __name__ == "__main__":
    main()
