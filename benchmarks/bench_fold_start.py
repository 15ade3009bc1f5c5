"""What a fold's solvers do, and does it move the cross-fitted estimate?

A fold's Delta0 and program (19) may start from the build's answers carried to the fold's clusters
(:class:`privmap.offline.mechanisms.table.BuildStart`). The answers are certified on the fold's own
prior whatever the start, but the start decides which table within the tolerance the path ends on,
and the build's answers saw the fold's held-out rows. For each K and seed the cross-fitted estimate
is measured on the same folds (one process, the folds in turn, so CPU seconds are exact), each fold
solving program (19) to the build's own tolerance unless said otherwise:

- ``cold``: the solvers start from nothing;
- ``build``: they start from the build (what ``privmap build`` does from K = 2048);
- ``loose``: cold, program (19) solved to ``--loose-factor`` times the build's tolerance: the
  estimate of a build at that tolerance, whose folds solve to it too;
- ``nudged``: cold, with the budget fraction moved by 1e-9 (relative): the estimate's own
  sensitivity to where a solver's path happens to end, the yardstick for the others.

``--modes`` picks some of them (``cold`` always runs).

The summary gives, per K, the mean and spread of the paired differences to ``cold`` in leakage
and held-out distortion, and the folds' CPU against ``cold``.

    python benchmarks/bench_fold_start.py adult5.csv --private sex --clusters 256 1024 --seeds 0 1 2 3 4 5 6 7
    python benchmarks/bench_fold_start.py adult5.csv --private sex --clusters 4096 --modes loose
"""
from __future__ import annotations

import dataclasses
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bench_crossfit import _timed, crossfit_arguments, training_rows  # noqa: E402

from privmap.offline import CrossFitting, QuantizedOptions  # noqa: E402
from privmap.offline.mechanisms.table import BuildStart, cross_fitted_leakage, solve_rows  # noqa: E402

MODES = ("cold", "build", "loose", "nudged")


def main() -> None:
    ap = crossfit_arguments(__doc__)
    ap.add_argument("--modes", nargs="+", choices=MODES[1:], default=list(MODES[1:]))
    ap.add_argument("--loose-factor", type=float, default=10.0,
                    help="the loose mode's multiple of the build's tolerance [default: 10]")
    args = ap.parse_args()
    modes = ("cold", *args.modes)
    loose = args.loose_factor
    print(f"{'K':>5} {'seed':>4} {'mode':>7} {'leak bits':>10} {'low':>8} {'high':>8} {'dist':>10} {'folds CPU s':>11}")
    for K in args.clusters:
        figures = {mode: [] for mode in modes}
        for seed in args.seeds:
            options = QuantizedOptions(clusters=K, delta_fraction=args.delta_fraction, seed=seed,
                                       cross_fitting=CrossFitting(folds=args.folds))
            rows = training_rows(args)
            start = BuildStart.of(solve_rows(rows, options), options.metric) if "build" in modes else None
            runs = {"cold": (options, None), "build": (options, start),
                    "loose": (dataclasses.replace(options, tol_bits=options.tol_bits * loose), None),
                    "nudged": (dataclasses.replace(options, delta_fraction=args.delta_fraction * (1 + 1e-9)), None)}
            for mode in modes:
                opts, build = runs[mode]
                est, cpu, _ = _timed(lambda rows=rows, opts=opts, build=build:
                                     cross_fitted_leakage(rows, opts, jobs=1, build=build))
                figures[mode].append((est.leakage_bits, est.distortion, cpu, est.high_bits - est.low_bits))
                print(f"{K:>5} {seed:>4} {mode:>7} {est.leakage_bits:>10.6f} {est.low_bits:>8.5f} "
                      f"{est.high_bits:>8.5f} {est.distortion:>10.4f} {cpu:>11.1f}", flush=True)
        cold = np.array(figures["cold"])
        print(f"K = {K}: cold's mean interval width {cold[:, 3].mean():.6f} bits")
        for mode in modes[1:]:
            diff = np.array(figures[mode]) - cold
            spread = diff.std(axis=0, ddof=1) if len(diff) > 1 else np.full(4, np.nan)
            print(f"K = {K}: {mode} - cold over {len(diff)} seeds: leakage {diff[:, 0].mean():+.6f} "
                  f"(sd {spread[0]:.6f}) bits, distortion {diff[:, 1].mean():+.4f} (sd {spread[1]:.4f}); "
                  f"folds' CPU {np.sum(np.array(figures[mode])[:, 2]) / np.sum(cold[:, 2]):.2f} x cold")


if __name__ == "__main__":
    main()
