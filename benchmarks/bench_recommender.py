"""Benchmark: what each release is worth to a recommender, beside what it tells an attacker.

Run from the repository root:

    python benchmarks/bench_recommender.py [--data insteval synthetic] [--only NAME ...] [--seed 0] [--json]

For each data set (``insteval``: data/insteval, 2,972 students x 500 lecturers, ratings 1-5, 96 %
blank, private ``studage``, 4 classes; ``synthetic``: :func:`privmap.offline.data.synthetic_ratings`,
3,000 users x 500 items, density 0.04, 4 classes, seeded) the protocol of
:mod:`privmap.offline.evaluation._service_utility`:

- users split 70/30 into training and held-out users (stratified by the private class, seeded);
- 10 % of each held-out user's ratings hidden (at least one of two or more);
- each release of :data:`RELEASES` is fitted on the training users (their true ratings and
  classes) and applied to each held-out user's visible row;
- scikit-surprise's SVD (50 factors) is trained on the training users' true ratings plus the
  held-out rows as released and predicts the hidden ratings: RMSE, value kept = (RMSE nothing -
  RMSE) / (RMSE nothing - RMSE true), NDCG@10 over the hidden items, recall@10 among the items
  not rated;
- the attacker (logistic regression choosing its regularisation by inner cross-validation,
  :mod:`privmap.offline._attacker`) is trained on the training users' rows as the release makes
  them (from their whole rows) and tested on the held-out users' released rows: ROC AUC (one-vs-rest
  macro for 4 classes; 0.5 = chance).

To add a row, add an entry to :data:`RELEASES`: a name and a function ``fit(train, private,
n_classes, seed) -> release``, where ``train`` (n_train, m) holds the training users' true
ratings (NaN = not rated), ``private`` their class codes, and ``release(rows) -> released`` maps
rows (n, m) with NaN blanks to released rows of the same shape (NaN = blank, not a rating; a row
may be dense). The release of a held-out user sees only their visible cells.
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import pathlib
import sys
import tempfile
import time
from typing import Callable

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from privmap.offline._attacker import logistic_attack  # noqa: E402
from privmap.offline.data import load_dataset, synthetic_ratings  # noqa: E402
from privmap.offline.evaluation._evaluate import view_from_payload, view_from_table, view_release  # noqa: E402
from privmap.offline.evaluation._service_utility import ServiceUtility  # noqa: E402

Release = Callable[[np.ndarray], np.ndarray]
#: The privmap builds' budget: this fraction of the perfect-privacy distortion (the demo's).
DELTA_FRACTION = 0.5
INSTEVAL = ROOT / "data" / "insteval" / "InstEval_wide_top500.csv"


# --------------------------------------------------------------------------- releases

def true_ratings(train, private, n_classes, seed) -> Release:
    """The user's own ratings, as they are."""
    return lambda rows: np.array(rows, dtype=float)


def nothing(train, private, n_classes, seed) -> Release:
    """No row at all (every cell blank)."""
    return lambda rows: np.full(np.shape(rows), np.nan)


def kmeans_alone(k: int):
    """k-means at K on the training users, each row released as its nearest representative (the
    device's masked rule), no privacy: what quantizing alone costs."""
    def fit(train, private, n_classes, seed) -> Release:
        from privmap.offline.data import quantize
        rows = train[~np.isnan(train).all(axis=1)]
        centers = quantize(rows, k, metric="l2", seed=seed).centers
        view = view_from_table("quantized", "l2", centers, centers, np.eye(len(centers)),
                               [str(c) for c in range(n_classes)], [f"c{j}" for j in range(train.shape[1])])
        return view_release(view, np.random.default_rng(seed))
    return fit


def privmap_quantized(k: int, delta_fraction: float = DELTA_FRACTION):
    """``privmap build --clusters K --delta-fraction F --domain LO:HI --holdout-folds 0`` on the
    training users' raw ratings (blanks masked), released as a device would (one simulated draw)."""
    def fit(train, private, n_classes, seed) -> Release:
        from privmap.offline import BuildOptions, build
        from privmap.offline.data import declare
        keep = ~np.isnan(train).all(axis=1)
        lo, hi = int(np.nanmin(train)), int(np.nanmax(train))
        with tempfile.TemporaryDirectory() as tmp:
            path = pathlib.Path(tmp) / "train.csv"
            write_csv(path, train[keep], private[keep])
            options = BuildOptions(private="private", clusters=k, delta_fraction=delta_fraction, seed=seed,
                                   declared=declare(domains=[f"{lo}:{hi}"]), holdout_folds=0,
                                   issued_at=1_795_000_000)
            result = build(path, options)
        return view_release(view_from_payload(result.payload), np.random.default_rng(seed))
    return fit


#: name -> fit(train, private, n_classes, seed) -> release(rows) -> released rows. Add rows here.
RELEASES: dict[str, Callable] = {
    "true ratings": true_ratings,
    "nothing": nothing,
    "k-means alone K=16 (no privacy)": kmeans_alone(16),
    "k-means alone K=64 (no privacy)": kmeans_alone(64),
    "privmap quantized K=16": privmap_quantized(16),
    "privmap quantized K=64": privmap_quantized(64),
}


# --------------------------------------------------------------------------- data

def write_csv(path: pathlib.Path, rows: np.ndarray, private: np.ndarray) -> None:
    """Rows of ratings (NaN = blank) and a ``private`` class column, as privmap build reads them."""
    with path.open("w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow([f"c{j}" for j in range(rows.shape[1])] + ["private"])
        for row, a in zip(rows, private):
            w.writerow(["" if math.isnan(x) else f"{x:g}" for x in row] + [f"a{a}"])


def insteval() -> tuple[np.ndarray, np.ndarray, int]:
    """data/insteval's wide file: ratings (2972, 500) with NaN blanks, studage codes, 4 classes."""
    with INSTEVAL.open() as f:
        header = next(csv.reader(f))
    ds = load_dataset(INSTEVAL, private="studage", public=[c for c in header if c.startswith("d")])
    return np.asarray(ds.public, dtype=float), np.asarray(ds.private), len(ds.classes)


def synthetic(seed: int) -> tuple[np.ndarray, np.ndarray, int]:
    s = synthetic_ratings(3000, 500, rank=5, density=0.04, classes=4, rng=seed)
    return s.ratings, s.private, len(s.classes)


DATA = {"insteval": lambda seed: insteval(), "synthetic": synthetic}


# --------------------------------------------------------------------------- protocol

def split(private: np.ndarray, seed: int, test_fraction: float = 0.3):
    from sklearn.model_selection import train_test_split
    return train_test_split(np.arange(len(private)), test_size=test_fraction, random_state=seed, stratify=private)


def run(name: str, seed: int, only: list[str] | None) -> dict:
    ratings, private, n_classes = DATA[name](seed)
    train, test = split(private, seed)
    service = ServiceUtility(ratings[train], ratings[test], seed=seed)
    out = {"data": name, "users": int(len(private)), "items": int(ratings.shape[1]),
           "density": float(np.mean(~np.isnan(ratings))), "classes": n_classes, **service.describe(),
           "baseline": service.baseline, "rows": []}
    for label, fit in RELEASES.items():
        if only and label not in only:
            continue
        started = time.perf_counter()
        release = fit(ratings[train], private[train], n_classes, seed)
        released = release(service.visible.copy())
        figures = service.measure(released)
        attack = logistic_attack(release(ratings[train]), private[train], released, private[test], n_classes,
                                 seed=seed)
        out["rows"].append({"release": label, "rmse": figures["rmse_released"], "value_kept": figures["value_kept"],
                            "ndcg_at_10": figures["ndcg_at_k_released"], "recall_at_10": figures["recall_at_k_released"],
                            "attacker_auc": attack.roc_auc, "attacker_c": attack.regularisation,
                            "released_cells_per_user": figures["released_cells_per_user"],
                            "seconds": time.perf_counter() - started})
        print(f"  {name}: {label} done in {out['rows'][-1]['seconds']:.1f} s", file=sys.stderr, flush=True)
    return out


def table(r: dict) -> str:
    def f(x, nd=4):
        return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{nd}f}"
    lines = [f"{r['data']}: {r['users']} users x {r['items']} items, density {r['density']:.4f}, {r['classes']} classes; "
             f"{r['train_users']} training users, {r['heldout_users']} held-out users, {r['hidden_ratings']} hidden "
             f"ratings ({r['visible_ratings_per_user']:.1f} visible per held-out user)",
             "",
             "| release | RMSE | value kept | NDCG@10 | recall@10 | held-out attacker AUC | released cells / user |",
             "|---|---|---|---|---|---|---|"]
    for row in r["rows"]:
        lines.append(f"| {row['release']} | {f(row['rmse'])} | {f(row['value_kept'], 3)} | {f(row['ndcg_at_10'])} | "
                     f"{f(row['recall_at_10'])} | {f(row['attacker_auc'], 3)} | {row['released_cells_per_user']:.1f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", nargs="+", choices=sorted(DATA), default=["insteval", "synthetic"])
    ap.add_argument("--only", nargs="+", metavar="NAME", help="only these releases (names of RELEASES)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    args = ap.parse_args(argv)
    results = [run(name, args.seed, args.only) for name in args.data]
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    for r in results:
        print(table(r) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
