"""A class-blind codebook: k-means that cannot see the private classes' mean differences.

k-means on points whose private classes differ in their means spends its centres along the
directions that separate the classes: each cluster then holds mostly one class, p(a | c) is far
from p(a), and program (19) must move many users across clusters (distortion) to hide the
attribute. Where the attribute acts on the points mostly through their means (the factor space
of ratings: one group of users likes one kind of item a little more), that is most of what an
attacker reads and little of a user's taste.

So the clusters are formed on the points with the classes' mean differences projected out: with
m the overall mean and V (d, r) an orthonormal basis of the span of the class means less m
(r <= |A| - 1, and r < d), k-means runs on ``x - V V^T (x - m)``, and its centres lie in the
affine subspace ``m + V-perp``. Every such centre c has ``V^T c = V^T m``, so for any point x

    |x - c|^2 = |x - V V^T (x - m) - c|^2 + |V^T (x - m)|^2,

the second term the same for every centre: the nearest centre of the full point is the nearest
centre of the blinded one. A device therefore looks a user up by its usual rule, on the full
point, and finds the class-blind cluster: nothing in the bundle format changes. The build assigns
every row by that same rule (:class:`ClassBlind`), and every distortion (the program's, the
codebook step's, the declared and the cross-fitted ones) is measured on the full points, so the
direction removed is counted as lost where the released output does not restore it.

The directions are estimated from the rows the quantizer is given and their classes (a fold's
training rows in cross-fitting: a held-out user's class never shapes the clusters it is measured
on). This is a choice of quantizer, not a privacy claim: the leakage declared is I(A; C^) of the
table program (19) then solves on these clusters, measured as for any codebook.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..._errors import BuildError
from ...data import Quantization, assigned_distance, nearest, quantize

__all__ = ["class_directions", "ClassBlind"]

#: Singular values below this fraction of the largest give no direction (classes whose means
#: coincide up to round-off).
_RANK_TOLERANCE = 1e-9


def class_directions(X: np.ndarray, private: np.ndarray, n_classes: int) -> tuple[np.ndarray, np.ndarray]:
    """The overall mean and an orthonormal basis of the classes' mean differences.

    Parameters
    ----------
    X : ndarray, shape (n, d)
        Complete points (no NaN).
    private : ndarray of int, shape (n,)
        Class codes in ``range(n_classes)``.

    Returns
    -------
    (V, m) : ndarray, shape (d, r); ndarray, shape (d,)
        ``m`` the mean of the rows; ``V`` spans {mean of class a - m : a with rows}, each class's
        difference weighted by the square root of its share of the rows (so that a class of a few
        rows turns the basis no more than its share); r <= min(d - 1, classes with rows - 1), the
        directions of largest between-class spread first, so that the points never collapse to
        one (with as many classes as dimensions, the least-spread direction is kept).

    Raises
    ------
    BuildError
        A missing cell (the class-blind codebook needs complete points).
    """
    X = np.asarray(X, dtype=float)
    if np.isnan(X).any():
        raise BuildError("the class-blind codebook needs rows without missing cells (--missing impute fills them)")
    codes = np.asarray(private)
    m = X.mean(axis=0)
    present = [a for a in range(n_classes) if np.any(codes == a)]
    if len(present) < 2:
        return np.zeros((X.shape[1], 0)), m
    diffs = np.array([np.sqrt(np.mean(codes == a)) * (X[codes == a].mean(axis=0) - m) for a in present])
    _, s, vt = np.linalg.svd(diffs, full_matrices=False)
    keep = int(np.count_nonzero(s > _RANK_TOLERANCE * s[0])) if s.size and s[0] > 0 else 0
    return vt[:min(keep, X.shape[1] - 1)].T, m


@dataclass(frozen=True)
class ClassBlind:
    """A quantizer that clusters the rows with the classes' directions projected out.

    A quantizer called as :func:`privmap.offline.data.quantize` is (``X`` (n, d), ``k``,
    ``metric``, ``seed``, ``integer``, ``bounds``) that clusters the rows of ``X`` with their
    classes' mean differences projected out (module docstring; :func:`class_directions` of ``X``
    and ``private``, shape (n,), codes in ``range(n_classes)``), then assigns every row of the full
    ``X`` to its nearest centre (the device's rule) and drops centres no row is nearest to.
    ``base`` is the quantizer it wraps (a cross-fitting fold's one-start k-means; None: the
    build's :func:`quantize`). Raises :class:`BuildError` for another metric than l2 or a
    missing cell.
    """

    private: np.ndarray
    n_classes: int
    base: Callable | None = None

    def __call__(self, X: np.ndarray, k: int, *, metric: str = "l2", seed: int = 0, integer: np.ndarray | None = None,
                 bounds: tuple[np.ndarray, np.ndarray] | None = None) -> Quantization:
        if metric != "l2":
            raise BuildError("the class-blind codebook needs the l2 metric")
        X = np.asarray(X, dtype=float)
        directions, mean = class_directions(X, self.private, self.n_classes)
        blind = X - ((X - mean) @ directions) @ directions.T
        found = (self.base or quantize)(blind, k, metric=metric, seed=seed, integer=integer, bounds=bounds)
        labels = nearest(X, found.centers, metric)
        used = np.unique(labels)
        centers, labels = found.centers[used], np.searchsorted(used, labels)
        dist = assigned_distance(X, centers, labels, metric)
        return Quantization(centers=centers, labels=labels, r=float(dist.max()), mean_distortion=float(dist.mean()))
