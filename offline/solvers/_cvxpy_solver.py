"""Reference solver of program (19): cvxpy with Clarabel.

The model is scaled to keep Clarabel's interior-point method well conditioned
(without scaling it stops with InsufficientProgress from K = 64): the objective
is the leakage in nats times 1000 and the distortion constraint is divided by
delta. Forbidden transitions (``inf`` distortion) are fixed at zero, and so are
transitions of positive distortion when delta is 0.

This path is slow (seconds at K = 256, minutes at K = 1024) and gives no
certificate of its own; it is kept as the reference the fast solver is checked
against.
"""
from __future__ import annotations

import math

import cvxpy as cp
import numpy as np

from .._errors import SolverError
from .._information import expected_distortion, leakage_bits
from ._problem import check_instance
from ._result import SolveResult

_OBJECTIVE_SCALE = 1000.0


def solve_cvxpy(p_ac, distortion, delta) -> SolveResult:
    """Solve program (19) with cvxpy + Clarabel.

    Parameters and raises as :func:`privmap.offline.solve`; ``gap_bits`` is ``inf``
    (no certificate).
    """
    p_ac, D, delta = check_instance(p_ac, distortion, delta)
    n_private, K = p_ac.shape
    K_out = D.shape[1]
    p_c = p_ac.sum(axis=0)
    p_a = p_ac.sum(axis=1)

    forbidden = ~np.isfinite(D)
    if delta == 0.0:
        forbidden |= (D > 0) & (p_c[:, None] > 0)
    D_finite = np.where(np.isfinite(D), D, 0.0)

    Q = cp.Variable((K, K_out), nonneg=True)
    p_a_out = p_ac @ Q                      # (n_private, K_out)
    p_out = p_c @ Q                         # (K_out,)
    independent = cp.vstack([p_a[a] * p_out for a in range(n_private)])
    objective = cp.Minimize(_OBJECTIVE_SCALE * cp.sum(cp.rel_entr(p_a_out, independent)))
    constraints = [cp.sum(Q, axis=1) == 1]
    if forbidden.any():
        constraints.append(Q[forbidden] == 0)
    budget = None
    if delta > 0:
        weights = (p_c[:, None] * D_finite) / delta
        budget = cp.sum(cp.multiply(weights, Q)) <= 1.0
        constraints.append(budget)
    problem = cp.Problem(objective, constraints)
    try:
        problem.solve(solver=cp.CLARABEL)
    except cp.error.SolverError as exc:
        raise SolverError(f"cvxpy/Clarabel failed: {exc}") from exc
    if problem.status != cp.OPTIMAL or Q.value is None:
        raise SolverError(f"cvxpy/Clarabel stopped with status {problem.status!r}, not optimal")

    table = np.clip(Q.value, 0.0, None)
    table[forbidden] = 0.0
    table /= table.sum(axis=1, keepdims=True)
    multiplier = 0.0
    if budget is not None and budget.dual_value is not None:
        multiplier = float(budget.dual_value) / (_OBJECTIVE_SCALE * delta * math.log(2))
    return SolveResult(
        table=table,
        leakage_bits=leakage_bits(p_ac, table),
        distortion=expected_distortion(p_c, table, D),
        multiplier=multiplier,
        gap_bits=math.inf,
        status="optimal",
        solver="cvxpy-clarabel",
        message="Clarabel reported optimal; no certificate",
        info={"solve_time_s": problem.solver_stats.solve_time},
    )
