"""Greedy funnel: Proposition 1's incremental run against naive recomputation, same process.

The naive reference recomputes I(S;Y_ij) and I(X;Y_ij) from scratch for every pair at every
step (O(|X|^3 |S|) per run, as the seed's listing reads); ``greedy_funnel`` keeps per-pair costs
and a lazy heap (O(|X|^2 (|S| + log |X|))). Both must make the same merges; the script prints
the time ratio per |X|. Run: ``nice python benchmarks/bench_funnel.py``.
"""
from __future__ import annotations

import time

import numpy as np

from privmap.offline import mutual_information_bits
from privmap.offline.mechanisms.funnel import entropy_bits, greedy_funnel


def naive_funnel(p, r_bits):
    groups = [[x] for x in range(p.shape[1])]
    while True:
        cols = [p[:, g].sum(axis=1) for g in groups]
        best = None
        for a in range(len(groups)):
            for b in range(a + 1, len(groups)):
                merged = [c for k, c in enumerate(cols) if k not in (a, b)] + [cols[a] + cols[b]]
                joint = np.stack(merged, axis=1)
                if entropy_bits(joint.sum(axis=0)) < r_bits - 1e-12:
                    continue
                leak = mutual_information_bits(joint)
                if best is None or leak < best[0] - 1e-15:
                    best = (leak, a, b)
        if best is None:
            return sorted(groups)
        _, a, b = best
        groups = [g for k, g in enumerate(groups) if k not in (a, b)] + [sorted(groups[a] + groups[b])]


def main() -> None:
    rng = np.random.default_rng(0)
    print(f"{'|X|':>5} {'|S|':>4} {'naive s':>9} {'greedy_funnel s':>16} {'ratio':>7} same-partition")
    for n in (16, 32, 48):
        p = rng.dirichlet(np.ones(4 * n)).reshape(4, n)
        r = 0.3 * entropy_bits(p.sum(axis=0))
        t0 = time.perf_counter()
        naive = naive_funnel(p, r)
        t1 = time.perf_counter()
        fast = greedy_funnel(p, r)
        t2 = time.perf_counter()
        same = naive == sorted(fast.groups)
        print(f"{n:>5} {4:>4} {t1 - t0:9.3f} {t2 - t1:16.4f} {(t1 - t0) / (t2 - t1):7.1f} {same}")


if __name__ == "__main__":
    main()
