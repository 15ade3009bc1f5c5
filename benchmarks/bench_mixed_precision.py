"""Benchmark: the interior points' float32 Schur products (mixed-precision refinement) against float64.

Run from the repository root:

    python benchmarks/bench_mixed_precision.py --private occupation --clusters 1024 --repeats 2

Both interior points, Delta0's (``solvers/perfect/_interior.py``) and program (19)'s
(``solvers/interior/_primal_dual.py``), form the rows' Schur complement from float32 products
until a direction's refinement does not settle (``solvers/_row_schur.py``, ``SingleFalls``). This
script takes UCI Adult's program for ``--private`` at ``--clusters`` K (``bench_many_classes.py``'s
solves part: k-means seed 0 on all rows, l2 distances), and times, in one process, alternating ``--repeats``
times, each way on the same program with BLAS on one thread:

- mixed: as a build runs them;
- float64: ``SINGLE_CORRECTION`` set below any correction, so that the first float32 direction
  falls and the whole path runs in float64 (the path before mixed precision, plus that one product).

For each: Delta0's interior point alone (its steps, the float32 ones among them, its certified
upper bound), and ``solve`` at ``--delta-fraction`` x Delta0 from the Delta0 table's outputs, as a
build calls it (its CPU seconds and certified leakage). Printed: CPU seconds, the ratio mixed /
float64 over the repeats, and the largest difference between the two ways' answers.
"""
from __future__ import annotations

import argparse
import time

import numpy as np
from bench_many_classes import adult_program


def _timed(call, *args, **kwargs):
    cpu = time.process_time()
    answer = call(*args, **kwargs)
    return answer, time.process_time() - cpu


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     epilog="See the module docstring for what it measures.")
    parser.add_argument("--private", default="occupation", help="Adult's private column (default: %(default)s).")
    parser.add_argument("--clusters", type=int, default=1024, help="K (default: %(default)s).")
    parser.add_argument("--delta-fraction", type=float, default=0.5, help="Delta / Delta0 (default: %(default)s).")
    parser.add_argument("--repeats", type=int, default=2, help="Alternations of the two ways (default: %(default)s).")
    args = parser.parse_args(argv)

    from threadpoolctl import threadpool_limits

    from privmap.offline.solvers import _row_schur, solve
    from privmap.offline.solvers.perfect import _interior
    from privmap.offline.solvers.perfect._linear_program import _coefficients, _reduced, _row_minima

    classes, p_ac, D, d_perfect, offered = adult_program(args.private, args.clusters)
    p_c, delta_a = _coefficients(p_ac)

    singles: list[bool] = []
    schur = _row_schur.row_schur

    def counted(*a, single=False):
        singles.append(single)
        return schur(*a, single=single)

    _interior.row_schur = counted
    correction = _row_schur.SINGLE_CORRECTION
    totals = {"mixed": [0.0, 0.0], "float64": [0.0, 0.0]}
    answers: dict[str, list] = {"mixed": [], "float64": []}
    print(f"UCI Adult, {args.private} ({len(classes)} classes), K = {D.shape[0]}, Delta = {args.delta_fraction} x Delta0")
    print(f"{'way':>8} {'Delta0 point s':>14} {'steps':>5} {'float32':>7} {'Delta0':>16} {'solve s':>8} {'leak bits':>12}")
    with threadpool_limits(limits=1):
        for _ in range(args.repeats):
            for way, limit in (("mixed", correction), ("float64", -1.0)):
                _row_schur.SINGLE_CORRECTION = limit
                singles.clear()
                point, point_s = _timed(_interior.interior_point, p_c, delta_a, D, rel_tol=1e-9, bound=lambda v: float(
                    _row_minima(D, _reduced(p_c, delta_a, D, v))[0].sum()))
                float32 = sum(singles) - (0 if all(singles) else 1)       # less the direction that fell
                solved, solve_s = _timed(solve, p_ac, D, args.delta_fraction * d_perfect, start_outputs=offered)
                totals[way][0] += point_s
                totals[way][1] += solve_s
                answers[way].append((point.upper, solved.leakage_bits))
                print(f"{way:>8} {point_s:>14.1f} {point.steps:>5} {float32:>7} {point.upper:>16.9f} {solve_s:>8.1f} "
                      f"{solved.leakage_bits:>12.9f}", flush=True)
    mixed, double = np.array(answers["mixed"]), np.array(answers["float64"])
    print(f"mixed / float64, {args.repeats} repeats: Delta0's point {totals['mixed'][0] / totals['float64'][0]:.3f}, "
          f"solve {totals['mixed'][1] / totals['float64'][1]:.3f}; largest differences: Delta0 "
          f"{np.abs(mixed[:, 0] - double[:, 0]).max() / d_perfect:.1e} relative, leakage "
          f"{np.abs(mixed[:, 1] - double[:, 1]).max():.1e} bits")
    print("(CPU s of this process; float32: Delta0's steps taken from float32 products)")


if __name__ == "__main__":
    main()
