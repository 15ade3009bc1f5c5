"""The output-limited program (19) by column generation over the table's pairs.

Why
---
The per-output limit 2^-eps p(a) <= p(a | j) <= 2^eps p(a) is linear in the joint P(a, j), so the
program is the conic model of :mod:`privmap.offline.solvers.reference` plus 2 |A| K_out linear rows on P. Solved on a
dense (K, K_out) table variable (:func:`._program.dense_limited`, the reference form) it
costs Clarabel seconds at K = 64 and minutes from K = 256, though optimal tables have one or two
entries per row. Here the table variable holds only the pairs (c, j) of a working set S, and the
working set grows until no pair outside it would lower the Lagrangian:

1. S starts with each row's pairs in the unconstrained optimum (the fast solver's table, whose
   support the limit moves a little), each row's ``_NEAREST`` cheapest outputs, and for every
   output j the row of least d(c, j), so that every output's limit rows carry a multiplier;
2. Clarabel solves the restricted program (all K_out outputs, pairs in S only);
3. with the limit rows' multipliers (lam_U, lam_L >= 0) and the budget's mu from Clarabel, the
   Lagrangian's derivative in q(c, j), for *every* pair, is (in the model's units, K nats)

       g(c, j) = K [ sum_a p(a, c) (log(P(a, j) / (p(a) P_j)) + 2^-eps lam_U(a, j) - lam_L(a, j))
                     + p(c) sum_a p(a) (2^-eps lam_L(a, j) - lam_U(a, j)) ] + mu p(c) d(c, j) / delta;

   row c's own multiplier is the least g over its pairs in S that carry mass, and a pair whose g
   is below it by more than ``_PRICE_TOL`` (times the row's scale K p(c)) joins S;
4. stop when no pair joins: the restricted optimum then satisfies the full program's KKT
   conditions to Clarabel's accuracy, the guarantee the dense reference gives (no certificate of
   its own; ``gap_bits`` is inf).

The working set needs a few rounds (``info["rounds"]``); each is a Clarabel solve on |S| + 2 |A|
K_out variables instead of K K_out + 2 |A| K_out.
"""
from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from ..._errors import SolverError

#: Each row's cheapest outputs in the first working set.
_NEAREST = 4
#: Table entries above this count as a pair's mass when a row's multiplier is read off.
_MASS = 1e-7
#: A pair joins the working set when its derivative beats its row's multiplier by this much, relative
#: to the row's scale K p(c) (Clarabel's answers meet their conditions to about 1e-8).
_PRICE_TOL = 1e-6
#: Most rounds of column generation before the solve gives up.
_MAX_ROUNDS = 30
#: A pair joins the least-distortion LP's working set when its reduced cost is below minus this
#: (relative to the largest row dual).
_LP_TOL = 1e-9
#: Pairs of most negative reduced cost that join per row and per column in a round of the LP.
_LP_JOIN = 4


def solve_columns(p_ac: np.ndarray, D: np.ndarray, delta: float, eps_bits: float, *, start: np.ndarray,
                  forbidden: np.ndarray, clarabel) -> tuple[np.ndarray, object, int, int]:
    """The output-limited program on a growing working set of pairs (module docstring).

    Parameters
    ----------
    p_ac : ndarray, shape (n_private, K)
        Checked joint prior.
    D : ndarray, shape (K, K_out)
        Checked distortion, ``inf`` = forbidden.
    delta : float
        Budget on E d; at 0 the budget is the caller's ``forbidden`` pattern alone.
    eps_bits : float
        The limit (bits, >= 0).
    start : ndarray, shape (K, K_out)
        A table whose support seeds the working set (the unconstrained optimum).
    forbidden : ndarray of bool, shape (K, K_out)
        Pairs fixed at zero.
    clarabel : callable(problem) -> (raw, attempt)
        Solves a cvxpy problem with the reference solver's settings and stall handling.

    Returns
    -------
    (table, raw, attempt, rounds) : ndarray (K, K_out) row-stochastic, Clarabel's last answer, the
        attempt that gave it, and the rounds of column generation.

    Raises
    ------
    SolverError
        Clarabel failed on a restricted program, or the working set still grew after ``_MAX_ROUNDS``.
    """
    K, K_out = D.shape
    allowed = ~forbidden
    cost = np.where(allowed, D, np.inf)
    work = (start > _MASS) | _nearest(cost)
    finite_col = np.isfinite(cost).any(axis=0)
    work[np.argmin(cost, axis=0)[finite_col], np.flatnonzero(finite_col)] = True
    work &= allowed
    p_c = p_ac.sum(axis=0)
    for rounds in range(1, _MAX_ROUNDS + 1):
        rows, cols = np.nonzero(work)
        x, P, duals, raw, attempt = _restricted(p_ac, D, delta, eps_bits, rows, cols, clarabel)
        table = np.zeros((K, K_out))
        table[rows, cols] = np.clip(x, 0.0, None)
        g = _derivative(p_ac, D, delta, eps_bits, P, *duals)
        g[~allowed] = np.inf
        carried = np.where((table > _MASS) & work, g, np.inf).min(axis=1)
        joins = (g < carried[:, None] - _PRICE_TOL * K * p_c[:, None]) & ~work & allowed
        if not joins.any():
            return table, raw, attempt, rounds
        work |= joins
    raise SolverError(f"output-limited program: the working set still grew after {_MAX_ROUNDS} rounds "
                      f"({int(work.sum())} pairs)")


def _nearest(cost: np.ndarray) -> np.ndarray:
    """Mask (K, K_out) of each row's ``_NEAREST`` cheapest entries of ``cost``.

    ``inf`` = forbidden; the caller masks those out again where a row has fewer allowed outputs.
    """
    K, K_out = cost.shape
    k = min(_NEAREST, K_out)
    mask = np.zeros(cost.shape, bool)
    mask[np.repeat(np.arange(K), k), np.argpartition(cost, k - 1, axis=1)[:, :k].ravel()] = True
    return mask


def _restricted(p_ac, D, delta, eps_bits, rows, cols, clarabel):
    """Clarabel on the pairs (rows[i], cols[i]) only.

    Returns their values x, the scaled joint P (n_private, K_out), the multipliers
    (mu, lam_U, lam_L) and Clarabel's answer and attempt.
    """
    import cvxpy as cp
    n_private, K = p_ac.shape
    K_out = D.shape[1]
    p_a, p_c = p_ac.sum(axis=1), p_ac.sum(axis=0)
    n = rows.size
    x = cp.Variable(n, nonneg=True)
    P = cp.Variable((n_private, K_out), nonneg=True)
    # joint: P(a, j) = K sum_c p(a, c) q(c, j), one sparse map per class (column j of P, row a)
    spread = sp.csr_matrix((np.ones(n), (cols, np.arange(n))), shape=(K_out, n))
    joint = [K * spread @ sp.diags(p_ac[a, rows]) for a in range(n_private)]
    row_sums = sp.csr_matrix((np.ones(n), (rows, np.arange(n))), shape=(K, n))
    P_out = cp.sum(P, axis=0)
    low = 2.0 ** -eps_bits
    upper = cp.vstack([low * P[a] - p_a[a] * P_out for a in range(n_private)]) <= 0
    lower = cp.vstack([low * p_a[a] * P_out - P[a] for a in range(n_private)]) <= 0
    constraints = [P[a] == joint[a] @ x for a in range(n_private)]
    constraints += [row_sums @ x == 1, upper, lower]
    budget = None
    if delta > 0:
        budget = (p_c[rows] * D[rows, cols] / delta) @ x <= 1.0
        constraints.append(budget)
    independent = cp.vstack([p_a[a] * P_out for a in range(n_private)])
    problem = cp.Problem(cp.Minimize(cp.sum(cp.rel_entr(P, independent))), constraints)
    raw, attempt = clarabel(problem)
    mu = 0.0 if budget is None else float(budget.dual_value)
    duals = (mu, np.asarray(upper.dual_value), np.asarray(lower.dual_value))
    return np.asarray(x.value), np.asarray(P.value), duals, raw, attempt


def _derivative(p_ac, D, delta, eps_bits, P, mu, lam_u, lam_l):
    """g(c, j) of the module docstring, shape (K, K_out), for every pair (inf where D is)."""
    K = p_ac.shape[1]
    p_a, p_c = p_ac.sum(axis=1), p_ac.sum(axis=0)
    low = 2.0 ** -eps_bits
    P = np.clip(P, 1e-300, None)
    log_ratio = np.log(P / (p_a[:, None] * P.sum(axis=0)[None, :]))          # (n_private, K_out)
    per_class = log_ratio + low * lam_u - lam_l
    per_output = p_a @ (low * lam_l - lam_u)                                   # (K_out,)
    g = K * (p_ac.T @ per_class + p_c[:, None] * per_output[None, :])
    if mu > 0:
        with np.errstate(invalid="ignore"):
            g = g + (mu / delta) * p_c[:, None] * D
    return np.where(np.isnan(g), np.inf, g)


def least_columns(p_ac: np.ndarray, D: np.ndarray, eps_bits: float, *,
                  coefficients: np.ndarray) -> tuple[float, np.ndarray | None]:
    """The least-distortion linear program under the limit, by column generation (HiGHS).

    min sum_{c, j} p(c) d(c, j) q(c, j) over row-stochastic q meeting the 2 |A| K_out limit rows.
    The working set holds each row's ``_NEAREST`` cheapest outputs and the constant release to the
    output of least mean distortion allowed from every row: that column alone meets any limit
    (every posterior is the prior), so each restricted program is feasible. The pairs that join
    are each row's and each column's ``_LP_JOIN`` of most negative reduced cost (from the restricted
    optimum's row and limit duals; after a small first master nearly every pair is negative, and
    taking them all made each later program as wide as the dense one); at the end none is, and
    the restricted optimum is the full program's (simplex accuracy, as the dense LP).

    Parameters
    ----------
    p_ac : ndarray, shape (n_private, K)
    D : ndarray, shape (K, K_out), ``inf`` = forbidden
    eps_bits : float >= 0
    coefficients : ndarray, shape (2 n_private, K)
        The limit rows' coefficient of q(c, j) for every j: upper rows of class a first, then
        lower rows (``_program._limit_rows``'s order and scale).

    Returns
    -------
    (value, table) : float and ndarray (K, K_out); ``(inf, None)`` when no output is allowed
        from every row (the caller then solves the dense program).

    Raises
    ------
    SolverError
        HiGHS did not solve a restricted program.
    """
    from scipy.optimize import linprog
    K, K_out = D.shape
    allowed = np.isfinite(D)
    everywhere = np.flatnonzero(allowed.all(axis=0))
    if everywhere.size == 0:
        return math.inf, None
    p_c = p_ac.sum(axis=0)
    cost = p_c[:, None] * np.where(allowed, D, 0.0)
    work = _nearest(np.where(allowed, D, np.inf))
    work[:, everywhere[np.argmin(cost[:, everywhere].sum(axis=0))]] = True
    work &= allowed
    sides = coefficients.shape[0]
    while True:                               # each round adds a pair, so the rounds are finite
        rows, cols = np.nonzero(work)
        n = rows.size
        limit_rows = (np.arange(sides)[:, None] * K_out + cols[None, :]).ravel()
        A_ub = sp.csc_matrix((coefficients[:, rows].ravel(), (limit_rows, np.tile(np.arange(n), sides))),
                             shape=(sides * K_out, n))
        A_eq = sp.csc_matrix((np.ones(n), (rows, np.arange(n))), shape=(K, n))
        result = linprog(cost[rows, cols], A_ub=A_ub, b_ub=np.zeros(sides * K_out), A_eq=A_eq, b_eq=np.ones(K),
                         bounds=(0, None), method="highs")
        if result.status != 0:
            raise SolverError(f"HiGHS did not solve the least-distortion program at eps = {eps_bits:g} bits "
                              f"on {n} pairs: {result.message}")
        y_eq = result.eqlin.marginals
        y_ub = result.ineqlin.marginals.reshape(sides, K_out)
        reduced = cost - y_eq[:, None] - coefficients.T @ y_ub
        reduced[~allowed | work] = np.inf
        joins = _most_negative(reduced, -_LP_TOL * max(1.0, float(np.abs(y_eq).max())))
        if not joins.any():
            table = np.zeros((K, K_out))
            table[rows, cols] = result.x
            return float(result.fun), table
        work |= joins


def _most_negative(reduced: np.ndarray, below: float) -> np.ndarray:
    """Mask (K, K_out) of each row's and each column's ``_LP_JOIN`` smallest entries of ``reduced`` below ``below``."""
    K, K_out = reduced.shape
    mask = np.zeros(reduced.shape, bool)
    k_r, k_c = min(_LP_JOIN, K_out), min(_LP_JOIN, K)
    by_row = np.argpartition(reduced, k_r - 1, axis=1)[:, :k_r]
    mask[np.repeat(np.arange(K), k_r), by_row.ravel()] = True
    by_col = np.argpartition(reduced, k_c - 1, axis=0)[:k_c]
    mask[by_col.ravel(), np.tile(np.arange(K_out), k_c)] = True
    return mask & (reduced < below)
