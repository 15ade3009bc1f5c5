"""Benchmark: one iteration of seed 004's greedy, rank-one updates vs naive recomputation.

Run from the repository root with one BLAS thread:
``OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/bench_gaussian_greedy.py [--ns 8 16 32 64 128]``.

For random positive-definite models with n released coordinates (one private, one utility),
both ways of scoring every candidate ``Y_i + dtheta`` are timed in this one process:

- naive: for each of the n candidates, I(X_p;Y) and I(X_u;Y) recomputed from scratch (three
  Cholesky log-determinants each, O(n^3)), so O(n^4) per iteration;
- rank-one: ``privmap.offline.mechanisms.gaussian.greedy_noise``'s scoring, O(n) per iteration
  from the diagonals of the kept inverses, plus an O(n^2) Sherman-Morrison update per commit
  (measured as the whole greedy's time divided by its iterations).

Prints per-iteration seconds, their ratio, and the fitted growth exponents in n.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from privmap.offline.mechanisms.gaussian import GaussianModel, greedy_noise


def model(n, rng):
    a = rng.normal(size=(n + 2, n + 2))
    joint = a @ a.T + n * np.eye(n + 2)
    p, u = list(range(n + 1)), list(range(n)) + [n + 1]
    return GaussianModel.from_blocks(joint[np.ix_(p, p)], joint[np.ix_(u, u)], n)


def naive_iteration(m, sigma2, dtheta=1.0):
    best = -np.inf
    p, u = m.information("private", sigma2), m.information("utility", sigma2)
    for i in range(m.n):
        trial = sigma2.copy()
        trial[i] += dtheta
        gain = p - m.information("private", trial)
        loss = u - m.information("utility", trial)
        best = max(best, gain / loss if loss > 0 else np.inf)
    return best


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ns", type=int, nargs="*", default=[8, 16, 32, 64, 128])
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    rows = []
    print(f"{'n':>5} {'naive_s/it':>12} {'rank1_s/it':>12} {'ratio':>9} {'iterations':>10}")
    for n in args.ns:
        m = model(n, rng)
        sigma2 = np.zeros(n)
        reps = max(1, int(200 / n))
        started = time.perf_counter()
        for _ in range(reps):
            naive_iteration(m, sigma2)
        naive = (time.perf_counter() - started) / reps
        delta = 0.5 * m.information("utility", sigma2)
        started = time.perf_counter()
        result = greedy_noise(m, delta, 0.0, dtheta=1.0, stop=1e-3)
        fast = (time.perf_counter() - started) / result.iterations
        rows.append((n, naive, fast))
        print(f"{n:>5} {naive:>12.3e} {fast:>12.3e} {naive / fast:>9.1f} {result.iterations:>10}")
    if len(rows) >= 3:
        ns = np.log([r[0] for r in rows[-3:]])
        for name, col in (("naive", 1), ("rank-one", 2)):
            slope = np.polyfit(ns, np.log([r[col] for r in rows[-3:]]), 1)[0]
            print(f"growth exponent of {name} time per iteration (last 3 n): {slope:.2f}")


if __name__ == "__main__":
    main()
