"""Distortion metrics between public-data points and the nearest-representative rule.

Metrics, for points x, y of d features:

- ``"l2"``: Euclidean distance sqrt(sum_i (x_i - y_i)^2)
- ``"l1"``: sum_i |x_i - y_i|
- ``"hamming"``: number of features where x_i != y_i

All three are metrics (the triangle inequality behind Theorem 2's Delta + r
bound holds).

Missing answers: a NaN cell of X (a row) is *masked*: it adds nothing to the
sum, so d(x, y) is the distance over x's observed cells only (Y, the
representatives, never hold NaN). This is the device's rule for features whose
missing rule is ``"mask"`` (adding 0.0 to a non-negative running sum leaves it
bitwise unchanged, so the sums still equal the device's, which skips the cell).
The observed-cells distance is not rescaled: for every y, d_O(x, y) <= d_O(x, c)
+ d(c, y), which keeps Theorem 2's bound E d_O(b, released) <= Delta + r true
with r = max_b d_O(b, psi(b)). The nearest-representative rule :func:`nearest` is the same one
the device runs: it compares the *rank key* of each metric (squared distance for
l2), accumulated feature by feature from left to right so that floating-point
results are bitwise identical to the device's pure-Python loop, and breaks ties
by the lowest representative index.
"""
from __future__ import annotations

import numpy as np

METRICS = ("l2", "l1", "hamming")

#: Rows of X processed at once by :func:`nearest` (bounds memory to about
#: ``_CHUNK * n_representatives * 8`` bytes).
_CHUNK = 4096


def _check_metric(metric: str) -> None:
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; expected one of {', '.join(METRICS)}")


def _rank_keys(X: np.ndarray, Y: np.ndarray, metric: str) -> np.ndarray:
    """Rank keys, shape (n, m): squared L2, L1 or Hamming, summed left to right."""
    acc = np.zeros((X.shape[0], Y.shape[0]))
    for i in range(X.shape[1]):
        diff = X[:, i, None] - Y[None, :, i]
        if metric == "l2":
            term = diff * diff
        elif metric == "l1":
            term = np.abs(diff)
        else:
            term = (diff != 0).astype(float)
        acc += np.where(np.isnan(diff), 0.0, term)
    return acc


def pairwise(X: np.ndarray, Y: np.ndarray, metric: str) -> np.ndarray:
    """Distances d(x_i, y_j), shape (n, m), for X of shape (n, d) and Y of shape (m, d).

    NaN cells of X are missing answers and masked (the distance over observed cells).

    Raises
    ------
    ValueError
        Unknown metric or mismatched widths.
    """
    _check_metric(metric)
    X = np.asarray(X, dtype=float)
    Y = np.asarray(Y, dtype=float)
    if X.ndim != 2 or Y.ndim != 2 or X.shape[1] != Y.shape[1]:
        raise ValueError(f"shapes {X.shape} and {Y.shape} do not describe points of one width")
    keys = _rank_keys(X, Y, metric)
    return np.sqrt(keys) if metric == "l2" else keys


def nearest(X: np.ndarray, Y: np.ndarray, metric: str) -> np.ndarray:
    """Index of the nearest row of Y for each row of X, shape (n,); ties go to the lowest index.

    NaN cells of X are masked, as on the device.
    """
    _check_metric(metric)
    X = np.asarray(X, dtype=float)
    Y = np.asarray(Y, dtype=float)
    out = np.empty(X.shape[0], dtype=np.int64)
    for start in range(0, X.shape[0], _CHUNK):
        out[start:start + _CHUNK] = np.argmin(_rank_keys(X[start:start + _CHUNK], Y, metric), axis=1)
    return out
