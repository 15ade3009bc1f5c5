"""A primal log-barrier interior point for program (19) on every pair, for many private classes.

Problem and notation as in :mod:`..fast._solver`: q (R x K_out, the active rows R with p(c) > 0),
P = p(a, c) q (|A| x K_out), J(q) = I(A; C_hat) in nats, budget sum p(c) q(c, j) D(c, j) <= delta.

Why this method
---------------
The fast solver's Newton systems on the dual have (|A| - 1) K_out unknowns, and its path among
nearly pure outputs needs more steps as the classes grow; the conic reference pays for an
exponential cone per entry of P. Here the variables are the table's entries themselves, and the
Hessian of J splits by output: for output j it is pr^T Gamma_j pr with pr the (|A| x R) prior
and Gamma_j = diag(1 / P_j) - 1 1^T / S_j (|A| x |A|, S_j = sum_a P(a, j)), of rank |A| - 1.
With the barrier -sum log q - log(slack), each output's block B_j = t pr^T Gamma_j pr + diag(1/q_j^2)
is inverted by the Woodbury identity through one |A| x |A| solve, and the Newton system reduces to
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

Measured (UCI Adult, K = 256, 0.5 x Delta0, one thread; benchmarks/README.md): 15 occupations,
116 to 212 steps and 3.4 to 6.8 CPU-s a program with its polish, each of six certified as given
by one pricing pass (the conic reference: 43 to 86 CPU-s; the fast path alone 100 on one, and
failed on another); seven marital statuses 150 to 172 steps, 2.0 CPU-s with the polish on a fold
program, and on the build's own program the polish followed its path (4.0 to 8.2 CPU-s in all;
the fast path 3.8 to 4.3).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Callable

import numpy as np
import scipy.linalg as sla
from threadpoolctl import threadpool_limits

from ..._errors import SolverError
from .._problem import check_instance
from .._result import SolveResult
from .._row_schur import row_schur

LN2 = math.log(2.0)
#: Most entries |A| x R x K_out of the arrays one step holds (several of them, float64):
#: 2^24 is 128 MiB each, UCI Adult's 15 occupations at K = 1,024.
MAX_ENTRIES = 1 << 24
_GROW = 10.0             # t grows by this factor per centring (30: more steps; 100: the Schur
                         # complement lost positive definiteness near t = 1e11)
_CENTRED = 1e-7          # a centring stops when half the Newton decrement is below this share of |F|
                         # (1e-9: UCI Adult's 15 occupations no longer certified as given)
_MAX_STEPS = 400         # Newton steps in all
_T_MAX = 1e12            # t above which the Schur complement loses its last digits
_REFINE = 2              # iterative refinement steps of each Newton direction
_TO_BOUNDARY = 0.99      # share of the step to the boundary of q > 0, slack > 0 that a step may take
_ARMIJO = 0.25
_JITTER = 1e-13          # the first diagonal shift of a Schur complement round-off made indefinite
_STEP_FLOOR = 1e-12      # a line search cutting the step below this has stalled
_SUPPORT_NATS = 1e-3    # pairs within this of their row's least z(c, j) are the optimum's support
                         # (_on_support; 1e-4 and 1e-5: sparser, and some polishes had to follow
                         # their path on UCI Adult's occupations)
_START_MIX = 0.5         # most weight of the uniform table in the start (each row's cheapest output else)


@dataclasses.dataclass(frozen=True)
class _Instance:
    """Program (19) restricted to the classes and rows with mass, in the arrays a step reads."""

    pr: np.ndarray        # (A, R) p(a, c) of the active rows
    pc: np.ndarray        # (R,) p(c)
    alpha: np.ndarray     # (A, R) p(a | c)
    Dr: np.ndarray        # (R, K_out) distortion of the active rows
    B: np.ndarray         # (R, K_out) p(c) D(c, j): the budget's coefficients
    log_p_a: np.ndarray   # (A,)
    pair_products: np.ndarray  # (A * A, R) p(a, c) p(b, c), for the blocks' Gram matrices
    delta: float
    least: float          # sum_c p(c) min_j D(c, j)


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


def solve_interior(p_ac, distortion, delta, *, tol_bits: float = 1e-5,
                   progress: Callable[[float], None] | None = None) -> SolveResult:
    """Program (19) by a primal barrier interior point on every pair (module docstring).

    Parameters
    ----------
    p_ac : array_like, shape (n_private, K)
        Joint prior p(a, c).
    distortion : array_like, shape (K, K_out)
        d(c, c_hat), finite on every row with mass.
    delta : float
        Budget on the expected distortion, above the least any table reaches.
    tol_bits : float, keyword-only
        The barrier's own estimate of the gap to stop at (bits); the answer is not certified.
    progress : callable(float) or None, keyword-only
        Called with the fraction of the path done.

    Returns
    -------
    SolveResult
        ``table`` (K, K_out) (rows without mass on their cheapest output) with its leakage and
        distortion, which is within ``delta`` up to the path's round-off (a millionth of it at
        most, measured; the polish mixes the table to meet the budget exactly), ``multiplier`` (bits
        per unit distortion), ``codebook`` (n_private, K_out), ``gap_bits`` = inf,
        ``solver`` = ``"interior-barrier"``, ``info`` with the Newton steps and the last t.

    Raises
    ------
    ValueError
        Malformed instance (:func:`..._problem.check_instance`).
    InfeasibleError
        ``delta`` below the least distortion.
    SolverError
        An instance this method does not take (a forbidden pair on a row with mass, a budget
        equal to the least distortion, more than :data:`MAX_ENTRIES` entries), or a path that
        stalls, breaks down or runs past :data:`_MAX_STEPS` steps.
    """
    p_ac, D, delta = check_instance(p_ac, distortion, delta)
    keep = p_ac.sum(axis=1) > 0
    p = p_ac[keep]
    rows = np.flatnonzero(p.sum(axis=0) > 0)
    entries = p.shape[0] * rows.size * D.shape[1]
    if entries > MAX_ENTRIES:
        raise SolverError(f"interior point: {entries:,} entries |A| x K x K_out, more than {MAX_ENTRIES:,}")
    if not np.all(np.isfinite(D[rows])):
        raise SolverError("interior point: a forbidden pair on a row with mass (every pair is a variable here)")
    inst = _instance(p, rows, D, delta)
    if delta <= inst.least * (1.0 + 1e-9):
        raise SolverError("interior point: the budget is the least distortion, so no point is strictly inside")
    with threadpool_limits(limits=1):     # small products: BLAS threads spin (see fast._solver)
        point, t, steps, stopped = _path(inst, tol_bits * LN2, progress)
        _, mu = _dual_costs(inst, point, t)
        support, t_support, steps = _on_support(inst, point, t, steps, tol_bits * LN2)
    return _result(p_ac, keep, rows, D, inst, point, mu, support, t_support, steps, stopped)


def _instance(p, rows, D, delta) -> _Instance:
    pr = p[:, rows]
    pc = pr.sum(axis=0)
    Dr = D[rows]
    A = pr.shape[0]
    return _Instance(pr=pr, pc=pc, alpha=pr / pc, Dr=Dr, B=pc[:, None] * Dr, log_p_a=np.log(p.sum(axis=1)),
                     pair_products=(pr[:, None, :] * pr[None, :, :]).reshape(A * A, -1), delta=float(delta),
                     least=float(pc @ Dr.min(axis=1)))


def _evaluate(inst: _Instance, q: np.ndarray, free: np.ndarray, slack: float, t: float) -> _Point:
    P = inst.pr @ q
    S = P.sum(axis=0)
    L = np.log(P) - np.log(S)[None, :] - inst.log_p_a[:, None]
    J = float((P * L).sum())
    return _Point(q=q, free=free, slack=slack, F=t * J - float(np.log(q[free]).sum()) - math.log(slack),
                  J=J, P=P, S=S, L=L)


def _start(inst: _Instance) -> tuple[np.ndarray, float]:
    """Each row's cheapest output mixed with the uniform table, inside the budget by half its room."""
    R, K_out = inst.Dr.shape
    low = np.zeros((R, K_out))
    low[np.arange(R), inst.Dr.argmin(axis=1)] = 1.0
    uniform_cost = float(inst.B.sum()) / K_out
    room = inst.delta - inst.least
    mix = _START_MIX if uniform_cost <= inst.least else min(_START_MIX, 0.5 * room / (uniform_cost - inst.least))
    q = (1.0 - mix) * low + mix / K_out
    return q, inst.delta - float((inst.B * q).sum())


def _path(inst: _Instance, tol: float, progress) -> tuple[_Point, float, int, str]:
    """Centre at t, then t x :data:`_GROW`, until the gap J - LB is at most ``tol`` (nats).

    Returns the centred point of least gap, its t, the Newton steps and why the path stopped.
    Past the first centring, a centring that breaks down (round-off in the Schur complement, a
    stalled line search) or a t above :data:`_T_MAX` ends the path: the duals of the best point
    are still a start for the polish, which proves or improves them. (Near t = 1e11 round-off can
    leave a centred point whose gap is larger than the last one's: UCI Adult's marital status.)"""
    q, slack = _start(inst)
    point = _evaluate(inst, q, np.ones(q.shape, dtype=bool), slack, 1.0)
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


def _on_support(inst: _Instance, point: _Point, t: float, steps: int, tol: float) -> tuple[_Point, float, int]:
    """The point restricted to the optimum's support as its duals see it, centred there.

    An interior point ends at the centre of the optimal face: every pair keeps mass (1 / (t x its
    reduced cost) off the support), so its table is dense, and its downstream costs follow (the
    codebook step's weighted medians go over every pair). Kept: the pairs within
    :data:`_SUPPORT_NATS` of their row's least z(c, j) at the point's own codebook and multiplier,
    and each output's largest contributor of every class (a class cut out of an output would
    put log 0 into J); the rows renormalised. The barrier is then centred on those pairs only,
    t rising tenfold until their own count over t is below a tenth of ``tol``. Its answer has one
    pair in five of the dense point's (UCI Adult, K = 256: 48 a row with seven classes, 42 with
    fifteen) and, on most programs, a lower leakage; the dense point's duals certify it
    (:func:`_result`). Where the first restricted centring breaks down or meets the step limit, or
    the restricted point leaks more than the dense one (the duals' choice left out pairs the optimum
    needs: one of five 15-class UCI Adult programs, 0.00334 against 0.00319 bits, whose polish then
    followed the dual path for 97 CPU-s), the dense point is kept; where a later centring breaks
    down, the last centred restricted point."""
    z, _ = _dual_costs(inst, point, t)
    keep = z <= z.min(axis=1, keepdims=True) + _SUPPORT_NATS
    A, K_out = point.P.shape
    weight = inst.pr[:, :, None] * point.q[None, :, :]             # (A, R, K_out) p(a, c) q(c, j)
    keep[weight.argmax(axis=1).ravel(), np.tile(np.arange(K_out), A)] = True
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


def _gap(inst: _Instance, point: _Point, t: float) -> float:
    """J less the dual bound LB of the point's codebook and multiplier (nats, no rounding margin:
    the polish's pass proves it)."""
    z, mu = _dual_costs(inst, point, t)
    return point.J - (float(inst.pc @ z.min(axis=1)) - mu * inst.delta)


def _dual_costs(inst: _Instance, point: _Point, t: float) -> tuple[np.ndarray, float]:
    """z(c, j) (R, K_out, nats) at the point's codebook and its multiplier mu = 1 / (t slack)."""
    mu = 1.0 / (t * point.slack)
    return inst.alpha.T @ point.L + mu * inst.Dr, mu


def _centre(inst: _Instance, point: _Point, t: float, steps: int) -> tuple[_Point, int]:
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


def _direction(inst: _Instance, point: _Point, t: float):
    """The Newton direction (dq, dslack) at ``point`` and the barrier's gradient (grad_q, grad_s).

    Raises SolverError when the Schur complement is not positive definite."""
    pr, q, P, S, B = inst.pr, point.q, point.P, point.S, inst.B
    A, K_out = P.shape
    R = q.shape[0]
    s = point.slack
    free = point.free
    grad_q = np.where(free, t * (pr.T @ point.L) - 1.0 / np.where(free, q, 1.0), 0.0)
    grad_s = -1.0 / s
    q2 = q * q
    # each output's block: B_j^{-1} = Q_j^2 - Y_j T_j Y_j^T, Y_j = Q_j^2 pr^T, T_j = (I + t Gamma_j G_j)^{-1} t Gamma_j
    gram = (inst.pair_products @ q2).T.reshape(K_out, A, A)
    gamma = np.zeros((K_out, A, A))
    gamma[:, np.arange(A), np.arange(A)] = (1.0 / P).T
    gamma -= (1.0 / S)[:, None, None]
    T = t * np.linalg.solve(np.eye(A)[None] + t * gamma @ gram, gamma)
    T = 0.5 * (T + T.transpose(0, 2, 1))

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
    factor = _cholesky(schur, t)

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


def _cholesky(schur: np.ndarray, t: float):
    """The Cholesky factor of the Schur complement, with a diagonal shift of :data:`_JITTER` times
    its mean diagonal (then 100 and 10,000 times that) where round-off has made it indefinite; the
    refinement against the exact products corrects the direction the shift bends. Raises
    SolverError when even the largest shift fails."""
    shift = _JITTER * float(np.mean(np.diag(schur)))
    for attempt in range(4):
        try:
            return sla.cho_factor(schur + (shift * 100.0 ** (attempt - 1) if attempt else 0.0) * np.eye(len(schur)),
                                  lower=True, check_finite=False)
        except np.linalg.LinAlgError as failure:
            last = failure
    raise _Breakdown(f"interior point: the Newton system lost positive definiteness at t = {t:.1e}") from last


def _line_search(inst: _Instance, point: _Point, t: float, dq, ds, decrement) -> _Point:
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


def _result(p_ac, keep, rows, D, inst: _Instance, point: _Point, mu: float, support: _Point, t: float, steps: int,
            stopped: str) -> SolveResult:
    """The restricted point's table with the dense point's duals: its codebook (every posterior of
    full support) and its multiplier ``mu`` (nats per unit distortion)."""
    K, K_out = D.shape
    table = np.zeros((K, K_out))
    table[rows] = support.q
    idle = np.setdiff1d(np.arange(K), rows)
    table[idle, np.argmin(D[idle], axis=1)] = 1.0
    codebook = np.zeros((p_ac.shape[0], K_out))
    codebook[keep] = point.L
    distortion = float((inst.B * support.q).sum())
    return SolveResult(table=table, leakage_bits=support.J / LN2, distortion=distortion,
                       multiplier=mu / LN2, gap_bits=math.inf, status="optimal",
                       solver="interior-barrier",
                       message=f"interior point: {steps} Newton steps, t = {t:.1e}, {stopped} (uncertified)",
                       info={"newton_steps": steps, "t": t, "stopped": stopped}, codebook=codebook)
