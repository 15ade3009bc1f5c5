"""Reproduce seed 000, Section VI-C (Fig. 10-12, Table I) on the bundled real ratings data.

The paper's Politics-and-TV survey is not public; the closest public data bundled
with privmap stand in for it:

- ``ssi_gender``: SSI-2012 music-taste ratings (20 genres, 0 = unrated, 1-3) vs gender
  (``data/ssi2012/tastes_gender.csv``);
- ``ssi_income``: the same ratings vs household income < $50,000 or >= $50,000
  (derived here from ``data/ssi2012/ssi2012_cleaned.csv``; rows without income dropped);
- ``anes_party``: ANES 1996, TVnews (days a week, 0-7) and the 1-7 liberal-conservative
  placements of self, Clinton and Dole vs party (PID 0-2 Democrat, 4-6 Republican;
  the 3 = independent rows dropped) (``data/anes96/anes96.csv``).

For each: privacy-distortion curves for several K (Algorithm 2, k-means, L2),
Delta from 0 to the perfect-privacy distortion of each K, with the
logistic-regression attacker's ROC AUC (trained on sanitized training rows,
tested on sanitized held-out rows). For ``ssi_gender`` also: ROC curves of a
logistic regression under 10-fold cross-validation before and after the mapping
(Fig. 12), and recommender RMSE on true vs released ratings (matrix
factorization, 5 folds, 10 % of each test fold's ratings held out; Table I).

Writes ``docs/figures/ratings_*.png`` and ``.csv``. Run from the repository root::

    python examples/ratings.py            # all three datasets (a few minutes)
    python examples/ratings.py --only ssi_gender
"""
from __future__ import annotations

import argparse
import csv
import importlib.util
import pathlib
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from privmap.offline import (  # noqa: E402
    evaluation,
    measures,
    solve,  # noqa: E402
)
from privmap.offline.data import load_dataset  # noqa: E402
from privmap.offline.measures import rmse_true_vs_released  # noqa: E402
from privmap.offline.mechanisms.table import view_from_table  # noqa: E402
from privmap.offline.solvers import perfect_privacy_distortion  # noqa: E402

FIGURES = ROOT / "docs" / "figures"


def _prepare_module():
    spec = importlib.util.spec_from_file_location("prepare_ssi2012", ROOT / "data" / "prepare_ssi2012.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def ssi_gender():
    ds = load_dataset(ROOT / "data" / "ssi2012" / "tastes_gender.csv", private="gender")
    return ds.public, ds.private, ds.classes, ds.features


def ssi_income():
    prep = _prepare_module()
    with open(ROOT / "data" / "ssi2012" / "ssi2012_cleaned.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    X, a = [], []
    low = {"<$10,000", "$10,000 - $19,999", "$20,000 - $29,999", "$30,000 - $39,999", "$40,000 - $49,999"}
    for row in rows:
        ratings = [prep.CODES[row[g + "taste"]] for g in prep.GENRES]
        if row["income"] == "NA" or not any(ratings):
            continue
        X.append(ratings)
        a.append(0 if row["income"] in low else 1)
    return np.array(X, float), np.array(a), ("<50K", ">=50K"), tuple(prep.GENRES)


def anes_party():
    features = ("TVnews", "selfLR", "ClinLR", "DoleLR")
    with open(ROOT / "data" / "anes96" / "anes96.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    X, a = [], []
    for row in rows:
        pid = float(row["PID"])
        if pid == 3:
            continue
        X.append([float(row[c]) for c in features])
        a.append(0 if pid <= 2 else 1)
    return np.array(X), np.array(a), ("Democrat", "Republican"), features


DATASETS = {"ssi_gender": ssi_gender, "ssi_income": ssi_income, "anes_party": anes_party}


def curves(name, X, a, classes, features, ks, n_deltas, seed, out):
    points = []
    for k in ks:
        prob = evaluation.build_problem(X, a, len(classes), mechanism="quantized", metric="l2", clusters=k, seed=seed)
        pp = perfect_privacy_distortion(prob.p_ac, prob.distortion)
        deltas = list(np.linspace(0.0, pp, n_deltas))
        points += evaluation.sweep(X, a, classes, features, deltas=deltas, clusters=[k], seed=seed,
                               private_name=name, permutations=5, codebook=False)  # seed 000's mapping
        print(f"  K = {k}: perfect privacy at Delta = {pp:.4f}", flush=True)
    evaluation.write_csv(points, out / f"ratings_{name}_curve.csv")
    print(evaluation.format_table(points))
    if measures.have_matplotlib():
        measures.plot_curve(points, out / f"ratings_{name}_curve.png", x="distortion",
                          xlabel="L2 distortion on the raw rows (quantization included)",
                          title=f"{name}: leakage and attacker AUC vs distortion (Fig. 10-11)")
    return points


def roc_and_rmse(name, X, a, classes, features, k, seed, out):
    """Fig. 12 (10-fold ROC before/after) and Table I (RMSE true vs released) at K = k."""
    prob = evaluation.build_problem(X, a, len(classes), mechanism="quantized", metric="l2", clusters=k, seed=seed)
    pp = perfect_privacy_distortion(prob.p_ac, prob.distortion)
    rng = np.random.default_rng(seed)
    settings = [("raw ratings", None)] + [(f"Delta = {d:.3f}" + (" (perfect privacy)" if d == pp else ""), d)
                                         for d in (0.0, pp / 2, pp)]
    curves_roc, table_rows, rmse_rows = [], [], []
    for label, delta in settings:
        if delta is None:
            released = X
            leak = None
        else:
            res = solve(prob.p_ac, prob.distortion, delta)
            view = view_from_table("quantized", "l2", prob.inputs, prob.outputs, res.table, classes, features,
                                   delta=delta)
            released = view.released_rows(view.release(view.lookup(X), rng))
            leak = res.leakage_bits
        scores = measures.cross_validated_scores(released, a, len(classes), folds=10, seed=seed)
        fpr, tpr = measures.roc_curve_points(scores)
        curves_roc.append((f"{label}: AUC {scores.roc_auc:.3f}", fpr, tpr))
        table_rows.append([label, "" if leak is None else f"{leak:.4f}", f"{scores.roc_auc:.4f}",
                           f"{scores.accuracy:.4f}", f"{scores.balanced_accuracy:.4f}", f"{scores.majority:.4f}"])
        print(f"  ROC {label:<34} leakage {table_rows[-1][1] or '-':>7}  AUC {scores.roc_auc:.3f}  "
              f"accuracy {scores.accuracy:.3f} (majority {scores.majority:.3f})", flush=True)
        if delta is not None:
            for r in rmse_true_vs_released(X, released, folds=5, holdout=0.1, seed=seed):
                rmse_rows.append([f"{delta:.4f}", r["fold"], r["held_out"], f"{r['rmse_true']:.4f}",
                                  f"{r['rmse_released']:.4f}"])
    # The same attack when each fold's mapping is built without that fold (new users): no
    # in-sample anti-correlation between the folds the attacker trains and tests on.
    for fraction in (0.5, 1.0):
        scores, leaks = out_of_fold_attack(X, a, classes, features, k, fraction, seed)
        label = f"Delta = {fraction:g} x perfect privacy, mapping built out of fold"
        fpr, tpr = measures.roc_curve_points(scores)
        curves_roc.append((f"{label}: AUC {scores.roc_auc:.3f}", fpr, tpr))
        table_rows.append([label, f"{np.mean(leaks):.4f}", f"{scores.roc_auc:.4f}", f"{scores.accuracy:.4f}",
                           f"{scores.balanced_accuracy:.4f}", f"{scores.majority:.4f}"])
        print(f"  ROC {label:<34} leakage {table_rows[-1][1]:>7} (on the training folds)  AUC {scores.roc_auc:.3f}  "
              f"accuracy {scores.accuracy:.3f} (majority {scores.majority:.3f})", flush=True)
    with open(out / f"ratings_{name}_roc.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["setting", "leakage_bits", "roc_auc", "accuracy", "balanced_accuracy", "majority"])
        w.writerows(table_rows)
    with open(out / f"ratings_{name}_rmse.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["delta", "fold", "held_out", "rmse_true", "rmse_released"])
        w.writerows(rmse_rows)
    print(f"\n  Table I ({name}, K = {k}): RMSE of predictions trained on true (RMSE1) / released (RMSE2) ratings")
    for delta in sorted({r[0] for r in rmse_rows}):
        rows = [r for r in rmse_rows if r[0] == delta]
        print(f"  Delta {delta}: RMSE1 " + " ".join(r[3] for r in rows) + " | RMSE2 " + " ".join(r[4] for r in rows))
    if measures.have_matplotlib():
        measures.plot_roc(curves_roc, out / f"ratings_{name}_roc.png",
                        title=f"{name}, K = {k}: 10-fold CV (Fig. 12)")


def out_of_fold_attack(X, a, classes, features, k, fraction, seed, folds=10):
    """10-fold logistic regression where fold f's rows are released by a mapping built on the other folds."""
    from sklearn.model_selection import StratifiedKFold
    rng = np.random.default_rng(seed)
    proba = np.zeros((len(a), len(classes)))
    leaks = []
    for train, test in StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed).split(X, a):
        prob = evaluation.build_problem(X[train], a[train], len(classes), mechanism="quantized", metric="l2",
                                    clusters=k, seed=seed)
        delta = fraction * perfect_privacy_distortion(prob.p_ac, prob.distortion)
        res = solve(prob.p_ac, prob.distortion, delta)
        leaks.append(res.leakage_bits)
        view = view_from_table("quantized", "l2", prob.inputs, prob.outputs, res.table, classes, features,
                               delta=delta)
        released = view.released_rows(view.release(view.lookup(X), rng))
        proba[test] = measures.logistic_attack(released[train], a[train], released[test], a[test],
                                               len(classes), seed=seed).scores
    from sklearn.metrics import accuracy_score, balanced_accuracy_score, roc_auc_score
    guess = np.argmax(proba, axis=1)
    scores = measures.AttackScores(accuracy=float(accuracy_score(a, guess)),
                                   balanced_accuracy=float(balanced_accuracy_score(a, guess)),
                                   roc_auc=float(roc_auc_score(a, proba[:, 1])),
                                   majority=float(np.bincount(a).max() / len(a)), scores=proba, y_test=a)
    return scores, leaks


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description="Ratings reproduction (seed 000, Fig. 10-12, Table I)")
    parser.add_argument("--only", choices=sorted(DATASETS), action="append")
    parser.add_argument("--clusters", default="8,16,32")
    parser.add_argument("--deltas", type=int, default=7, help="points per curve, 0 .. perfect privacy")
    parser.add_argument("--roc-clusters", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=pathlib.Path, default=FIGURES)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    ks = [int(k) for k in args.clusters.split(",")]
    for name in args.only or list(DATASETS):
        X, a, classes, features = DATASETS[name]()
        counts = np.bincount(a)
        print(f"\n== {name}: {len(a)} rows, {len(features)} features, classes {classes} "
              f"({', '.join(str(c) for c in counts)})", flush=True)
        curves(name, X, a, classes, features, ks, args.deltas, args.seed, args.out)
        if name.startswith("ssi_gender"):
            roc_and_rmse(name, X, a, classes, features, args.roc_clusters, args.seed, args.out)


if __name__ == "__main__":
    main()
