"""Baselines a bundle must beat: releasing nothing useful, and per-rating randomized response.

- **Constant release**: every user releases the same row, the metric's optimum over
  the reference rows (geometric median for ``l2``, per-column median for ``l1``,
  mode for ``hamming``; made a valid row). Zero leakage and an attacker at chance
  by construction; its distortion is what "privacy by releasing nothing" costs.
- **k-ary randomized response** per feature: each cell is kept with probability
  e^eps / (e^eps + k - 1) and otherwise replaced by one of the column's other k - 1
  observed values, uniformly; eps-local differential privacy per cell, d * eps for
  the row. Its distortion and attacker AUC are measured on simulated releases.
- **Quantization alone** at K (no privacy): the build's own k-means
  (:func:`privmap.offline.data._quantize.quantize`) fitted on the training part of the
  rows, each held-out row released as its nearest representative (the device's rule).
  Its distortion is the floor any mapping at that K starts from, so the bundle's
  distortion splits into quantization (this line over the constant's) and privacy
  (the bundle over this line).

Seed 000's mapping without the codebook step is the third baseline: ``privmap curve``
solves it beside the codebook build, and ``evaluate`` measures the bundle's own table
releasing its input representatives (see :func:`uncodebooked_view`).
"""
from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

from . import _attacks

#: Epsilons per cell for the randomized-response baseline.
DEFAULT_EPSILONS = (0.5, 1.0, 2.0, 4.0)


def constant_release(reference, rows, metric: str) -> tuple[np.ndarray, float]:
    """The constant row fitted on ``reference`` (shape (m, d)) and its mean distortion on ``rows`` (n, d).

    Integer columns of ``reference`` get integer values; values stay in its range.
    """
    from ..mechanisms.quantized._codebook import metric_center
    reference = np.asarray(reference, dtype=float)
    rows = np.asarray(rows, dtype=float)
    integer = np.all(reference == np.round(reference), axis=0)
    distance, centre, project = metric_center(metric, integer=integer, lo=reference.min(axis=0),
                                              hi=reference.max(axis=0))
    point = project(centre(reference, np.ones((reference.shape[0], 1)), reference[:1]))
    return point[0], float(np.mean(distance(rows, point)))


def randomized_response(rows, levels: Sequence[np.ndarray], epsilon: float, rng: np.random.Generator) -> np.ndarray:
    """k-ary randomized response applied to each cell of ``rows`` (n, d) over its column's ``levels``.

    Simulation only (numpy's generator): a device would draw from the OS CSPRNG.
    """
    rows = np.asarray(rows, dtype=float)
    out = rows.copy()
    for k, values in enumerate(levels):
        m = len(values)
        if m < 2:
            continue
        keep = rng.random(rows.shape[0]) < np.exp(epsilon) / (np.exp(epsilon) + m - 1)
        at = np.searchsorted(values, rows[:, k])
        other = (at + rng.integers(1, m, rows.shape[0])) % m         # uniform over the m - 1 other values
        out[:, k] = np.where(keep, rows[:, k], values[other])
    return out


def quantization_alone(train, test, clusters: int, metric: str, *, seed: int = 0) -> tuple[np.ndarray, int, float]:
    """k-means at ``clusters`` with no privacy: representatives fitted on ``train`` (m, d), every row of
    ``test`` (n, d) released as its nearest one.

    Returns the released rows (n, d), the number of representatives (K, capped at the distinct
    training rows; rounding may merge some) and their mean distortion on ``test`` (metric's unit).
    Raises :class:`~privmap.offline._errors.DatasetError` for ``clusters`` below 1.
    """
    from ..data._distortion import nearest
    from ..data._quantize import quantize
    train = np.asarray(train, dtype=float)
    test = np.asarray(test, dtype=float)
    k = min(int(clusters), np.unique(train, axis=0).shape[0])
    centers = quantize(train, k, metric=metric, seed=seed).centers
    released = centers[nearest(test, centers, metric)]
    return released, int(centers.shape[0]), float(np.mean(_rowwise(test, released, metric)))


def baselines(public, private, n_classes: int, metric: str, *, reference=None, epsilons=DEFAULT_EPSILONS,
              seed: int = 0, test_fraction: float = 0.3, attacker: bool = True,
              clusters: Sequence[int] = ()) -> dict:
    """Constant release and randomized response measured on labelled numeric rows.

    Parameters
    ----------
    public : array-like, shape (n, d)
        Rows the baselines are measured on.
    private : array-like of int, shape (n,)
    n_classes : int
    metric : {"l2", "l1", "hamming"}
    reference : array-like, shape (m, d), optional
        Rows the constant and the levels are fitted on (default: ``public``).
    epsilons : sequence of float
        Per-cell epsilons of randomized response.
    seed, test_fraction, attacker
        As :func:`privmap.offline.evaluation._evaluate.evaluate_view`.
    clusters : sequence of int
        K of the quantization-alone baseline (:func:`quantization_alone`), one entry each.

    Returns
    -------
    dict
        ``constant``: {row, distortion, leakage_bits (0), roc_auc (0.5)}; ``randomized_response``:
        a list of {epsilon_per_feature, epsilon_row, distortion, roc_auc}; ``quantization_alone``
        (with ``clusters``): a list of {clusters (asked), clusters_used, distortion (held-out rows),
        constant_distortion (the constant's on the same rows), roc_auc (attacker on the released
        rows, None without ``attacker``)}.
    """
    from ._evaluate import _split
    public = np.asarray(public, dtype=float)
    private = np.asarray(private, dtype=np.int64)
    reference = public if reference is None else np.asarray(reference, dtype=float)
    row, dist = constant_release(reference, public, metric)
    out = {"constant": {"row": row.tolist(), "distortion": dist, "leakage_bits": 0.0,
                        "roc_auc": 0.5 if attacker else None}}
    levels = [np.unique(np.concatenate([reference[:, k], public[:, k]])) for k in range(public.shape[1])]
    rng = np.random.default_rng(seed)
    split = _split(public.shape[0], private, test_fraction, seed) if attacker else None
    rr = []
    for eps in epsilons:
        released = randomized_response(public, levels, float(eps), rng)
        point = {"epsilon_per_feature": float(eps), "epsilon_row": float(eps) * public.shape[1],
                 "distortion": float(np.mean(_rowwise(public, released, metric)))}
        if split is not None:
            train, test = split
            point["roc_auc"] = _attacks.logistic_attack(released[train], private[train], released[test],
                                                        private[test], n_classes, seed=seed).roc_auc
        rr.append(point)
    out["randomized_response"] = rr
    if clusters:
        train, test = split if split is not None else _split(public.shape[0], private, test_fraction, seed)
        constant_test = float(np.mean(_rowwise(public[test], np.broadcast_to(row, public[test].shape), metric)))
        alone = []
        for k in clusters:
            released, used, _ = quantization_alone(public[train], public, int(k), metric, seed=seed)
            point = {"clusters": int(k), "clusters_used": used, "distortion": float(np.mean(
                _rowwise(public[test], released[test], metric))), "constant_distortion": constant_test,
                "roc_auc": None}
            if attacker:
                point["roc_auc"] = _attacks.logistic_attack(released[train], private[train], released[test],
                                                            private[test], n_classes, seed=seed).roc_auc
            alone.append(point)
        out["quantization_alone"] = alone
    return out


def _rowwise(X, Y, metric: str) -> np.ndarray:
    """d(X[i], Y[i]) for each i, shape (n,) (the metrics of :mod:`privmap.offline.data._distortion`)."""
    diff = X - Y
    if metric == "l2":
        return np.sqrt(np.sum(diff * diff, axis=1))
    if metric == "l1":
        return np.sum(np.abs(diff), axis=1)
    return np.sum(diff != 0, axis=1).astype(float)


def uncodebooked_view(view):
    """The same table releasing the input representatives instead of the codebook's outputs.

    Only for a quantized view whose outputs correspond one to one to its inputs (a
    codebook build); None otherwise. Its distortion is what the codebook step saved
    at this table; seed 000's own solve (no re-solve) is in ``privmap curve``.
    """
    if view.mechanism != "quantized" or view.categorical or len(view.inputs) != len(view.outputs):
        return None
    if np.array_equal(np.asarray(view.inputs, float), np.asarray(view.outputs, float)):
        return None
    return dataclasses.replace(view, outputs=np.asarray(view.inputs, float))


def bundle_baselines(view, public, private, *, seed: int = 0, test_fraction: float = 0.3,
                     attacker: bool = True, epsilons=DEFAULT_EPSILONS) -> dict | None:
    """:func:`baselines` on the evaluation rows (quantization alone at the bundle's K), plus the
    bundle's table releasing its inputs.

    None for categorical data (the exact mechanism), where no constant row or
    per-rating randomized response is defined here.
    """
    if view.categorical:
        return None
    from ._evaluate import evaluate_view
    clusters = (len(view.inputs),) if view.mechanism == "quantized" else ()
    out = baselines(public, private, len(view.classes), view.metric, epsilons=epsilons, seed=seed,
                    test_fraction=test_fraction, attacker=attacker, clusters=clusters)
    plain = uncodebooked_view(view)
    if plain is not None:
        out["table_releasing_inputs"] = {
            "distortion": evaluate_view(plain, public, private, seed=seed, permutations=1,
                                        attacker=False).summary["distortion"]}
    return out


def format_baselines(base: dict, distortion: float, auc: float | None) -> str:
    """Lines comparing a bundle's distortion (and attacker AUC) with its baselines."""
    def f(x):
        return "-" if x is None else f"{x:.4f}"
    c = base["constant"]
    lines = [f"{'baseline':34}{'distortion':>11}{'x const':>9}{'LR AUC':>8}",
             f"{'this bundle':34}{f(distortion):>11}{distortion / c['distortion']:>9.3f}{f(auc):>8}",
             f"{'constant release (0 bits)':34}{f(c['distortion']):>11}{1.0:>9.3f}{f(c['roc_auc']):>8}"]
    if "table_releasing_inputs" in base:
        d = base["table_releasing_inputs"]["distortion"]
        lines.append(f"{'same table, outputs at inputs':34}{f(d):>11}{d / c['distortion']:>9.3f}{'':>8}")
    for q in base.get("quantization_alone", ()):
        ratio = q["distortion"] / q["constant_distortion"]
        lines.append(f"{'k-means alone, K = ' + str(q['clusters_used']) + ' (held-out)':34}{f(q['distortion']):>11}"
                     f"{ratio:>9.3f}{f(q['roc_auc']):>8}")
    for rr in base["randomized_response"]:
        lines.append(f"{'randomized response eps ' + format(rr['epsilon_per_feature'], 'g') + '/feature':34}"
                     f"{f(rr['distortion']):>11}{rr['distortion'] / c['distortion']:>9.3f}"
                     f"{f(rr.get('roc_auc')):>8}")
    return "\n".join(lines)


def format_quantization_alone(base: dict) -> str:
    """One line per K of the quantization-alone baseline: held-out distortion, its ratio to the
    constant release on the same rows, and the attacker's AUC."""
    return "\n".join(
        f"k-means alone (no privacy), K = {q['clusters_used']}: held-out distortion {q['distortion']:.4f} "
        f"= {q['distortion'] / q['constant_distortion']:.3f} x constant"
        + (f", LR AUC {q['roc_auc']:.3f}" if q.get("roc_auc") is not None else "")
        for q in base.get("quantization_alone", ()))
