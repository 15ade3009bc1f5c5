"""Quantize public data into K representatives (Algorithm 2, step 1).

k-means (scikit-learn) finds K groups; each group's representative is then made a
valid point of the data's domain, because the service receiving released data
must not change: the coordinate-wise mean for ``l2``, median for ``l1`` and mode
for ``hamming``, rounded to an integer on integer columns and clipped to the
domain (declared, else observed). Identical representatives are merged, and every
row is then reassigned with :func:`privmap.offline.data._distortion.nearest`, the
device's own rule, so that psi (row -> representative) is exactly what the device
computes.

Missing answers (NaN cells, the "mask" policy): k-means groups the rows with each
missing cell filled by its column's observed mean (grouping only); each group's
representative takes, column by column, the statistic over the group's *observed*
cells (the column's statistic over all observed cells when the group has none);
rows are then reassigned by the masked nearest rule, so psi is still the device's.

Memory: no (n, K) matrix is formed (k-means switches to Lloyd's algorithm where Elkan's bounds
would be one, :func:`kmeans`); the nearest search and the distances to psi(b) run in
blocks bounded by :data:`privmap.offline.data._distortion.NEAREST_BLOCK_BYTES`.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from threadpoolctl import threadpool_limits

from .._errors import DatasetError
from .._rows import unique_rows
from . import _distortion
from ._blas_nearest import nearest_with_distance

#: Most Lloyd (or Elkan) iterations of one k-means start. scikit-learn's default of 300 is what
#: real-valued points of many users reach without converging (10^5 recommender users at K = 2,048:
#: Lloyd's iterations were 154 of a cross-fitting's 282 CPU-s); on 320,000 such points at K = 512
#: the mean squared distance after 100 iterations was 0.13 % above that after 300, at 0.38 x the
#: CPU (benchmarks/README.md). Rated rows with integer answers converge well before it.
MAX_ITERATIONS = 100


@dataclass(frozen=True)
class Quantization:
    """Representatives and the assignment psi.

    Attributes
    ----------
    centers : ndarray, shape (K, d)
        Representatives, valid points of the data domain (K may be below the
        number asked for when rounding made two of them equal).
    labels : ndarray of int64, shape (n,)
        psi(b) for each row: index of its nearest representative.
    r : float
        max_b d(b, psi(b)), the radius in Theorem 2.
    mean_distortion : float
        mean_b d(b, psi(b)).
    """

    centers: np.ndarray
    labels: np.ndarray
    r: float
    mean_distortion: float

    @property
    def k(self) -> int:
        """Number of representatives."""
        return int(self.centers.shape[0])


def kmeans(X: np.ndarray, k: int, *, seed: int, init="k-means++", n_init: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's k-means on complete rows, run on the distinct rows weighted by their counts.

    By Elkan's algorithm where its bounds fit in memory, at most :data:`MAX_ITERATIONS` iterations a start.

    k-means on the distinct rows with ``sample_weight`` equal to their multiplicities has the same
    objective, the same Lloyd steps and the same k-means++ sampling law as on the rows themselves,
    at the cost of the distinct rows only: rated and survey data repeat rows (UCI Adult's five
    numeric columns: 14,846 distinct among 48,842 rows), and k-means++ seeding, which is most of
    k-means' cost at large K, is linear in the rows.

    Lloyd's algorithm finds each row's nearest centre through a BLAS matrix product, whose last
    bits depend on the CPU's kernel; on integer ratings near-ties are common, so two machines can
    group rows differently and build different integer tables. Elkan's algorithm decides by exact
    distance comparisons and gave identical groupings under every OpenBLAS kernel tried
    (tables/README.md), but it keeps lower bounds of shape (distinct rows, k): it is used while
    those fit in :data:`privmap.offline.data._distortion.NEAREST_BLOCK_BYTES` (read at call time),
    and Lloyd's otherwise (then the grouping, and the bundle's bytes, may depend on the BLAS kernel).

    BLAS runs on one thread here: k-means++ seeding makes K small products of (2 + ln K) candidates
    by the rows, and a multi-threaded BLAS spends more CPU starting and spinning its threads on them
    than on the products (UCI Adult, K = 1024: 8.4 CPU-s on two threads against 2.0 on one, 0.6 on
    the distinct rows); Lloyd's and Elkan's iterations keep their OpenMP threads.

    Parameters
    ----------
    X : ndarray, shape (n, d)
        Complete rows (no NaN).
    k : int
        Number of clusters, from 1 to the number of distinct rows.
    seed : int, keyword-only
        ``random_state`` of the initialisation.
    init, n_init
        As scikit-learn's ``KMeans`` (an (k, d) array of starting centres with ``n_init=1``).

    Returns
    -------
    (labels, centers) : ndarray of int, shape (n,); ndarray, shape (k, d)
        Each row's group and the groups' weighted means.

    Raises
    ------
    DatasetError
        k below 1 or above the number of distinct rows.
    """
    from sklearn.cluster import KMeans
    distinct, inverse, counts = unique_rows(X, return_inverse=True)
    if not 1 <= k <= distinct.shape[0]:
        raise DatasetError(f"--clusters {k}: must be between 1 and the {distinct.shape[0]} distinct public rows")
    fits = distinct.shape[0] * k * 8 <= _distortion.NEAREST_BLOCK_BYTES
    with threadpool_limits(limits=1, user_api="blas"):
        model = KMeans(n_clusters=k, init=init, n_init=n_init, random_state=seed, max_iter=MAX_ITERATIONS,
                       algorithm="elkan" if fits else "lloyd").fit(distinct, sample_weight=counts.astype(float))
    return model.labels_[inverse.reshape(-1)], model.cluster_centers_


def quantize(X: np.ndarray, k: int, *, metric: str = "l2", seed: int = 0,
             integer: np.ndarray | None = None, bounds: tuple[np.ndarray, np.ndarray] | None = None,
             init="k-means++", n_init: int = 4) -> Quantization:
    """Cluster the rows of X into at most k representatives.

    Parameters
    ----------
    X : ndarray, shape (n, d)
        Public data (float; NaN = missing answer, masked). Every row needs an
        observed cell.
    k : int
        Number of clusters asked for, 1 <= k <= number of distinct rows.
    metric : {"l2", "l1", "hamming"}
        Distortion metric; it picks the representative statistic and psi.
    seed : int, keyword-only
        Seed of k-means' initialisation (the build is reproducible from it).
    integer : ndarray of bool, shape (d,), optional
        Columns whose representatives must be integers; default: columns whose
        observed values are all integers.
    bounds : (lo, hi) arrays of shape (d,), optional
        The domain representatives are clipped to; default the observed range.
    init, n_init : keyword-only
        k-means' start and number of restarts (:func:`kmeans`); cross-fitting's folds take one start.

    ``r`` and ``mean_distortion`` are distances over each row's observed cells.

    Raises
    ------
    DatasetError
        k below 1 or above the number of distinct rows.
    """
    X = np.asarray(X, dtype=float)
    missing = np.isnan(X)
    overall = _representative(X, metric)
    if np.isnan(overall).any():   # a column no row has a value in: the statistic of every observed cell
        overall = np.where(np.isnan(overall), _representative(X.reshape(-1, 1), metric)[0], overall)
    filled = np.where(missing, _column_means(X), X) if missing.any() else X
    groups, _ = kmeans(filled, k, seed=seed, init=init, n_init=n_init)     # checks k (DatasetError)
    if integer is None or bounds is None:
        observed = observed_domain(X)
        integer = observed[0] if integer is None else integer
        bounds = observed[1:] if bounds is None else bounds
    lo, hi = (np.where(np.isnan(b), fill, b) for b, fill in zip(bounds, (-np.inf, np.inf)))
    centers = _group_representatives(X, groups, metric)
    centers = np.where(np.isnan(centers), overall, centers)
    centers = domain_points(centers, integer, lo, hi)
    labels, dist = nearest_with_distance(X, centers, metric)
    used = np.unique(labels)  # a representative nobody is nearest to carries no mass
    centers = centers[used]
    labels = np.searchsorted(used, labels)
    return Quantization(centers=centers, labels=labels, r=float(dist.max()), mean_distortion=float(dist.mean()))


def observed_domain(X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What the observed cells of X (n, d; NaN = missing) say of each column; three arrays of shape (d,).

    Whether every value is a whole number, and the least and largest value: NaN for a column no
    row observes (a column nobody rated is quantized as blank, so numpy's all-NaN warning is not
    the operator's news).
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "All-NaN slice encountered", RuntimeWarning)
        lo, hi = np.nanmin(X, axis=0), np.nanmax(X, axis=0)
    return np.all(np.isnan(X) | (X == np.round(X)), axis=0), lo, hi


def domain_points(centers: np.ndarray, integer: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Make group statistics valid, distinct points of the data's domain.

    Parameters
    ----------
    centers : ndarray, shape (m, d)
        One statistic (mean, median or mode) per non-empty group, in group order.
    integer : ndarray of bool, shape (d,)
        Columns rounded to integers.
    lo, hi : ndarray, shape (d,)
        Each column's domain (declared, or the observed range); centers are clipped to it.

    Returns
    -------
    ndarray, shape (m', d), m' <= m
        Rounded, clipped, duplicates removed keeping the first occurrence (order kept).
    """
    centers = np.where(integer, np.round(centers), centers)
    centers = np.clip(centers, lo, hi)
    _, first = np.unique(centers, axis=0, return_index=True)
    return centers[np.sort(first)]


def _group_representatives(X: np.ndarray, groups: np.ndarray, metric: str) -> np.ndarray:
    """:func:`_representative` of each non-empty group, shape (groups, d).

    In the order of the group labels (``groups`` (n,) int).

    Under l2 all groups at once: sums and observed counts per group by ``np.add.reduceat`` over
    the rows sorted by group, then their ratio, where a loop of per-column means over K groups
    cost a survey fold (11,200 x 50, K = 256) about 0.05 CPU-s. The sums run in row order where
    ``mean`` sums pairwise, so the means are the loop's to the bit when each group's column sums
    are exact (integer ratings) and may differ in the last bit otherwise.
    """
    order = np.argsort(groups, kind="stable")
    _, starts = np.unique(groups[order], return_index=True)
    if metric != "l2":
        return np.array([_representative(X[rows], metric) for rows in np.split(order, starts[1:])])
    ordered = X[order]
    observed = ~np.isnan(ordered)
    sums = np.add.reduceat(np.where(observed, ordered, 0.0), starts, axis=0)
    counts = np.add.reduceat(observed, starts, axis=0, dtype=np.int64)
    with np.errstate(invalid="ignore"):                  # 0 / 0: a column no row of the group observed
        return sums / counts


def _representative(points: np.ndarray, metric: str) -> np.ndarray:
    """Per-column statistic over observed (non-NaN) cells, shape (d,); NaN where none is observed."""
    out = np.full(points.shape[1], np.nan)
    for i, column in enumerate(points.T):
        column = column[~np.isnan(column)]
        if column.size == 0:
            continue
        if metric == "l2":
            out[i] = column.mean()
        elif metric == "l1":
            out[i] = np.median(column)
        else:
            values, counts = np.unique(column, return_counts=True)
            out[i] = values[np.argmax(counts)]
    return out


def _column_means(X: np.ndarray) -> np.ndarray:
    """Each column's mean over its observed cells, shape (d,).

    A column with none (an item no row rated) takes the mean of every observed cell, so that
    k-means sees no NaN.
    """
    observed = ~np.isnan(X)
    counts = observed.sum(axis=0)
    sums = np.where(observed, X, 0.0).sum(axis=0)
    overall = float(sums.sum() / max(int(counts.sum()), 1))
    return np.where(counts > 0, sums / np.maximum(counts, 1), overall)
