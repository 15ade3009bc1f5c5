"""Perfect-privacy distortion: the least E d(C, C_hat) at which I(A; C_hat) = 0.

I(A; C_hat) = 0 exactly when p(c_hat | a) is the same for every class a. With q
as the variable this is linear, so the least distortion Delta0 is a linear program:

    minimise    sum_{c, j} p(c) d(c, j) q(c, j)
    subject to  sum_j q(c, j) = 1                       for every c          (duals u_c)
                sum_c (p(c|a) - p(c|a0)) q(c, j) = 0     for every a != a0, j  (duals v_aj)
                q >= 0, q(c, j) = 0 where d(c, j) = inf

It has K x K_out variables (16.8 million at K = 4096), but a vertex has at most
K + (|A| - 1) K_out non-zeros, so nearly every row uses one output. The solver
here is **column generation**: HiGHS solves the program restricted to a few
pairs per row (the master), and a pricing pass over all pairs, in row chunks of
D (O(K x K_out x |A|) flops, no K x K_out temporaries), adds the pairs of
negative reduced cost

    rbar(c, j) = p(c) d(c, j) - u_c - sum_a v_aj (p(c|a) - p(c|a0)).

Every master solution is a feasible table, so its cost is an upper bound on
Delta0; and for any duals (u, v), u_c + min(0, min_j rbar(c, j)) is a feasible
dual of the full program, so

    LB = sum_c min_j (p(c) d(c, j) - sum_a v_aj (p(c|a) - p(c|a0)))

(the minimum over all j, each row's u_c cancelling) is a lower bound on Delta0.
The loop stops when the two agree to ``rel_tol`` (1e-9 by default): the answer
is certified over every table, not only over the generated pairs.

The master starts from each row's cheapest outputs, and from the best constant
output (everyone to one j, which has zero leakage) so that it is feasible. When
no output is allowed from every row, that start does not exist and the dense
program (:func:`perfect_privacy_lp`, HiGHS on all allowed pairs, about a second
at K = 256 and 40 s at K = 1024) is solved instead; it is also the reference the
tests and ``benchmarks/bench_perfect.py`` check the column generation against.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog
from threadpoolctl import threadpool_limits

from .._errors import SolverError
from .._information import expected_distortion, leakage_bits
from ._problem import check_instance
from ._result import SolveResult

_CHUNK_ELEMENTS = 1 << 17     # elements of one row chunk of a pricing pass (1 MiB of float64)
_N_START = 4                  # cheapest outputs per row in the first master
_N_ADD = 4                    # most negative pairs per row added by one pricing pass
_MAX_ROUNDS = 200
_HIGHS = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10,
          "presolve": False}   # presolve cost 16x at K = 1024 (57 s against 3.6 s, 15 against 10
                               # rounds): the masters are small and presolve undoes their structure


def perfect_privacy_distortion(p_ac, distortion) -> float:
    """Least expected distortion of a mapping with zero leakage (Delta0).

    Parameters
    ----------
    p_ac : array_like, shape (n_private, K)
    distortion : array_like, shape (K, K_out), ``inf`` = forbidden

    Returns
    -------
    float
        Delta0, certified to 1e-9 relative (see the module docstring).

    Raises
    ------
    SolverError
        No zero-leakage table exists (forbidden transitions), or HiGHS failed.
    """
    return perfect_privacy_table(p_ac, distortion)[1]


def perfect_privacy_table(p_ac, distortion, *, rel_tol: float = 1e-9,
                          info: dict | None = None) -> tuple[np.ndarray, float]:
    """A zero-leakage mapping of least expected distortion, and that distortion.

    Any budget at or above that distortion is solved by this table exactly (leakage
    cannot go below 0).

    Parameters
    ----------
    p_ac, distortion
        As :func:`perfect_privacy_distortion`.
    rel_tol : float, keyword-only
        Relative gap between the primal and dual bounds at which to stop.
    info : dict or None, keyword-only
        When given, filled with ``rounds``, ``columns``, ``lower_bound``,
        ``upper_bound`` and ``method`` (``"column-generation"`` or ``"dense-lp"``).

    Returns
    -------
    (table, distortion) : ndarray of shape (K, K_out) with rows on the simplex, float
        ``distortion`` is the primal (upper) bound; the table's E d equals it.

    Raises
    ------
    SolverError
        As :func:`perfect_privacy_distortion`, or the bounds did not meet in 200 rounds.
    """
    with threadpool_limits(limits=1):                # see _fast_solver._BLAS_THREADS
        return _column_generation(p_ac, distortion, rel_tol, {} if info is None else info)


def _column_generation(p_ac, distortion, rel_tol, info):
    """:func:`perfect_privacy_table`'s work, with BLAS held to one thread by the caller."""
    p_ac, D, _ = check_instance(p_ac, distortion, None)
    p_c, delta_a = _coefficients(p_ac)
    with np.errstate(invalid="ignore"):
        constant_cost = p_c @ D                       # nan where a massless row forbids j
    constant_cost[np.isnan(constant_cost)] = np.inf
    if not np.isfinite(constant_cost).any():
        table, value = perfect_privacy_lp(p_ac, D)
        info.update(method="dense-lp", rounds=1, columns=int(np.isfinite(D).sum()),
                    lower_bound=value, upper_bound=value)
        return table, value

    K, K_out = D.shape
    j_const = int(np.argmin(constant_cost))
    _, start_rows, start_cols = _cheapest(D, np.full(K, np.finfo(float).max), D, _N_START)
    rows, cols = _merge(np.concatenate([start_rows, np.arange(K)]),
                        np.concatenate([start_cols, np.full(K, j_const)]), D)
    for round_ in range(1, _MAX_ROUNDS + 1):
        x, value, u, v = _master(p_c, delta_a, D, rows, cols)
        lower, new_rows, new_cols = _price(p_c, delta_a, D, u, v)
        if value - lower <= rel_tol * max(abs(value), 1e-300) or new_rows.size == 0:
            break
        rows, cols = _merge(np.concatenate([rows, new_rows]), np.concatenate([cols, new_cols]), D)
    else:
        raise SolverError(f"perfect-privacy column generation did not certify in {_MAX_ROUNDS} "
                          f"rounds (bounds {lower:.12g} and {value:.12g})")
    if value - lower > rel_tol * max(abs(value), 1e-300):
        raise SolverError(f"perfect-privacy column generation stalled with bounds {lower:.12g} and "
                          f"{value:.12g} (HiGHS tolerances)")
    table = np.zeros(D.shape)
    np.add.at(table, (rows, cols), np.maximum(x, 0.0))
    table /= table.sum(axis=1, keepdims=True)
    info.update(method="column-generation", rounds=round_, columns=int(rows.size),
                lower_bound=float(lower), upper_bound=float(value))
    return table, float(value)


def perfect_privacy_lp(p_ac, distortion) -> tuple[np.ndarray, float]:
    """The same program solved densely: HiGHS on every allowed (c, j) pair.

    The reference for :func:`perfect_privacy_table`, and its fallback when no output is
    allowed from every row. Memory and time grow with K x K_out (43 s at K = 1024).

    Returns and raises as :func:`perfect_privacy_table`.
    """
    p_ac, D, _ = check_instance(p_ac, distortion, None)
    rows, cols = np.nonzero(np.isfinite(D))          # one LP variable per allowed (c, j)
    p_c, delta_a = _coefficients(p_ac)
    x, value, _, _ = _master(p_c, delta_a, D, rows, cols, dense=True)
    table = np.zeros(D.shape)
    table[rows, cols] = np.maximum(x, 0.0)
    table /= table.sum(axis=1, keepdims=True)
    return table, value


def _coefficients(p_ac: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """p(c) (shape (K,)) and p(c|a) - p(c|a0) for the present classes a != a0 (shape (K, m))."""
    p_a = p_ac.sum(axis=1)
    present = np.flatnonzero(p_a > 0)
    cond = p_ac[present] / p_a[present, None]
    return p_ac.sum(axis=0), (cond[1:] - cond[0]).T.copy()


def _merge(rows: np.ndarray, cols: np.ndarray, D: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unique allowed pairs, sorted by row then column."""
    keys = np.unique(rows.astype(np.int64) * D.shape[1] + cols)
    rows, cols = np.divmod(keys, D.shape[1])
    keep = np.isfinite(D[rows, cols])
    return rows[keep], cols[keep]


def _master(p_c, delta_a, D, rows, cols, dense=False):
    """Solve the program on the pairs (rows, cols); returns x, value, duals u (K,), v (m, K_out).

    ``dense``: the full program, with HiGHS's default method and options (as before issue 17).
    """
    K, K_out = D.shape
    m = delta_a.shape[1]
    n = rows.size
    var = np.arange(n)
    blocks = [sp.csr_matrix((np.ones(n), (rows, var)), shape=(K, n))]
    for a in range(m):
        blocks.append(sp.csr_matrix((delta_a[rows, a], (cols, var)), shape=(K_out, n)))
    A_eq = sp.vstack(blocks, format="csr")
    b_eq = np.zeros(A_eq.shape[0])
    b_eq[:K] = 1.0
    res = linprog(p_c[rows] * D[rows, cols], A_eq=A_eq, b_eq=b_eq, bounds=(0, None),
                  method="highs" if dense else "highs-ds", options=None if dense else _HIGHS)
    if res.status != 0:
        raise SolverError(f"perfect-privacy linear program failed: {res.message}")
    duals = res.eqlin.marginals
    return res.x, float(res.fun), duals[:K], duals[K:].reshape(m, K_out)


def _price(p_c, delta_a, D, u, v):
    """One pass over all pairs: the dual bound, and each row's most negative reduced costs.

    Returns
    -------
    (lower, rows, cols) : float, and int arrays of the pairs to add
    """
    def reduced(lo, hi):
        red = p_c[lo:hi, None] * D[lo:hi]             # inf stays inf: forbidden pairs never priced
        red[np.isnan(red)] = np.inf                   # 0 x inf: a massless row's forbidden pair
        red -= delta_a[lo:hi] @ v
        return red

    return _cheapest(D, u, reduced, _N_ADD)


def _cheapest(D, u, reduced, n_pick):
    """Per row, up to n_pick pairs whose value is below u_c, in row chunks of D.

    ``reduced`` is D itself or a function of a row range giving that chunk's values
    (shape (hi - lo, K_out)). Returns the sum of the row minima and the pairs' rows and
    columns; the chunks keep the temporaries small (no K x K_out index array).
    """
    K, K_out = D.shape
    step = max(1, _CHUNK_ELEMENTS // K_out)
    n_pick = min(n_pick, K_out)
    total = 0.0
    new_rows, new_cols = [], []
    for lo in range(0, K, step):
        hi = min(K, lo + step)
        red = reduced(lo, hi) if callable(reduced) else reduced[lo:hi]
        best = red.min(axis=1)
        total += float(best.sum())
        bad = np.flatnonzero(best < u[lo:hi] - 1e-12 * np.abs(u[lo:hi]))
        if bad.size == 0:
            continue
        sub = red[bad]
        pick = (np.argpartition(sub, n_pick - 1, axis=1)[:, :n_pick] if K_out > n_pick
                else np.tile(np.arange(K_out), (bad.size, 1)))
        below = np.take_along_axis(sub, pick, axis=1) < u[lo + bad, None]
        new_rows.append(np.repeat(lo + bad, n_pick)[below.ravel()])
        new_cols.append(pick[below])
    if not new_rows:
        return total, np.empty(0, np.int64), np.empty(0, np.int64)
    return total, np.concatenate(new_rows), np.concatenate(new_cols)


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
                               "of least distortion (linear program, by column generation)")
