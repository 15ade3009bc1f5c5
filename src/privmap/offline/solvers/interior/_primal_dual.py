"""A primal-dual interior point for program (19) on every pair, for many private classes.

Notation as in :mod:`._program`, and the budget in shares of delta, sum b(c, j) q(c, j) + s = 1
with b = p(c) D(c, j) / delta and a slack s >= 0.

Why this method
---------------
The fast solver's Newton systems on the dual have (|A| - 1) K_out unknowns, and its path among
nearly pure outputs needs more steps as the classes grow; the conic reference pays for an
exponential cone per entry of P. Here the variables are the table's entries themselves, and the
Hessian of J splits by output: for output j it is pr^T Gamma_j pr with pr the (|A| x R) prior
and Gamma_j = diag(1 / P_j) - 1 1^T / S_j (|A| x |A|, S_j = sum_a P(a, j)), of rank |A| - 1.

The method is Mehrotra's predictor-corrector on the optimality conditions

    grad J(q) + nu_c + lam b(c, j) = z(c, j),   q z = sigma mu,   s lam = sigma mu,

with the rows' multipliers nu, the budget's lam >= 0 and the dual slacks z >= 0. Each output's
block of its Newton system, pr^T Gamma_j pr + diag(z_j / q_j), is inverted by the Woodbury identity
(:func:`._program.woodbury_blocks`, W = q / z), and the system reduces to the rows' sums and the
budget: a dense (R + 1) x (R + 1) Schur complement (``.._row_schur``). One step costs
O(R^2 K_out |A|) (one matrix product) plus O(K_out |A|^3), linear in the classes. The log barrier
(:mod:`._barrier`), with the same Newton systems, took 114 to 212 steps on thirteen UCI Adult
programs (K = 256, 0.5 x Delta0, seven and fifteen classes); this point takes 45 to 59, and the
certified answers from it leak within 2.2e-6 bits of those from the barrier (less on seven). Each
direction gets :data:`_REFINE` steps of iterative refinement against the exact Hessian product:
the Woodbury form subtracts nearly equal terms near the optimum. Far from it the rows' Schur
complement is formed from float32 products, about three fifths of the time, until a direction's
last refinement correction exceeds ``.._row_schur.SINGLE_CORRECTION`` of it or no shift makes the
float32 complement positive definite, and in float64 from that step on (mixed-precision
refinement: ``SingleFalls``). A step is the largest within
:data:`_TO_BOUNDARY` of the boundary, halved until it lowers the barrier merit J - sigma mu
(sum log q + log s) (Armijo), as the Newton model of J fails where a posterior nears 0.

When it stops
-------------
The gap of an iterate is J less the exact dual bound LB of its own posteriors (the codebook
L = log P / (p(a) S)) and its lam, sum_c min_j (grad J + lam b)(c, j) - lam, valid whatever the
iterate. The path keeps the iterate of least gap among those within the budget to
:data:`_FEASIBLE`, and stops once that gap is within :data:`_STOP` of the tolerance, or within the
tolerance and no lower for :data:`_PATIENCE` steps, at a breakdown (the Schur complement loses its
last digits near the optimum; it is factorised with the least diagonal shift of
``._program.SHIFTS`` that keeps it positive definite), at the complementarity's floor
(:data:`_MU_FLOOR` of its start) or after :data:`_MAX_STEPS` steps. The kept iterate is answered
where its gap is within the tolerance: every one of thirteen UCI Adult programs at K = 256 (two
broke down near 5e-6 bits). Where it is not, :func:`.solve_interior` runs the log barrier. That
happens where outputs the optimum leaves empty keep posteriors as noisy as their few pairs and one
undercuts a row's support, so that the bound lags while J has converged: UCI Adult at K = 32 to
96 with 7 to 15 classes, gaps of 1e-5 to 6e-5 bits, and random priors with entries near 1e-9,
whose gap wandered between 1e-3 and 0.4 bits. The barrier's centring keeps those posteriors
consistent.

What it returns
---------------
The kept iterate's table restricted to the optimum's support as its duals see it
(:func:`_on_support`), its codebook L (every posterior of full support) and its multiplier. The
answer is *not* certified here: :func:`privmap.offline.solvers.solve` hands it to the fast
solver's polish (``solve_fast(polish=)``), whose pricing pass proves it (UCI Adult, K = 256: every
one of thirteen seven- and fifteen-class programs as given), or goes on from its duals.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import scipy.linalg as sla

from .._progress import log_fraction
from .._result import SolveResult
from .._row_schur import MixedPrecision, SchurBreakdown, require_settled, row_schur, shifted_cholesky
from ._program import LN2, SHIFTS, Instance, answer, leakage, start_table, support, woodbury_blocks

_MAX_STEPS = 100         # Mehrotra steps (UCI Adult, K = 256: 45 to 59)
_STOP = 0.1              # the path stops at a gap of this share of the tolerance
_PATIENCE = 5            # steps without a lower gap, once it is within the tolerance, that end the path
                         # (one UCI Adult program ran all 100 steps at a gap near 1.1e-6 bits under
                         # another BLAS thread count, where it otherwise stops at 46)
_FEASIBLE = 1e-9         # most excess of the budget used by a kept iterate, relative to the budget
_MU_FLOOR = 1e-14        # complementarity, relative to the start's, below which a step changes nothing
_TO_BOUNDARY = 0.995     # share of the step to the boundary of q, z, s, lam > 0 that a step takes
_ARMIJO = 1e-4           # share of the merit's predicted fall a step must reach
_STEP_FLOOR = 1e-3       # a step cut below this is taken as it is
_REFINE = 2              # iterative refinement steps of each Newton direction


@dataclasses.dataclass(frozen=True)
class _Point:
    """An iterate: strictly positive q, z, s and lam, and the objective's pieces at q."""

    q: np.ndarray         # (R, K_out), rows summing to 1
    s: float              # the budget's slack, in shares of delta
    nu: np.ndarray        # (R,) the rows' multipliers
    lam: float            # the budget's multiplier, nats per share of delta
    z: np.ndarray         # (R, K_out) dual slacks
    P: np.ndarray         # (A, K_out)
    S: np.ndarray         # (K_out,)
    L: np.ndarray         # (A, K_out) log(P / (p(a) S)), the outputs' codebook
    J: float              # nats
    gradient: np.ndarray  # (R, K_out) pr^T L, the gradient of J


class _Breakdown(Exception):
    """A step that broke down: it ends the path (:func:`_path`).

    A Schur complement no shift makes positive definite, or a direction that is not finite.
    """


def primal_dual(inst: Instance, tol: float, progress) -> tuple[SolveResult | None, str]:
    """Program (19) by the primal-dual point (module docstring) on a checked instance.

    ``tol`` is the polish's gap (nats), the path stopping at :data:`_STOP` of it; ``progress`` None
    or called with the fraction of the path done (the gap's fall, on a log scale). Returns the
    uncertified answer (:func:`._program.answer`: its table within the budget to :data:`_FEASIBLE`
    of it, ``solver`` = ``"interior-primal-dual"``, ``info`` with the steps, the path's own gap in
    bits and why it stopped) where the kept iterate's gap is within ``tol``, else None; and how the
    path ended. Raises nothing.
    """
    point, gap, steps, stopped = _path(inst, tol, progress)
    message = f"{steps} Mehrotra steps, gap {gap / LN2:.1e} bits, {stopped}"
    if point is None or gap > tol:
        return None, message
    table = _on_support(inst, point, point.J - gap, tol)
    return answer(inst, table, point.L, point.lam / inst.delta, solver="interior-primal-dual",
                  message=f"interior point: {message} (uncertified)",
                  info={"newton_steps": steps, "path_gap_bits": gap / LN2, "stopped": stopped}), message


def _point(inst: Instance, q, s, nu, lam, z) -> _Point:
    P, S, L, J = leakage(inst, q)
    return _Point(q=q, s=s, nu=nu, lam=lam, z=z, P=P, S=S, L=L, J=J, gradient=inst.pr.T @ L)


def _start(inst: Instance) -> _Point:
    """The dual-feasible start.

    The shared start table (:func:`._program.start_table`), lam = 1 and each row's nu putting its
    least z at p(c): the start is dual feasible.
    """
    q = start_table(inst)
    b = _shares(inst)
    point = _point(inst, q, 1.0 - float((b * q).sum()), np.zeros(q.shape[0]), 1.0, np.ones_like(q))
    reduced = point.gradient + point.lam * b
    nu = inst.pc - reduced.min(axis=1)
    return dataclasses.replace(point, nu=nu, z=reduced + nu[:, None])


def _shares(inst: Instance) -> np.ndarray:
    """The budget's coefficients b (R, K_out): p(c) D(c, j) / delta, in shares of delta."""
    return inst.B / inst.delta


def _gap(inst: Instance, point: _Point) -> float:
    """J less the exact dual bound of the point's codebook and lam (nats; module docstring)."""
    reduced = point.gradient + point.lam * _shares(inst)
    return point.J - (float(reduced.min(axis=1).sum()) - point.lam)


def _path(inst: Instance, tol: float, progress) -> tuple[_Point | None, float, int, str]:
    """Mehrotra steps from :func:`_start` until the gap is within :data:`_STOP` of ``tol`` (nats).

    Returns the kept iterate (least gap within the budget; None if none was), its gap, the steps
    and why the path stopped. Raises nothing: a breakdown ends the path.
    """
    point = _start(inst)
    b = _shares(inst)
    start_mu = _complementarity(point)
    first = _gap(inst, point)
    kept, kept_gap, kept_at = None, math.inf, 0
    precision = MixedPrecision()
    for steps in range(_MAX_STEPS + 1):
        gap = _gap(inst, point)
        if gap < kept_gap and float((b * point.q).sum()) <= 1.0 + _FEASIBLE:
            kept, kept_gap, kept_at = point, gap, steps
        if progress is not None and first > _STOP * tol:    # the kept gap, which never rises
            progress(log_fraction(first, kept_gap, _STOP * tol))
        if kept_gap <= _STOP * tol:
            return kept, kept_gap, steps, "gap within tolerance"
        if kept_gap <= tol and steps - kept_at >= _PATIENCE:
            return kept, kept_gap, steps, f"gap within tolerance, no lower for {_PATIENCE} steps"
        if _complementarity(point) <= _MU_FLOOR * start_mu:
            return kept, kept_gap, steps, "complementarity at round-off"
        if steps == _MAX_STEPS:
            break
        try:
            point = precision.step(_mehrotra_step, inst, point)
        except _Breakdown as failure:
            return kept, kept_gap, steps, str(failure)
    return kept, kept_gap, _MAX_STEPS, f"no certificate within {_MAX_STEPS} steps"


def _complementarity(point: _Point) -> float:
    return (float((point.q * point.z).sum()) + point.s * point.lam) / (point.q.size + 1)


def _mehrotra_step(inst: Instance, point: _Point, *, single: bool) -> _Point:
    """One predictor-corrector step.

    The affine direction, the centring sigma = (mu_aff / mu)^3, the corrected direction, and the
    largest common step within :data:`_TO_BOUNDARY` of the boundary, halved until the merit
    J - sigma mu (sum log q + log s) falls (Armijo, down to :data:`_STEP_FLOOR`). Rows are
    renormalised after the step (their sums hold up to round-off).

    ``single`` (keyword-only) forms the rows' Schur complement from float32 products
    (``row_schur(single=)``).

    Raises
    ------
    SingleFalls
        ``single``, and a direction's refinement had not settled or no shift made the complement
        positive definite (the caller takes the step again).
    _Breakdown
        The Schur complement is not positive definite under any shift, or a direction is not finite.
    """
    q, z, s, lam = point.q, point.z, point.s, point.lam
    b = _shares(inst)
    solve = _newton_system(inst, point, single=single)
    r_dual = point.gradient + point.nu[:, None] + lam * b - z
    r_rows = 1.0 - q.sum(axis=1)
    r_budget = 1.0 - float((b * q).sum()) - s
    mu = _complementarity(point)

    def direction(r_q, r_s):
        dq, ds, dnu, dlam = solve(r_q / q - r_dual, r_rows, r_budget, r_s)
        dz = (r_q - z * dq) / q
        if not (np.all(np.isfinite(dq)) and np.all(np.isfinite(dz)) and math.isfinite(ds + dlam)):
            raise _Breakdown("interior point: a Newton direction is not finite")
        return dq, ds, dnu, dlam, dz

    def longest(dq, ds, dlam, dz):
        return min(_to_boundary(q, dq), _to_boundary(z, dz), _to_boundary(np.array([s]), np.array([ds])),
                   _to_boundary(np.array([lam]), np.array([dlam])))

    dq, ds, _, dlam, dz = direction(-q * z, -s * lam)                            # predictor
    step = longest(dq, ds, dlam, dz)
    mu_affine = (float(((q + step * dq) * (z + step * dz)).sum())
                 + (s + step * ds) * (lam + step * dlam)) / (q.size + 1)
    sigma_mu = (mu_affine / mu) ** 3 * mu
    dq, ds, dnu, dlam, dz = direction(sigma_mu - q * z - dq * dz, sigma_mu - s * lam - ds * dlam)  # corrector
    step = _TO_BOUNDARY * longest(dq, ds, dlam, dz)
    merit = _merit(point, sigma_mu)
    slope = float(((point.gradient - sigma_mu / q) * dq).sum()) - sigma_mu / s * ds
    while True:                  # a direction that does not descend the merit is taken as it is
        q_next = q + step * dq
        trial = _point(inst, q_next / q_next.sum(axis=1, keepdims=True), s + step * ds, point.nu + step * dnu,
                       lam + step * dlam, z + step * dz)
        if slope >= 0 or _merit(trial, sigma_mu) <= merit + _ARMIJO * step * slope or step < _STEP_FLOOR:
            return trial
        step *= 0.5


def _merit(point: _Point, mu: float) -> float:
    """The barrier function J - mu (sum log q + log s) that a step must lower (nats)."""
    return point.J - mu * (float(np.log(point.q).sum()) + math.log(point.s))


def _newton_system(inst: Instance, point: _Point, *, single: bool):
    """The solver of the point's Newton system, refined :data:`_REFINE` times against the exact products.

    Its Schur complement comes from float32 products where ``single``: SingleFalls where no shift
    makes that positive definite, and from ``solve`` where the last refinement's correction has
    not settled, ``.._row_schur.require_settled``.
    ``solve(h, r_rows, r_budget, r_s)`` returns (dq, ds, dnu, dlam) with

        (H + diag(z / q)) dq + dnu + dlam b = h,   sum_j dq = r_rows,   b . dq + ds = r_budget,
        lam ds + s dlam = r_s,

    H the Hessian of J (module docstring). Raises _Breakdown when no shift of the Schur complement
    is positive definite.
    """
    pr, b, q, P, S = inst.pr, _shares(inst), point.q, point.P, point.S
    s, lam = point.s, point.lam
    A, K_out = P.shape
    R = q.shape[0]
    W = q / point.z
    T = woodbury_blocks(inst, W, P, S, 1.0)

    def inverse(V):                        # (R, K_out): B_j^{-1} v_j for every output j
        WV = W * V
        return WV - W * (pr.T @ np.einsum("jab,bj->aj", T, pr @ WV))

    def product(V):                        # (R, K_out): the exact B_j v_j
        M = pr @ V
        return pr.T @ (M / P - (M.sum(axis=0) / S)[None, :]) + V / W

    schur = np.empty((R + 1, R + 1))
    schur[:R, :R] = row_schur(pr.T, W, T, single=single)
    inv_b = inverse(b)
    schur[:R, R] = schur[R, :R] = inv_b.sum(axis=1)
    schur[R, R] = float((b * inv_b).sum()) + s / lam
    try:
        factor = shifted_cholesky(schur, SHIFTS, single=single)
    except SchurBreakdown as failure:
        raise _Breakdown("interior point: the Newton system lost positive definiteness") from failure

    def once(h, r_rows, r_budget, r_s):
        inv_h = inverse(h)
        y = sla.cho_solve(factor, np.r_[inv_h.sum(axis=1) - r_rows, float((b * inv_h).sum()) + r_s / lam - r_budget],
                          check_finite=False)
        dnu, dlam = y[:R], float(y[R])
        return inverse(h - dnu[:, None] - dlam * b), (r_s - s * dlam) / lam, dnu, dlam

    def solve(h, r_rows, r_budget, r_s):
        dq, ds, dnu, dlam = once(h, r_rows, r_budget, r_s)
        for _ in range(_REFINE):
            ddq, dds, ddnu, ddlam = once(h - (product(dq) + dnu[:, None] + dlam * b), r_rows - dq.sum(axis=1),
                                         r_budget - float((b * dq).sum()) - ds, r_s - (lam * ds + s * dlam))
            dq, ds, dnu, dlam = dq + ddq, ds + dds, dnu + ddnu, dlam + ddlam
        if single:
            require_settled(ddq, dq)
        return dq, ds, dnu, dlam

    return solve


def _to_boundary(value, change) -> float:
    """The largest step in [0, 1] along ``change`` that keeps ``value`` non-negative."""
    falling = change < 0
    if not falling.any():
        return 1.0
    return min(1.0, float(np.min(-value[falling] / change[falling])))


def _on_support(inst: Instance, point: _Point, bound: float, tol: float) -> np.ndarray:
    """The point's table restricted to the pairs of :func:`._program.support`, where that loses nothing.

    Restricted at its codebook and multiplier, the rows renormalised (R, K_out): a fifth of the
    pairs on UCI Adult (K = 256, 41 to 57 a row with seven and fifteen classes). It leaks a little
    more than the dense point (1e-7 to 2e-6 bits there), so it is returned where its own gap to
    the point's dual ``bound`` (nats) is within ``tol``, what the polish proves, and it stays
    within the budget to :data:`_FEASIBLE`; the point's own table otherwise (the duals' choice
    left out pairs the optimum needs).
    """
    keep = support(inst, point.q, point.L, point.lam / inst.delta)
    q = np.where(keep, point.q, 0.0)
    q /= q.sum(axis=1, keepdims=True)
    if float((_shares(inst) * q).sum()) > 1.0 + _FEASIBLE or leakage(inst, q)[3] - bound > tol:
        return point.q
    return q
