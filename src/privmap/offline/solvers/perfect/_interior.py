"""A primal-dual interior point for the perfect-privacy program: the start of its column generation.

The program (module docstring of ``_linear_program``): minimise sum_{c, j} p(c) d(c, j) q(c, j)
subject to sum_j q(c, j) = 1 for every row (duals u_c) and sum_c delta(c, a) q(c, j) = 0 for every
output j and class a != a0 (duals w_aj), with delta(c, a) = p(c|a) - p(c|a0) (shape (K, m),
m = |A| - 1). The last output's balances are left out: the rows' sums and the other outputs'
balances imply them (sum_c delta(c, a) = 0), so its duals are held at 0.

With many classes the column generation's masters have K + m K_out rows, and started from a few
pairs a row their duals are degenerate: the pairs they price in mislead the next master, and on
UCI Adult with 15 occupations private it crept to Delta0 in dozens of rounds of thousands of
simplex pivots each, even from the optimal support. This interior point solves the whole program
instead, in a number of steps that barely grows with the classes (29 to 66 on UCI Adult at K = 256
and 512), and hands the master both halves of a certificate: the pairs of its table above
:data:`SEED_SHARE` whose reduced cost at its duals is within :data:`_TIGHT` of their row's least
(the optimal support, a few pairs a row: :func:`seed_pairs`), and duals w whose bound L(w) is
already within ``rel_tol`` of Delta0. The first master then reaches that bound and certifies in
one round (occupation, K = 256: 0.9 to 1.1 CPU-s in all, against 29 to 41 with Clarabel's seed).
Its weak case is few classes at large K: with race private at K = 1024 its steps shorten to a
tenth and it stops at 100 with a gap of 1e-4, and the master certifies from its pairs in 27 rounds.

**Method.** Mehrotra's predictor-corrector on the primal-dual pair, from the strictly feasible table
that sends every row uniformly over the outputs (its outputs are independent of the class) and dual
slacks z = p(c) d(c, j) - u_c >= the mean cost. Each Newton system has the structure of program
(19)'s interior point's, theta = q / z its weights: the balances of each output form an m x m block
G_j = delta^T diag(theta_j) delta, and eliminating them leaves a dense K x K Schur complement over
the rows' sums (``.._row_schur``), one matrix product of O(K^2 K_out m) per step, linear in the
classes. Near the optimum that complement subtracts nearly equal terms and loses definiteness in its
last digits, so it is factorised with the least relative diagonal shift of :data:`_SHIFTS` that
keeps it positive definite, and each direction is refined :data:`_REFINE` times against the exact
constraint products. The path starts with the complement's product in float32, about three
fifths of its time, and returns to float64 for good at the first direction whose last refinement
correction is above ``.._row_schur.SINGLE_CORRECTION`` of it, or whose float32 complement no shift
makes positive definite (mixed-precision refinement: ``SingleFalls``): the first 17 of 59 steps on
UCI Adult's occupations at K = 1,024 (0.43 to 0.55 s a step against 0.67 to 0.73), to the float64
path's certified Delta0.

**Certificate.** The point stops when the cost of its table, whose rows' sums and balances hold to
:data:`_FEASIBLE` (HiGHS's own tolerance in the master), and the bound L(w) of its duals, computed
exactly over every pair, agree to ``rel_tol``. Near the optimum the round-off of the Schur
complement can carry the iterates off the constraints while the duals go on to the optimum (one
fold of occupation, K = 256: balances violated by 1e-8 from a gap of 2e-6; occupation, K = 512: by
1e-6 from a gap of 2e-4, the bound exact nine steps later), so the table kept is the cheapest
iterate feasible to :data:`_FEASIBLE`, the bound the best of any iterate, and the path goes on
until the complementarity reaches round-off (:data:`_MU_FLOOR`). The bound is valid for any w; the
answer and its certificate remain the column generation's.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla

from .._progress import log_fraction
from .._row_schur import MixedPrecision, SchurBreakdown, require_settled, row_schur, shifted_cholesky

#: q(c, j) of the interior point from which its pair seeds the master (occupation, K = 256: 875
#: pairs; one round from 1e-9 to 1e-5, 1,140 to 872 pairs).
SEED_SHARE = 1e-7
_TIGHT = 1e-8         # reduced cost above its row's least, relative to the largest cost, of a pair
                      # that seeds (one fold of occupation: 29,446 pairs above SEED_SHARE at a point
                      # 5e-6 from the optimum, 28 CPU-s of master; 1,003 also tight, 0.19)
_MAX_STEPS = 100      # Mehrotra steps (UCI Adult, K = 256 and 512: 29 to 66)
_TO_BOUNDARY = 0.995  # share of the step to the boundary of q > 0 or z > 0 that a step takes
_FEASIBLE = 1e-10     # largest violation of a row's sum or a balance of a table it keeps
_MU_FLOOR = 1e-14     # complementarity, relative to the start's, below which a step changes nothing
_SHIFTS = (1e-12, 1e-10, 1e-8)  # diagonal shifts of the Schur complement tried, relative to its
                                # largest diagonal (one fold of occupation, K = 256, needed 1e-10)
_REFINE = 3           # iterative refinement steps of each Newton direction


@dataclass(frozen=True)
class InteriorPoint:
    """The interior point's feasible table of least cost, and its best dual bound.

    Attributes
    ----------
    table : ndarray, shape (K, K_out)
        The iterate of least cost among those whose rows' sums and balances hold to
        :data:`_FEASIBLE`; every entry positive.
    duals : ndarray, shape (m, K_out)
        The balance duals w that gave ``lower`` (cost units; the last output's are 0).
    lower : float
        L(duals), a lower bound on Delta0.
    upper : float
        The table's expected distortion (an upper bound on Delta0, to the table's round-off).
    steps : int
        Mehrotra steps taken.
    certified : bool
        Whether ``upper`` and ``lower`` met to ``rel_tol``.
    """

    table: np.ndarray
    duals: np.ndarray
    lower: float
    upper: float
    steps: int
    certified: bool


class _Breakdown(Exception):
    """A Schur complement that is not positive definite, or a direction that is not finite."""


def interior_point(p_c: np.ndarray, delta_a: np.ndarray, D: np.ndarray, *, rel_tol: float,
                   bound: Callable[[np.ndarray], float],
                   progress: Callable[[float], None] | None = None) -> InteriorPoint | None:
    """Mehrotra's predictor-corrector on the perfect-privacy program (module docstring).

    Parameters
    ----------
    p_c : ndarray, shape (K,)
    delta_a : ndarray, shape (K, m)
        p(c|a) - p(c|a0) for the present classes a != a0, m >= 1.
    D : ndarray, shape (K, K_out), finite
    rel_tol : float, keyword-only
        Relative gap between the table's cost and the dual bound at which to stop.
    bound : callable, keyword-only
        ``bound(w)`` with w of shape (m, K_out) gives L(w) over every pair (the caller's pricing).
    progress : callable(float) or None, keyword-only
        Called after each step with the share of the decades the complementarity has come down,
        from the start's toward ``rel_tol`` of the table's cost (``.._progress.log_fraction``).

    Returns
    -------
    InteriorPoint or None
        None where no iterate was feasible to :data:`_FEASIBLE` (as where the first step breaks down).
        Raises nothing: a breakdown, or the complementarity falling below :data:`_MU_FLOOR` of the
        start's, ends the path, and the point is the best kept so far.
    """
    scale = max(float((p_c[:, None] * D).max()), 1e-300)
    cost = p_c[:, None] * D / scale
    K, K_out = D.shape
    q = np.full((K, K_out), 1.0 / K_out)
    u = cost.min(axis=1) - max(float(cost.mean()), 1e-12)
    w = np.zeros((delta_a.shape[1], K_out))
    z = cost - u[:, None]
    pair_products = (delta_a.T[:, None, :] * delta_a.T[None, :, :]).reshape(-1, K)
    start_mu = float((q * z).mean())
    best_lower, best_duals, point = -np.inf, w, None
    precision = MixedPrecision()
    for step in range(1, _MAX_STEPS + 1):
        try:
            q, u, w, z = precision.step(_mehrotra_step, cost, delta_a, pair_products, q, u, w, z)
        except _Breakdown:
            break
        lower = bound(w * scale)
        if lower > best_lower:
            best_lower, best_duals = lower, w * scale
        if _violation(delta_a, q) <= _FEASIBLE:
            upper = float((cost * q).sum()) * scale
            if point is None or upper <= point.upper:
                point = InteriorPoint(table=q, duals=best_duals, lower=best_lower, upper=upper,
                                      steps=step, certified=False)
        if point is not None:
            point = dataclasses.replace(point, duals=best_duals, lower=best_lower, steps=step,
                                        certified=point.upper - best_lower <= rel_tol * abs(point.upper))
            if point.certified:
                break
        mu = float((q * z).mean())
        if progress is not None:
            progress(log_fraction(start_mu, mu, rel_tol * abs(float((cost * q).sum())) / q.size))
        if mu <= _MU_FLOOR * start_mu:
            break
    return point


def seed_pairs(point: InteriorPoint, p_c: np.ndarray, delta_a: np.ndarray, D: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
    """The pairs (rows, cols) the point proposes to the master.

    q(c, j) >= :data:`SEED_SHARE` and a reduced cost at its duals within :data:`_TIGHT` of the
    row's least (module docstring).

    Shapes as :func:`interior_point`; returns two int arrays. Raises nothing.
    """
    cost = p_c[:, None] * D
    reduced = cost - delta_a @ point.duals
    tight = reduced - reduced.min(axis=1, keepdims=True) <= _TIGHT * float(cost.max())
    rows, cols = np.nonzero((point.table >= SEED_SHARE) & tight)
    return rows, cols


def _violation(delta_a, q):
    """The largest violation of a row's sum or an output's balance by the table q."""
    return max(float(np.abs(1.0 - q.sum(axis=1)).max()), float(np.abs(delta_a.T @ q).max()))


def _mehrotra_step(cost, delta_a, pair_products, q, u, w, z, *, single: bool):
    """One predictor-corrector step from (q, u, w, z); returns the next point.

    ``single`` (keyword-only) forms the Schur complement from float32 products
    (``row_schur(single=)``).

    Raises
    ------
    SingleFalls
        ``single``, and a direction's refinement had not settled or no shift made the complement
        positive definite (the caller takes the step again).
    _Breakdown
        The Schur complement is not positive definite, or a direction is not finite.
    """
    K, K_out = q.shape
    m = delta_a.shape[1]
    theta = q / z
    gram = (pair_products @ theta).T.reshape(K_out, m, m)
    try:
        inverse_gram = np.linalg.inv(gram)
        inverse_gram = 0.5 * (inverse_gram + inverse_gram.transpose(0, 2, 1))
        inverse_gram[-1] = 0.0      # the last output's balances follow from the others' and the rows' sums
        schur = row_schur(delta_a, theta, inverse_gram, single=single)
    except np.linalg.LinAlgError as error:
        raise _Breakdown from error
    try:
        factor = shifted_cholesky(schur, _SHIFTS, single=single)
    except SchurBreakdown as error:
        raise _Breakdown from error

    def multipliers(g, r_rows, r_balance):
        # (du, dw) with theta (g + du + delta dw) summing to r_rows by row and balancing to r_balance
        inner = r_balance - delta_a.T @ (theta * g)                                   # (m, K_out)
        rhs = (r_rows - (theta * g).sum(axis=1)
               - (theta * (delta_a @ np.einsum("jab,bj->aj", inverse_gram, inner))).sum(axis=1))
        du = sla.cho_solve(factor, rhs, check_finite=False)
        dw = np.einsum("jab,bj->aj", inverse_gram, inner - delta_a.T @ (theta * du[:, None]))
        return du, dw

    r_rows = 1.0 - q.sum(axis=1)
    r_balance = -(delta_a.T @ q)
    r_balance[:, -1] = 0.0
    r_dual = cost - u[:, None] - delta_a @ w - z

    def direction(r_complement):
        g = r_complement / q - r_dual
        du, dw = multipliers(g, r_rows, r_balance)
        dq = theta * (g + du[:, None] + delta_a @ dw)
        previous = dq
        for _ in range(_REFINE):
            e_balance = r_balance - delta_a.T @ dq
            e_balance[:, -1] = 0.0
            ddu, ddw = multipliers(np.zeros_like(g), r_rows - dq.sum(axis=1), e_balance)
            du, dw = du + ddu, dw + ddw
            previous, dq = dq, theta * (g + du[:, None] + delta_a @ dw)
        if single:
            require_settled(dq - previous, dq)
        dz = r_dual - du[:, None] - delta_a @ dw
        if not (np.all(np.isfinite(dq)) and np.all(np.isfinite(dz))):
            raise _Breakdown
        return dq, du, dw, dz

    mu = float((q * z).mean())
    dq, _, _, dz = direction(-q * z)                                  # predictor (affine scaling)
    step_q, step_z = _to_boundary(q, dq), _to_boundary(z, dz)
    sigma = (float(((q + step_q * dq) * (z + step_z * dz)).mean()) / mu) ** 3
    dq, du, dw, dz = direction(sigma * mu - q * z - dq * dz)         # centred corrector
    step_q, step_z = _TO_BOUNDARY * _to_boundary(q, dq), _TO_BOUNDARY * _to_boundary(z, dz)
    return q + step_q * dq, u + step_z * du, w + step_z * dw, z + step_z * dz


def _to_boundary(value, change):
    """The largest step in [0, 1] along ``change`` that keeps ``value`` non-negative."""
    falling = change < 0
    if not falling.any():
        return 1.0
    return min(1.0, float(np.min(-value[falling] / change[falling])))
