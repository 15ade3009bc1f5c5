"""Program (19) with a per-output leakage limit.

min I(A; C_hat) s.t. E d <= delta and, for every output c_hat of positive mass and class a,
2^-eps p(a) <= p(a | c_hat) <= 2^eps p(a).

Why
---
I(A; C_hat) is an average over outputs: a rare output can tell an attacker far more about one
user than the average suggests. Seed 002's information privacy bounds every output instead:
|log2 p(a | c_hat) - log2 p(a)| <= eps (bits) on the training prior. Multiplying through by
p(c_hat) = sum_c p(c) q(c, c_hat) makes each bound linear in the table q,

    sum_c p(a, c) q(c, j) <= 2^eps p(a) sum_c p(c) q(c, j)      (and >= 2^-eps ...),

which holds trivially for an output of zero mass, so the program stays convex: program (19) plus
2 |A| K_out linear inequalities.

How
---
- :func:`least_distortion` is the linear program min E d over tables meeting the limit (HiGHS);
  a limit is feasible at budget delta exactly when its value is <= delta, and
  :func:`smallest_feasible_epsilon` bisects it to name the least feasible limit in an error.
- :func:`solve_output_limited` solves the program with Clarabel on the model of
  :mod:`privmap.offline.solvers.reference` (the same conic model, the same stall handling) plus the linear limits,
  restricted to a working set of pairs that grows by pricing (:mod:`._columns`);
  :func:`dense_limited`, the model over every pair, is the reference it is tested against.
  privmap's fast solver has no place for the limits (its dual has one multiplier, the budget's).
- :func:`solve_for_shipping` makes the limit hold on the *shipped* integer table: when the fast
  solver's unconstrained optimum ships within the limit, that is the answer; otherwise it solves at a
  target a little inside the limit, rounds with :func:`privmap.offline.solvers.compress` exactly as the build
  will, checks the limit on the integer table, and tightens the target (and the budget) until it
  holds or refuses with :class:`SolverError`.
"""
from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from ..._errors import InfeasibleError, SolverError
from ..._information import expected_distortion, leakage_bits, max_output_leakage_bits, output_posterior_ratios
from .._compress import compress
from .._problem import check_instance
from .._result import SolveResult
from ._columns import least_columns, solve_columns

#: Entries of a solved table below this are dropped (interior-point noise) before rounding.
_NOISE = 1e-9
#: :func:`solve_for_shipping` first aims this far inside the limit (relative): Clarabel's answers meet
#: their constraints to about 1e-6 and rounding to 2^-16 moves posteriors by about 1e-5 relative; on
#: SSI (6 columns, K = 64) a first aim 1e-6 inside shipped 3e-4 % over and the tighter re-solve
#: stopped short (AlmostSolved at 2e-6).
_INSIDE = 1e-3
#: Relative duality gap an AlmostSolved Clarabel answer may keep here (the reference solver's: 1e-6):
#: near the least budget the limit allows Clarabel stalls at 1e-6 to 3e-6 (SSI, 6 columns, K = 512);
#: the gap costs optimality only (at most this share of the leakage), and the limit and the budget
#: are checked again on the shipped table.
_GAP_TOL = 1e-5
#: After a stall of the limited solve (SolverError: Clarabel's InsufficientProgress on both of its
#: attempts), the next solve aims this much further inside the limit (relative): a stall is numerical,
#: and a nearby aim is another conic instance (SSI, 6 columns, K = 512, at OUE's 0.0756-bit limit:
#: a stall at the limit less 0.1 %, Solved at 72 iterations 1 % inside it).
_STALL_INSIDE = 1e-2
#: Attempts of :func:`solve_for_shipping` before it refuses.
_SHIP_ATTEMPTS = 6
#: A rounded table over the limit by more than this (relative) has outputs whose balance rested on
#: entries below one unit (they round to nothing): those outputs are closed and the program re-solved;
#: closer to the limit, the next solve aims further inside it.
_CLOSE_ABOVE = 1e-2
#: When outputs are closed, so is every output none of whose entries reaches this many units 2^-bits:
#: its balance is as fragile (its entries below one unit round to nothing, the rest move by up to half
#: a unit), and an interior-point answer spreads such slivers over many outputs, so closing only those
#: that broke the limit let the next solve break it on others (SSI, 6 columns, K = 512, at a 0.061-bit
#: limit: 3, 38, 64, 40, 6, 1 outputs closed in turn, then a refusal; closing slivers too, it shipped
#: at the third solve).
SLIVER_UNITS = 64
#: Bisection of :func:`smallest_feasible_epsilon`: bracket (bits) and relative precision.
_EPS_MAX = 64.0
_EPS_RTOL = 1e-3


def _limit_coefficients(p_ac: np.ndarray, eps_bits: float) -> np.ndarray:
    """The limit rows' coefficient of q(c, j), the same for every output j, shape (2 |A|, K).

    The upper row of each class, then the lower row of each; each row reads ``<= 0``.
    """
    p_a, p_c = p_ac.sum(axis=1), p_ac.sum(axis=0)
    scale = p_ac.shape[1]                        # coefficients of order 1 instead of 1/K
    # upper: 2^-eps p(a, c) - p(a) p(c); lower: 2^-eps p(a) p(c) - p(a, c): coefficients stay bounded
    upper = 2.0 ** -eps_bits * p_ac - p_a[:, None] * p_c[None, :]
    lower = 2.0 ** -eps_bits * p_a[:, None] * p_c[None, :] - p_ac
    return scale * np.vstack([upper, lower])


def _limit_rows(p_ac: np.ndarray, eps_bits: float, K_out: int) -> sp.csr_matrix:
    """The 2 |A| K_out limit inequalities as a sparse matrix over q flattened row-major (c, j).

    Row (a, j) upper, then row (a, j) lower; each reads ``<= 0``.
    """
    eye = sp.identity(K_out, format="csr")
    return sp.vstack([sp.kron(sp.csr_matrix(g[None, :]), eye, format="csr")
                      for g in _limit_coefficients(p_ac, eps_bits)], format="csr")


def least_distortion(p_ac, distortion, eps_bits: float) -> float:
    """The least E d(C, C_hat) of any table whose outputs all meet the per-output limit ``eps_bits``.

    Parameters
    ----------
    p_ac : array_like, shape (n_private, K)
    distortion : array_like, shape (K, K_out); ``inf`` forbids a transition.
    eps_bits : float >= 0

    Returns
    -------
    float
        The linear program's optimum (HiGHS); ``inf`` when no table meets the limit (only
        possible with forbidden transitions).

    Raises
    ------
    ValueError
        Malformed instance or negative ``eps_bits``.
    SolverError
        HiGHS stopped for another reason than optimality or infeasibility.
    """
    p_ac, D, _ = check_instance(p_ac, distortion, None)
    if not (math.isfinite(eps_bits) and eps_bits >= 0):
        raise ValueError(f"eps_bits must be finite and >= 0, got {eps_bits}")
    return _least_table(p_ac, D, eps_bits)[0]


def _least_table(p_ac: np.ndarray, D: np.ndarray, eps_bits: float) -> tuple[float, np.ndarray | None]:
    """:func:`least_distortion` on a checked instance, with its optimal table (K, K_out).

    None when the limit is infeasible. By column generation (:func:`._columns.least_columns`), or
    on every pair (:func:`dense_least_table`) when no output is allowed from every row.
    """
    value, table = least_columns(p_ac, D, eps_bits, coefficients=_limit_coefficients(p_ac, eps_bits))
    return (value, table) if table is not None else dense_least_table(p_ac, D, eps_bits)


def dense_least_table(p_ac: np.ndarray, D: np.ndarray, eps_bits: float) -> tuple[float, np.ndarray | None]:
    """:func:`_least_table` as one linear program over all K x K_out pairs (HiGHS).

    The reference the column generation is tested against, and the path for instances with
    forbidden pairs everywhere.
    """
    from scipy.optimize import linprog
    K, K_out = D.shape
    allowed = np.isfinite(D)
    cost = (p_ac.sum(axis=0)[:, None] * np.where(allowed, D, 0.0)).ravel()
    rows_sum = sp.kron(sp.identity(K, format="csr"), sp.csr_matrix(np.ones((1, K_out))), format="csr")
    bounds = np.column_stack([np.zeros(K * K_out), np.where(allowed.ravel(), 1.0, 0.0)])
    A_ub = _limit_rows(p_ac, eps_bits, K_out)
    result = linprog(cost, A_ub=A_ub, b_ub=np.zeros(A_ub.shape[0]), A_eq=rows_sum, b_eq=np.ones(K),
                     bounds=bounds, method="highs")
    if result.status == 2:
        return math.inf, None
    if result.status != 0:
        raise SolverError(f"HiGHS did not solve the least-distortion program at eps = {eps_bits:g} bits: "
                          f"{result.message}")
    return float(result.fun), result.x.reshape(K, K_out)


def smallest_feasible_epsilon(p_ac, distortion, delta: float) -> float:
    """The least per-output limit (bits) that some table meets within the budget ``delta``.

    To a relative 1e-3, rounded up: bisection of :func:`least_distortion`, which does not
    increase with the limit. ``inf`` when even a 64-bit limit needs more than ``delta``.
    """
    tolerance = 1e-9 * max(1.0, abs(delta))
    if least_distortion(p_ac, distortion, 0.0) <= delta + tolerance:
        return 0.0
    if least_distortion(p_ac, distortion, _EPS_MAX) > delta + tolerance:
        return math.inf
    lo, hi = 0.0, _EPS_MAX
    while hi - lo > _EPS_RTOL * hi:
        mid = 0.5 * (lo + hi) if lo > 0 or hi < 1e-3 else math.sqrt(max(lo, 1e-6) * hi)
        if least_distortion(p_ac, distortion, mid) <= delta + tolerance:
            hi = mid
        else:
            lo = mid
    return hi


def _check_limit(eps_bits: float) -> None:
    """ValueError unless the per-output limit is a finite number of bits >= 0."""
    if not (math.isfinite(eps_bits) and eps_bits >= 0):
        raise ValueError(f"the per-output limit must be finite and >= 0 bits, got {eps_bits}")


def _check_feasible(p_ac: np.ndarray, D: np.ndarray, delta: float, eps_bits: float) -> None:
    """Raise :class:`InfeasibleError`, naming the smallest feasible limit, when no table meets ``eps_bits``.

    Within ``delta``; ValueError for a limit that is not a finite number >= 0.
    """
    _check_limit(eps_bits)
    _refuse_over(p_ac, D, delta, eps_bits, least_distortion(p_ac, D, eps_bits))


def _over(least: float, delta: float) -> bool:
    """Whether a least distortion ``least`` exceeds the budget ``delta`` beyond the LP's accuracy."""
    return least > delta * (1 + 1e-9) + 1e-12


def _refuse_over(p_ac: np.ndarray, D: np.ndarray, delta: float, eps_bits: float, least: float) -> None:
    """Raise :class:`InfeasibleError`, naming the smallest feasible limit, when ``least`` exceeds ``delta``.

    ``least`` is the least distortion under ``eps_bits``.
    """
    if _over(least, delta):
        floor = smallest_feasible_epsilon(p_ac, D, delta)
        named = (f"the smallest feasible limit at this budget is {floor:.4g} bits" if math.isfinite(floor)
                 else "no limit up to 64 bits is feasible at this budget")
        raise InfeasibleError(f"max output leakage {eps_bits:g} bits is infeasible at delta = {delta:.6g}: "
                              f"meeting it needs distortion {least:.6g}; {named}")


def solve_output_limited(p_ac, distortion, delta: float, eps_bits: float, *,
                         time_limit_s: float | None = None, check: bool = True,
                         start: np.ndarray | None = None) -> SolveResult:
    """The table of least I(A; C_hat) s.t. E d <= delta and the per-output limit ``eps_bits`` (bits).

    By Clarabel on a growing working set of pairs (:mod:`._columns`).

    Parameters
    ----------
    p_ac : array_like, shape (n_private, K)
    distortion : array_like, shape (K, K_out); ``inf`` forbids a transition.
    delta : float
        Budget on E d(C, C_hat).
    eps_bits : float >= 0
        Limit on |log2 p(a | c_hat) - log2 p(a)| for every output of positive mass.
    time_limit_s : float or None, keyword-only
        Seconds Clarabel may iterate (as :func:`privmap.offline.solvers.solve_cvxpy`).
    check : bool, keyword-only
        Decide feasibility first with :func:`least_distortion` (an infeasible instance then raises
        InfeasibleError; unchecked, Clarabel's own stop raises SolverError).
    start : ndarray, shape (K, K_out), keyword-only
        A table whose support seeds the working set; None: the unconstrained optimum at ``delta``
        (:func:`_unconstrained`).

    Returns
    -------
    SolveResult
        ``table`` (K, K_out) with entries below 1e-9 dropped and rows renormalised; leakage and
        distortion recomputed from it; ``gap_bits`` inf (no certificate); ``info`` has
        ``max_output_leakage_bits`` of the table, the ``limit_bits`` it was solved at and the
        column generation's ``rounds``.

    Raises
    ------
    ValueError
        Malformed instance or a negative limit.
    InfeasibleError
        No table meets the limit within ``delta`` (checked first with ``check``, else found when
        the working set holds no feasible table); the message names the smallest feasible limit.
    SolverError
        Clarabel did not reach an optimum, on the working set and again on it widened by the
        least-distortion table's pairs; or the working set still grew after 30 rounds.
    """
    from ..reference import clarabel, forbidden_pairs, summary
    p_ac, D, delta = check_instance(p_ac, distortion, delta)
    if check:
        _check_feasible(p_ac, D, delta, eps_bits)
    else:
        _check_limit(eps_bits)
    forbidden = forbidden_pairs(p_ac, D, delta)
    if start is None:
        start = _unconstrained(p_ac, D, delta).table

    def columns(seed):
        return solve_columns(p_ac, D, delta, eps_bits, start=seed, forbidden=forbidden,
                             clarabel=lambda problem: clarabel(problem, time_limit_s, gap_tol=_GAP_TOL))
    try:
        table, raw, attempt, rounds = columns(start)
    except SolverError:
        # the working set may hold no table within the limit and the budget (a start far from
        # the limit); the least-distortion LP's table is one when any is: widen by its pairs once
        least, feasible = _least_table(p_ac, D, eps_bits)
        _refuse_over(p_ac, D, delta, eps_bits, least)
        table, raw, attempt, rounds = columns(start + feasible)
    result = _limited_result(p_ac, D, table, forbidden, raw, attempt, eps_bits, summary)
    result.info["rounds"] = rounds
    return result


def dense_limited(p_ac, distortion, delta: float, eps_bits: float) -> SolveResult:
    """The reference form of :func:`solve_output_limited`: the conic model on the dense (K, K_out) table variable.

    Every pair at once (seconds at K = 64, minutes from K = 256). The column generation of
    :mod:`._columns` is checked against it.
    """
    import cvxpy as cp

    from ..reference import clarabel, conic_model, forbidden_pairs, summary
    p_ac, D, delta = check_instance(p_ac, distortion, delta)
    K = p_ac.shape[1]
    p_c = p_ac.sum(axis=0)
    forbidden = forbidden_pairs(p_ac, D, delta)
    problem, Q, _ = conic_model(p_ac, D, delta, forbidden)
    p_a = p_ac.sum(axis=1)
    upper = K * (2.0 ** -eps_bits * p_ac - p_a[:, None] * p_c[None, :])
    lower = K * (2.0 ** -eps_bits * p_a[:, None] * p_c[None, :] - p_ac)
    limited = cp.Problem(problem.objective, problem.constraints + [upper @ Q <= 0, lower @ Q <= 0])
    raw, attempt = clarabel(limited, None)
    return _limited_result(p_ac, D, Q.value, forbidden, raw, attempt, eps_bits, summary)


def _unconstrained(p_ac: np.ndarray, D: np.ndarray, delta: float) -> SolveResult:
    """Program (19) without the limit.

    The fast solver's certified answer, or the perfect-privacy table where ``delta`` reaches
    Delta0.
    """
    from ..fast import solve_fast
    from ..perfect import perfect_privacy_solution, perfect_privacy_table
    perfect, d_perfect = perfect_privacy_table(p_ac, D)
    if delta >= d_perfect:
        return perfect_privacy_solution(p_ac, D, perfect)
    return solve_fast(p_ac, D, delta)


def _limited_result(p_ac, D, values, forbidden, raw, attempt, eps_bits, summary) -> SolveResult:
    """The SolveResult of an output-limited solve from Clarabel's table ``values`` (K, K_out)."""
    p_c = p_ac.sum(axis=0)
    table = np.clip(values, 0.0, None)
    table[forbidden | (table < _NOISE)] = 0.0
    table /= table.sum(axis=1, keepdims=True)
    return SolveResult(
        table=table, leakage_bits=leakage_bits(p_ac, table), distortion=expected_distortion(p_c, table, D),
        multiplier=0.0, gap_bits=math.inf, status="optimal", solver="cvxpy-clarabel",
        message=f"Clarabel reported {raw.status} ({summary(raw)}) with the per-output limit "
                f"{eps_bits:g} bits; no certificate",
        info={"clarabel_status": str(raw.status), "attempt": attempt, "iterations": int(raw.iterations),
              "limit_bits": float(eps_bits), "max_output_leakage_bits": max_output_leakage_bits(p_ac, table)})


def solve_for_shipping(p_ac, distortion, delta: float, eps_bits: float, *, bits: int,
                       time_limit_s: float | None = None) -> SolveResult:
    """:func:`solve_output_limited` whose table still meets ``eps_bits`` once rounded as a bundle ships it.

    Rounded to the integer table a bundle ships (:func:`privmap.offline.solvers.compress` at
    ``bits``, budget ``delta``).

    Entries below one unit 2^-bits are dropped before rounding (rows renormalised): an output
    carrying only such entries would otherwise come out of the rounding with a unit or two from
    one row, its posterior that row's. The unconstrained optimum (:func:`_unconstrained`, the fast
    solver) comes first: when its shipped table meets the limit it is also the limited program's
    optimum (it is optimal over a larger set), and no limited solve runs (``ship_attempts`` 0).
    Otherwise the first limited solve aims at the limit less 0.1 % (``_INSIDE``), or at the limit
    itself when no table within the budget meets that aim.
    When the rounded table breaks the limit, the next solve

    - aims at a budget tighter by twice what rounding overshot it, when it did (the repair of
      :func:`privmap.offline.solvers.compress` then moved units to each row's cheapest output, which can open
      an output fed by one row);
    - closes the outputs that break the limit by more than 1 % (``_CLOSE_ABOVE``): their balance
      rested on entries below one unit, which rounding removed (seen on SSI, 6 columns, K = 64:
      0.94 bits shipped at a 0.036-bit limit); and with them every sliver, an output none of whose
      entries reaches ``SLIVER_UNITS`` units;
    - else aims 2 v + 1e-6 bits further inside the limit, v the rounded table's excess;

    and when a solve stalls (SolverError), the next aims 1 % further inside the limit
    (``_STALL_INSIDE``); up to six solves.

    Returns
    -------
    SolveResult
        As :func:`solve_output_limited`, with the cleaned table (leakage and distortion recomputed);
        ``info["shipped_max_output_leakage_bits"]`` is the limit's value on the rounded table,
        ``info["ship_attempts"]`` the solves it took, ``info["closed_outputs"]`` the outputs closed.

    Raises
    ------
    InfeasibleError
        No table meets ``eps_bits`` within ``delta`` (the message names the smallest feasible limit).
    SolverError, ValueError
        As :func:`solve_output_limited` (a stall at the sixth solve); SolverError also when
        rounding still breaks the limit after six solves, or closing outputs leaves the limit
        infeasible (more ``bits`` round more finely).
    """
    p_ac, D, delta = check_instance(p_ac, distortion, delta)
    _check_limit(eps_bits)
    free = _unconstrained(p_ac, D, delta)
    table, _, shipped = _shipped(free.table, p_ac, D, delta, bits)
    worst = max_output_leakage_bits(p_ac, shipped)
    if worst <= eps_bits:                # the unconstrained optimum meets the limit: it is the optimum
        return _shipping_result(free, table, p_ac, D, worst, attempt=0, closed=0)
    _check_feasible(p_ac, D, delta, eps_bits)
    target, budget = eps_bits * (1 - _INSIDE), delta
    solve_D = D.copy()                   # outputs that rounding left unbalanced are closed here
    for attempt in range(1, _SHIP_ATTEMPTS + 1):
        try:
            solved = solve_output_limited(p_ac, solve_D, budget, target, time_limit_s=time_limit_s, check=False,
                                          start=free.table)
        except InfeasibleError:
            if attempt > 1 or target >= eps_bits:
                break                    # the refusal below names the limit asked for, not this target
            target = eps_bits            # no table within the budget meets the aim inside: aim at the limit
            continue
        except SolverError:
            if attempt == _SHIP_ATTEMPTS:
                raise
            target *= 1 - _STALL_INSIDE  # a numerical stall at this aim: aim a little further inside
            continue
        table, over, shipped = _shipped(solved.table, p_ac, D, delta, bits)
        worst = max_output_leakage_bits(p_ac, shipped)
        if worst <= eps_bits:
            closed = int(np.sum(~np.isfinite(solve_D).any(axis=0) & np.isfinite(D).any(axis=0)))
            return _shipping_result(solved, table, p_ac, D, worst, attempt=attempt, closed=closed)
        if over > 0:              # the repair moved mass to cheapest outputs: leave it less to move
            budget -= 2 * over + 1e-9 * delta
            continue
        if worst <= eps_bits * (1 + _CLOSE_ABOVE):
            target -= 2 * (worst - target) + 1e-6
            continue
        solve_D[:, outputs_to_close(table, shipped, p_ac, eps_bits, bits)] = np.inf
        if not np.all(np.any(np.isfinite(solve_D), axis=1)) or \
                _over(least_distortion(p_ac, solve_D, target), budget):
            break
    raise SolverError(f"the integer table at B = {bits} bits breaks the per-output limit {eps_bits:g} bits "
                      f"({worst:.6g} bits) after {attempt} solve(s); more --bits round more finely")


def outputs_to_close(table: np.ndarray, shipped, p_ac, eps_bits: float, bits: int) -> np.ndarray:
    """The outputs the shipping loop's next solve forbids, bool of shape (K_out,).

    Those whose posterior in the rounded table ``shipped`` breaks ``eps_bits``, and every sliver of
    the cleaned ``table`` (K, K_out): an output of positive mass none of whose entries reaches
    ``SLIVER_UNITS`` units.
    """
    ratios, outputs = output_posterior_ratios(p_ac, shipped)
    close = np.zeros(table.shape[1], dtype=bool)
    close[outputs[np.abs(ratios).max(axis=0) > eps_bits]] = True
    largest = table.max(axis=0)
    return close | ((largest > 0) & (largest < SLIVER_UNITS * 2.0 ** -bits))


def _shipped(table: np.ndarray, p_ac, D, delta: float, bits: int):
    """``table`` without its sub-unit entries, how far rounding alone overshoots ``delta``, and the shipped table.

    ``table`` (K, K_out) without entries below one unit 2^-bits (rows renormalised), how far
    rounding alone overshoots ``delta``, and the probabilities (sparse, (K, K_out)) of the integer
    table the build ships from it (:func:`privmap.offline.solvers.compress`, repaired to ``delta``).
    """
    table = np.where(table < 2.0 ** -bits, 0.0, table)
    table /= table.sum(axis=1, keepdims=True)
    over = compress(table, p_ac, D, math.inf, bits=bits).distortion - delta
    return table, over, compress(table, p_ac, D, delta, bits=bits).probabilities()


def _shipping_result(solved: SolveResult, table, p_ac, D, worst: float, *, attempt: int, closed: int) -> SolveResult:
    """:func:`solve_for_shipping`'s answer: ``solved`` with its cleaned ``table`` (figures recomputed)."""
    return SolveResult(table=table, leakage_bits=leakage_bits(p_ac, table),
                       distortion=expected_distortion(p_ac.sum(axis=0), table, D), multiplier=solved.multiplier,
                       gap_bits=solved.gap_bits, status=solved.status, solver=solved.solver, message=solved.message,
                       info={**solved.info, "ship_attempts": attempt, "shipped_max_output_leakage_bits": worst,
                             "closed_outputs": closed})
