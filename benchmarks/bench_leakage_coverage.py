"""Coverage of the declared new-user leakage on a population of known joint distribution.

Each build draws its rows from a seeded :func:`privmap.offline.data.known_joint` population
(3 integer features of 14 levels each, 2,744 points, a softmax class of random strength), builds
the bundle's table with the pipeline's own steps (:func:`privmap.offline.mechanisms.table.solve_rows`)
and its declared cross-fitted estimate (:func:`privmap.offline.mechanisms.table.cross_fitted_leakage`,
5 folds, as a build writes ``holdout_leakage_bits`` and ``holdout_leakage_interval_bits``), and
compares the interval with the leakage the bundle's table leaks to new users, exact on the
population (the ``leakage_bits`` of what :func:`privmap.offline.data.known_joint` returns), and
with the mean of the folds' tables' exact leakages (what the estimate is of).

The battery is drawn from ``--seed``: K from 16 to 256 (log-uniform), and in 8 % of builds from
512 to 1,024 at budget 0 (K above the rows' distinct points is capped at them, as a build caps it);
budget fraction of Delta0 in {0, 0.25, 0.5, 0.75, 1}, the codebook step on or off, 2 to 15 classes,
500 to 50,000 users (log-uniform), with n x K at most 150,000 (program (19)'s cost grows with both:
this keeps the battery within minutes on 2 cores). It prints one line per build
and the summary: coverage of the declared 95 % interval (of the bundle's exact leakage, and of
the folds' mean) and the share of intervals narrower than the estimate's standard error.

    PRIVMAP_JOBS=1 python benchmarks/bench_leakage_coverage.py --builds 216 --workers 2
"""
from __future__ import annotations

import argparse
import math
import multiprocessing
import time

import numpy as np

from privmap.offline import CrossFitting, QuantizedOptions
from privmap.offline.data import known_joint
from privmap.offline.mechanisms.table import InMemoryRows, solve_rows
from privmap.offline.mechanisms.table._holdout import FoldKMeans, _Folds, _lookup, fold_estimate, fold_options, pool_folds

BUDGETS = (0.0, 0.25, 0.5, 0.75, 1.0)


def battery(builds: int, seed: int) -> list[dict]:
    """The builds' settings, drawn from ``seed`` (module docstring)."""
    rng = np.random.default_rng(seed)
    out = []
    for b in range(builds):
        large = rng.random() < 0.08
        clusters = int(round(2 ** (rng.uniform(9, 10) if large else rng.uniform(4, 8))))
        budget = 0.0 if large else float(rng.choice(BUDGETS))
        users = int(round(10 ** rng.uniform(math.log10(500), math.log10(50000))))
        users = min(users, max(500, 150_000 // clusters))            # program (19)'s cost grows with n x K
        out.append({"build": b, "clusters": clusters, "budget": budget, "codebook": bool(rng.integers(2)),
                    "classes": int(rng.integers(2, 16)), "users": users, "strength": float(rng.uniform(0, 3)),
                    "seed": int(rng.integers(1 << 30))})
    return out


def run_build(setting: dict) -> dict:
    """One build's declared interval beside the exact leakages (module docstring)."""
    started = time.process_time()
    population = known_joint(classes=setting["classes"], dims=3, levels=14, strength=setting["strength"],
                             seed=setting["seed"])
    data = population.sample(setting["users"], seed=setting["seed"] + 1)
    rows = InMemoryRows(data)
    options = QuantizedOptions(clusters=setting["clusters"], delta_fraction=setting["budget"],
                               codebook=setting["codebook"], cross_fitting=CrossFitting(folds=5),
                               seed=setting["seed"] % 1000)
    options = fold_options(options, data, np.arange(data.n))
    bundle = solve_rows(rows, options)
    truth = population.leakage_bits(bundle.alphabet.inputs, bundle.solved.table)
    folds = _Folds(rows, [options], folds=None, attacker=False, start="single", centers=None, builds=None)
    parts, fold_truths = [], []
    for _, _, _, train, test, *_ in folds.work:                   # what cross_fitted_leakage's folds do
        fit = solve_rows(rows.subset(train), fold_options(options, data, train), quantizer=FoldKMeans())
        parts.append(fold_estimate(fit, data, test, _lookup(fit.alphabet, data, test, "quantized", "l2"), "l2",
                                   "quantized"))
        fold_truths.append(population.leakage_bits(fit.alphabet.inputs, fit.solved.table))
    estimate = pool_folds(parts, folds.k)
    low, high, se = estimate.low_bits, estimate.high_bits, estimate.standard_error_bits
    return {**setting, "truth": truth, "fold_truth": float(np.mean(fold_truths)), "estimate": estimate.leakage_bits,
            "low": low, "high": high, "se": se, "exposed_2x": estimate.exposed_2x,
            "covers": bool(low <= truth <= high), "covers_folds": bool(low <= np.mean(fold_truths) <= high),
            "narrow": bool(high - low < se), "cpu_s": time.process_time() - started}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--builds", type=int, default=216)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    settings = battery(args.builds, args.seed)
    wall = time.perf_counter()
    print(f"{'#':>4} {'K':>5} {'budget':>6} {'cb':>2} {'|A|':>3} {'users':>6} {'truth':>8} {'folds':>8} "
          f"{'estimate':>8} {'low':>8} {'high':>8} {'se':>7} {'cover':>5} {'cpu s':>6}", flush=True)
    results = []
    with multiprocessing.get_context("fork").Pool(args.workers) as pool:
        for r in pool.imap_unordered(run_build, settings):
            results.append(r)
            print(f"{r['build']:>4} {r['clusters']:>5} {r['budget']:>6.2f} {int(r['codebook']):>2} {r['classes']:>3} "
                  f"{r['users']:>6} {r['truth']:>8.4f} {r['fold_truth']:>8.4f} {r['estimate']:>8.4f} {r['low']:>8.4f} "
                  f"{r['high']:>8.4f} {r['se']:>7.4f} {'yes' if r['covers'] else 'NO':>5} {r['cpu_s']:>6.1f}", flush=True)
    n = len(results)
    covers = sum(r["covers"] for r in results)
    folds = sum(r["covers_folds"] for r in results)
    narrow = sum(r["narrow"] for r in results)
    width = np.median([r["high"] - r["low"] for r in results])
    print(f"\nbuilds {n}; coverage of the bundle's exact new-user leakage {covers}/{n} = {covers / n:.1%}; "
          f"of the folds' mean {folds}/{n} = {folds / n:.1%}; intervals narrower than the standard error "
          f"{narrow}/{n}; median width {width:.4f} bits; wall {time.perf_counter() - wall:.0f} s")


if __name__ == "__main__":
    main()
