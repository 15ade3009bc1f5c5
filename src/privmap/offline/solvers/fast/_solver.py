"""privmap's own solver of program (19), with a certified gap.

Problem
-------
Given the joint prior p(a, c) (shape ``(|A|, K)``), a distortion matrix D
(shape ``(K, K_out)``, ``inf`` = forbidden) and a budget delta, find a
row-stochastic q (``K x K_out``) minimising the leakage

    J(q) = I(A; C_hat) = sum_{a, j} P(a, j) log( P(a, j) / (p(a) P(j)) ),
    P(a, j) = sum_c p(a, c) q(c, j),

subject to sum_{c, j} p(c) q(c, j) D(c, j) <= delta.

Why this method
---------------
J depends on q only through the |A| x K_out matrix P, and optimal tables are
very sparse (1.2 to 1.8 entries per row), like vertices of a linear program. A
generic conic solver pays for all K * K_out variables and an exponential-cone
lifting of each. This solver works on the *dual*, which has only
K_out * (|A| - 1) + 1 variables, and proves every answer.

**The dual.** For a codebook R = (r_j) of distributions on A (one per output)
and mu >= 0, Gibbs' inequality gives J(q) >= sum_{c,j} q(c,j) W(c,j) with
W(c, j) = sum_a p(a, c) log(r_j(a) / p(a)), so for every feasible q

    J* >= LB(R, mu) = sum_c p(c) min_{j : D(c,j) < inf} z(c, j) - mu delta,
    z(c, j) = sum_a p(a|c) log(r_j(a) / p(a)) + mu D(c, j).

LB is the exact Lagrangian dual of the full problem (all K x K_out pairs), so
it certifies optimality over every table, and it is tight at the optimum
(minimax theorem: R = posteriors of the optimal outputs, mu = the multiplier).

**The phases.** This module is the entry point; the solver is phase functions over one explicit
state (:class:`._state.FastState`), driven by :func:`._path.run`, in parts a reader can take one
at a time:

- :mod:`._newton`, the dual Newton core: the smoothed dual Phi_tau on the candidates at a
  fixed temperature, its gradient and Hessian, the Newton solve (dense Cholesky, or conjugate
  gradients with a sparse preconditioner) and the ascent step (line search, posterior reset);
- :mod:`._path`, the path following: the starting duals (cold or from a warm start), the
  centring at each tau, the tangent that extrapolates to tau = 0 and predicts the next tau;
- :mod:`._certify`, the certification: the proven lower bound LB with its rounding margin,
  the returned table (mixed to meet the budget, negligible outputs merged) and its gap;
- :mod:`._pricing`, the pricing: candidate lists per row, guard rows, the passes over all
  pairs that evaluate LB and price in the pairs that beat a row's candidates.

:mod:`._state` holds the state they share.

Costs: memory O(K * K_out) only for the caller's D and the returned table,
plus O(number of candidates); time per Newton step O(candidates * |A|) plus a
sparse factorisation and a few conjugate-gradient iterations; per pricing pass
O(K * K_out * |A|).
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable

import numpy as np
from threadpoolctl import threadpool_limits

from .._problem import check_instance
from .._result import SolveResult
from ._path import run
from ._state import set_up

_BLAS_THREADS = 1                # the solver's products have an inner dimension of |A| or are
                                 # sparse, so BLAS threads gain nothing; with another process on
                                 # the cores, OpenBLAS's spinning threads made a K = 128 hard
                                 # instance 8x slower (2.1 s against 0.26 s)


def solve_fast(p_ac, distortion, delta, *, tol_bits: float = 1e-5, max_iter: int | None = None,
               progress: Callable[[float], None] | None = None,
               warm_start: SolveResult | None = None, polish: SolveResult | None = None) -> SolveResult:
    """Solve program (19) by smoothed dual Newton with pricing, and certify the answer.

    Parameters
    ----------
    p_ac : array_like, shape (n_private, K)
        Joint prior p(a, c); non-negative, sums to 1.
    distortion : array_like, shape (K, K_out)
        d(c, c_hat) >= 0, same unit as ``delta``; ``inf`` forbids a transition.
        Every row needs one finite entry.
    delta : float
        Budget on the expected distortion sum_c p(c) sum_j q(c, j) d(c, j).
    tol_bits : float, keyword-only
        Gap to certify, in bits: the solver stops when leakage(table) minus a
        proven lower bound on the optimum is at most ``tol_bits``.
    max_iter : int or None, keyword-only
        Most Newton steps in all; None: max(2000, K_out // 2). Synthetic instances took
        88 to 271 steps from K = 1024 to 16384, the folds of a real UCI Adult build at
        K = 4096 436 to 630 (benchmarks/README.md); a limit reached throws away the whole
        solve, so it is set well above what paths have needed (:func:`privmap.offline.solvers.solve` then
        starts again from the conic reference's answer where that model is small).
    progress : callable(float) or None, keyword-only
        Called with an estimate of the fraction done, in [0, 1].
    warm_start : SolveResult or None, keyword-only
        A previous answer on the same rows, outputs and private classes (its ``table`` of shape
        (K, K_out) and ``multiplier``), typically before the distortion or the budget moved a
        little (the codebook step's re-solve). The path then starts from its duals (each
        output's codebook entry at the posterior of its table column, mu at its multiplier),
        its table's pairs join the starting candidates; the temperature starts where the cold
        start's does (a path started lower from these duals took more Newton steps, not
        fewer: benchmarks/README.md). Only the start changes: the answer is certified
        as without it (the lower bound prices every pair). ValueError if its table's shape
        is not (K, K_out).
    polish : SolveResult or None, keyword-only
        An answer of this very instance from another solver (the conic reference's: accurate,
        uncertified; table (K, K_out), multiplier and, where it has one, its dual ``codebook``),
        instead of ``warm_start``. Its table, mixed to meet the budget, is returned if one
        pricing pass at its own duals (its codebook, else its table's posteriors, unmixed, and
        multiplier) certifies it within ``tol_bits`` (``info["polish"] ==
        "as given"``); otherwise the path starts from those duals at a hundredth of the starting
        temperature (``"path"``). ValueError if its table's shape is not (K, K_out) or both
        starts are given.

    Returns
    -------
    SolveResult
        ``table`` (K, K_out) row-stochastic with zero mass on forbidden pairs;
        ``leakage_bits`` and ``distortion`` recomputed from ``table``;
        ``multiplier`` (bits per unit distortion) of the budget;
        ``gap_bits`` <= ``tol_bits``, a proven bound on leakage_bits - optimum;
        ``info`` with Newton steps, evaluations of the smoothed dual, pricing passes,
        candidates, lower bound, timings.

    Raises
    ------
    ValueError
        Malformed instance (shapes, signs, prior not summing to 1, a row with no
        allowed output) or ``tol_bits`` not positive.
    InfeasibleError
        ``delta`` below sum_c p(c) min_j d(c, j), the least distortion any table reaches.
    SolverError
        The gap could not be certified within ``max_iter`` Newton steps.
    """
    started = time.perf_counter()
    p_ac, D, delta = check_instance(p_ac, distortion, delta)
    if not (tol_bits > 0 and math.isfinite(tol_bits)):
        raise ValueError(f"tol_bits must be positive and finite, got {tol_bits}")
    if max_iter is None:
        max_iter = max(2000, D.shape[1] // 2)
    if warm_start is not None and polish is not None:
        raise ValueError("give warm_start or polish, not both")
    for name, start in (("warm_start", warm_start), ("polish", polish)):
        if start is not None and np.shape(start.table) != D.shape:
            raise ValueError(f"{name} table has shape {np.shape(start.table)}, expected {D.shape}")
    with threadpool_limits(limits=_BLAS_THREADS):
        result = run(set_up(p_ac, D, delta, tol_bits, int(max_iter), progress), warm_start, polish)
    result.info["time_s"] = time.perf_counter() - started
    return result
