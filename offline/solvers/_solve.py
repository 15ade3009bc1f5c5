"""The public entry point for program (19), dispatching to a solver."""
from __future__ import annotations

from typing import Callable

from ._result import SolveResult

SOLVERS = ("fast", "cvxpy")


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
    """
    if solver == "cvxpy":
        from ._cvxpy_solver import solve_cvxpy
        return solve_cvxpy(p_ac, distortion, delta)
    if solver == "fast":
        from ._fast_solver import solve_fast
        return solve_fast(p_ac, distortion, delta, tol_bits=tol_bits, progress=progress, warm_start=warm_start)
    raise ValueError(f"unknown solver {solver!r}; expected one of {', '.join(SOLVERS)}")
