"""privmap against local differential privacy at an equal per-output guarantee.

The bundled SSI-2012 ratings (20 tastes rated 0-3, private gender; ``--columns`` keeps the first
few) are split once, stratified, into a training part (the operator's data) and a held-out part
(new users). For each per-cell epsilon (nats) of a local mechanism, k-ary randomized response
(RR) or the optimized unary encoding decoded to one value (OUE, :func:`oue_channel`):

1. its per-output leakage about gender on the training rows, in bits: max over released rows y and
   classes a of |log2 p(a|y) - log2 p(a)| (:func:`per_output_leakage`): exact when every output
   can be enumerated (4^d <= 65,536, so d <= 8 here), otherwise a *lower* bound, the worst of
   the simulated releases and of a coordinate ascent from the worst of them; the LDP bound
   (:func:`ldp_epsilon_bound_bits`, d * eps per row) is printed beside it;
2. privmap is built on the training part (K clusters, no codebook step, no cross-fitting) with
   ``--max-output-leakage`` set to that figure and the least budget the limit allows
   (:func:`least_distortion`, plus a tenth of itself or of 1 % of Delta0, whichever is more, so the
   leakage has room to fall and Clarabel an interior: at 1.02 x it stopped short, InsufficientProgress,
   on 6 columns at K = 64, and at 1.1 x a least distortion near 0 left no room for rounding at
   K = 256): its shipped table meets
   the same per-output guarantee on its own training prior; where the RR figure is a lower bound,
   privmap's limit is at most RR's true epsilon, so the comparison can only favour RR;
3. both are measured on the held-out rows: mean l2 distortion on raw rows (privmap: exact under
   its table; RR: one simulated release) and the logistic-regression attacker's ROC AUC (trained on
   released rows of 70 % of the held-out rows, tested on the rest, as ``privmap evaluate``).

The constant release (the l2 optimum of the training rows), k-means alone at K and the raw rows
(no mechanism: the attacker's AUC) are printed as reference rows. The AUCs rest on 204 test rows
(30 % of the held-out part): their standard error is about 0.04. Prints one table; ``--json``
prints the rows as JSON instead.

    nice python benchmarks/bench_ldp.py [--columns 6] [--clusters 64] [--epsilons 0.25 0.5 1 2 4]
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import pathlib
import tempfile
import time

import numpy as np
from sklearn.model_selection import train_test_split

from privmap.offline import BuildError, Dataset, OutputLimit, QuantizedOptions, load_dataset
from privmap.offline._information import max_output_leakage_bits
from privmap.offline.data import assigned_distance
from privmap.offline.evaluation import (
    channel_release,
    constant_release,
    ldp_epsilon_bound_bits,
    oue_channel,
    per_output_leakage,
    quantization_alone,
    rr_channel,
)
from privmap.offline.measures import logistic_attack, split_rows
from privmap.offline.mechanisms.quantized import build
from privmap.offline.mechanisms.table import InMemoryRows, evaluate_view, solve_rows, view_from_payload
from privmap.offline.solvers import least_distortion

ROOT = pathlib.Path(__file__).resolve().parents[1]
CHANNELS = {"RR": rr_channel, "OUE": oue_channel}
BUDGET_SLACK = 0.1           # the budget's room above the least distortion: this share of it ...
FLOOR_SLACK = 0.01           # ... or this share of Delta0, whichever is more


def _write(path, names, private_name, classes, public, private):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow([*names, private_name])
        for row, a in zip(public, private):
            w.writerow([*(int(v) for v in row), classes[a]])


def _attack_auc(released, private, n_classes, seed):
    train, test = split_rows(released.shape[0], private, 0.3, seed)
    return logistic_attack(released[train], private[train], released[test], private[test], n_classes,
                           seed=seed).roc_auc


def privmap_at(train_csv, test_public, test_private, private_name, clusters, limit, seed):
    """Build at the per-output ``limit`` with the least budget it allows (plus its room, module docstring);
    held-out figures, or the build's refusal (``refused``: its message) with NaN figures."""
    probe = QuantizedOptions(clusters=clusters, delta_fraction=1.0, codebook=False, cross_fitting=None, seed=seed)
    rows = InMemoryRows(*Dataset.from_csv(train_csv, private=private_name).without_all_missing())
    solved = solve_rows(rows, probe)                       # k-means and prior, as the build will find them
    least = least_distortion(solved.p_ac, solved.alphabet.distortion, limit)
    delta = least + max(BUDGET_SLACK * least, FLOOR_SLACK * solved.d_perfect)
    started = time.perf_counter()
    try:
        options = QuantizedOptions(clusters=clusters, delta=delta, codebook=False, cross_fitting=None, seed=seed,
                                   output_limit=OutputLimit(bits=limit))
        built = build(rows.dataset, options).detail
    except BuildError as exc:
        return {"limit_bits": limit, "shipped_bits": math.nan, "delta": delta, "leakage_bits": math.nan,
                "distortion": math.nan, "roc_auc": math.nan, "build_seconds": time.perf_counter() - started,
                "refused": str(exc)}
    seconds = time.perf_counter() - started
    shipped = max_output_leakage_bits(built.p_ac, built.table.probabilities())
    view = view_from_payload(built.payload)
    summary = evaluate_view(view, test_public, test_private, seed=seed, permutations=1).summary
    return {"limit_bits": limit, "shipped_bits": shipped, "delta": delta, "leakage_bits": built.table.leakage_bits,
            "distortion": summary["distortion"], "roc_auc": summary["attacker"]["after"]["roc_auc"],
            "build_seconds": seconds}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(ROOT / "data/ssi2012/tastes_gender.csv"))
    parser.add_argument("--private", default="gender")
    parser.add_argument("--columns", type=int, default=None, help="keep the first N public columns")
    parser.add_argument("--clusters", type=int, default=64)
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.25, 0.5, 1.0, 2.0, 4.0])
    parser.add_argument("--mechanisms", nargs="+", default=["RR", "OUE"], choices=sorted(CHANNELS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    ds = load_dataset(args.data, private=args.private)
    names = ds.features[:args.columns] if args.columns else ds.features
    X = ds.public[:, :len(names)]
    levels = [np.unique(X[:, k]) for k in range(X.shape[1])]
    codes = np.column_stack([np.searchsorted(lv, X[:, k]) for k, lv in enumerate(levels)])
    train, test = train_test_split(np.arange(ds.n), test_size=0.3, random_state=args.seed, stratify=ds.private)
    n_classes = len(ds.classes)
    p_a = np.bincount(ds.private[train], minlength=n_classes) / train.size
    rng = np.random.default_rng(args.seed)

    tmp = tempfile.TemporaryDirectory()
    train_csv = pathlib.Path(tmp.name) / "train.csv"
    _write(train_csv, names, ds.private_name, ds.classes, X[train], ds.private[train])
    _, constant = constant_release(X[train], X[test], "l2")
    quantized, used, alone = quantization_alone(X[train], X[test], args.clusters, "l2", seed=args.seed)
    raw_auc = _attack_auc(X[test], ds.private[test], n_classes, args.seed)
    alone_auc = _attack_auc(quantized, ds.private[test], n_classes, args.seed)
    rows = []
    for mech in args.mechanisms:
        for eps in args.epsilons:
            channels = [CHANNELS[mech](len(lv), eps) for lv in levels]
            released_train = channel_release(codes[train], channels, rng)
            leak = per_output_leakage(codes[train], ds.private[train], n_classes, channels,
                                      candidates=released_train)
            released = channel_release(codes[test], channels, rng)
            values = np.column_stack([levels[k][released[:, k]] for k in range(len(levels))])
            row = {"mechanism": mech, "epsilon_per_cell": eps, "epsilon_row": eps * len(levels),
                   "ldp_epsilon_bits": leak["epsilon_bits"], "ldp_epsilon_exact": leak["exact"],
                   "ldp_bound_bits": ldp_epsilon_bound_bits(eps * len(levels), p_a),
                   "ldp_distortion": float(np.mean(assigned_distance(X[test], values, np.arange(test.size), "l2"))),
                   "ldp_roc_auc": _attack_auc(values, ds.private[test], n_classes, args.seed)}
            row.update({f"privmap_{k}": v for k, v in privmap_at(train_csv, X[test], ds.private[test], ds.private_name,
                                                                  args.clusters, leak["epsilon_bits"],
                                                                  args.seed).items()})
            rows.append(row)
    if args.json:
        print(json.dumps({"columns": len(names), "clusters": args.clusters, "constant_distortion": constant,
                          "kmeans_alone_distortion": alone, "raw_roc_auc": raw_auc, "kmeans_alone_roc_auc": alone_auc,
                          "rows": rows}, indent=2))
        return
    print(f"SSI-2012, {len(names)} columns, private {ds.private_name}, {train.size} training / {test.size} "
          f"held-out rows; privmap K = {args.clusters}; held-out figures")
    print(f"constant release distortion {constant:.4f}; k-means alone K = {used}: {alone:.4f} (LR AUC "
          f"{alone_auc:.3f}); raw rows LR AUC {raw_auc:.3f}")
    head = (f"{'mech':5}{'eps/cell':>9}{'eps bits':>10}{'':2}{'LDP bound':>10}{'LDP dist':>10}{'LDP AUC':>9}"
            f"{'pm shipped':>11}{'pm dist':>9}{'pm AUC':>8}{'pm/LDP':>8}{'pm leak':>9}{'pm s':>7}")
    print(head)
    for r in rows:
        print(f"{r['mechanism']:5}{r['epsilon_per_cell']:>9g}{r['ldp_epsilon_bits']:>10.4f}"
              f"{'=' if r['ldp_epsilon_exact'] else '>':>2}{r['ldp_bound_bits']:>10.3f}{r['ldp_distortion']:>10.4f}"
              f"{r['ldp_roc_auc']:>9.3f}{r['privmap_shipped_bits']:>11.4f}{r['privmap_distortion']:>9.4f}"
              f"{r['privmap_roc_auc']:>8.3f}{r['privmap_distortion'] / r['ldp_distortion']:>8.3f}"
              f"{r['privmap_leakage_bits']:>9.5f}{r['privmap_build_seconds']:>7.1f}")
    for r in rows:
        if "privmap_refused" in r:
            print(f"{r['mechanism']} eps {r['epsilon_per_cell']:g}: privmap refused: {r['privmap_refused']}")
    print("eps bits: the local mechanism's per-output leakage about the private class on the training rows "
          "('=' exact, '>' a lower bound); privmap is built at that limit (pm shipped: its integer table's)")


if __name__ == "__main__":
    main()
