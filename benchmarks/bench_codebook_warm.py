"""Benchmark: the codebook step's re-solves warm-started from the previous answer, against cold.

Run from the repository root:

    python benchmarks/bench_codebook_warm.py --clusters 1024 --delta-fraction 0.5

UCI Adult (age, education-num, capital-gain, capital-loss, hours-per-week, standardised; sex
private), k-means inputs (MiniBatchKMeans, seed 0) whose centres are the first outputs, the
conditional distortion D'(c, j) of the codebook step, budget ``--delta-fraction`` x Delta0. The
first table is solved once; then :func:`privmap.offline.mechanisms.table._codebook.refine` runs twice in
the same process, once as the build runs it (each re-solve warm-started, the first from the
starting solve) and once with every re-solve cold (``solve_fast`` without ``warm_start``), and the
script prints each re-solve's CPU seconds, Newton steps and leakage for both, their ratio, and
the largest difference in leakage between the two runs' re-solves against the solver's certified
tolerance. The first re-solve's instance (the same D and budget in both) is also solved both ways
directly, which is the like-for-like check: both answers are certified within ``tol_bits``, so
their leakages differ by at most that. The load average is printed before and after.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import bench_solver as bench
import numpy as np


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clusters", type=int, default=1024)
    ap.add_argument("--delta-fraction", type=float, default=0.5)
    ap.add_argument("--tol-bits", type=float, default=1e-5)
    args = ap.parse_args(argv)
    from sklearn.cluster import MiniBatchKMeans

    from privmap.offline.mechanisms.table import _codebook
    from privmap.offline.solvers import perfect_privacy_distortion, solve_fast

    print(f"# load average {_load()}")
    X, a = _adult()
    K = args.clusters
    km = MiniBatchKMeans(n_clusters=K, random_state=0, n_init=1, batch_size=4096).fit(X)
    labels, outputs = km.labels_, km.cluster_centers_
    p_ac = np.zeros((2, K))
    np.add.at(p_ac, (a, labels), 1.0)
    p_ac /= p_ac.sum()
    distance, centre, project = _codebook.metric_center(
        "l2", integer=np.zeros(X.shape[1], bool), lo=X.min(axis=0), hi=X.max(axis=0))
    D = _codebook.conditional_distortion(X, labels, K, outputs, distance)
    delta = args.delta_fraction * perfect_privacy_distortion(p_ac, D)
    start = solve_fast(p_ac, D, delta, tol_bits=args.tol_bits)

    calls = {"warm": [], "cold": []}
    real = solve_fast

    def timed(record, strip):
        def solve_fast(*a_, **kw):
            if strip:
                kw.pop("warm_start", None)
            t0 = time.process_time()
            res = real(*a_, **kw)
            record.append((time.process_time() - t0, res.info.get("newton_steps", 0), res.leakage_bits,
                           res.gap_bits))
            return res
        return solve_fast

    steps = {}
    for mode in ("warm", "cold"):
        _codebook.solve_fast = timed(calls[mode], strip=mode == "cold")
        try:
            steps[mode] = _codebook.refine(X, labels, p_ac, start.table, outputs, distance=distance,
                                           centre=centre, project=project, tol_bits=args.tol_bits,
                                           warm_start=start if mode == "warm" else None)
        finally:
            _codebook.solve_fast = real
    print(f"Adult sex, K = {K}, {args.delta_fraction} x Delta0, codebook step: re-solves warm vs cold, "
          f"same process (tol_bits {args.tol_bits:g})")
    print(f"{'re-solve':>8} {'warm_cpu_s':>10} {'cold_cpu_s':>10} {'cold/warm':>9} {'warm_steps':>10} "
          f"{'cold_steps':>10} {'warm_bits':>11} {'cold_bits':>11}")
    for i, (w, c) in enumerate(zip(calls["warm"], calls["cold"]), 1):
        print(f"{i:>8} {w[0]:>10.2f} {c[0]:>10.2f} {c[0] / w[0]:>9.2f} {w[1]:>10} {c[1]:>10} "
              f"{w[2]:>11.7f} {c[2]:>11.7f}")
    tw, tc = sum(w[0] for w in calls["warm"]), sum(c[0] for c in calls["cold"])
    print(f"{'total':>8} {tw:>10.2f} {tc:>10.2f} {tc / tw:>9.2f}   ({len(calls['warm'])} and "
          f"{len(calls['cold'])} re-solves; final distortion warm {steps['warm'].distortion:.6f}, "
          f"cold {steps['cold'].distortion:.6f})")

    # like for like: the first re-solve's instance, both ways
    moved, _ = _codebook.move_outputs(X, _codebook.Pairs.from_table(labels, start.table, p_ac.sum(axis=0)[labels]
                                                                       / np.bincount(labels, minlength=K)[labels]),
                                      outputs, distance=distance, centre=centre, project=project)
    D1 = _codebook.conditional_distortion(X, labels, K, moved, distance)
    budget = float(p_ac.sum(axis=0) @ (start.table * D1).sum(axis=1))
    t0 = time.process_time()
    cold = real(p_ac, D1, budget, tol_bits=args.tol_bits)
    t_cold = time.process_time() - t0
    t0 = time.process_time()
    warm = real(p_ac, D1, budget, tol_bits=args.tol_bits, warm_start=start)
    t_warm = time.process_time() - t0
    print(f"first re-solve, same instance: cold {t_cold:.2f} s ({cold.info['newton_steps']} steps), warm "
          f"{t_warm:.2f} s ({warm.info['newton_steps']} steps), cold/warm {t_cold / t_warm:.2f}; leakage "
          f"cold {cold.leakage_bits:.8f}, warm {warm.leakage_bits:.8f}, |diff| "
          f"{abs(cold.leakage_bits - warm.leakage_bits):.2e} bits (tol_bits {args.tol_bits:g}; gaps "
          f"{cold.gap_bits:.1e}, {warm.gap_bits:.1e})")
    print(f"# load average {_load()}")
    return 0


def _adult():
    rows = []
    for name in ("adult.data", "adult.test"):
        for line in (bench.ROOT / "data" / "adult" / name).read_text().splitlines():
            fields = [f.strip() for f in line.split(",")]
            if len(fields) == 15:
                rows.append(fields)
    X = np.array([[float(r[i]) for i in (0, 4, 10, 11, 12)] for r in rows])
    return (X - X.mean(axis=0)) / X.std(axis=0), np.array([r[9] == "Male" for r in rows], dtype=int)


def _load():
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


if __name__ == "__main__":
    sys.exit(main())
