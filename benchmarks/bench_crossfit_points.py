"""Cross-fitting many users' real-valued points: what k-means' iteration cap and the BLAS nearest
search save, side by side in one process.

The recommender and ranking modes map each user's point (11 factor or 32 score coordinates, none
missing); over many users the chosen candidate is cross-fitted and attacked over every one of
them (the stage ``holdout-all``), and that cost grows with the users. Here seeded Gaussian points
stand in for them (``--dims`` coordinates, a binary attribute shifting the first three by
``--shift``), cross-fitted as the search's chosen candidate is (``--clusters`` K, class-blind
clusters at fraction 0, the posteriors prior, 5 folds, the three attackers), one process
(``PRIVMAP_JOBS=1``), twice: with k-means' iterations capped at the reference's 300
(scikit-learn's default) and at today's :data:`privmap.offline.data._quantize.MAX_ITERATIONS`.
It prints each run's CPU seconds, its ratio to the reference's, and the figures the bundle would
declare (new-user leakage, held-out distortion, the strongest attacker's AUC bound). Then the
nearest search of one fold's held-out lookup on the same points: the running minimum (the
device's rule, left to right) against the package's :func:`privmap.offline.data.nearest`, which
screens complete l2 rows by BLAS, their answers compared.

    PRIVMAP_JOBS=1 python benchmarks/bench_crossfit_points.py --users 100000 --clusters 2048
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np

from privmap.offline.data import Dataset, _quantize, nearest
from privmap.offline.data._distortion import nearest as running_nearest
from privmap.offline.mechanisms.quantized import QuantizedOptions
from privmap.offline.mechanisms.table import InMemoryRows, cross_fitted_leakage

#: The reference's iteration cap: scikit-learn's default.
REFERENCE_ITERATIONS = 300


def points(users: int, dims: int, shift: float, seed: int) -> Dataset:
    """Seeded Gaussian points (users, dims) whose first three coordinates move with a binary attribute."""
    rng = np.random.default_rng(seed)
    private = rng.integers(0, 2, users)
    X = rng.standard_normal((users, dims)) + shift * private[:, None] * (np.arange(dims) < 3)
    return Dataset(features=tuple(f"f{i}" for i in range(dims)), public=X, private=private, classes=("0", "1"),
                   private_name="a", categorical=False, sha256="0" * 64)


def crossfit(dataset: Dataset, clusters: int, iterations: int) -> tuple[dict, float]:
    """The chosen candidate's cross-fitted figures with k-means capped at ``iterations``, and its CPU seconds."""
    saved, _quantize.MAX_ITERATIONS = _quantize.MAX_ITERATIONS, iterations
    try:
        options = QuantizedOptions(clusters=clusters, delta_fraction=0.0, class_blind=True, prior="posteriors",
                                   smoothing=0.0, seed=1)
        cpu = time.process_time()
        est = cross_fitted_leakage(InMemoryRows(dataset), options, attacker=True)
        return ({"leakage_bits": est.leakage_bits, "distortion": est.distortion, "auc_high": est.attacker_auc_high},
                time.process_time() - cpu)
    finally:
        _quantize.MAX_ITERATIONS = saved


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--users", type=int, default=100_000)
    ap.add_argument("--clusters", type=int, default=2048)
    ap.add_argument("--dims", type=int, default=11)
    ap.add_argument("--shift", type=float, default=0.3)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    if os.environ.get("PRIVMAP_JOBS") != "1":
        print("note: PRIVMAP_JOBS is not 1; worker processes' CPU is not counted")
    dataset = points(args.users, args.dims, args.shift, args.seed)
    print(f"{args.users} users x {args.dims} coordinates, K = {args.clusters}, 5 folds with the attackers")
    print("| k-means cap | CPU s | x reference | new-user leakage bits | held-out distortion | attacker AUC bound |")
    print("|---|---|---|---|---|---|")
    reference = None
    for cap in (REFERENCE_ITERATIONS, _quantize.MAX_ITERATIONS):
        figures, cpu = crossfit(dataset, args.clusters, cap)
        reference = cpu if reference is None else reference
        print(f"| {cap} | {cpu:.1f} | {cpu / reference:.2f} | {figures['leakage_bits']:.5f} | "
              f"{figures['distortion']:.4f} | {figures['auc_high']:.4f} |", flush=True)
    held = dataset.public[: args.users // 5]
    centres = dataset.public[np.random.default_rng(args.seed + 1).choice(args.users, args.clusters, replace=False)]
    cpu = time.process_time()
    slow = running_nearest(held, centres, "l2")
    running = time.process_time() - cpu
    cpu = time.process_time()
    fast = nearest(held, centres, "l2")
    screened = time.process_time() - cpu
    print(f"nearest of {held.shape[0]} held-out points among {args.clusters}: running minimum {running:.2f} CPU-s, "
          f"package {screened:.2f} ({screened / running:.2f} x), answers {'equal' if np.array_equal(slow, fast) else 'DIFFER'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
