"""Perfect-privacy distortion: the least E d(C, C_hat) at which I(A; C_hat) = 0.

I(A; C_hat) = 0 exactly when p(c_hat | a) is the same for every class a. With q
as the variable this is linear, so the least distortion is a linear program:

    minimise    sum_{c, j} p(c) d(c, j) q(c, j)
    subject to  sum_j q(c, j) = 1                       for every c
                sum_c (p(c|a) - p(c|0)) q(c, j) = 0      for every class a > 0 and output j
                q >= 0, q(c, j) = 0 where d(c, j) = inf

solved with HiGHS through :func:`scipy.optimize.linprog` on sparse matrices
(about a second at K = 256).
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog

from .._errors import SolverError
from .._information import expected_distortion, leakage_bits
from ._problem import check_instance
from ._result import SolveResult


def perfect_privacy_distortion(p_ac, distortion) -> float:
    """Least expected distortion of a mapping with zero leakage.

    Parameters
    ----------
    p_ac : array_like, shape (n_private, K)
    distortion : array_like, shape (K, K_out), ``inf`` = forbidden

    Raises
    ------
    SolverError
        HiGHS found no solution (for instance when forbidden transitions make
        perfect privacy unreachable).
    """
    return perfect_privacy_table(p_ac, distortion)[1]


def perfect_privacy_table(p_ac, distortion) -> tuple[np.ndarray, float]:
    """A zero-leakage mapping of least expected distortion, and that distortion.

    Any budget at or above that distortion is solved by this table exactly (leakage
    cannot go below 0).

    Returns
    -------
    (table, distortion) : ndarray of shape (K, K_out) with rows on the simplex, float

    Raises
    ------
    SolverError
        As :func:`perfect_privacy_distortion`.
    """
    p_ac, D, _ = check_instance(p_ac, distortion, None)
    n_private, K = p_ac.shape
    p_c = p_ac.sum(axis=0)
    p_a = p_ac.sum(axis=1)
    rows, cols = np.nonzero(np.isfinite(D))          # one LP variable per allowed (c, j)
    n_var = rows.size
    cost = p_c[rows] * D[rows, cols]
    var = np.arange(n_var)
    simplex = sp.csr_matrix((np.ones(n_var), (rows, var)), shape=(K, n_var))
    blocks = [simplex]
    p_c_given_a = p_ac / np.where(p_a > 0, p_a, 1.0)[:, None]
    present = [a for a in range(n_private) if p_a[a] > 0]
    base = p_c_given_a[present[0]]
    for a in present[1:]:
        coef = (p_c_given_a[a] - base)[rows]
        blocks.append(sp.csr_matrix((coef, (cols, var)), shape=(D.shape[1], n_var)))
    A_eq = sp.vstack(blocks, format="csr")
    b_eq = np.concatenate([np.ones(K), np.zeros(A_eq.shape[0] - K)])
    res = linprog(cost, A_eq=A_eq, b_eq=b_eq, bounds=(0, None), method="highs")
    if res.status != 0:
        raise SolverError(f"perfect-privacy linear program failed: {res.message}")
    table = np.zeros(D.shape)
    table[rows, cols] = np.maximum(res.x, 0.0)
    table /= table.sum(axis=1, keepdims=True)
    return table, float(res.fun)


def perfect_privacy_solution(p_ac, distortion, table: np.ndarray | None = None) -> SolveResult:
    """The zero-leakage table of least distortion as a :class:`SolveResult` (optimal: leakage >= 0).

    ``table`` is that table when already computed by :func:`perfect_privacy_table`.

    Raises
    ------
    SolverError
        As :func:`perfect_privacy_distortion`.
    """
    p_ac = np.asarray(p_ac, dtype=float)
    if table is None:
        table, _ = perfect_privacy_table(p_ac, distortion)
    leak = leakage_bits(p_ac, table)
    return SolveResult(table=table, leakage_bits=leak,
                       distortion=expected_distortion(p_ac.sum(axis=0), table, np.asarray(distortion, float)),
                       multiplier=0.0, gap_bits=leak, status="optimal", solver="perfect-privacy-lp",
                       message="budget reaches the perfect-privacy distortion: zero-leakage table "
                               "of least distortion (linear program)")
