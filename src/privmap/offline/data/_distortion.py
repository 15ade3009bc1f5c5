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

#: Scratch memory one block of a distance computation may take, in bytes. :func:`nearest`,
#: :func:`pairwise` (and :func:`._blas_nearest.nearest_with_distance`) work on blocks of rows x representatives
#: whose temporaries (:data:`_BLOCK_TEMPORARIES` float64 arrays of the block's size) fit in it,
#: so no (n, K) matrix is formed: the nearest search keeps a running minimum over blocks of
#: representatives. 64 MiB keeps the blocks large enough for numpy's vectorised loops.
NEAREST_BLOCK_BYTES = 64 * 2 ** 20
#: float64 arrays of a block's size alive at once in :func:`_rank_keys` (sum, difference, term,
#: masked term, with the NaN mask counted as one).
_BLOCK_TEMPORARIES = 5
#: Cells (rows x columns) of one chunk of :func:`assigned_distance`: 512 KiB per float64 temporary.
PAIR_CHUNK_CELLS = 1 << 16


def _check_metric(metric: str) -> None:
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; expected one of {', '.join(METRICS)}")


def _check_points(X: np.ndarray, Y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    X = np.asarray(X, dtype=float)
    Y = np.asarray(Y, dtype=float)
    if X.ndim != 2 or Y.ndim != 2 or X.shape[1] != Y.shape[1]:
        raise ValueError(f"shapes {X.shape} and {Y.shape} do not describe points of one width")
    return X, Y


def block_shape(n_rows: int, n_columns: int, block_bytes: int | None = None,
                temporaries: int = _BLOCK_TEMPORARIES) -> tuple[int, int]:
    """(rows, columns) of the blocks an (n_rows, n_columns) float64 computation is cut into.

    Cut so that ``temporaries`` arrays of a block's size take at most ``block_bytes`` (at least
    1 x 1).

    Whole rows of columns are taken when they fit, else at least one row and as many columns
    as fit; ``block_bytes`` None reads :data:`NEAREST_BLOCK_BYTES` (at call time, so the limit
    is one setting for every caller). Raises ValueError for a non-positive ``block_bytes``.
    """
    if block_bytes is None:
        block_bytes = NEAREST_BLOCK_BYTES
    if block_bytes <= 0:
        raise ValueError(f"block_bytes must be positive, got {block_bytes}")
    cells = max(1, block_bytes // (8 * temporaries))
    columns = max(1, min(n_columns, cells))
    rows = max(1, min(n_rows, cells // columns))
    return rows, columns


def _rank_keys(X: np.ndarray, Y: np.ndarray, metric: str) -> np.ndarray:
    """Rank keys, shape (n, m): squared L2, L1 or Hamming, summed left to right (one block).

    Squared L2 on whole numbers (answers 1..5 and rounded representatives, NaN cells masked) is
    taken as one matrix product instead, sum_o x^2 - 2 x.y + sum_o y^2 over each row's observed
    cells: every product and partial sum is then a whole number below 2^53, exact in float64
    whatever the order of the additions, so the keys are bitwise the left-to-right sums (and
    d matrix passes through temporaries become two BLAS products).
    """
    if metric == "l2" and _exact_in_blas(X, Y):
        return _integer_l2_keys(X, Y)
    acc = np.zeros((X.shape[0], Y.shape[0]))
    if metric != "hamming" and np.isfinite(X).all() and np.isfinite(Y).all():
        return _finite_keys(X, Y, metric, acc)
    for i in range(X.shape[1]):
        acc += _term(X[:, i, None] - Y[None, :, i], metric)
    return acc


def _finite_keys(X: np.ndarray, Y: np.ndarray, metric: str, acc: np.ndarray) -> np.ndarray:
    """The squared L2 or L1 keys of :func:`_rank_keys` for finite X and Y, summed into ``acc`` (zeros, (n, m)).

    Bitwise the masked sum: no difference of finite numbers is NaN, so the mask replaces nothing;
    each feature's term is made in one scratch array, in place, instead of four temporaries
    (the score-space points of ``--utility ranking``, 32 coordinates, none missing, spent a
    fifth of their ``auto`` search here).
    """
    term = np.empty_like(acc)
    for i in range(X.shape[1]):
        np.subtract(X[:, i, None], Y[None, :, i], out=term)
        if metric == "l2":
            np.multiply(term, term, out=term)
        else:
            np.abs(term, out=term)
        acc += term
    return acc


def _exact_in_blas(X: np.ndarray, Y: np.ndarray) -> bool:
    """Whether every product and partial sum of the squared-L2 keys of X and Y is a whole number below 2^53.

    X's NaN are masked. True when both are whole-numbered and d (max |x| + max |y|)^2 < 2^52.
    """
    if X.size == 0 or Y.size == 0:
        return False
    x = np.where(np.isnan(X), 0.0, X)
    if not (np.all(x == np.round(x)) and np.all(Y == np.round(Y))):
        return False
    bound = float(np.abs(x).max()) + float(np.abs(Y).max())
    return X.shape[1] * bound * bound < 2.0 ** 52


def _integer_l2_keys(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """Squared L2 over each row's observed cells by two products (whole numbers: exact)."""
    seen = ~np.isnan(X)
    x = np.where(seen, X, 0.0)
    keys = seen.astype(float) @ (Y * Y).T
    keys -= 2.0 * (x @ Y.T)
    keys += np.einsum("ij,ij->i", x, x)[:, None]
    return keys


def _term(diff: np.ndarray, metric: str) -> np.ndarray:
    """One feature's contribution to the rank key; 0 where the difference is NaN (a missing cell)."""
    if metric == "l2":
        term = diff * diff
    elif metric == "l1":
        term = np.abs(diff)
    else:
        term = (diff != 0).astype(float)
    return np.where(np.isnan(diff), 0.0, term)


def _key_to_distance(keys: np.ndarray, metric: str) -> np.ndarray:
    return np.sqrt(keys) if metric == "l2" else keys


def pairwise(X: np.ndarray, Y: np.ndarray, metric: str, *, block_bytes: int | None = None) -> np.ndarray:
    """Distances d(x_i, y_j), shape (n, m), for X of shape (n, d) and Y of shape (m, d).

    NaN cells of X are missing answers and masked (the distance over observed cells). The
    result itself is (n, m); the scratch memory beside it is bounded by ``block_bytes``.

    Raises
    ------
    ValueError
        Unknown metric or mismatched widths.
    """
    _check_metric(metric)
    X, Y = _check_points(X, Y)
    out = np.empty((X.shape[0], Y.shape[0]))
    rows, columns = block_shape(X.shape[0], Y.shape[0], block_bytes)
    for r0 in range(0, X.shape[0], rows):
        for c0 in range(0, Y.shape[0], columns):
            out[r0:r0 + rows, c0:c0 + columns] = _key_to_distance(
                _rank_keys(X[r0:r0 + rows], Y[c0:c0 + columns], metric), metric)
    return out


def _nearest_keys(X: np.ndarray, Y: np.ndarray, metric: str,
                  block_bytes: int | None) -> tuple[np.ndarray, np.ndarray]:
    """(index, rank key) of each row's nearest row of Y by a running minimum over blocks.

    A later block replaces the running best only on a strictly smaller key and ``argmin`` takes
    the first of equal keys inside a block, so ties go to the lowest index, as in one argmin over
    the whole row (the device's rule).
    """
    n, m = X.shape[0], Y.shape[0]
    index = np.zeros(n, dtype=np.int64)
    best = np.full(n, np.inf)
    rows, columns = block_shape(n, m, block_bytes)
    for r0 in range(0, n, rows):
        block = X[r0:r0 + rows]
        here = np.arange(block.shape[0])
        for c0 in range(0, m, columns):
            keys = _rank_keys(block, Y[c0:c0 + columns], metric)
            arg = np.argmin(keys, axis=1)
            key = keys[here, arg]
            better = key < best[r0:r0 + rows]
            best[r0:r0 + rows][better] = key[better]
            index[r0:r0 + rows][better] = arg[better] + c0
    return index, best


def nearest(X: np.ndarray, Y: np.ndarray, metric: str, *, block_bytes: int | None = None) -> np.ndarray:
    """Index of the nearest row of Y for each row of X, shape (n,); ties go to the lowest index.

    NaN cells of X are masked, as on the device. Bitwise the device's rule (rank keys summed
    left to right); scratch memory bounded by ``block_bytes``. Raises ValueError as
    :func:`pairwise`.
    """
    _check_metric(metric)
    X, Y = _check_points(X, Y)
    return _nearest_keys(X, Y, metric, block_bytes)[0]


def assigned_distance(X: np.ndarray, Y: np.ndarray, labels: np.ndarray, metric: str, *,
                      rows: np.ndarray | None = None) -> np.ndarray:
    """d(x_i, y_labels[i]) for each row of X, shape (n,), over each row's observed cells.

    With ``rows`` (int, shape (P,)) the pairs d(x_rows[p], y_labels[p]), shape (P,).

    Bitwise equal to ``pairwise(X, Y, metric)[arange(n), labels]`` (the same left-to-right sum),
    in O(n) (or O(P)) memory. Rows are gathered in chunks of :data:`PAIR_CHUNK_CELLS` cells, each
    a few hundred KiB that stay in cache while its columns are summed: gathering one column at a
    time touched every row's cache line once per column (twice the time on the 14,000 x 50
    survey's 130,000 codebook pairs). Squared L2 on whole numbers (:func:`_exact_in_blas`) is
    summed by one ``einsum`` per chunk instead, a single pass over the chunk: every partial sum
    is then a whole number below 2^53, exact in any order, so the bits are the left-to-right
    sum's. Raises ValueError as :func:`pairwise`.
    """
    _check_metric(metric)
    X, Y = _check_points(X, Y)
    labels = np.asarray(labels, dtype=np.int64)
    n, d = labels.shape[0], X.shape[1]
    exact = metric == "l2" and _exact_in_blas(X, Y)
    acc = np.zeros(n)
    step = max(1, PAIR_CHUNK_CELLS // max(d, 1))
    for s in range(0, n, step):
        here = X[s:s + step] if rows is None else X[rows[s:s + step]]
        diff = here - Y[labels[s:s + step]]
        if exact:
            np.copyto(diff, 0.0, where=np.isnan(diff))
            acc[s:s + step] = np.einsum("ij,ij->i", diff, diff)
            continue
        terms = _term(diff, metric)
        chunk = acc[s:s + step]
        for i in range(d):
            chunk += terms[:, i]
    return _key_to_distance(acc, metric)
