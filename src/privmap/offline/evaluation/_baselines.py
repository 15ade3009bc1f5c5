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
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..data import nearest, quantize
from ..measures import logistic_attack, split_rows
from ..mechanisms.ranking import ScoreView
from ..mechanisms.recommender import FactorView
from ..mechanisms.table import evaluate_view, metric_center

#: Epsilons per cell for the randomized-response baseline.
DEFAULT_EPSILONS = (0.5, 1.0, 2.0, 4.0)


def constant_release(reference, rows, metric: str) -> tuple[np.ndarray, float]:
    """The constant row fitted on ``reference`` (shape (m, d)) and its mean distortion on ``rows`` (n, d).

    Integer columns of ``reference`` get integer values; values stay in its range. NaN cells (blank
    answers) are masked, in the fit and in the distortion, as the device masks them.
    """
    reference = np.asarray(reference, dtype=float)
    rows = np.asarray(rows, dtype=float)
    integer = np.all(np.isnan(reference) | (reference == np.round(reference)), axis=0)
    distance, centre, project = metric_center(metric, integer=integer, lo=np.nanmin(reference, axis=0),
                                              hi=np.nanmax(reference, axis=0))
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
        out[:, k] = np.where(keep | np.isnan(rows[:, k]), rows[:, k], values[other])   # a blank stays blank
    return out


def quantization_alone(train, test, clusters: int, metric: str, *, seed: int = 0) -> tuple[np.ndarray, int, float]:
    """k-means at ``clusters`` with no privacy.

    Representatives fitted on ``train`` (m, d), every row of ``test`` (n, d) released as its
    nearest one.

    Returns the released rows (n, d), the number of representatives (K, capped at the distinct
    training rows; rounding may merge some) and their mean distortion on ``test`` (metric's unit).
    Raises :class:`~privmap.offline._errors.DatasetError` for ``clusters`` below 1.
    """
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
        As :func:`privmap.offline.mechanisms.table.evaluate_view`.
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
    public = np.asarray(public, dtype=float)
    private = np.asarray(private, dtype=np.int64)
    reference = public if reference is None else np.asarray(reference, dtype=float)
    row, dist = constant_release(reference, public, metric)
    out: dict[str, Any] = {"constant": {"row": row.tolist(), "distortion": dist, "leakage_bits": 0.0,
                        "roc_auc": 0.5 if attacker else None}}
    levels = [_observed(np.unique(np.concatenate([reference[:, k], public[:, k]]))) for k in range(public.shape[1])]
    rng = np.random.default_rng(seed)
    split = split_rows(public.shape[0], private, test_fraction, seed) if attacker else None
    rr = []
    for eps in epsilons:
        released = randomized_response(public, levels, float(eps), rng)
        point = {"epsilon_per_feature": float(eps), "epsilon_row": float(eps) * public.shape[1],
                 "distortion": float(np.mean(_rowwise(public, released, metric)))}
        if split is not None:
            train, test = split
            point["roc_auc"] = logistic_attack(released[train], private[train], released[test],
                                                        private[test], n_classes, seed=seed).roc_auc
        rr.append(point)
    out["randomized_response"] = rr
    if clusters:
        train, test = split if split is not None else split_rows(public.shape[0], private, test_fraction, seed)
        constant_test = float(np.mean(_rowwise(public[test], np.broadcast_to(row, public[test].shape), metric)))
        alone = []
        for k in clusters:
            released, used, _ = quantization_alone(public[train], public, int(k), metric, seed=seed)
            point = {"clusters": int(k), "clusters_used": used, "distortion": float(np.mean(
                _rowwise(public[test], released[test], metric))), "constant_distortion": constant_test,
                "roc_auc": None}
            if attacker:
                point["roc_auc"] = logistic_attack(released[train], private[train], released[test],
                                                            private[test], n_classes, seed=seed).roc_auc
            alone.append(point)
        out["quantization_alone"] = alone
    return out


def _observed(values: np.ndarray) -> np.ndarray:
    return values[~np.isnan(values)]


def _rowwise(X, Y, metric: str) -> np.ndarray:
    """d(X[i], Y[i]) for each i, shape (n,), over the observed cells of X.

    The metrics of :mod:`privmap.offline.data._distortion`; a NaN cell of X, a blank answer, is
    masked as on the device.
    """
    diff = np.where(np.isnan(X), 0.0, X - Y)
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
    if view.exact_lookup or view.categorical or len(view.inputs) != len(view.outputs):
        return None
    if np.array_equal(np.asarray(view.inputs, float), np.asarray(view.outputs, float)):
        return None
    return dataclasses.replace(view, outputs=np.asarray(view.inputs, float))


def bundle_baselines(view, public, private, *, seed: int = 0, test_fraction: float = 0.3,
                     attacker: bool = True, epsilons=DEFAULT_EPSILONS) -> dict | None:
    """:func:`baselines` on the evaluation rows, plus the bundle's table releasing its inputs.

    Quantization alone runs at the bundle's K.

    None for categorical data (the exact mechanism), where no constant row or
    per-rating randomized response is defined here, and for a recommender or ranking bundle's
    view, whose distortion is in stars of predicted ratings or in scores, not in these baselines'
    raw-row units (its service figures compare what the service gets from each release).
    """
    if view.categorical or isinstance(view, (FactorView, ScoreView)):
        return None
    clusters = () if view.exact_lookup else (len(view.inputs),)
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
    """One line per K of the quantization-alone baseline.

    Held-out distortion, its ratio to the constant release on the same rows, and the attacker's AUC.
    """
    return "\n".join(
        f"k-means alone (no privacy), K = {q['clusters_used']}: held-out distortion {q['distortion']:.4f} "
        f"= {q['distortion'] / q['constant_distortion']:.3f} x constant"
        + (f", LR AUC {q['roc_auc']:.3f}" if q.get("roc_auc") is not None else "")
        for q in base.get("quantization_alone", ()))


# -- local differential privacy at an equal per-output guarantee ------------------------
# A per-cell mechanism with channel M_k (levels x levels, rows = true value) releases the row y with
# probability prod_k M_k[x_k, y_k]. Its per-output leakage about A on the training rows (the
# empirical prior p(a, x)) is the same epsilon a bundle declares: max over outputs y and classes a of
# |log2 p(a | y) - log2 p(a)|. It is at most the prior-aware form of the row's LDP guarantee
# (:func:`ldp_epsilon_bound_bits`), usually far below it.

#: Largest product of level counts whose every output :func:`per_output_leakage` enumerates.
EXACT_OUTPUTS_MAX = 1 << 16


def rr_channel(levels: int, epsilon: float) -> np.ndarray:
    """k-ary randomized response (eps-LDP, nats) on ``levels`` values: shape (levels, levels), rows sum to 1."""
    keep = np.exp(epsilon) / (np.exp(epsilon) + levels - 1)
    other = (1.0 - keep) / (levels - 1) if levels > 1 else 0.0
    return np.where(np.eye(levels, dtype=bool), keep, other)


def oue_channel(levels: int, epsilon: float) -> np.ndarray:
    """Optimized unary encoding (Wang et al. 2017; eps-LDP, nats) decoded to one value: shape (levels, levels).

    OUE reports a bit per value, the true one set with probability 1/2 and each other with
    q = 1 / (e^eps + 1). A row needs one released value, so the report is decoded to a value drawn
    uniformly among the set bits (uniformly among all values when none is set), post-processing
    that keeps the guarantee. With N ~ Bin(levels - 1, q) other bits set, the value is kept with
    probability 1/2 E[1 / (N + 1)] + 1/2 P[N = 0] / levels, E[1 / (N + 1)] = (1 - (1 - q)^levels) /
    (levels q), and moved to each other value with the rest shared equally.
    """
    q = 1.0 / (np.exp(epsilon) + 1.0)
    keep = 0.5 * (1.0 - (1.0 - q) ** levels) / (levels * q) + 0.5 * (1.0 - q) ** (levels - 1) / levels
    other = (1.0 - keep) / (levels - 1) if levels > 1 else 0.0
    return np.where(np.eye(levels, dtype=bool), keep, other)


def channel_release(codes: np.ndarray, channels: Sequence[np.ndarray], rng: np.random.Generator) -> np.ndarray:
    """Each cell of ``codes`` (n, d) level indexes drawn through its column's channel; (n, d) level indexes.

    Simulation only (numpy's generator).
    """
    out = np.empty_like(codes)
    for k, M in enumerate(channels):
        cumulative = np.cumsum(M, axis=1)[codes[:, k]]
        out[:, k] = np.minimum((rng.random(int(codes.shape[0]))[:, None] > cumulative).sum(axis=1), M.shape[0] - 1)
    return out


def ldp_epsilon_bound_bits(epsilon_row: float, p_a: np.ndarray) -> float:
    """Per-output leakage bound (bits) of any eps_row-LDP release (nats) on class prior ``p_a`` (|A|,).

    M(y | x) within a factor E = e^eps_row over x gives p(a | y) between p(a) / (p(a) + E (1 - p(a)))
    and E p(a) / (E p(a) + 1 - p(a)); the bound is the larger |log2| of those over p(a).
    """
    E = math.exp(epsilon_row) if epsilon_row < 700 else math.inf
    p_a = np.asarray(p_a, dtype=float)
    p_a = p_a[p_a > 0]
    if not math.isfinite(E):
        return float(np.max(-np.log2(p_a)))
    up = np.log2(E / (E * p_a + 1.0 - p_a))
    down = -np.log2(1.0 / (p_a + E * (1.0 - p_a)))
    return float(max(up.max(), down.max()))


def _log2_ratios(Y: np.ndarray, X: np.ndarray, p_ax: np.ndarray, log_channels) -> np.ndarray:
    """log2 p(a | y) - log2 p(a) for outputs ``Y`` (m, d); shape (m, |A|).

    Over distinct rows ``X`` (u, d) of prior ``p_ax`` (|A|, u).
    """
    log_lik = np.zeros((Y.shape[0], X.shape[0]))
    for k, L in enumerate(log_channels):
        log_lik += L[X[:, k]][:, Y[:, k]].T
    log_lik -= log_lik.max(axis=1, keepdims=True)
    joint = np.exp(log_lik) @ p_ax.T                                # (m, |A|), up to a factor per y
    p_a = p_ax.sum(axis=1)
    with np.errstate(divide="ignore"):
        return np.log2(joint) - np.log2(joint.sum(axis=1, keepdims=True)) - np.log2(p_a)[None, :]


def per_output_leakage(codes: np.ndarray, private: np.ndarray, n_classes: int, channels: Sequence[np.ndarray],
                       *, candidates: np.ndarray | None = None, climb: int = 8) -> dict:
    """Per-output leakage (bits) about A of a per-cell channel release, on the empirical prior of the rows.

    Parameters
    ----------
    codes : ndarray of int, shape (n, d)
        Level index of each cell (the training rows).
    private : ndarray of int, shape (n,)
    n_classes : int
    channels : sequence of d arrays, shape (levels_k, levels_k)
        Per-cell channel, rows = true level.
    candidates : ndarray of int, shape (m, d), optional
        Outputs to start from when the output space is too large to enumerate (simulated releases).
    climb : int, keyword-only
        Starting outputs (the worst candidates) improved by coordinate ascent, one cell at a time.

    Returns
    -------
    dict
        ``epsilon_bits``: exact when ``exact`` (every output enumerated, product of levels at most
        :data:`EXACT_OUTPUTS_MAX`), else a lower bound: the worst of the candidates and of their
        coordinate ascent; ``exact`` (bool); ``outputs_checked``.
    """
    codes = np.asarray(codes, dtype=np.int64)
    sizes = [M.shape[0] for M in channels]
    X, inverse = np.unique(codes, axis=0, return_inverse=True)
    p_ax = np.zeros((n_classes, X.shape[0]))
    np.add.at(p_ax, (np.asarray(private, dtype=np.int64), inverse.ravel()), 1.0)
    p_ax /= p_ax.sum()
    with np.errstate(divide="ignore"):
        logs = [np.log(M) for M in channels]

    def worst(Y):
        out = np.empty(Y.shape[0])
        for lo in range(0, Y.shape[0], 512):
            out[lo:lo + 512] = np.abs(_log2_ratios(Y[lo:lo + 512], X, p_ax, logs)).max(axis=1)
        return out

    if math.prod(sizes) <= EXACT_OUTPUTS_MAX:
        Y = np.array(np.meshgrid(*[np.arange(s) for s in sizes], indexing="ij")).reshape(len(sizes), -1).T
        return {"epsilon_bits": float(worst(Y).max()), "exact": True, "outputs_checked": int(Y.shape[0])}
    Y = np.unique(np.asarray(candidates if candidates is not None else codes, dtype=np.int64), axis=0)
    scores = worst(Y)
    best, checked = float(scores.max()), int(Y.shape[0])
    for start in np.argsort(-scores)[:climb]:
        y, value = Y[start].copy(), scores[start]
        while True:
            moves = np.repeat(y[None, :], sum(sizes), axis=0)
            row = 0
            for k, s in enumerate(sizes):
                moves[row:row + s, k] = np.arange(s)
                row += s
            moved = worst(moves)
            checked += moves.shape[0]
            if moved.max() <= value + 1e-12:
                break
            y, value = moves[int(np.argmax(moved))], float(moved.max())
        best = max(best, value)
    return {"epsilon_bits": best, "exact": False, "outputs_checked": checked}
