"""The output-limited program: column generation against the dense reference model, same process.

On the bundled SSI-2012 ratings (first ``--columns`` tastes, gender private; bench_ldp.py's 70 %
training split), for each K: k-means and the prior as a build finds them, a limit halfway between
the least feasible one at the budget and the unconstrained optimum's (so that it binds), the budget
``--fraction`` x Delta0. Each solve is timed in CPU seconds of this process; the dense model over
all K x K_out pairs (:func:`dense_limited`) is skipped above ``--dense-max``. Prints one row per K:
CPU seconds of each, their ratio, the leakage of each (they must agree to Clarabel's accuracy) and
the column generation's rounds; then the least-distortion LP under the same limit (the feasibility
check every limited build runs) by column generation and as one dense LP, with their ratio.

    nice python benchmarks/bench_output_limit.py --ks 64 128 256 512 --dense-max 256
"""
from __future__ import annotations

import argparse
import pathlib
import time

import numpy as np
from sklearn.model_selection import train_test_split

from privmap.offline import Dataset, QuantizedOptions, load_dataset
from privmap.offline._information import max_output_leakage_bits
from privmap.offline.mechanisms.table import InMemoryRows, solve_rows
from privmap.offline.solvers import least_distortion, smallest_feasible_epsilon, solve, solve_output_limited
from privmap.offline.solvers.output_limit import dense_least_table, dense_limited

ROOT = pathlib.Path(__file__).resolve().parents[1]


def instance(columns: int, K: int, seed: int):
    """p(a, c) and D of a build's k-means at K on the training split of the first ``columns`` tastes."""
    data = ROOT / "data/ssi2012/tastes_gender.csv"
    names = tuple(load_dataset(data, private="gender").features[:columns])
    options = QuantizedOptions(clusters=K, delta_fraction=1.0, codebook=False, cross_fitting=None, seed=seed)
    rows = InMemoryRows(*Dataset.from_csv(data, private="gender", public=names).without_all_missing())
    train, _ = train_test_split(np.arange(rows.n), test_size=0.3, random_state=seed, stratify=rows.dataset.private)
    done = solve_rows(rows.subset(train), options)
    return done.p_ac, done.alphabet.distortion, done.d_perfect


def cpu(fn, *args, **kw):
    started = time.process_time()
    out = fn(*args, **kw)
    return out, time.process_time() - started


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ks", type=int, nargs="+", default=[64, 128, 256])
    parser.add_argument("--columns", type=int, default=6)
    parser.add_argument("--fraction", type=float, default=0.5, help="budget as a fraction of Delta0")
    parser.add_argument("--dense-max", type=int, default=256, help="largest K the dense reference runs at")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(f"SSI-2012, {args.columns} columns, budget {args.fraction} x Delta0; CPU s of this process")
    print(f"{'K':>5}{'limit bits':>11}{'dense s':>9}{'columns s':>10}{'ratio':>7}{'dense bits':>12}"
          f"{'columns bits':>13}{'rounds':>7}{'LP dense s':>11}{'LP cols s':>10}{'ratio':>7}")
    for K in args.ks:
        p_ac, D, d0 = instance(args.columns, K, args.seed)
        delta = args.fraction * d0
        free = solve(p_ac, D, delta)
        floor = smallest_feasible_epsilon(p_ac, D, delta)
        limit = 0.5 * (floor + min(max_output_leakage_bits(p_ac, free.table), 10 * floor))
        columns, t_columns = cpu(solve_output_limited, p_ac, D, delta, limit, check=False)
        if K <= args.dense_max:
            dense, t_dense = cpu(dense_limited, p_ac, D, delta, limit)
            dense_s, ratio, dense_bits = f"{t_dense:9.2f}", f"{t_dense / t_columns:7.1f}", f"{dense.leakage_bits:12.7f}"
        else:
            dense_s, ratio, dense_bits = f"{'-':>9}", f"{'-':>7}", f"{'-':>12}"
        (lp_dense, _), t_lp_dense = cpu(dense_least_table, p_ac, D, limit)
        lp_columns, t_lp_columns = cpu(least_distortion, p_ac, D, limit)
        assert abs(lp_columns - lp_dense) <= 1e-9 * max(1.0, lp_dense), (lp_columns, lp_dense)
        print(f"{K:>5}{limit:>11.4f}{dense_s}{t_columns:>10.2f}{ratio}{dense_bits}"
              f"{columns.leakage_bits:>13.7f}{columns.info['rounds']:>7}{t_lp_dense:>11.2f}{t_lp_columns:>10.2f}"
              f"{t_lp_dense / t_lp_columns:>7.1f}", flush=True)


if __name__ == "__main__":
    main()
