"""Reference solver of program (19): cvxpy with Clarabel.

Model
-----
The leakage depends on the table q only through the |A| x K_out joint
P(a, j) = sum_c p(a, c) q(c, j). The model carries that joint as a variable of its
own, scaled by K so that its entries are of order one, tied to Q by linear
equalities, and writes the objective on it alone::

    minimise    sum_{a, j} rel_entr(P(a, j), p(a) P_j),    P_j = sum_a P(a, j)
    subject to  P = K p_ac @ Q,   Q >= 0,   sum_j Q(c, j) = 1,
                sum_{c, j} p(c) Q(c, j) D(c, j) / delta <= 1.

The objective is K times the leakage in nats. Each exponential cone then reads one
entry of P and one column sum, not a K-term row of Q as in the direct model
``rel_entr(p_ac @ Q, p_a * (p_c @ Q))``, which Clarabel could not finish
(InsufficientProgress) on instances whose clusters mostly hold a single private
class, where the optimal posteriors are pure and many cones sit at their apex.
Forbidden transitions (``inf`` distortion) are fixed at zero, and so are
transitions of positive distortion when delta is 0.

Clarabel runs with ``tol_feas`` 1e-9 (default 1e-8): at the default the table
overshot the budget by up to 7e-6 relative (SSI ratings, K = 256), at 1e-9 by
6e-7, for two more iterations. When Clarabel stalls (InsufficientProgress, or
AlmostSolved short of 1e-6), a second attempt runs its equilibration with 50
passes within scalings 1e-6 to 1e6 (defaults 10 and 1e-4 to 1e4): on one hard instance at K = 1024 that turned
InsufficientProgress after 15 iterations into an accurate answer, on one at
K = 256 it did the reverse, so it is the fallback, not the default
(``info["attempt"]`` says which answered).

Clarabel can stall just above its tolerances and report ``AlmostSolved`` (seen
from K = 64). Such an answer is accepted when its primal and dual residuals and
its relative duality gap are all below 1e-6 (``info["clarabel_status"]`` and the
message say so); its table may then overshoot the budget by up to 7e-6 relative
at K = 512 and 4e-5 at K = 1024 (``distortion`` reports it).

Starts
------
Where the answer is a start for the fast solver's polish (``stalled_ok``, many private classes),
a third attempt runs without equilibration after the two above have stalled (:data:`_RESCUE`). On UCI Adult with
7, 9, 13 and 15 private classes (marital status, workclass, occupation) at K = 64 to 256, the
two stalled (InsufficientProgress, largest residual 1e-3 to 0.2) on 14 of 36 solves of whole
builds and their folds, and the polish then followed its path from the stalled iterate (3.5 to
10 CPU-s a solve; one path failed, and the cold path after it took 47 s). Without equilibration
the polish certified 13 of the 14 answers as given (Clarabel stopped AlmostSolved or Solved, at
residuals near 1e-9, on those examined): the 36 solves took 110 CPU-s instead of 224
(the benchmarks notebook in git, 1dfd9dc:benchmarks/README.md, "Many private classes: a conic start
without equilibration"). Not first:
where the equilibrated attempts succeed their answers are the sparser (workclass, K = 128: 476
entries above 1e-6 against 8,691 without equilibration, whose table made the codebook step 3.2
CPU-s instead of 0.4). Where the third attempt stalls too, the start is still the iterate of the
two with the smaller residuals: on the two such solves (workclass, K = 128) the path took 83 and
52 Newton steps from it, 141 and 73 from the third's. The reference itself keeps its two attempts.

Reach
-----
This path is slow (seconds at K = 256, minutes from K = 512: about 17 s per
Clarabel iteration at K = 1024 on a loaded 2-core machine) and gives no
certificate of its own; it is kept as the reference the fast solver is checked
against. It solves the benchmark's hard instances (3 users per cluster, every
cluster pure) at K = 64 to 512 and SSI-2012 ratings at K = 64 to 256, every
budget tried (0.1, 0.3, 0.6 x Delta0), and the hard instance at K = 1024 at 0.1
and 0.6 x Delta0 (in 476 and 406 s on an idle machine). Out of reach: that
instance at 0.3 x Delta0, where both settings stop with InsufficientProgress
after 24 iterations (primal residual 6.6e-3, dual residual 4.8e-4, relative
gap 2e-4); see ``benchmarks/README.md``. A failed solve raises
:class:`SolverError` naming, for each attempt, Clarabel's status, the
iterations, the residuals and the relative duality gap.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from ..._errors import SolverError
from ..._information import expected_distortion, leakage_bits
from .._problem import check_instance
from .._result import SolveResult

_ATTEMPTS = (
    {"tol_feas": 1e-9},
    {"tol_feas": 1e-9, "equilibrate_max_iter": 50, "equilibrate_min_scaling": 1e-6,
     "equilibrate_max_scaling": 1e6},
)
#: For a start of the fast solver's polish (``solve_cvxpy(stalled_ok=True)``), the attempt after the
#: others stalled: without equilibration (module docstring, "Starts").
_RESCUE = {"tol_feas": 1e-9, "equilibrate_enable": False}
_ALMOST_SOLVED_TOL = 1e-6


def solve_cvxpy(p_ac, distortion, delta, *, time_limit_s: float | None = None,
                stalled_ok: bool = False) -> SolveResult:
    """Solve program (19) with cvxpy + Clarabel.

    Parameters and raises as :func:`privmap.offline.solve`; ``gap_bits`` is ``inf``
    (no certificate).

    Parameters
    ----------
    time_limit_s : float or None, keyword-only
        Most seconds Clarabel may iterate in all attempts together (not counting
        cvxpy's model building); None: no limit.
    stalled_ok : bool, keyword-only
        When every attempt stalls (InsufficientProgress, or AlmostSolved short of 1e-6), return
        the last iterate of the one with the smaller residuals instead of raising. For a start
        only: the fast solver's polish (``solve_fast(polish=)``) certifies or improves whatever
        it is given (UCI Adult, 15 occupation classes, K = 64: stalled at residuals 5e-6 and
        1.2e-4, a start from which the polish certifies). ``info["clarabel_status"]`` says which.
        Such a start gets a third attempt, without equilibration (module docstring, "Starts").

    Raises
    ------
    SolverError
        Clarabel stopped neither ``Solved`` nor ``AlmostSolved`` within 1e-6 (see the
        module docstring), e.g. on ``InsufficientProgress`` or ``MaxTime`` (with
        ``stalled_ok``, only when no attempt stalled with an iterate); the message names,
        for each attempt, the status, iterations, residuals and gap.
    """
    p_ac, D, delta = check_instance(p_ac, distortion, delta)
    K = p_ac.shape[1]
    p_c = p_ac.sum(axis=0)
    forbidden = forbidden_pairs(p_ac, D, delta)
    problem, Q, budget = conic_model(p_ac, D, delta, forbidden)
    raw, attempt = clarabel(problem, time_limit_s, stalled_ok=stalled_ok, rescue=_RESCUE if stalled_ok else None)
    table = np.clip(Q.value, 0.0, None)
    table[forbidden] = 0.0
    table /= table.sum(axis=1, keepdims=True)
    multiplier = 0.0
    if budget is not None and budget.dual_value is not None:
        multiplier = float(budget.dual_value) / (K * delta * math.log(2))
    return SolveResult(
        codebook=_dual_codebook(problem.constraints[0], p_ac.sum(axis=1)),
        table=table,
        leakage_bits=leakage_bits(p_ac, table),
        distortion=expected_distortion(p_c, table, D),
        multiplier=multiplier,
        gap_bits=math.inf,
        status="optimal",
        solver="cvxpy-clarabel",
        message=f"Clarabel reported {raw.status} ({summary(raw)}); no certificate",
        info={"solve_time_s": raw.solve_time, "clarabel_status": str(raw.status),
              "attempt": attempt, "iterations": int(raw.iterations),
              "primal_residual": float(raw.r_prim), "dual_residual": float(raw.r_dual)},
    )


def _dual_codebook(link, p_a: np.ndarray) -> np.ndarray | None:
    """The dual codebook of the answer, from the dual of the linking equality P = K p_ac Q (``link``).

    :class:`SolveResult`'s ``codebook``, shape (n_private, K_out): stationarity in P(a, j) makes it
    -(log r_j(a) - log p(a)) at the optimum, for every output, used or not. Each column is
    renormalised so that r_j sums to 1 over the classes with mass (the dual bound needs
    distributions; at the optimum the shift is 0). None when Clarabel returned no dual.
    """
    if link.dual_value is None:
        return None
    G = -np.asarray(link.dual_value, dtype=float)
    mass = p_a > 0
    codebook = np.zeros_like(G)
    top = G[mass].max(axis=0)
    shift = top + np.log(p_a[mass] @ np.exp(G[mass] - top))
    codebook[mass] = G[mass] - shift
    return codebook


def forbidden_pairs(p_ac, D, delta) -> np.ndarray:
    """Pairs (c, c^) the table must leave at 0, shape (K, K_out).

    Infinite distortion, and at Delta = 0 any move of positive distortion from a cluster of
    positive mass.
    """
    forbidden = ~np.isfinite(D)
    if delta == 0.0:
        forbidden |= (D > 0) & (p_ac.sum(axis=0)[:, None] > 0)
    return forbidden


def conic_model(p_ac, D, delta, forbidden):
    """The conic model of program (19) on the scaled joint P (see the module docstring).

    Parameters
    ----------
    p_ac : ndarray, shape (n_private, K)
    D : ndarray, shape (K, K_out)
        ``inf`` where forbidden.
    delta : float
    forbidden : ndarray of bool, shape (K, K_out)
        Pairs fixed at zero.

    Returns
    -------
    (problem, Q, budget) : the cvxpy problem, its (K, K_out) table variable and the
    budget constraint (None when delta is 0: the budget is then enforced by
    ``forbidden``). The problem's first constraint is the linking equality P = K p_ac Q
    (its duals are the answer's codebook, :func:`_dual_codebook`).
    """
    import cvxpy as cp
    n_private, K = p_ac.shape
    K_out = D.shape[1]
    p_a = p_ac.sum(axis=1)
    p_c = p_ac.sum(axis=0)
    Q = cp.Variable((K, K_out), nonneg=True)
    P = cp.Variable((n_private, K_out), nonneg=True)
    P_out = cp.sum(P, axis=0)
    independent = cp.vstack([p_a[a] * P_out for a in range(n_private)])
    constraints = [P == K * (p_ac @ Q), cp.sum(Q, axis=1) == 1]
    if forbidden.any():
        constraints.append(Q[forbidden] == 0)
    budget = None
    if delta > 0:
        weights = p_c[:, None] * np.where(forbidden, 0.0, D) / delta
        budget = cp.sum(cp.multiply(weights, Q)) <= 1.0
        constraints.append(budget)
    problem = cp.Problem(cp.Minimize(cp.sum(cp.rel_entr(P, independent))), constraints)
    return problem, Q, budget


#: Clarabel's stops that the stronger equilibration of the next attempt may get past. AlmostSolved
#: short of the tolerance is one: SSI ratings at K = 128, 0.3 x Delta0 stopped there (residuals
#: 3.5e-6) when Delta0 moved in its last bit, and the second settings solve it.
_STALLS = ("InsufficientProgress", "AlmostSolved")


def clarabel(problem, time_limit_s, *, gap_tol: float = _ALMOST_SOLVED_TOL, stalled_ok: bool = False,
              rescue: dict | None = None, attempts: tuple = _ATTEMPTS, stalls: tuple = _STALLS):
    """Solve ``problem`` with Clarabel, trying the settings of ``attempts`` in turn, then ``rescue``.

    The next attempt runs only after a numerical stall (one of ``stalls``: InsufficientProgress,
    or AlmostSolved short of ``_ALMOST_SOLVED_TOL``); the answer is loaded into the cvxpy
    variables.

    Parameters
    ----------
    problem : cvxpy.Problem
    time_limit_s : float or None
        Seconds for all attempts together; None: no limit.
    gap_tol : float, keyword-only
        The relative duality gap an AlmostSolved answer may keep (its residuals are held to
        ``_ALMOST_SOLVED_TOL`` whatever this is).
    stalled_ok : bool, keyword-only
        After every attempt stalled, load the iterate of the one with the smaller residuals
        (cvxpy's ``accept_unknown``) instead of raising.
    rescue : dict, keyword-only
        Settings of one more attempt after every attempt stalled; its answer is taken only where
        it succeeds (its own stall is named, never the start ``stalled_ok`` loads).
    attempts : tuple of dict, keyword-only
        Clarabel's settings for each attempt, in turn (default :data:`_ATTEMPTS`).
    stalls : tuple of str, keyword-only
        The statuses after which the next attempt runs (default :data:`_STALLS`).

    Returns
    -------
    (clarabel.DefaultSolution, int)
        Clarabel's own answer (status, iterations, residuals, objective values, time)
        and the index of the attempt that gave it (``len(attempts)`` for ``rescue``).

    Raises
    ------
    SolverError
        No attempt ended ``Solved``, or ``AlmostSolved`` with both residuals and the
        relative duality gap at most ``_ALMOST_SOLVED_TOL``.
    """
    import cvxpy as cp
    opts = {**attempts[0], "accept_unknown": True} if stalled_ok else attempts[0]
    data, chain, inverse_data = problem.get_problem_data(cp.CLARABEL, solver_opts=opts)
    failures, stalled = [], []
    left = time_limit_s
    for attempt, settings in enumerate(attempts + (() if rescue is None else (rescue,))):
        settings = dict(settings) if left is None else {**settings, "time_limit": max(left, 0.0)}
        raw = chain.solver.solve_via_data(data, False, False, settings)
        status = str(raw.status)
        close = max(raw.r_prim, raw.r_dual) <= _ALMOST_SOLVED_TOL and _relative_gap(raw) <= gap_tol
        if status == "Solved" or (status == "AlmostSolved" and close):
            return _unpacked(problem, raw, chain, inverse_data), attempt
        failures.append(f"attempt {attempt}: status {status} ({summary(raw)})")
        if left is not None:
            left -= raw.solve_time
        if status not in stalls or attempt >= len(attempts):
            break
        stalled.append((max(raw.r_prim, raw.r_dual), attempt, raw))
    if stalled_ok and stalled:
        _, attempt, raw = min(stalled, key=lambda s: s[:2])
        return _unpacked(problem, raw, chain, inverse_data), attempt
    raise SolverError("cvxpy/Clarabel did not reach an optimum: " + "; ".join(failures))


def _unpacked(problem, raw, chain, inverse_data):
    """``raw`` loaded into the cvxpy problem's variables and constraints' duals; returns ``raw``."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Solution may be inaccurate")
        problem.unpack_results(raw, chain, inverse_data)
    return raw


def _relative_gap(raw) -> float:
    """|primal - dual objective| / max(1, |primal objective|) of a Clarabel solution."""
    return abs(raw.obj_val - raw.obj_val_dual) / max(1.0, abs(raw.obj_val))


def summary(raw) -> str:
    """Iterations, residuals and relative duality gap of a Clarabel solution, in words."""
    return (f"{raw.iterations} iterations, primal residual {raw.r_prim:.1e}, dual residual "
            f"{raw.r_dual:.1e}, relative gap {_relative_gap(raw):.1e}")
