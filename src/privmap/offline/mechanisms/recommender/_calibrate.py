"""The released rows calibrated to the ratings of the users who release them.

Program (19) and the codebook step place each output where it is close, in the factor space, to
the users' own *folded-in* points. A fold-in is a ridge solve on one user's few ratings, shrunk
towards the average user, and a geometric median of shrunk points is shrunk again: the output's
predicted ratings lie nearer the item means than the ratings of the users it serves. A recommender
that predicts a user's unseen ratings from the released row loses by that shrinkage.

So each output's point is moved, after the mapping is fixed, to the alternating least squares'
own user step on the pool of the training ratings it serves: every training user's residual
ratings r_uj - mean - b_j weighted by the probability q(o | c(u)) that the user releases output o,

    theta_o = argmin_t  sum_u q(o | c(u)) sum_{j rated by u} (r_uj - mean - b_j - x_j . t)^2 + reg |t|^2,

then whitened and clamped to the factor space's domain. That is the least-squares predictor of
the ratings of the users who release o, as one pseudo-user with the model's penalty, the same
estimator the model fits users with. It uses the training ratings and the table only, never the
private attribute: the released row stays a function of the sampled output alone, and the
leakage I(A; C^) (in-sample and cross-fitted) is that of the table, unchanged.
"""
from __future__ import annotations

import numpy as np
from scipy import sparse

from ..table import table_probabilities
from ._factors import FactorModel, ridge_rows

__all__ = ["pooled_sums", "calibrated_outputs", "calibrate_payload", "payload_table", "payload_domain",
           "released_distance", "with_outputs"]


def pooled_sums(model: FactorModel, ratings: np.ndarray, release: sparse.spmatrix) -> tuple[np.ndarray, np.ndarray]:
    """The pool of each output: weighted residual ratings and weighted rating counts.

    Parameters
    ----------
    model : FactorModel
    ratings : ndarray, shape (n, m)
        Training ratings, NaN = not rated.
    release : sparse matrix, shape (n, K_out)
        q(o | c(u)): each user's probabilities of releasing each output (a row of the table).

    Returns
    -------
    (ndarray, ndarray), shapes (K_out, m) each
        ``sum_u q(o|u) (r_uj - mean - b_j)`` over the users who rated j, and ``sum_u q(o|u)`` over
        the same users. Sums over disjoint sets of users add up (a partitioned build adds them).
    """
    observed = ~np.isnan(ratings)
    residual = np.where(observed, ratings - model.mean - model.bias, 0.0)
    weights = sparse.csr_matrix(release).T
    return np.asarray(weights @ residual), np.asarray(weights @ observed.astype(float))


def calibrated_outputs(model: FactorModel, sums: np.ndarray, counts: np.ndarray, outputs: np.ndarray,
                       lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Each output's whitened point fitted to its pool (module docstring).

    Parameters
    ----------
    model : FactorModel
    sums, counts : ndarray, shape (K_out, m)
        :func:`pooled_sums` (added over all training users).
    outputs : ndarray, shape (K_out, rank + 1)
        The mapping's outputs, kept for an output that no training user releases.
    lo, hi : ndarray, shape (rank + 1,)
        The factor space's domain, to which the points are clamped.

    Returns
    -------
    ndarray, shape (K_out, rank + 1)
    """
    theta = ridge_rows(sums, counts, model.design, model.reg)
    points = np.clip(theta @ model.whiten.T, lo, hi)
    return np.where((counts.sum(axis=1) > 0)[:, None], points, np.asarray(outputs, dtype=float))


def calibrate_payload(payload: dict, model: FactorModel, ratings: np.ndarray, points: np.ndarray,
                      labels: np.ndarray) -> dict:
    """A copy of the mapping's ``payload`` whose outputs are :func:`calibrated_outputs` of the training users.

    See :func:`with_outputs`.

    Parameters
    ----------
    payload : dict
        The quantized pipeline's payload on the factor points (``features`` give the domain,
        ``table`` the mapping).
    model : FactorModel
    ratings : ndarray, shape (n, m)
        The training ratings, NaN = not rated, in the order of ``points`` and ``labels``.
    points : ndarray, shape (n, rank + 1)
        Their whitened points.
    labels : ndarray of int, shape (n,)
        The input (cluster) of each.
    """
    release = payload_table(payload)[np.asarray(labels)]
    moved = calibrated_outputs(model, *pooled_sums(model, ratings, release), payload["outputs"],
                               *payload_domain(payload))
    return with_outputs(payload, moved, released_distance(points, release, moved) / len(points))


def payload_table(payload: dict) -> sparse.csr_matrix:
    """The payload's table q(o | c) as probabilities, shape (K_in, K_out)."""
    table = payload["table"]
    return sparse.csr_matrix(table_probabilities(table["index"], table["weight"], table["bits"],
                                                 len(payload["outputs"])))


def payload_domain(payload: dict) -> tuple[np.ndarray, np.ndarray]:
    """The factor space's domain ``(lo, hi)``, shapes (rank + 1,), from the payload's features."""
    return (np.array([f["min"] for f in payload["features"]], dtype=float),
            np.array([f["max"] for f in payload["features"]], dtype=float))


def released_distance(points: np.ndarray, release: sparse.spmatrix, outputs: np.ndarray) -> float:
    """Sum over the users of E |z_u - z_o| (stars) under their rows of ``release`` (n, K_out).

    Sums over disjoint sets of users add up.
    """
    pairs = sparse.coo_matrix(release)
    gaps = np.linalg.norm(points[pairs.row] - np.asarray(outputs)[pairs.col], axis=1)
    return float(np.sum(pairs.data * gaps))


def with_outputs(payload: dict, outputs: np.ndarray, released_distortion: float) -> dict:
    """A copy of ``payload`` releasing ``outputs`` (K_out, rank + 1), with the metric ``released_distortion``.

    ``released_distortion`` is the mean over the training users of E |z_u - z_o| (stars, over all
    columns, before clipping) from their own point to the output they release. ``distortion``,
    ``delta`` and ``holdout_distortion`` stay the mapping's (program (19)'s budget is on the
    outputs it placed).
    """
    return {**payload, "outputs": np.asarray(outputs, dtype=float).tolist(),
            "metrics": {**payload["metrics"], "released_distortion": float(released_distortion)}}
