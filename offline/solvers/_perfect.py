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
D (O(K x K_out x |A|) flops, no K x K_out temporaries), adds each row's pair of
most negative reduced cost

    rbar(c, j) = p(c) d(c, j) - u_c - sum_a v_aj (p(c|a) - p(c|a0)).

The master is one highspy ``Highs`` model kept across rounds: the priced pairs are
appended as columns and dual simplex restarts from the previous optimal basis, so a
round costs the pivots the new columns need, not a solve from scratch (synthetic
K = 4096: 23 rounds of one pair per row, 6 s, against 77 s when every master was
re-solved by scipy's ``linprog``; see benchmarks/README.md, "Delta0 at large K").

Every master solution is a feasible table, so its cost is an upper bound on
Delta0; and for any duals (u, v), u_c + min(0, min_j rbar(c, j)) is a feasible
dual of the full program, so

    LB = sum_c min_j (p(c) d(c, j) - sum_a v_aj (p(c|a) - p(c|a0)))

(the minimum over all j, each row's u_c cancelling) is a lower bound on Delta0.
The loop stops when the two agree to ``rel_tol`` (1e-9 by default): the answer
is certified over every table, not only over the generated pairs.

The master starts from each row's cheapest output, and from the best constant
output (everyone to one j, which has zero leakage) so that it is feasible. When
no output is allowed from every row, that start does not exist and the dense
program (:func:`perfect_privacy_lp`, HiGHS on all allowed pairs, about a second
at K = 256 and 40 s at K = 1024) is solved instead; it is also the reference the
tests and ``benchmarks/bench_perfect.py`` check the column generation against.
"""
from __future__ import annotations

import highspy
import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog
from threadpoolctl import threadpool_limits

from .._errors import SolverError
from .._information import expected_distortion, leakage_bits
from ._problem import check_instance
from ._result import SolveResult

_CHUNK_ELEMENTS = 1 << 17     # elements of one row chunk of a pricing pass (1 MiB of float64)
_MAX_ROUNDS = 200
_HIGHS = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10,
          "presolve": "off",   # presolve cost 16x at K = 1024 (57 s against 3.6 s, 15 against 10
                               # rounds): the masters are small and presolve undoes their structure
          "output_flag": False, "threads": 1}


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
    _, start_rows, start_cols = _cheapest(D, np.full(K, np.finfo(float).max), D)
    rows, cols = _merge(np.concatenate([start_rows, np.arange(K)]),
                        np.concatenate([start_cols, np.full(K, j_const)]), D)
    master = _Master(p_c, delta_a, D)
    for round_ in range(1, _MAX_ROUNDS + 1):
        master.add(rows, cols)
        x, value, u, v = master.solve()
        lower, rows, cols = _price(p_c, delta_a, D, u, v)
        rows, cols = master.new_pairs(rows, cols)
        if value - lower <= rel_tol * max(abs(value), 1e-300) or rows.size == 0:
            break
    else:
        raise SolverError(f"perfect-privacy column generation did not certify in {_MAX_ROUNDS} "
                          f"rounds (bounds {lower:.12g} and {value:.12g})")
    if value - lower > rel_tol * max(abs(value), 1e-300):
        raise SolverError(f"perfect-privacy column generation stalled with bounds {lower:.12g} and "
                          f"{value:.12g} (HiGHS tolerances)")
    table = np.zeros(D.shape)
    np.add.at(table, (master.rows, master.cols), np.maximum(x, 0.0))
    table /= table.sum(axis=1, keepdims=True)
    info.update(method="column-generation", rounds=round_, columns=int(master.rows.size),
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
    x, value = _dense_solve(p_c, delta_a, D, rows, cols)
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


def _columns(delta_a, rows, cols, K, K_out) -> sp.csc_matrix:
    """Constraint columns of the pairs (rows, cols): shape (K + m K_out, n), one column a pair.

    Pair (c, j) has 1 in row c (sum_j q(c, j) = 1) and p(c|a) - p(c|a0) in row
    K + a K_out + j (the class-a balance of output j), for a = 0 .. m - 1.
    """
    m = delta_a.shape[1]
    n = rows.size
    index = np.empty((n, m + 1), np.int32)
    index[:, 0] = rows
    index[:, 1:] = K + np.arange(m) * K_out + cols[:, None]
    value = np.empty((n, m + 1))
    value[:, 0] = 1.0
    value[:, 1:] = delta_a[rows]
    return sp.csc_matrix((value.ravel(), index.ravel(), np.arange(0, n * (m + 1) + 1, m + 1)),
                         shape=(K + m * K_out, n))


def _dense_solve(p_c, delta_a, D, rows, cols):
    """Solve the program on the pairs (rows, cols) from scratch with scipy's HiGHS defaults.

    Returns x (n,) and the value. Used for the dense program only; the column generation
    keeps one warm-started :class:`_Master` instead.
    """
    A_eq = _columns(delta_a, rows, cols, *D.shape)
    b_eq = np.zeros(A_eq.shape[0])
    b_eq[:D.shape[0]] = 1.0
    res = linprog(p_c[rows] * D[rows, cols], A_eq=A_eq, b_eq=b_eq, bounds=(0, None), method="highs")
    if res.status != 0:
        raise SolverError(f"perfect-privacy linear program failed: {res.message}")
    return res.x, float(res.fun)


class _Master:
    """The restricted program, one HiGHS model kept across rounds.

    Pairs are appended as columns (:meth:`add`) and each :meth:`solve` restarts the
    simplex from the previous optimal basis: the new columns enter at zero, so the old
    vertex stays primal feasible and a round costs the pivots that bring them in, not
    a solve from scratch. ``rows`` and ``cols`` hold the pairs in column order.
    """

    def __init__(self, p_c, delta_a, D):
        self._p_c, self._delta_a, self._D = p_c, delta_a, D
        K, K_out = D.shape
        self._m = delta_a.shape[1]
        n_rows = K + self._m * K_out
        self._highs = highspy.Highs()
        for name, value in _HIGHS.items():
            self._highs.setOptionValue(name, value)
        b = np.zeros(n_rows)
        b[:K] = 1.0
        self._highs.addRows(n_rows, b, b, 0, np.zeros(n_rows + 1, np.int32),
                            np.empty(0, np.int32), np.empty(0))
        self.rows = np.empty(0, np.int64)
        self.cols = np.empty(0, np.int64)
        self._keys = np.empty(0, np.int64)           # sorted c K_out + j of the pairs present

    def new_pairs(self, rows, cols):
        """The pairs among (rows, cols) not yet in the master (a pair whose reduced cost is
        negative only within HiGHS's tolerance can be priced again)."""
        keys = rows.astype(np.int64) * self._D.shape[1] + cols
        fresh = ~np.isin(keys, self._keys, assume_unique=False)
        return rows[fresh], cols[fresh]

    def add(self, rows, cols):
        """Append the pairs (rows, cols) as columns of cost p(c) d(c, j), bounds [0, inf)."""
        K, K_out = self._D.shape
        A = _columns(self._delta_a, rows, cols, K, K_out)
        n = rows.size
        status = self._highs.addCols(n, self._p_c[rows] * self._D[rows, cols], np.zeros(n),
                                     np.full(n, highspy.kHighsInf), A.nnz,
                                     A.indptr.astype(np.int32), A.indices.astype(np.int32), A.data)
        if status != highspy.HighsStatus.kOk:
            raise SolverError(f"perfect-privacy master: HiGHS refused {n} columns ({status})")
        self.rows = np.concatenate([self.rows, rows])
        self.cols = np.concatenate([self.cols, cols])
        self._keys = np.union1d(self._keys, rows.astype(np.int64) * K_out + cols)

    def solve(self):
        """Optimise from the current basis; returns x (n,), value, duals u (K,), v (m, K_out)."""
        K, K_out = self._D.shape
        self._highs.run()
        status = self._highs.getModelStatus()
        if status != highspy.HighsModelStatus.kOptimal:
            raise SolverError("perfect-privacy linear program failed: HiGHS "
                              f"{self._highs.modelStatusToString(status)}")
        solution = self._highs.getSolution()
        duals = np.asarray(solution.row_dual)
        return (np.asarray(solution.col_value), float(self._highs.getObjectiveValue()),
                duals[:K], duals[K:].reshape(self._m, K_out))


def _price(p_c, delta_a, D, u, v):
    """One pass over all pairs: the dual bound, and each row's pair of most negative reduced cost.

    Returns
    -------
    (lower, rows, cols) : float, and int arrays of the pairs to add
    """
    massless = p_c == 0
    step = max(1, _CHUNK_ELEMENTS // D.shape[1])
    out = np.empty((step, D.shape[1]))
    term = np.empty_like(out)

    def reduced(lo, hi):
        with np.errstate(invalid="ignore"):           # inf stays inf: never priced
            red = np.multiply(D[lo:hi], p_c[lo:hi, None], out=out[:hi - lo])
        if massless[lo:hi].any():
            red[np.isnan(red)] = np.inf               # 0 x inf: a massless row's forbidden pair
        for a in range(delta_a.shape[1]):             # |A| - 1 rank-one updates: no BLAS call
            red -= np.multiply(delta_a[lo:hi, a, None], v[a], out=term[:hi - lo])
        return red

    return _cheapest(D, u, reduced)


def _cheapest(D, u, reduced):
    """Per row, its least value and the column where it is, if that value is below u_c.

    ``reduced`` is D itself or a function of a row range giving that chunk's values
    (shape (hi - lo, K_out)); it is evaluated in row chunks of D, which keeps the
    temporaries small (no K x K_out array). Returns the sum of the row minima and the
    rows and columns of the minima below u.
    """
    K, K_out = D.shape
    step = max(1, _CHUNK_ELEMENTS // K_out)
    total = 0.0
    new_rows, new_cols = [], []
    for lo in range(0, K, step):
        hi = min(K, lo + step)
        red = reduced(lo, hi) if callable(reduced) else reduced[lo:hi]
        arg = red.argmin(axis=1)                      # argmin then gather: faster than min
        best = red[np.arange(hi - lo), arg]
        total += float(best.sum())
        bad = np.flatnonzero(best < u[lo:hi] - 1e-12 * np.abs(u[lo:hi]))
        new_rows.append(lo + bad)
        new_cols.append(arg[bad])
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
