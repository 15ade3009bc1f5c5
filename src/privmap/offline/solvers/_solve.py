"""The public entry point for program (19), dispatching to a solver."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._errors import InfeasibleError, SolverError
from ._problem import check_instance
from ._result import SolveResult

SOLVERS = ("fast", "cvxpy")
#: Private classes (with mass) from which a cold fast solve starts from the interior point's answer
#: (Notes of :func:`solve`): UCI Adult, K = 256, seven classes took it 0.7 to 0.9 CPU-s (the log
#: barrier 1.9) against the fast path's 3.8; five took the barrier 1.4 against 1.1.
INTERIOR_FIRST_CLASSES = 6
#: Largest conic model (|A| x K x K_out table entries) a failed cold fast solve falls back on:
#: Clarabel solves UCI Adult's 13 occupations at K = 128 (213,000) in 2.6 CPU-s.
CONIC_FALLBACK_MAX = 1_000_000
#: Private classes (with mass) from which a cold fast solve of at most
#: :data:`CONIC_FIRST_PAIRS_PER_CLASS` table pairs a class starts from the conic reference's
#: answer (Notes of :func:`solve`).
CONIC_FIRST_CLASSES = 7
#: Most table pairs K x K_out, per private class with mass, of a cold solve that starts from the
#: conic reference. Clarabel's cost follows the pairs, the fast path's grows with the classes: UCI
#: Adult, seven classes, K = 192 (36,864 pairs) 8.3 CPU-s against 15.3 on the fast path, K = 256
#: (65,536) 54 to 60 against 18 to 19; 13 classes, K = 160 (25,600) 4.6 and K = 256 43.2 where the
#: fast path failed (at K = 256 no certificate in 600 steps, 109 CPU-s).
CONIC_FIRST_PAIRS_PER_CLASS = 6_000
#: Most private classes (with mass) for which :func:`solve` starts from a ``warm_start`` it is
#: given; above it the warm start is set aside and the solve runs cold. Measured on UCI Adult,
#: K = 256, the codebook step's re-solve at 0.5 x Delta0, cold against warm from the build's
#: answer in the same process: sex 0.35 / 0.27 CPU-s, race (5 classes) 1.75 / 1.26, marital-status
#: (7) 10.2 / 57. With more classes the warm duals start the path among nearly pure outputs whose
#: posterior resets collapse the soft table, and the path crawls back (hundreds of cut steps).
WARM_START_MAX_CLASSES = 5


def solve(p_ac, distortion, delta, *, solver: str = "fast", tol_bits: float = 1e-5,
          progress: Callable[[float], None] | None = None, warm_start: SolveResult | None = None,
          start_outputs=None) -> SolveResult:
    """Minimise I(A; C_hat) subject to E d(C, C_hat) <= delta over row-stochastic q.

    Parameters
    ----------
    p_ac : array_like, shape (n_private, K)
        Joint prior p(a, c); non-negative, sums to 1.
    distortion : array_like, shape (K, K_out)
        d(c, c_hat) >= 0; ``inf`` forbids a transition.
    delta : float
        Budget on the expected distortion (same unit as ``distortion``).
    solver : {"fast", "cvxpy"}, keyword-only
        ``"fast"``: privmap's own solver with a certified gap (default).
        ``"cvxpy"``: cvxpy + Clarabel, the reference (slow, no certificate).
    tol_bits : float, keyword-only
        Gap to certify, in bits (fast solver only).
    progress : callable(float) or None, keyword-only
        Called with the fraction done in [0, 1] (fast solver only).
    warm_start : SolveResult or None, keyword-only
        A previous answer of the same shape to start from (fast solver only; see ``solve_fast``);
        set aside (a cold solve) above :data:`WARM_START_MAX_CLASSES` classes with mass.
    start_outputs : array_like of int or None, keyword-only
        Indices of the outputs a start from the interior point solves on first, pricing the
        others in (``solve_interior(start_outputs=)``; a build offers its Delta0 table's). Only
        that start reads it; the answer is certified over every output all the same.

    Returns
    -------
    SolveResult
        ``table`` of shape (K, K_out), ``leakage_bits``, ``distortion``,
        ``multiplier``, ``gap_bits``, ``status == "optimal"``.

    Raises
    ------
    ValueError
        Malformed instance or unknown solver.
    InfeasibleError
        ``delta`` below the least reachable distortion.
    SolverError
        The solver did not reach an optimum.

    Notes
    -----
    With at least :data:`INTERIOR_FIRST_CLASSES` classes with mass, a cold solve starts from an
    interior point on every pair (:func:`.interior.solve_interior`: a primal-dual point, the log
    barrier where it stops short): one Newton step costs O(K^2 K_out |A|), linear in the classes,
    and the primal-dual path takes 45 to 59 steps on UCI Adult at K = 256 whatever |A| (the
    barrier 114 to 212), where the fast path's dual Newton systems grow as ((|A| - 1) K_out)^2 and
    its steps among nearly pure outputs multiply (UCI Adult, K = 256, 0.5 x Delta0, CPU-s of the
    start against the fast path: seven classes 0.7 to 0.9 against 3.8, fifteen 1.2 to 1.6 against
    22.6, or 43 to 86 for the conic reference, and the fast path failed on some fold programs).
    The fast solver then *polishes* that answer (``solve_fast(polish=)``): certified as it is by
    one pricing pass at its own duals where that proves it (UCI Adult: every occupation and
    marital-status program measured), else by the path from those duals low on the temperature.
    The result is the fast solver's, certified as always, with ``info["started_from"]`` the
    interior point's name (``"interior-primal-dual"`` or ``"interior-barrier"``). Given
    ``start_outputs`` (a build offers the outputs of its Delta0 table), from
    :data:`.interior.MIN_OUTPUTS` outputs the interior point solves on those first and
    prices the others in (``info["columns"]``: its rounds; UCI Adult, fifteen classes, K = 1,024:
    2 rounds, 27.4 CPU-s against 68.1 on every output). The interior
    point does not take instances with forbidden pairs or more than :data:`.interior.MAX_ENTRIES`
    entries, nor a budget equal to the least distortion; where it refuses or fails
    (``info["interior_failure"]`` says why) the solve goes on as below.

    The fast solver's path is slow on small instances with many private classes, where its Newton
    steps are cut short by the line search hundreds of times, and the conic reference is fast and
    accurate there (UCI Adult with 13 occupations private, K = 64: 600 to 1,800 Newton steps and 8
    to 37 CPU-s a solve, Clarabel 0.3 to 0.9; K = 128: no certificate within 2,000 steps, Clarabel
    2.6 CPU-s). With at least :data:`CONIC_FIRST_CLASSES` classes and at most
    :data:`CONIC_FIRST_PAIRS_PER_CLASS` table pairs a class, a cold solve the interior point did
    not answer therefore starts with the reference and polishes its answer the same way; a
    reference that stalls (InsufficientProgress) still gives its iterate as that start
    (``solve_cvxpy(stalled_ok=True)``), never as the answer. A cold fast solve that fails on a
    conic model of at most :data:`CONIC_FALLBACK_MAX` entries is polished from the reference's
    answer the same way, with ``info["started_from"] = "cvxpy-clarabel"`` (and
    ``info["cold_failure"]``, the cold path's failure, when it came first). Where the reference
    or its polish fails, the cold fast path runs (``info["conic_failure"]`` says why). A
    warm-started solve that fails raises: its caller decides (a build runs it again cold).
    """
    if solver == "cvxpy":
        from .reference import solve_cvxpy
        return solve_cvxpy(p_ac, distortion, delta)
    if solver != "fast":
        raise ValueError(f"unknown solver {solver!r}; expected one of {', '.join(SOLVERS)}")
    if warm_start is not None and _classes(p_ac) > WARM_START_MAX_CLASSES:
        warm_start = None
    attempt = _Attempt(p_ac, distortion, delta, tol_bits, progress)
    if warm_start is None:
        started = _from_a_start(attempt, start_outputs)
        if started is not None:
            return started
    return _from_the_fast_path(attempt, warm_start)


@dataclass
class _Attempt:
    """One fast solve as :func:`solve` runs it.

    The instance and what the starts tried before the fast path leave to it, so each phase
    (:func:`_from_a_start`, :func:`_from_the_fast_path`) reads one state.

    Attributes
    ----------
    p_ac, distortion, delta, tol_bits, progress
        As :func:`solve` takes them.
    failures : dict of str to str
        The failures of the starts tried, for the answer's ``info`` (``interior_failure``).
    conic : bool
        Whether the conic reference is still the fallback of a failed cold fast path.
    first : SolverError or None
        The conic start's failure, where it was tried first and failed.
    """

    p_ac: Any
    distortion: Any
    delta: Any
    tol_bits: float
    progress: Callable[[float], None] | None
    failures: dict[str, str] = field(default_factory=dict)
    conic: bool = False
    first: SolverError | None = None


def _from_a_start(attempt: _Attempt, start_outputs) -> SolveResult | None:
    """A cold solve's polished answer from the interior point or the conic reference, or None.

    From the interior point or, failing that, the conic reference, where the instance starts from
    one (Notes of :func:`solve`); None where neither answers, with their failures and whether the
    reference remains the fallback left in ``attempt``.
    """
    a = attempt
    if starts_from_interior(a.p_ac, a.distortion, a.delta):
        try:
            return _polished("interior", a.p_ac, a.distortion, a.delta, a.tol_bits, a.progress,
                             start_outputs=start_outputs)
        except SolverError as failure:
            a.failures["interior_failure"] = str(failure)
    a.conic = _conic_fits(a.p_ac, a.distortion)
    if a.conic and starts_from_conic(a.p_ac, a.distortion, a.delta):
        try:
            return _noted(_polished("conic", a.p_ac, a.distortion, a.delta, a.tol_bits, a.progress), a.failures)
        except SolverError as failure:
            a.first, a.conic = failure, False
    return None


def _from_the_fast_path(attempt: _Attempt, warm_start: SolveResult | None) -> SolveResult:
    """The fast solver's answer from ``warm_start`` or cold, noting the earlier starts' failures.

    A cold failure falls back on the conic reference's polished answer where ``attempt.conic``
    allows.

    Raises
    ------
    InfeasibleError
        ``delta`` below the least reachable distortion.
    SolverError
        The fast path failed and no fallback answered (naming the conic start's failure too).
    """
    from .fast import solve_fast
    a = attempt
    try:
        result = solve_fast(a.p_ac, a.distortion, a.delta, tol_bits=a.tol_bits, progress=a.progress,
                            warm_start=warm_start)
        if a.first is not None:
            result.info["conic_failure"] = str(a.first)
        return _noted(result, a.failures)
    except InfeasibleError:
        raise
    except SolverError as failure:
        if a.first is not None:
            raise SolverError(f"{a.first}; then the cold fast solve: {failure}") from failure
        if not a.conic:
            raise
        return _noted(_polished("conic", a.p_ac, a.distortion, a.delta, a.tol_bits, a.progress, failure), a.failures)


def starts_from_interior(p_ac, distortion, delta) -> bool:
    """Whether a cold :func:`solve` of this instance starts from the interior point.

    Notes of :func:`solve`: at least :data:`INTERIOR_FIRST_CLASSES` classes with mass, at most
    :data:`.interior.MAX_ENTRIES` entries |A| x K x K_out, no forbidden pair, and a budget that
    :func:`._problem.check_instance` accepts (an infeasible one is the fast solver's to name; a
    malformed instance raises its ValueError).
    """
    from .interior import MAX_ENTRIES
    D = np.asarray(distortion, dtype=float)
    classes = _classes(p_ac)
    if classes < INTERIOR_FIRST_CLASSES or classes * D.size > MAX_ENTRIES or not np.all(np.isfinite(D)):
        return False
    try:
        p_ac, D, delta = check_instance(p_ac, D, delta)
    except InfeasibleError:
        return False
    p_c = p_ac.sum(axis=0)
    return delta > float(p_c @ D.min(axis=1)) * (1.0 + 1e-9)


def starts_from_conic(p_ac, distortion, delta) -> bool:
    """Whether a cold :func:`solve` of this instance starts from the conic reference.

    Notes of :func:`solve`: at least :data:`CONIC_FIRST_CLASSES` classes with mass, at most
    :data:`CONIC_FIRST_PAIRS_PER_CLASS` table pairs for each, and a budget that
    :func:`._problem.check_instance` accepts (an infeasible one is the fast solver's to name; a
    malformed instance raises its ValueError). A caller holding a warm start asks this before
    using it: where the reference is the faster start, it is also the faster re-solve.
    """
    D = np.asarray(distortion, dtype=float)
    classes = _classes(p_ac)
    if classes < CONIC_FIRST_CLASSES or D.size > CONIC_FIRST_PAIRS_PER_CLASS * classes:
        return False
    try:
        check_instance(p_ac, D, delta)
    except InfeasibleError:
        return False
    return True


def _classes(p_ac) -> int:
    """Private classes with mass in the joint prior ``p_ac`` (|A|, K)."""
    return int(np.count_nonzero(np.asarray(p_ac, dtype=float).sum(axis=1) > 0))


def _conic_fits(p_ac, distortion) -> bool:
    return np.size(p_ac) * np.shape(distortion)[1] <= CONIC_FALLBACK_MAX


def _polished(start_with: str, p_ac, distortion, delta, tol_bits: float, progress,
              failure: SolverError | None = None, *, start_outputs=None) -> SolveResult:
    """The fast solver's certified polish of an accurate, uncertified answer (:func:`solve`, Notes).

    The interior point's (``start_with="interior"``, from ``start_outputs`` where given) or the
    conic reference's (``"conic"``), after the cold path's ``failure`` if one came first. Raises
    SolverError naming both failures when either fails.
    """
    from .fast import solve_fast
    try:
        if start_with == "interior":
            from .interior import solve_interior
            start = solve_interior(p_ac, distortion, delta, tol_bits=tol_bits, start_outputs=start_outputs,
                                   progress=None if progress is None else (lambda done: progress(0.9 * done)))
        else:
            from .reference import solve_cvxpy
            start = solve_cvxpy(p_ac, distortion, delta, stalled_ok=True)
        result = solve_fast(p_ac, distortion, delta, tol_bits=tol_bits, progress=progress, polish=start)
    except SolverError as again:
        if failure is None:
            raise
        raise SolverError(f"{failure}; started from the conic reference's answer: {again}") from failure
    result.info["started_from"] = start.solver
    if "columns" in start.info:
        result.info["columns"] = start.info["columns"]
    if failure is not None:
        result.info["cold_failure"] = str(failure)
    return result


def _noted(result: SolveResult, failures: dict[str, str]) -> SolveResult:
    """``result`` with the earlier starts' failures in its ``info``."""
    result.info.update(failures)
    return result
