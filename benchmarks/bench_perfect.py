"""Benchmark: the perfect-privacy distortion Delta0 by column generation against the dense LP.

Run from the repository root:

    python benchmarks/bench_perfect.py --ks 256 512 1024 2048 4096 --lp-max-k 1024

For each K, on the synthetic 50-dimensional ratings of ``bench_solver.py`` (part 2),
times :func:`privmap.offline.solvers.perfect_privacy_table` (column generation, certified
to 1e-9 relative) and, up to ``--lp-max-k``, the dense HiGHS program on all K x K pairs
(:func:`perfect_privacy_lp`) in the same process, and prints both Delta0 values, their
relative difference, the certified bounds' relative gap, the rounds and the generated
pairs; times are CPU seconds of the process (``*_cpu``). ``--adult`` runs the UCI Adult instance of
``bench_solver.py`` (part 4) instead.
``--adult-build`` runs the instance a real ``privmap build`` makes on UCI Adult (sex private, or
``--private race``, five classes):
``bench_build.py``'s 48,842 rows (raw age, education-num, capital-gain, capital-loss,
hours-per-week), the build's own quantize step (its k-means representatives, 'l2' distances
between them) and joint prior, at each K; ``--cache DIR`` keeps those instances as
``DIR/adult_build_K.npz`` (``adult_build_race_K.npz`` with race private; the quantize step takes
minutes at K = 8192).
``--reference-rev REV`` also times ``perfect_privacy_table`` as it was at git revision REV
(e.g. 5c35bcd, the scipy ``linprog`` path that re-solved every master from scratch), loaded
from ``git show`` into the same process (with the ``_transport`` of REV where it has one),
and prints its time, its Delta0's relative difference and its rounds, up to ``--reference-max-k`` (the hub
column generation of main
before the transport took 120 to 194 s at K = 8192 on UCI Adult). The ``form`` column is the
formulation that certified Delta0 (``transport``, ``hub`` or ``transport+hub``), and the load
average of the machine is printed before and after, since the machine may be shared.
"""
from __future__ import annotations

import argparse
import math
import os
import pathlib
import sys
import tempfile
import time

import bench_solver as bench
import numpy as np
from bench_build import PRIVATE, adult_rows, write_csv


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ks", type=int, nargs="+", default=[256, 512, 1024, 2048, 4096, 8192])
    ap.add_argument("--lp-max-k", type=int, default=1024,
                    help="largest K at which the dense LP is also solved")
    ap.add_argument("--adult", choices=["sex", "income"], default=None,
                    help="UCI Adult with this private attribute instead of the synthetic ratings")
    ap.add_argument("--adult-build", action="store_true",
                    help="the instance a real `privmap build` makes on UCI Adult")
    ap.add_argument("--private", choices=sorted(PRIVATE), default="sex",
                    help="--adult-build's private attribute")
    ap.add_argument("--cache", type=pathlib.Path, default=None,
                    help="directory keeping the --adult-build instances between runs")
    ap.add_argument("--reference-rev", default=None,
                    help="also time perfect_privacy_table as of this git revision, same process")
    ap.add_argument("--reference-max-k", type=int, default=None,
                    help="largest K at which the reference revision is also timed (default: all)")
    args = ap.parse_args(argv)
    from privmap.offline.solvers import perfect_privacy_lp, perfect_privacy_table
    reference = _reference(args.reference_rev) if args.reference_rev else None

    source = (f"UCI Adult as `privmap build` quantizes it, private {args.private}" if args.adult_build else
              f"UCI Adult, private {args.adult}" if args.adult else "synthetic 50-dim ratings")
    print(f"# load average {_load()}")
    print(f"Delta0 on {source}: column generation vs dense HiGHS LP, same process")
    print(f"{'K':>6} {'cg_cpu':>8} {'lp_cpu':>8} {'lp/cg':>7} {'Delta0_cg':>14} {'rel_diff':>9} "
          f"{'rel_gap':>9} {'rounds':>6} {'pairs':>8} {'form':>13}"
          + (f" {'ref_cpu':>8} {'ref/cg':>7} {'ref_diff':>9} {'ref_rounds':>10}" if reference else ""))
    for K in args.ks:
        if args.adult_build:
            p_ac, D = build_instance(K, args.cache, args.private)
        else:
            p_ac, D = bench.adult_instance(K, args.adult) if args.adult else bench.synthetic_instance(K)
        info = {}
        (_, d_cg), t_cg = _timed(perfect_privacy_table, p_ac, D, info=info)
        d_lp, t_lp = math.nan, math.nan
        if K <= args.lp_max_k:
            (_, d_lp), t_lp = _timed(perfect_privacy_lp, p_ac, D)
        gap = (info["upper_bound"] - info["lower_bound"]) / info["upper_bound"]
        line = (f"{K:>6} {t_cg:>8.2f} {t_lp:>8.2f} {t_lp / t_cg:>7.2f} {d_cg:>14.10f} "
                f"{(d_cg - d_lp) / d_lp:>9.1e} {gap:>9.1e} {info['rounds']:>6} {info['columns']:>8} "
                f"{info['formulation'].replace(', then ', '+'):>13}")
        if reference and (args.reference_max_k is None or K <= args.reference_max_k):
            ref_info = {}
            (_, d_ref), t_ref = _timed(reference, p_ac, D, info=ref_info)
            line += f" {t_ref:>8.2f} {t_ref / t_cg:>7.2f} {(d_ref - d_cg) / d_cg:>9.1e} {ref_info['rounds']:>10}"
        print(line, flush=True)
    print(f"# load average {_load()}")
    return 0


def build_instance(K: int, cache: pathlib.Path | None = None, private: str = "sex"):
    """(p_ac, D) of a real ``privmap build`` on UCI Adult at K clusters, ``private`` private.

    ``bench_build.adult_rows()`` written as CSV, loaded by the build's own ``load_dataset``,
    quantized as the build quantizes it (seed 0) and turned into the joint prior by
    ``joint_prior``: p_ac has shape (|A|, K), D shape (K, K) (Euclidean distances between the
    integer representatives, zero diagonal). Read from / written to ``cache`` when given.
    """
    path = cache / f"adult_build{'' if private == 'sex' else '_' + private}_{K}.npz" if cache else None
    if path is not None and path.exists():
        z = np.load(path)
        return z["p_ac"], z["D"]
    from privmap.offline import Dataset, QuantizedOptions
    from privmap.offline.data import joint_prior
    from privmap.offline.mechanisms.table import InMemoryRows

    with tempfile.TemporaryDirectory() as tmp:
        ds = Dataset.from_csv(write_csv(adult_rows(private=private), pathlib.Path(tmp) / "adult.csv", private),
                              private=private)
    alphabet = InMemoryRows(ds).alphabet(QuantizedOptions(clusters=K, delta_fraction=0.5, seed=0))
    p_ac = joint_prior(ds.private, alphabet.labels, len(ds.classes), len(alphabet.inputs))
    D = np.asarray(alphabet.distortion, dtype=float)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(path, p_ac=p_ac, D=D)
    return p_ac, D


def _timed(fn, *args, **kw):
    """``fn``'s result and the CPU seconds of this process it took (the solvers run on one
    thread; on a shared machine CPU seconds, not wall seconds, measure the work)."""
    t0 = time.process_time()
    out = fn(*args, **kw)
    return out, time.process_time() - t0


def _reference(rev):
    """``perfect_privacy_table`` as it was at ``rev``, with the rest of that revision's package
    (its transport, its instance checks: :func:`bench_solver.modules_at`)."""
    return bench.function_at(rev, "perfect_privacy_table")


def _load():
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


if __name__ == "__main__":
    sys.exit(main())
