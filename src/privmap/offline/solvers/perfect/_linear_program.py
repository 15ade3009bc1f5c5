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
D (O(K x K_out x |A|) flops, no K x K_out temporaries), adds each row's pairs of
most negative reduced cost (up to _PRICED_PER_ROW of them)

    rbar(c, j) = p(c) d(c, j) - u_c - sum_a v_aj (p(c|a) - p(c|a0)).

The master is one highspy ``Highs`` model kept across rounds: the priced pairs are
appended as columns and dual simplex restarts from the previous optimal basis, so a
round costs the pivots the new columns need, not a solve from scratch (synthetic
K = 4096: 23 rounds of one pair per row, 6 s, against 77 s when every master was
re-solved by scipy's ``linprog``; see benchmarks/README.md, "Delta0 at large K").

Every master solution is a feasible table, so its cost is an upper bound on
Delta0; and for any duals (u, v), u_c + min(0, min_j rbar(c, j)) is a feasible
dual of the full program, so

    L(v) = sum_c min_j (p(c) d(c, j) - sum_a v_aj (p(c|a) - p(c|a0)))

(the minimum over all j, each row's u_c cancelling) is a lower bound on Delta0
for every v. The loop stops when the best lower bound and the master's cost agree
to ``rel_tol`` (1e-9 by default): the answer is certified over every table, not
only over the generated pairs.

**Stabilised pricing.** The master's duals v are degenerate and swing from round
to round (on UCI Adult the first dual bounds are near -500 against Delta0 = 0.38),
so the pairs they price in are often useless a round later. Each round therefore
also prices at the smoothed point alpha v_best + (1 - alpha) v (Wentges'
smoothing, alpha = 0.9), v_best being the duals of the best lower bound so far
(v = 0 at the start, whose bound is sum_c p(c) min_j d(c, j) >= 0). It adds each
row's cheapest pair there when that pair also has a negative reduced cost at the
master's duals, and its bound competes for the best. Pricing at the master's duals
goes on as before, so the method keeps plain column generation's finite
convergence; the smoothing only adds pairs and bounds (UCI Adult K = 4096: about
half the rounds and time; synthetic ratings: unchanged).

**Binary private attribute.** With |A| = 2 and no forbidden pair the program is first solved as
a transportation problem between the rows whose p(c|a1) - p(c|a0) is positive and those where it
is negative, through candidate hubs (``_transport``): |S| + |T| rows instead of K + K_out, none of
the hub rows whose degenerate duals swing from round to round. Its table is feasible for the
program above, and hub duals v built from its potentials give the same bound L(v) over all pairs;
when they agree to ``rel_tol`` (always, when d is a metric whose outputs are the inputs) that is
the answer, certified as above (UCI Adult, sex private, K = 4096: 1.9 CPU-s against 67 for the
hub program; see benchmarks/README.md, "Delta0 by network simplex", and for the transport's history the notebook in git, 1dfd9dc).
Otherwise the hub program's column generation below goes on, its master started with the
transport table's pairs and its best bound L(v).

**Idle columns dropped.** A column that has sat at zero through two solves of the master,
priced out by more than a millionth of its cost, is deleted from it (it is priced in again if
it ever becomes attractive). The master then holds the pairs of the current vertex and of the last rounds
instead of every pair ever priced, and its pivots cost a fraction as much: with five classes
(UCI Adult, race private) the masters grew to 37,000 columns at K = 512 and 98,000 at K = 1024,
where an optimal vertex holds 1,200 and 2,600 pairs, and HiGHS spent nearly all of Delta0's
time re-optimising them (the benchmarks notebook in git, 1dfd9dc:benchmarks/README.md, "Delta0 with five classes: idle columns
dropped"). Deleting nonbasic columns at zero keeps the master's basis and value, so the master's
value never rises; columns are dropped only after a round that lowered it strictly, so no master
can come back (each drop follows a lower value than every earlier one), and between drops the
method is plain column generation: it still ends, certified as above.

**Three classes or more: the master seeded by a primal-dual interior point** (``_interior``). The
master has K + (|A| - 1) K_out rows, and started from a few pairs a row its duals are degenerate:
they price in pairs that mislead the next master, and the bounds creep together over dozens of
rounds of thousands of pivots (UCI Adult, 15 occupations private, K = 256: the unseeded master
failed; seeded with the optimal support alone, 51 rounds and 180 CPU-s). So from
:data:`INTERIOR_SEED_CLASSES` classes, with finite distortions (and below five classes only up to
:data:`FEW_CLASSES_SEED_PAIRS` pairs, beyond which the unseeded rounds cost less), Mehrotra's
predictor-corrector solves the whole program first, its Newton systems reduced to a dense K x K
Schur complement over the rows (the balances of each output an m x m block). It gives the first
master both halves of the certificate: the pairs of its table above ``_interior.SEED_SHARE`` that
are tight at its duals (the optimal support), and duals whose bound L(v) becomes the best bound
above. The first master then reaches that bound: one round on every UCI Adult program measured
(K = 256 and 512; benchmarks/README.md, "Delta0 by network simplex, and with more classes"):
occupation (15 classes) 1.1 and 6.4 CPU-s against 35 and 806 on the revision before, marital
status (7) 0.7 and 4.2 against 1.6 and 16.0. If the interior point breaks down, the best point it
kept seeds the master (none, if it broke down at once) and the column generation goes on as below.

**Forbidden pairs with many classes: the master seeded by Clarabel.** The interior point takes
finite distortions only. A program with forbidden pairs and at least :data:`CONIC_SEED_CLASSES`
classes, of at most :data:`CONIC_SEED_ENTRIES` constraint entries (Clarabel's memory: 0.8 GB at
3.4 million), is solved whole by Clarabel, and the pairs it leaves above :data:`_CONIC_SEED_SHARE`
seed the first master (measured before the interior point, on a 13-occupation program without
forbidden pairs, K = 256: 5.3 CPU-s against 107 unseeded). If Clarabel fails the master starts as
below.

The master starts from each row's cheapest output, and from the best constant
output (everyone to one j, which has zero leakage) so that it is feasible. When
no output is allowed from every row, that start does not exist and the dense
program (:func:`perfect_privacy_lp`, HiGHS on all allowed pairs, about a second
at K = 256 and 40 s at K = 1024) is solved instead; it is also the reference the
tests and ``benchmarks/bench_perfect.py`` check the column generation against.
"""
from __future__ import annotations

from collections.abc import Callable

import highspy
import numpy as np
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

from ..._errors import SolverError
from ..._information import expected_distortion, leakage_bits
from .._problem import check_instance
from .._progress import log_fraction
from .._result import SolveResult
from ._interior import interior_point, seed_pairs
from ._transport import solve_binary

_CHUNK_ELEMENTS = 1 << 17     # elements of one row chunk of a pricing pass (1 MiB of float64)
_MAX_ROUNDS = 200
_PRICED_PER_ROW = 8           # pairs of negative reduced cost a row may add to the master per round
                              # (race private, five classes: K = 512 13.3 against 17.9 CPU-s with one,
                              # K = 1024 139 against 275; benchmarks/README.md)
_IDLE_SOLVES = 2              # solves a column may sit at zero, priced out, before it is dropped
                              # (one: race private, K = 512 not certified in 200 rounds; K = 1024:
                              # 54 CPU-s with two, 57 with three, 155 keeping every column)
_NEAR_TIE = 1e-6              # a column priced out by less than this share of its cost is kept
                              # (race private, K = 1024: 52 against 64 CPU-s dropping all)
_SMOOTHING = 0.9              # weight of the best-bound duals in the stabilised pricing point
_SEEDED_SHARE = 0.9           # progress at the end of the interior point, where one seeds the master
                              # (its steps are nine tenths of Delta0's time: occupation, K = 1,024,
                              # about 43 s of steps against 6 s of master)
#: Private classes (with mass) from which the first master is seeded by privmap's primal-dual
#: interior point, with finite distortions (``_interior``; module docstring).
INTERIOR_SEED_CLASSES = 3
#: Most entries K x K_out x classes of a program the interior point seeds (its arrays: 128 MiB each).
INTERIOR_SEED_ENTRIES = 1 << 24
#: Most pairs K x K_out of a program with fewer than five classes that the interior point seeds: its
#: step costs O(K^2 K_out |A|) where the unseeded column generation's rounds grow gently with K at few
#: classes (three classes, CPU-s seeded against unseeded: K = 1024 7.5 / 6.6, K = 2048 50.7 / 32.7;
#: five classes, K = 1024: 11.7 / 120).
FEW_CLASSES_SEED_PAIRS = 1 << 20
#: Private classes (with mass) from which a program the interior point does not take (forbidden
#: pairs, or above its size) is seeded by Clarabel's interior point (module docstring).
CONIC_SEED_CLASSES = 13
#: Most constraint entries (allowed pairs x classes) of the program Clarabel is given for the seed.
CONIC_SEED_ENTRIES = 4_000_000
_CONIC_SEED_SHARE = 1e-7      # q(c, j) of Clarabel's point from which its pair seeds the master
                              # (1e-6: 2 to 6 times the rounds at K = 256 and 512; 1e-9: 6 times
                              # the columns, 5 times the time at K = 256)
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


def perfect_privacy_table(p_ac, distortion, *, rel_tol: float = 1e-9, info: dict | None = None,
                          progress: Callable[[float], None] | None = None) -> tuple[np.ndarray, float]:
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
        When given, filled with ``rounds``, ``columns`` (in the last master), ``lower_bound``,
        ``upper_bound``, ``method`` (``"column-generation"`` or ``"dense-lp"``) and, for
        column generation, ``formulation`` (``"transport"``, ``"hub"`` or ``"transport, then
        hub"``; see the module docstring) and, for the hub program, ``dropped`` (idle columns
        deleted from the master, all rounds) and, where an interior point seeded the first master,
        ``seed`` (``"barrier"`` or ``"clarabel"``) and ``seeded`` (its pairs; 0 when it failed).
    progress : callable(float) or None, keyword-only
        Called with the fraction done, never decreasing, ending at 1: the interior point's
        (``_interior``) to :data:`_SEEDED_SHARE`, then the rounds' gap between the master's cost
        and the best bound, the share of its decades closed toward ``rel_tol``.

    Returns
    -------
    (table, distortion) : ndarray of shape (K, K_out) with rows on the simplex, float
        ``distortion`` is the primal (upper) bound; the table's E d equals it.

    Raises
    ------
    SolverError
        As :func:`perfect_privacy_distortion`, or the bounds did not meet in 200 rounds.
    """
    done = 0.0

    def tell(fraction: float) -> None:      # never decreasing, however the gaps move
        nonlocal done
        done = max(done, fraction)
        if progress is not None:
            progress(done)

    with threadpool_limits(limits=1):                # see fast/_solver.py's _BLAS_THREADS
        answer = _column_generation(p_ac, distortion, rel_tol, {} if info is None else info, tell)
    tell(1.0)
    return answer


def _column_generation(p_ac, distortion, rel_tol, info, tell):
    """:func:`perfect_privacy_table`'s work, with BLAS held to one thread by the caller.

    ``tell`` takes its progress.
    """
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
    cheapest_d, cheapest = _row_minima(D, D)
    start_rows = [np.arange(K), np.arange(K)]
    start_cols = [cheapest, np.full(K, j_const)]
    lower, v_best = float(p_c @ cheapest_d), np.zeros((delta_a.shape[1], K_out))   # L(0)
    transport_rounds = 0
    if (delta_a.shape[1] == 1 and (delta_a > 0).any() and (delta_a < 0).any()
            and np.isfinite(D).all()):
        table, v, transport_rounds, pairs = solve_binary(p_c, delta_a[:, 0], D, j_const, _new_highs)
        value = float(p_c @ np.einsum("cj,cj->c", table, D))
        bound = float(_row_minima(D, _reduced(p_c, delta_a, D, v[None, :]))[0].sum())
        if bound > lower:
            lower, v_best = bound, v[None, :]
        if value - lower <= rel_tol * max(abs(value), 1e-300):
            info.update(method="column-generation", formulation="transport",
                        rounds=transport_rounds, columns=pairs,
                        lower_bound=float(lower), upper_bound=value)
            return table, value
        used_rows, used_cols = np.nonzero(table)     # not certified: the hub program goes on
        start_rows.append(used_rows)                 # from the transport's table
        start_cols.append(used_cols)
    classes = delta_a.shape[1] + 1
    rounds_from = 0.0                                   # the progress at which the rounds start
    if (classes >= INTERIOR_SEED_CLASSES and np.isfinite(D).all()
            and D.size * classes <= INTERIOR_SEED_ENTRIES
            and (classes >= 5 or D.size <= FEW_CLASSES_SEED_PAIRS)):
        point = interior_point(p_c, delta_a, D, rel_tol=rel_tol, bound=lambda v: float(
            _row_minima(D, _reduced(p_c, delta_a, D, v))[0].sum()),
            progress=lambda fraction: tell(_SEEDED_SHARE * fraction))
        rounds_from = _SEEDED_SHARE
        seeded = 0
        if point is not None:
            seed_rows, seed_cols = seed_pairs(point, p_c, delta_a, D)
            start_rows.append(seed_rows)
            start_cols.append(seed_cols)
            seeded = int(seed_rows.size)
            if point.lower > lower:
                lower, v_best = point.lower, point.duals
        info.update(seeded=seeded, seed="primal-dual")
    elif classes >= CONIC_SEED_CLASSES and np.isfinite(D).sum() * classes <= CONIC_SEED_ENTRIES:
        seed_rows, seed_cols = _interior_support(p_c, delta_a, D)
        start_rows.append(seed_rows)
        start_cols.append(seed_cols)
        info.update(seeded=int(seed_rows.size), seed="clarabel")
    rows, cols = _merge(np.concatenate(start_rows), np.concatenate(start_cols), D)
    master = _Master(p_c, delta_a, D)
    previous, dropped, rounds, first_gap = np.inf, 0, 0, None
    while rounds < _MAX_ROUNDS:                         # the rounds are counted for the info below
        rounds += 1
        master.add(rows, cols)
        x, value, u, v = master.solve()
        v_smooth = _SMOOTHING * v_best + (1 - _SMOOTHING) * v
        rows, cols, bound, v_bound = _price(p_c, delta_a, D, u, v, v_smooth)
        if bound > lower:
            lower, v_best = bound, v_bound
        rows, cols = master.new_pairs(rows, cols)
        goal = rel_tol * max(abs(value), 1e-300)
        first_gap = value - lower if first_gap is None else first_gap
        tell(rounds_from + (1.0 - rounds_from) * log_fraction(first_gap, value - lower, goal))
        if value - lower <= goal or rows.size == 0:
            break
        if value < previous - 1e-12 * abs(value):       # strictly lower: dropping cannot cycle
            dropped += master.drop_idle()
        previous = value
    else:
        raise SolverError(f"perfect-privacy column generation did not certify in {_MAX_ROUNDS} "
                          f"rounds (bounds {lower:.12g} and {value:.12g})")
    if value - lower > rel_tol * max(abs(value), 1e-300):
        raise SolverError(f"perfect-privacy column generation stalled with bounds {lower:.12g} and "
                          f"{value:.12g} (HiGHS tolerances)")
    table = np.zeros(D.shape)
    np.add.at(table, (master.rows, master.cols), np.maximum(x, 0.0))
    table /= table.sum(axis=1, keepdims=True)
    info.update(method="column-generation", formulation="hub" if transport_rounds == 0 else
                "transport, then hub", rounds=transport_rounds + rounds,
                columns=int(master.rows.size), dropped=dropped, lower_bound=float(lower),
                upper_bound=float(value))
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
    from scipy.optimize import linprog
    A_eq = _columns(delta_a, rows, cols, *D.shape)
    b_eq = np.zeros(A_eq.shape[0])
    b_eq[:D.shape[0]] = 1.0
    res = linprog(p_c[rows] * D[rows, cols], A_eq=A_eq, b_eq=b_eq, bounds=(0, None), method="highs")
    if res.status != 0:
        raise SolverError(f"perfect-privacy linear program failed: {res.message}")
    return res.x, float(res.fun)


def _interior_support(p_c, delta_a, D) -> tuple[np.ndarray, np.ndarray]:
    """The pairs (rows, cols) to which Clarabel's interior-point answer gives q(c, j) >= :data:`_CONIC_SEED_SHARE`.

    Its answer to the whole program; none when Clarabel does not solve it (module docstring).
    """
    import clarabel
    rows, cols = np.nonzero(np.isfinite(D))
    A = _columns(delta_a, rows, cols, *D.shape)
    b = np.zeros(A.shape[0])
    b[:D.shape[0]] = 1.0
    cost = p_c[rows] * D[rows, cols]
    n = rows.size
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    try:
        answer = clarabel.DefaultSolver(sp.csc_matrix((n, n)), cost / max(float(cost.max()), 1e-300),
                                        sp.vstack([A, -sp.identity(n)], format="csc"),
                                        np.concatenate([b, np.zeros(n)]),
                                        [clarabel.ZeroConeT(A.shape[0]), clarabel.NonnegativeConeT(n)],
                                        settings).solve()
    except Exception:                             # Clarabel's errors: the master starts without the seed
        return rows[:0], cols[:0]
    if str(answer.status) not in ("Solved", "AlmostSolved"):
        return rows[:0], cols[:0]
    keep = np.asarray(answer.x) >= _CONIC_SEED_SHARE
    return rows[keep], cols[keep]


def _new_highs():
    """A ``highspy`` model with the options ``_HIGHS``, silent from its creation.

    ``highspy.Highs()`` enables its callbacks in its constructor, which makes HiGHS print its
    banner to stdout before any option can be set (nothing may reach stdout: ``build --json``
    prints only JSON); the bare binding ``highspy._Highs`` is given ``output_flag`` first.
    """
    highs = highspy._Highs()
    highs.setOptionValue("output_flag", False)
    for name, value in _HIGHS.items():
        highs.setOptionValue(name, value)
    return highs


class _Master:
    """The restricted program, one HiGHS model kept across rounds.

    Pairs are appended as columns (:meth:`add`) and each :meth:`solve` restarts the
    simplex from the previous optimal basis: the new columns enter at zero, so the old
    vertex stays primal feasible and a round costs the pivots that bring them in, not
    a solve from scratch. :meth:`drop_idle` deletes the columns the last solves left
    priced out (module docstring). ``rows`` and ``cols`` hold the pairs in column order.
    """

    def __init__(self, p_c, delta_a, D):
        self._p_c, self._delta_a, self._D = p_c, delta_a, D
        K, K_out = D.shape
        self._m = delta_a.shape[1]
        n_rows = K + self._m * K_out
        self._highs = _new_highs()
        b = np.zeros(n_rows)
        b[:K] = 1.0
        self._highs.addRows(n_rows, b, b, 0, np.zeros(n_rows + 1, np.int32),
                            np.empty(0, np.int32), np.empty(0))
        self.rows = np.empty(0, np.int64)
        self.cols = np.empty(0, np.int64)
        self._keys = np.empty(0, np.int64)           # sorted c K_out + j of the pairs present
        self._solves = 0
        self._added = np.empty(0, np.int64)          # self._solves when each column came in
        self._value = self._reduced = np.empty(0)    # the last solve's column values, reduced costs

    def new_pairs(self, rows, cols):
        """The pairs among (rows, cols) not yet in the master.

        A pair whose reduced cost is negative only within HiGHS's tolerance can be priced again.
        """
        keys = rows.astype(np.int64) * self._D.shape[1] + cols
        fresh = ~np.isin(keys, self._keys, assume_unique=False)
        return rows[fresh], cols[fresh]

    def add(self, rows, cols):
        """Append the pairs (rows, cols) as columns of cost p(c) d(c, j), bounds [0, inf)."""
        K, K_out = self._D.shape
        A = _columns(self._delta_a, rows, cols, K, K_out)
        n = rows.size
        before = self._highs.getNumCol()
        status = self._highs.addCols(n, self._p_c[rows] * self._D[rows, cols], np.zeros(n),
                                     np.full(n, highspy.kHighsInf), A.nnz,
                                     A.indptr.astype(np.int32), A.indices.astype(np.int32), A.data)
        # kWarning: HiGHS dropped coefficients below its small_matrix_value (a posterior difference
        # p(c|a) - p(c) of 1e-17 is rounding noise); the columns are in, and the dual bound that
        # certifies Delta0 is evaluated on the exact data, not on HiGHS's copy.
        if status == highspy.HighsStatus.kError or self._highs.getNumCol() != before + n:
            raise SolverError(f"perfect-privacy master: HiGHS refused {n} columns ({status})")
        self.rows = np.concatenate([self.rows, rows])
        self.cols = np.concatenate([self.cols, cols])
        self._keys = np.union1d(self._keys, rows.astype(np.int64) * K_out + cols)
        self._added = np.concatenate([self._added, np.full(n, self._solves)])

    def drop_idle(self):
        """Delete the columns that sat idle; how many were deleted.

        The columns that sat at zero in the last solve, priced out by more than :data:`_NEAR_TIE` of
        their cost (and HiGHS's dual tolerance), and came in at least :data:`_IDLE_SOLVES` solves ago.
        They are nonbasic, so the basis, the vertex and its value stay. Returns how many were deleted.
        """
        n = self._value.size                          # the columns of the last solve
        cost = self._p_c[self.rows[:n]] * self._D[self.rows[:n], self.cols[:n]]
        margin = np.maximum(_NEAR_TIE * cost, _HIGHS["dual_feasibility_tolerance"])
        idle = np.flatnonzero((self._value <= 0.0) & (self._reduced > margin)
                              & (self._solves - self._added[:n] >= _IDLE_SOLVES))
        if idle.size == 0:
            return 0
        before = self._highs.getNumCol()
        status = self._highs.deleteCols(idle.size, idle.astype(np.int32))
        if status == highspy.HighsStatus.kError or self._highs.getNumCol() != before - idle.size:
            raise SolverError(f"perfect-privacy master: HiGHS could not delete {idle.size} columns ({status})")
        keep = np.ones(self.rows.size, dtype=bool)
        keep[idle] = False
        self.rows, self.cols, self._added = self.rows[keep], self.cols[keep], self._added[keep]
        self._keys = np.sort(self.rows.astype(np.int64) * self._D.shape[1] + self.cols)
        self._value = self._reduced = np.empty(0)
        return int(idle.size)

    def solve(self):
        """Optimise from the current basis; returns x (n,), value, duals u (K,), v (m, K_out).

        Raises
        ------
        SolverError
            HiGHS did not report an optimum, also when re-solved from scratch.
        """
        K, K_out = self._D.shape
        self._highs.run()
        status = self._highs.getModelStatus()
        if status != highspy.HighsModelStatus.kOptimal:
            # A warm start can end in a spurious verdict (the master is always feasible: it
            # holds the constant output): solve once more from scratch before giving up.
            self._highs.clearSolver()
            self._highs.run()
            status = self._highs.getModelStatus()
        if status != highspy.HighsModelStatus.kOptimal:
            raise SolverError("perfect-privacy linear program failed: HiGHS "
                              f"{self._highs.modelStatusToString(status)}")
        # The next rounds only add columns, entering at zero: this basis stays primal feasible, and
        # primal simplex goes on from it where HiGHS's default strategy redid about a whole solve
        # each round (as in the binary transport, _transport).
        self._highs.setOptionValue("simplex_strategy", 4)
        solution = self._highs.getSolution()
        duals = np.asarray(solution.row_dual)
        self._solves += 1
        self._value, self._reduced = np.asarray(solution.col_value), np.asarray(solution.col_dual)
        return (self._value, float(self._highs.getObjectiveValue()),
                duals[:K], duals[K:].reshape(self._m, K_out))


def _price(p_c, delta_a, D, u, v, v_smooth):
    """Price all pairs at the master's duals (u, v) and at the smoothed duals ``v_smooth``.

    Parameters
    ----------
    p_c : ndarray, shape (K,)
    delta_a : ndarray, shape (K, m)
        p(c|a) - p(c|a0) for the classes a != a0.
    D : ndarray, shape (K, K_out)
    u : ndarray, shape (K,)
        The master's row duals.
    v, v_smooth : ndarray, shape (m, K_out)
        The master's balance duals, and the stabilised pricing point.

    Returns
    -------
    (rows, cols, bound, v_bound) : int arrays of the pairs to add, the better of the two
        lower bounds L(v) and L(v_smooth), and the duals that gave it
    """
    master_least, master_args = _row_smallest(D, _reduced(p_c, delta_a, D, v), _PRICED_PER_ROW)
    smooth_min, smooth_arg = _row_minima(D, _reduced(p_c, delta_a, D, v_smooth))
    rows = np.arange(D.shape[0])
    slack = 1e-12 * np.abs(u)
    at_master = master_least < (u - slack)[:, None]
    with np.errstate(invalid="ignore"):
        smooth_rbar = (p_c * D[rows, smooth_arg] - u
                       - np.einsum("ca,ac->c", delta_a, v[:, smooth_arg]))
    at_smooth = smooth_rbar < -slack
    rows, cols = _merge(np.concatenate([np.nonzero(at_master)[0], rows[at_smooth]]),
                        np.concatenate([master_args[at_master], smooth_arg[at_smooth]]), D)
    bound_master, bound_smooth = float(master_least.min(axis=1).sum()), float(smooth_min.sum())
    if bound_smooth > bound_master:
        return rows, cols, bound_smooth, v_smooth
    return rows, cols, bound_master, v


def _reduced(p_c, delta_a, D, v):
    """The function of a row range [lo, hi) giving p(c) d(c, j) - sum_a v_aj delta_a(c) there.

    Its value has shape (hi - lo, K_out) and lives in a buffer reused by the next call;
    forbidden pairs stay ``inf``, also on massless rows (where 0 x inf would be nan).
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

    return reduced


def _row_smallest(D, values, k):
    """Each row's k least values (in no order) and the columns where they are, shapes (K, min(k, K_out)).

    ``values`` is D itself or a function of a row range giving that chunk's values
    (shape (hi - lo, K_out)); it is evaluated in row chunks of D, which keeps the
    temporaries small (no K x K_out array).

    More than one pair a row per round: a vertex of the program has up to K + (|A| - 1) K_out
    pairs, five a row with five classes, which one pair a row per round brings in over many
    rounds, each re-optimising about 1,500 simplex pivots (UCI Adult, race private, K = 512:
    84 rounds, against 21 with eight pairs).
    """
    K, K_out = D.shape
    k = min(k, K_out)
    step = max(1, _CHUNK_ELEMENTS // K_out)
    least, columns = np.empty((K, k)), np.empty((K, k), np.int64)
    for lo in range(0, K, step):
        hi = min(K, lo + step)
        chunk = values(lo, hi) if callable(values) else values[lo:hi]
        if k == 1:
            arg = chunk.argmin(axis=1)[:, None]       # argmin then gather: faster than min
        elif k < K_out:
            arg = np.argpartition(chunk, k - 1, axis=1)[:, :k]
        else:
            arg = np.broadcast_to(np.arange(K_out), (hi - lo, K_out))
        least[lo:hi] = np.take_along_axis(chunk, arg, axis=1)
        columns[lo:hi] = arg
    return least, columns


def _row_minima(D, values):
    """Each row's least value and the column where it is, shapes (K,).

    ``values`` as :func:`_row_smallest` reads it.
    """
    least, columns = _row_smallest(D, values, 1)
    return least[:, 0], columns[:, 0]


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
