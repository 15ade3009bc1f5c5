"""Cross-fitting at scale: how a fold's k-means starts, side by side.

For each K and seed the cross-fitted leakage is measured three times on the same folds,
differing only in how each fold's k-means starts (:data:`privmap.offline.mechanisms.table.STARTS`):
``restarts`` (four k-means++ restarts, as the build, and as cross-fitting did before),
``single`` (one k-means++ start, the default now) and ``warm`` (one Lloyd run from the
full-data representatives). The table gives each estimate, its interval, the held-out
distortion and the CPU seconds (this process and its worker processes); the summary lines
give each start's mean difference to ``restarts`` beside the seed-to-seed spread of
``restarts`` itself.

    python benchmarks/bench_crossfit.py data/ssi2012/tastes_gender.csv --private gender \\
        --clusters 16 64 --seeds 0 1 2 3 4 --no-codebook
    python benchmarks/bench_crossfit.py adult5.csv --private sex --clusters 1024 --seeds 0 --no-codebook
"""
from __future__ import annotations

import argparse
import resource
import time

import numpy as np

from privmap.offline import CrossFitting, Dataset, QuantizedOptions
from privmap.offline.mechanisms.table import STARTS, InMemoryRows, cross_fitted_leakage


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _timed(function):
    cpu, wall = _cpu(), time.perf_counter()
    out = function()
    return out, _cpu() - cpu, time.perf_counter() - wall


def crossfit_arguments(doc: str) -> argparse.ArgumentParser:
    """The arguments of the cross-fitting benchmarks: data, private column, K values, seeds, budget
    fraction and folds."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data")
    ap.add_argument("--private", required=True)
    ap.add_argument("--clusters", type=int, nargs="+", required=True)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--delta-fraction", type=float, default=0.5)
    ap.add_argument("--folds", type=int, default=5)
    return ap


def training_rows(args) -> InMemoryRows:
    """The rows a build of ``args.data`` trains on (``args.private`` private; rows with every
    public cell missing left out, as the build leaves them)."""
    return InMemoryRows(*Dataset.from_csv(args.data, private=args.private).without_all_missing())


def main() -> None:
    ap = crossfit_arguments(__doc__)
    ap.add_argument("--no-codebook", action="store_true")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes of the folds (1: in this process, "
                    "so CPU seconds are exact)")
    args = ap.parse_args()
    print(f"{'K':>5} {'seed':>4} {'start':>8} {'leak bits':>10} {'low':>8} {'high':>8} {'dist':>10} "
          f"{'CPU s':>7} {'wall s':>7}")
    for K in args.clusters:
        figures = {mode: [] for mode in STARTS}
        for seed in args.seeds:
            options = QuantizedOptions(clusters=K, delta_fraction=args.delta_fraction, seed=seed,
                                       codebook=not args.no_codebook, cross_fitting=CrossFitting(folds=args.folds))
            rows = training_rows(args)
            centers = np.asarray(rows.alphabet(options).inputs, dtype=float)
            for mode in STARTS:
                est, cpu, wall = _timed(lambda rows=rows, options=options, mode=mode, centers=centers:
                                        cross_fitted_leakage(rows, options, start=mode, centers=centers,
                                                             jobs=args.jobs))
                figures[mode].append((est.leakage_bits, est.distortion, cpu))
                print(f"{K:>5} {seed:>4} {mode:>8} {est.leakage_bits:>10.5f} {est.low_bits:>8.5f} "
                      f"{est.high_bits:>8.5f} {est.distortion:>10.4f} {cpu:>7.1f} {wall:>7.1f}", flush=True)
        ref = np.array(figures["restarts"])
        sd = ref.std(axis=0, ddof=1) if len(ref) > 1 else np.full(3, np.nan)
        print(f"K = {K}: restarts seed-to-seed sd: leakage {sd[0]:.5f} bits, distortion {sd[1]:.4f}")
        for mode in ("single", "warm"):
            diff = np.array(figures[mode]) - ref
            print(f"K = {K}: {mode} - restarts: leakage {diff[:, 0].mean():+.5f} bits "
                  f"(each {np.round(diff[:, 0], 5).tolist()}), distortion {diff[:, 1].mean():+.4f} "
                  f"(each {np.round(diff[:, 1], 4).tolist()}), CPU {np.mean(np.array(figures[mode])[:, 2] / ref[:, 2]):.2f} "
                  f"x restarts")


if __name__ == "__main__":
    main()
