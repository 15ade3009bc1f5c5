"""A primal log-barrier interior point for program (19) on every pair: the primal-dual point's fallback.

Notation as in :mod:`._program`. The barrier -sum log q - log(slack) at temperature 1 / t keeps
every iterate centred, so it is slower than the primal-dual point (:mod:`._primal_dual`: 114 to 212
steps on UCI Adult where that takes 45 to 59) and steadier: it answers where the primal-dual
point's own bound lags among nearly empty outputs (UCI Adult at K = 32 to 96 with 7 to 15 classes;
random priors with entries near 1e-9).

Method
------
Each output's block t H_j + diag(1/q_j^2) of the Newton system is inverted by the Woodbury
identity (:func:`._program.woodbury_blocks`, W = q^2), and the Newton system reduces to
the rows' equalities and the budget: a dense (R + 1) x (R + 1) Schur complement
(``.._row_schur``). One step costs O(R^2 K_out |A|) (one matrix product) plus O(K_out |A|^3),
linear in the classes; the step count follows the barrier's path (t grows tenfold per centring),
100 to 200 steps whatever |A|.

The Woodbury form subtracts nearly equal terms once t is large, so each direction gets
:data:`_REFINE` steps of iterative refinement against the exact Hessian product.

What it returns
---------------
The path stops at the centred point of least gap J - LB (:func:`_path`), whose multiplier
mu = 1 / (t slack) and codebook log r_j(a) - log p(a) (its outputs' posteriors, every one of full
support: no pair is left out, so no posterior is cut to zero) are the answer's duals. That point
is the centre of the optimal face, every pair positive, so the table returned is the barrier
centred again on the pairs its duals choose (:func:`_on_support`): a fifth of them at K = 256, and
a lower leakage. Its distortion is within the budget up to the path's round-off. The answer is
*not* certified here: :func:`privmap.offline.solvers.solve` hands it to the fast solver's polish
(``solve_fast(polish=)``), whose pricing pass proves it, or goes on from its duals.

Measured (UCI Adult, K = 256, 0.5 x Delta0, one thread): 15 occupations, 114 to 212 steps and
3.1 to 6.0 CPU-s a program, each certified as given by the polish's pricing pass; seven marital
statuses 137 to 171 steps, 1.6 to 3.0 CPU-s, and on the build's own program the polish followed its
path (6.0 CPU-s more).
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import scipy.linalg as sla

from ..._errors import SolverError
from .._result import SolveResult
from .._row_schur import SchurBreakdown, row_schur, shifted_cholesky
from ._program import SHIFTS, Instance, answer, leakage, start_table, support, woodbury_blocks

_GROW = 10.0             # t grows by this factor per centring (30: more steps; 100: the Schur
                         # complement lost positive definiteness near t = 1e11)
_CENTRED = 1e-7          # a centring stops when half the Newton decrement is below this share of |F|
                         # (1e-9: UCI Adult's 15 occupations no longer certified as given)
_MAX_STEPS = 400         # Newton steps in all
_T_MAX = 1e12            # t above which the Schur complement loses its last digits
_REFINE = 2              # iterative refinement steps of each Newton direction
_TO_BOUNDARY = 0.99      # share of the step to the boundary of q > 0, slack > 0 that a step may take
_ARMIJO = 0.25
_STEP_FLOOR = 1e-12      # a line search cutting the step below this has stalled


@dataclasses.dataclass
class _Point:
    """A strictly feasible point, the barrier's value at temperature 1 / t and what it is made of."""

    q: np.ndarray         # (R, K_out) > 0 where free, 0 where fixed; rows sum to 1
    free: np.ndarray      # (R, K_out) bool: the pairs still variables (the others are fixed at 0)
    slack: float          # delta - budget used, > 0
    F: float              # t J - sum log q - log slack
    J: float              # nats
    P: np.ndarray         # (A, K_out)
    S: np.ndarray         # (K_out,)
    L: np.ndarray         # (A, K_out) log(P / (p(a) S)), the outputs' codebook


def barrier(inst: Instance, tol: float, progress) -> SolveResult:
    """Program (19) by the log barrier (module docstring) on a checked instance.

    ``tol`` is the path's own gap to stop at (nats); ``progress`` None or called with the fraction
    of the path done. Returns the uncertified answer (:func:`._program.answer`), ``solver`` =
    ``"interior-barrier"``, ``info`` with the Newton steps and the last t. Raises SolverError when
    the first centring breaks down or the path runs past :data:`_MAX_STEPS` steps.
    """
    point, t, steps, stopped = _path(inst, tol, progress)
    _, mu = _dual_costs(inst, point, t)
    restricted, t_support, steps = _on_support(inst, point, t, steps, tol)
    return answer(inst, restricted.q, point.L, mu, solver="interior-barrier",
                  message=f"interior point: {steps} Newton steps, t = {t_support:.1e}, {stopped} (uncertified)",
                  info={"newton_steps": steps, "t": t_support, "stopped": stopped})


def _evaluate(inst: Instance, q: np.ndarray, free: np.ndarray, slack: float, t: float) -> _Point:
    P, S, L, J = leakage(inst, q)
    return _Point(q=q, free=free, slack=slack, F=t * J - float(np.log(q[free]).sum()) - math.log(slack),
                  J=J, P=P, S=S, L=L)


def _path(inst: Instance, tol: float, progress) -> tuple[_Point, float, int, str]:
    """Centre at t, then t x :data:`_GROW`, until the gap J - LB is at most ``tol`` (nats).

    Returns the centred point of least gap, its t, the Newton steps and why the path stopped.
    Past the first centring, a centring that breaks down (round-off in the Schur complement, a
    stalled line search) or a t above :data:`_T_MAX` ends the path: the duals of the best point
    are still a start for the polish, which proves or improves them. (Near t = 1e11 round-off can
    leave a centred point whose gap is larger than the last one's: UCI Adult's marital status.)
    """
    q = start_table(inst)
    point = _evaluate(inst, q, np.ones(q.shape, dtype=bool), inst.delta - float((inst.B * q).sum()), 1.0)
    n = q.size + 1
    t = max(1.0, n / max(point.J, 1e-6))
    first, last = math.log(t), math.log(max(t, 2.0 * n / tol))
    point, steps = _centre(inst, _evaluate(inst, point.q, point.free, point.slack, t), t, 0)
    gap = _gap(inst, point, t)
    best = (gap, point, t)
    stopped = "gap within tolerance"
    while gap > tol:
        if t * _GROW > _T_MAX:
            stopped = f"t would pass {_T_MAX:.0e}"
            break
        if progress is not None:
            progress(min(1.0, (math.log(t * _GROW) - first) / max(last - first, 1e-12)))
        try:
            point, steps = _centre(inst, _evaluate(inst, point.q, point.free, point.slack, t * _GROW), t * _GROW, steps)
        except _Breakdown as failure:
            stopped = str(failure)
            break
        t *= _GROW
        gap = _gap(inst, point, t)
        if gap < best[0]:
            best = (gap, point, t)
    return best[1], best[2], steps, stopped


class _Breakdown(SolverError):
    """A centring that broke down: round-off in the Schur complement, or a stalled line search."""


def _on_support(inst: Instance, point: _Point, t: float, steps: int, tol: float) -> tuple[_Point, float, int]:
    """The point restricted to the optimum's support as its duals see it, centred there.

    An interior point ends at the centre of the optimal face: every pair keeps mass (1 / (t x its
    reduced cost) off the support), so its table is dense. Kept: the pairs of
    :func:`._program.support` at the point's own codebook and multiplier, the rows renormalised.
    The barrier is then centred on those pairs only,
    t rising tenfold until their own count over t is below a tenth of ``tol``. Its answer has one
    pair in five of the dense point's (UCI Adult, K = 256: 48 a row with seven classes, 42 with
    fifteen) and, on most programs, a lower leakage; the dense point's duals certify it
    (:func:`barrier`). Where the first restricted centring breaks down or meets the step limit, or
    the restricted point leaks more than the dense one (the duals' choice left out pairs the optimum
    needs: one of five 15-class UCI Adult programs, 0.00334 against 0.00319 bits, whose polish then
    followed the dual path for 97 CPU-s), the dense point is kept; where a later centring breaks
    down, the last centred restricted point.
    """
    keep = support(inst, point.q, point.L, _dual_costs(inst, point, t)[1])
    q = np.where(keep, point.q, 0.0)
    q /= q.sum(axis=1, keepdims=True)
    slack = point.slack + float((inst.B * (point.q - q)).sum())   # the change, not delta - E d (digits)
    if slack <= 0:
        return point, t, steps
    t_dense = t
    try:
        restricted, steps = _centre(inst, _evaluate(inst, q, keep, slack, t), t, steps)
    except SolverError:
        return point, t, steps
    try:
        while (keep.sum() + 1) / t > tol / 10 and t * _GROW <= _T_MAX:
            centred, steps = _centre(inst, _evaluate(inst, restricted.q, keep, restricted.slack, t * _GROW),
                                     t * _GROW, steps)
            restricted, t = centred, t * _GROW
    except SolverError:                   # a breakdown, or the step limit: the last centred point
        pass
    if restricted.J > point.J:            # pairs the optimum needs were left out: the dense point's
        return point, t_dense, steps      # duals certify its own table, not this one
    return restricted, t, steps


def _gap(inst: Instance, point: _Point, t: float) -> float:
    """J less the dual bound LB of the point's codebook and multiplier.

    In nats, no rounding margin: the polish's pass proves it.
    """
    z, mu = _dual_costs(inst, point, t)
    return point.J - (float(inst.pc @ z.min(axis=1)) - mu * inst.delta)


def _dual_costs(inst: Instance, point: _Point, t: float) -> tuple[np.ndarray, float]:
    """z(c, j) (R, K_out, nats) at the point's codebook and its multiplier mu = 1 / (t slack)."""
    mu = 1.0 / (t * point.slack)
    return inst.alpha.T @ point.L + mu * inst.Dr, mu


def _centre(inst: Instance, point: _Point, t: float, steps: int) -> tuple[_Point, int]:
    """Newton's method on the barrier at t from ``point``, with the rows' sums and the budget held."""
    while True:
        steps += 1
        if steps > _MAX_STEPS:
            raise SolverError(f"interior point: no answer within {_MAX_STEPS} Newton steps (t = {t:.1e})")
        dq, ds, grad_q, grad_s = _direction(inst, point, t)
        decrement = -(float((grad_q * dq).sum()) + grad_s * ds)
        if decrement / 2.0 < _CENTRED * max(1.0, abs(point.F)) or decrement < 0:
            return point, steps
        point = _line_search(inst, point, t, dq, ds, decrement)


def _direction(inst: Instance, point: _Point, t: float):
    """The Newton direction (dq, dslack) at ``point`` and the barrier's gradient (grad_q, grad_s).

    Raises SolverError when the Schur complement is not positive definite.
    """
    pr, q, P, S, B = inst.pr, point.q, point.P, point.S, inst.B
    R = q.shape[0]
    s = point.slack
    free = point.free
    grad_q = np.where(free, t * (pr.T @ point.L) - 1.0 / np.where(free, q, 1.0), 0.0)
    grad_s = -1.0 / s
    q2 = q * q
    T = woodbury_blocks(inst, q2, P, S, t)

    def inverse(V):                        # (R, K_out): B_j^{-1} v_j for every output j
        QV = q2 * V
        return QV - q2 * (pr.T @ np.einsum("jab,bj->aj", T, pr @ QV))

    def hessian(V):                        # (R, K_out): the exact product B_j v_j on the free pairs
        M = pr @ V
        return np.where(free, t * (pr.T @ (M / P - (M.sum(axis=0) / S)[None, :])) + V / np.where(free, q2, 1.0), 0.0)

    schur = np.empty((R + 1, R + 1))
    schur[:R, :R] = row_schur(pr.T, q2, T)
    inv_b = inverse(B)
    schur[:R, R] = schur[R, :R] = inv_b.sum(axis=1)
    schur[R, R] = float((B * inv_b).sum()) + s * s
    try:
        factor = shifted_cholesky(schur, SHIFTS)
    except SchurBreakdown as failure:
        raise _Breakdown(f"interior point: the Newton system lost positive definiteness at t = {t:.1e}") from failure

    def constrained(r_q, r_s, r_rows, r_budget):
        # the KKT system [H E^T b; E; b^T 1][dq, ds; nu, lam] = [r_q, r_s; r_rows, r_budget]
        h = inverse(r_q)
        y = sla.cho_solve(factor, np.r_[h.sum(axis=1) - r_rows, float((B * h).sum()) + s * s * r_s - r_budget],
                          check_finite=False)
        nu, lam = y[:R], y[R]
        return inverse(r_q - nu[:, None] - lam * B), s * s * (r_s - lam), nu, lam

    dq, ds, nu, lam = constrained(-grad_q, -grad_s, np.zeros(R), 0.0)
    for _ in range(_REFINE):
        ddq, dds, dnu, dlam = constrained(-(grad_q + hessian(dq) + nu[:, None] + lam * B),
                                          -(grad_s + ds / (s * s) + lam), -dq.sum(axis=1),
                                          -(float((B * dq).sum()) + ds))
        dq, ds, nu, lam = dq + ddq, ds + dds, nu + dnu, lam + dlam
    return dq, ds, grad_q, grad_s


def _line_search(inst: Instance, point: _Point, t: float, dq, ds, decrement) -> _Point:
    """Backtracking from the largest step that keeps q and the slack inside (Armijo)."""
    step = 1.0
    falling = (dq < 0) & point.free
    if falling.any():
        step = min(step, _TO_BOUNDARY * float(np.min(-point.q[falling] / dq[falling])))
    if ds < 0:
        step = min(step, _TO_BOUNDARY * (-point.slack / ds))
    while step >= _STEP_FLOOR:
        q = point.q + step * dq
        q /= q.sum(axis=1, keepdims=True)   # the step keeps the rows' sums up to round-off: restored
        slack = point.slack + step * ds     # its own variable: delta - E d loses digits near the optimum
        if slack > 0 and q[point.free].min() > 0:
            trial = _evaluate(inst, q, point.free, slack, t)
            if trial.F <= point.F - _ARMIJO * step * decrement:
                return trial
        step *= 0.5
    raise _Breakdown(f"interior point: the line search stalled at t = {t:.1e}")
