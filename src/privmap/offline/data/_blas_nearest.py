"""The device's nearest-representative rule for l2, fast on many rows and many representatives.

:func:`privmap.offline.data._distortion.nearest` accumulates squared differences feature by
feature (bitwise what the device computes): n * K * d element operations through
temporaries, about 25 minutes for 10^7 rows, K = 1024, d = 50 on one core. Here the
squared distances come from one matrix product, ||x||^2 - 2 x.y + ||y||^2, which is
exact in real arithmetic but rounds differently. Where the best and the second-best
candidate are further apart than twice a bound on both computations' rounding errors,
the two rules agree; every other row (ties included) is decided by ``nearest`` itself,
except when rows and representatives are small integers (ratings and rounded
representatives): then both computations are exact and argmin decides ties as the device.
The answer is therefore identical to ``nearest``, not an approximation of it.
:func:`nearest` (the package's face) and :func:`nearest_with_distance` choose between the two
rules for every caller: complete l2 rows take this search, every other case the running minimum.
"""
from __future__ import annotations

import numpy as np

from . import _distortion
from ._distortion import assigned_distance, block_shape
from ._distortion import nearest as _running_nearest

#: float64 arrays of a block's size alive at once (products, the keys' copy, argmin scratch).
_BLOCK_TEMPORARIES = 3


def nearest_l2(X: np.ndarray, Y: np.ndarray, *, block_bytes: int | None = None) -> np.ndarray:
    """Index of the nearest row of Y under l2 for each row of X; identical to ``nearest(X, Y, "l2")``.

    Parameters
    ----------
    X : ndarray, shape (n, d)
    Y : ndarray, shape (K, d)
    block_bytes : int, keyword-only
        Scratch memory bound: rows are taken in blocks of (rows, K) products of at most this size
        (times the few temporaries); rows whose choice is unsure go to ``nearest`` under the
        same bound.

    Returns
    -------
    ndarray of int64, shape (n,)
        Ties go to the lowest index, as on the device.
    """
    X = np.asarray(X, dtype=float)
    Y = np.asarray(Y, dtype=float)
    n, d = X.shape
    if Y.shape[0] == 1:
        return np.zeros(n, dtype=np.int64)
    yy = np.einsum("ij,ij->i", Y, Y)
    y_norm_max = float(np.sqrt(yy.max()))
    # Both the product form and the device's left-to-right sum of d squared differences
    # are within err = (d + 2) eps (|x| + |y|)^2 of the true squared distance (standard
    # summation bounds). A computed gap above 2 err + 2 err fixes the device's choice;
    # with a 4x margin on err.
    gamma = 4.0 * (d + 2) * np.finfo(float).eps
    y_integral = bool(np.all(Y == np.round(Y)))
    out = np.empty(n, dtype=np.int64)
    chunk = block_shape(n, Y.shape[0], block_bytes, _BLOCK_TEMPORARIES)[0]   # whole rows of K keys
    for start in range(0, n, chunk):
        block = X[start:start + chunk]
        keys = block @ Y.T
        keys *= -2.0
        keys += yy
        rows = np.arange(block.shape[0])
        best = np.argmin(keys, axis=1)
        first = keys[rows, best]
        keys[rows, best] = np.inf
        gap = keys.min(axis=1) - first
        x_norm = np.sqrt(np.einsum("ij,ij->i", block, block))
        if y_integral and np.all(block == np.round(block)) and (x_norm.max() + y_norm_max) ** 2 < 2.0 ** 52:
            # Integers with every partial sum below 2^53: both forms are exact, so their
            # order and ties are the true ones and argmin's first index is the device's.
            out[start:start + block.shape[0]] = best
            continue
        unsure = gap <= 4.0 * gamma * (x_norm + y_norm_max) ** 2
        if np.any(unsure):
            best[unsure] = _running_nearest(block[unsure], Y, "l2", block_bytes=block_bytes)
        out[start:start + block.shape[0]] = best
    return out



def nearest(X: np.ndarray, Y: np.ndarray, metric: str, *, block_bytes: int | None = None) -> np.ndarray:
    """Index of the nearest row of Y for each row of X, shape (n,): the device's rule, ties to the lowest index.

    Identical to :func:`privmap.offline.data._distortion.nearest` (rank keys summed left to right,
    NaN cells of X masked), by the BLAS search of :func:`nearest_l2` where the rows are complete
    under l2 and by that running minimum otherwise. The recommender's and the ranking mode's points
    (11 to 32 real coordinates, none missing) are looked up this way in every fold of a search:
    the running minimum spent about 60 of 280 CPU-s of 10^5 users' cross-fitting at K = 2,048 on
    such lookups. Scratch memory is bounded by ``block_bytes``. Raises ValueError as
    :func:`~privmap.offline.data._distortion.pairwise`.
    """
    _distortion._check_metric(metric)
    X, Y = _distortion._check_points(X, Y)
    if metric == "l2" and not np.isnan(X).any():
        return nearest_l2(X, Y, block_bytes=block_bytes)
    return _running_nearest(X, Y, metric, block_bytes=block_bytes)


def assigned_distance_l2(X: np.ndarray, Y: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """l2 distance of each row of X to its assigned row of Y, shape (n,).

    Bitwise equal to ``pairwise(X, Y, "l2")[i, labels[i]]`` without the (n, K) matrix (see
    :func:`privmap.offline.data._distortion.assigned_distance`).
    """
    return assigned_distance(X, Y, labels, "l2")


def nearest_with_distance(X: np.ndarray, Y: np.ndarray, metric: str, *,
                          block_bytes: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The nearest-row index psi and the distance to it: ``(nearest(X, Y, metric), d(x_i, y_psi(i)))``, shapes (n,), (n,).

    Equal to ``nearest`` and to ``pairwise(X, Y, metric)[arange(n), labels]`` bitwise, without the
    (n, m) matrix: complete l2 data take the BLAS search of :func:`nearest_l2` (identical answers,
    faster), every other case the running minimum of :func:`~._distortion.nearest`. Scratch memory
    is bounded by ``block_bytes``. Raises ValueError as :func:`~._distortion.pairwise`.
    """
    _distortion._check_metric(metric)
    X, Y = _distortion._check_points(X, Y)
    if metric == "l2" and not np.isnan(X).any():
        labels = nearest_l2(X, Y, block_bytes=block_bytes)
        return labels, assigned_distance(X, Y, labels, metric)
    labels, keys = _distortion._nearest_keys(X, Y, metric, block_bytes)
    return labels, _distortion._key_to_distance(keys, metric)
