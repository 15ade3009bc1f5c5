"""Save the instance of program (19) that one cross-fitting fold of a build solves.

Run from the repository root:

    python benchmarks/save_fold_instance.py DATA.csv --private COL --clusters K --fold I --out FOLD.npz
    python benchmarks/bench_solver.py --ks --hard-ks --large-ks --adult-ks --fracs 0.5 --saved FOLD.npz

Fold I (0-based) of the build's StratifiedKFold(k, seed) split, its training rows quantized as the
fold quantizes them (one k-means++ start, :class:`FoldKMeans`), its prior, and D between its
representatives: arrays ``p_ac`` (|A|, K), ``D`` (K, K) and ``delta`` (``--delta-fraction`` x the
fold's Delta0, which is printed). The folds of a whole build can be much harder for the solver than
the build's own instance (benchmarks/README.md, "The solver": the build's own instances).
"""
from __future__ import annotations

import argparse
import pathlib
import sys
import time

import numpy as np
from sklearn.model_selection import StratifiedKFold

from privmap.offline import Dataset, QuantizedOptions
from privmap.offline.data import joint_prior
from privmap.offline.mechanisms.table import FoldKMeans, InMemoryRows, fold_options
from privmap.offline.solvers import perfect_privacy_table


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", type=pathlib.Path)
    ap.add_argument("--private", required=True)
    ap.add_argument("--clusters", type=int, required=True)
    ap.add_argument("--delta-fraction", type=float, default=0.5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--fold", type=int, default=0)
    ap.add_argument("--out", type=pathlib.Path, required=True)
    args = ap.parse_args(argv)
    ds = Dataset.from_csv(args.data, private=args.private)
    options = QuantizedOptions(clusters=args.clusters, delta_fraction=args.delta_fraction, seed=args.seed,
                               cross_fitting=None)
    splits = list(StratifiedKFold(n_splits=args.folds, shuffle=True, random_state=args.seed)
                  .split(np.zeros(ds.n), ds.private))
    train = splits[args.fold][0]
    fold = InMemoryRows(ds).subset(train)
    alphabet = fold.alphabet(fold_options(options, ds, train), quantizer=FoldKMeans())
    p_ac = joint_prior(fold.dataset.private, alphabet.labels, len(fold.classes), len(alphabet.inputs))
    started = time.process_time()
    _, d_perfect = perfect_privacy_table(p_ac, alphabet.distortion)
    print(f"fold {args.fold}: K = {p_ac.shape[1]}, Delta0 = {d_perfect:.6g} "
          f"({time.process_time() - started:.1f} CPU-s)")
    np.savez(args.out, p_ac=p_ac, D=alphabet.distortion, delta=args.delta_fraction * d_perfect)
    return 0


if __name__ == "__main__":
    sys.exit(main())
