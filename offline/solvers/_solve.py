"""The public entry point for program (19), dispatching to a solver."""
from __future__ import annotations

from typing import Callable

import numpy as np

from .._errors import InfeasibleError, SolverError
from ._result import SolveResult

SOLVERS = ("fast", "cvxpy")
#: Largest conic model (|A| x K x K_out table entries) the fast solver falls back on when its path
#: gives up: Clarabel solves UCI Adult's 13 occupations at K = 128 (213,000) in 2.6 CPU-s.
CONIC_FALLBACK_MAX = 1_000_000


def solve(p_ac, distortion, delta, *, solver: str = "fast", tol_bits: float = 1e-5,
          progress: Callable[[float], None] | None = None, warm_start: SolveResult | None = None) -> SolveResult:
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
        A previous answer of the same shape to start from (fast solver only; see ``solve_fast``).

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
    The fast solver's path can give up on a small instance that the conic reference solves at
    once: with many private classes its Newton steps are cut short by the line search hundreds of
    times (UCI Adult with 13 occupations private, K = 128: no certificate within 2,000 steps,
    where Clarabel takes 2.6 CPU-s). When a cold fast solve fails and the conic model has at most
    :data:`CONIC_FALLBACK_MAX` entries, the fast solver runs again from the reference's answer
    (``warm_start``), which certifies it in a few hundred steps; the result is the fast solver's,
    certified as always, with ``info["started_from"] = "cvxpy-clarabel"``. A warm-started solve
    that fails raises: its caller decides (a build runs it again cold).
    """
    if solver == "cvxpy":
        from ._cvxpy_solver import solve_cvxpy
        return solve_cvxpy(p_ac, distortion, delta)
    if solver == "fast":
        from ._fast_solver import solve_fast
        try:
            return solve_fast(p_ac, distortion, delta, tol_bits=tol_bits, progress=progress,
                              warm_start=warm_start)
        except InfeasibleError:
            raise
        except SolverError as failure:
            if warm_start is not None or np.size(p_ac) * np.shape(distortion)[1] > CONIC_FALLBACK_MAX:
                raise
            return _from_conic(p_ac, distortion, delta, tol_bits, failure)
    raise ValueError(f"unknown solver {solver!r}; expected one of {', '.join(SOLVERS)}")


def _from_conic(p_ac, distortion, delta, tol_bits: float, failure: SolverError) -> SolveResult:
    """The fast solver's certified answer, its path started from the conic reference's answer
    (:func:`solve`, Notes). Raises SolverError naming both failures when either fails."""
    from ._cvxpy_solver import solve_cvxpy
    from ._fast_solver import solve_fast
    try:
        start = solve_cvxpy(p_ac, distortion, delta)
        result = solve_fast(p_ac, distortion, delta, tol_bits=tol_bits, warm_start=start)
    except SolverError as again:
        raise SolverError(f"{failure}; started from the conic reference's answer: {again}") from failure
    result.info.update(started_from=start.solver, cold_failure=str(failure))
    return result
