"""Null-space cleaning for linear predictors (seed 001, Xu et al., Algorithm 1).

A service runs a desired linear predictor ``A_d^T x``; a confidential linear predictor ``A_c^T x``
(fitted on training data) should do worse on the released ``x~``. The mechanism removes, per
sample, the components of ``x`` along generalised eigendirections of ``B_d v = gamma B_c v``
(``B = A A^T``) in increasing ``gamma`` until the utility error ``||A_d^T (x - x~)||^2`` reaches
the budget ``epsilon`` exactly (Theorem 1). It is deterministic and gives no formal guarantee.

Robust eigenproblem (docs/MECHANISMS brief): ``B_c`` has rank <= N_c so ``eigh(B_d, B_c)`` is
singular. We restrict to ``U = orth([A_d A_c])`` (dimension r <= N_d + N_c), solve
``eigh(U^T B_d U, U^T (B_d + B_c) U)`` for ``mu = lambda_d / (lambda_d + lambda_c)`` in [0, 1]
(ascending mu is ascending gamma), and fix the basis convention: unit Euclidean norm, and inside
each eigenspace (mu equal to within ``MU_TIE``) a Euclidean-orthonormal basis that diagonalises
``B_d + B_c`` (hence both ``B_d`` and ``B_c``), ordered by that restricted eigenvalue, each vector
signed so that its largest-magnitude entry (first on ties) is positive.
"""
from __future__ import annotations

import numpy as np
import scipy.linalg

from ..._errors import BuildError

__all__ = ["NullspaceDirections", "fit_linear", "nullspace_directions", "clean", "clean_simplest",
           "MU_TIE"]

#: Two generalised eigenvalues mu closer than this belong to one eigenspace.
MU_TIE = 1e-9


class NullspaceDirections:
    """The stored part of Algorithm 1.

    Attributes
    ----------
    v : ndarray, shape (k, n)
        Directions, rows sorted by increasing gamma (unit Euclidean norm).
    lambda_d, lambda_c : ndarray, shape (k,)
        ``v_i^T B_d v_i`` and ``v_i^T B_c v_i``.
    mu : ndarray, shape (k,)
        ``lambda_d / (lambda_d + lambda_c)`` in [0, 1] (ascending).
    """

    def __init__(self, v, lambda_d, lambda_c, mu):
        self.v, self.lambda_d, self.lambda_c, self.mu = v, lambda_d, lambda_c, mu


def fit_linear(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Least-squares linear predictors with intercepts kept out of ``A`` (seed 001, step 1).

    Parameters
    ----------
    x : ndarray, shape (m, n)
    y : ndarray, shape (m, N)

    Returns
    -------
    (A, b) : ndarray (n, N) and ndarray (N,)
        ``y ~= x @ A + b``. Raises :class:`BuildError` for fewer than 2 rows or non-finite data.
    """
    from sklearn.linear_model import LinearRegression
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64).reshape(len(x), -1)
    if x.ndim != 2 or len(x) < 2 or not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise BuildError("fitting a linear predictor needs >= 2 rows of finite numbers")
    model = LinearRegression().fit(x, y)
    return np.asarray(model.coef_, dtype=np.float64).T.copy(), np.asarray(model.intercept_, dtype=np.float64)


def _signed(w: np.ndarray) -> np.ndarray:
    j = int(np.argmax(np.abs(w)))
    return -w if w[j] < 0 else w


def nullspace_directions(a_d: np.ndarray, a_c: np.ndarray) -> NullspaceDirections:
    """Generalised eigendirections of ``B_d v = gamma B_c v`` restricted to ``span[A_d A_c]``.

    Parameters
    ----------
    a_d : ndarray, shape (n, N_d); a_c : ndarray, shape (n, N_c)

    Returns
    -------
    NullspaceDirections with k = rank[A_d A_c] directions. Directions outside that span have
    ``lambda_d = lambda_c = 0`` (Algorithm 1 never changes them), so they are not stored.
    Raises :class:`BuildError` if the predictors are zero or not finite.
    """
    a_d = np.asarray(a_d, dtype=np.float64)
    a_c = np.asarray(a_c, dtype=np.float64)
    if a_d.ndim != 2 or a_c.ndim != 2 or a_d.shape[0] != a_c.shape[0]:
        raise BuildError("A_d and A_c must be (n, N_d) and (n, N_c) matrices")
    if not (np.isfinite(a_d).all() and np.isfinite(a_c).all()):
        raise BuildError("predictor coefficients are not finite")
    u = scipy.linalg.orth(np.hstack([a_d, a_c]))
    if u.shape[1] == 0:
        raise BuildError("both predictors are zero: nothing to clean")
    b_d, b_c = a_d @ a_d.T, a_c @ a_c.T
    s = u.T @ (b_d + b_c) @ u
    mu, w = scipy.linalg.eigh(u.T @ b_d @ u, s)
    mu = np.clip(mu, 0.0, 1.0)
    directions = []
    start = 0
    while start < len(mu):
        stop = start + 1
        while stop < len(mu) and mu[stop] - mu[start] <= MU_TIE:
            stop += 1
        q = scipy.linalg.orth(u @ w[:, start:stop])
        _, r = np.linalg.eigh(q.T @ (b_d + b_c) @ q)
        for col in (q @ r).T:
            directions.append(_signed(col / np.linalg.norm(col)))
        start = stop
    v = np.array(directions)
    lambda_d = np.sum((v @ a_d) ** 2, axis=1)  # v^T B_d v = ||A_d^T v||^2 >= 0
    lambda_c = np.sum((v @ a_c) ** 2, axis=1)
    total = lambda_d + lambda_c
    mu_v = np.where(total > 0, lambda_d / np.where(total > 0, total, 1.0), 0.0)
    order = np.argsort(mu_v, kind="stable")
    return NullspaceDirections(v[order], lambda_d[order], lambda_c[order], mu_v[order])


def clean(x: np.ndarray, v: np.ndarray, lambda_d: np.ndarray, epsilon: float) -> np.ndarray:
    """Algorithm 1 steps 4-7 on rows of ``x`` (the reference for the device's pure-Python path).

    Parameters
    ----------
    x : ndarray, shape (m, n) or (n,)
    v : ndarray, shape (k, n); lambda_d : ndarray, shape (k,); epsilon : float >= 0

    Returns
    -------
    ndarray like ``x``: ``x~ = x - sum_{i<=t+1} alpha_i a_i v_i`` with ``a = V x``; every
    direction is removed when ``sum delta_i < epsilon``.
    """
    x = np.asarray(x, dtype=np.float64)
    rows = np.atleast_2d(x)
    out = np.empty_like(rows)
    for r, row in enumerate(rows):
        a = v @ row
        delta = lambda_d * a * a
        alpha = np.zeros(len(a))
        spent = 0.0
        for i, d in enumerate(delta):
            if spent + d < epsilon:
                alpha[i] = 1.0
                spent += d
            else:
                alpha[i] = np.sqrt((epsilon - spent) / d) if d > 0 else 0.0
                break
        out[r] = row - (alpha * a) @ v
    return out.reshape(x.shape)


def clean_simplest(x: np.ndarray, a_d: np.ndarray) -> np.ndarray:
    """The seed's "simplest" variant: project rows of ``x`` onto ``col(A_d)`` (x~ = Q Q^T x).

    Parameters
    ----------
    x : ndarray, shape (m, n); a_d : ndarray, shape (n, N_d)
    """
    q = scipy.linalg.orth(np.asarray(a_d, dtype=np.float64))
    return np.asarray(x, dtype=np.float64) @ q @ q.T
