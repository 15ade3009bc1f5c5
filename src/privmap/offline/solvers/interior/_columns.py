"""Program (19) by column generation over the outputs.

The interior point on a few outputs, every other output priced by the best codebook it could
be given.

Why
---
The optimum uses few of the outputs it is offered: UCI Adult with 15 occupations private at
K = 1,024 and 0.5 x Delta0, 183 of 1,024 carry mass above 1e-4, yet every Newton step of the
interior point on every pair costs O(R^2 K_out |A|) and no output empties along its path. On those
183 outputs alone the point took 11.6 CPU-s against 60.8 on all of them. What makes a smaller
alphabet an answer of the whole program is the dual bound: each left-out output needs a codebook
that undercuts no row's least reduced cost, and the outputs' codebooks are the dual's own variables,
one per output, so each left-out output can be given the best one for it alone (:func:`price`).

Method
------
1. ``kept``: the outputs offered to start from (``solve_interior(start_outputs=)``: a build
   offers its Delta0 table's), widened with the cheapest outputs of the rows that cost the most
   until its least distortion leaves half the budget's room above the whole alphabet's
   (:func:`_within_reach`).
2. The interior point on ``D[:, kept]`` (``._solve.point``): its codebook L_kept and multiplier
   mu give each row's least reduced cost m_c = min_{j in kept} alpha_c^T L_j + mu D(c, j) (nats
   per unit p(c)), and the restricted bound sum_c p(c) m_c - mu delta.
3. Each left-out output j gets the codebook l_j of largest t_j = min_c alpha_c^T l_j + mu D(c, j)
   - m_c among those with sum_a p(a) e^{l_j(a)} = 1 (:func:`price`). The whole program's bound is
   the restricted one less what the left-out outputs undercut, sum_c p(c) max(0, -min_j
   (alpha_c^T l_j + mu D(c, j) - m_c)).
4. Where that loss is within :data:`LOSS` of the tolerance, the answer is the restricted table
   with the codebooks L_kept and l_j, for the polish to prove over every pair
   (``solve_fast(polish=)``). Otherwise the outputs with t_j < 0 join ``kept`` and step 2 runs
   again, cold.

On UCI Adult's occupations at K = 1,024 this starts from Delta0's 187 outputs, adds 73, and the
polish proves the second round's answer as given: 27.4 CPU-s in all against 68.1 on every output
(``benchmarks/bench_many_classes.py --part solves``). After :data:`MAX_ROUNDS` rounds, or once
``kept`` holds :data:`MOST_SHARE` of the outputs, the point runs on every output instead; below
:data:`MIN_OUTPUTS` outputs it does so from the start.
"""
from __future__ import annotations

import math

import numpy as np

from .._result import SolveResult
from ._program import LN2, Instance, instance

#: Fewest outputs from which the rounds save more than they cost (UCI Adult, one program at
#: 0.5 x Delta0, CPU-s from the Delta0 table's outputs against on every output: K = 256, 1.0 / 1.6
#: with marital status, 2.0 / 1.4 with occupation, 1.0 / 1.0 with the work class; K = 512, 4.5 to
#: 4.7 against 6.7 to 9.6).
MIN_OUTPUTS = 512
LOSS = 0.1          # share of the tolerance the left-out outputs may take from the bound
MAX_ROUNDS = 6      # restricted solves before the point runs on every output
MOST_SHARE = 0.5    # share of the outputs past which the point runs on every output
_TAU = (1.0, 1e-8)   # the smoothing's first and last temperatures in :func:`price` (nats)
_TAU_SHRINK = 0.3    # its factor between stages
_NEWTON = 5          # Newton steps at each temperature
_FLOOR = 1e-12       # least entry of a starting posterior (a log of 0 would be -inf)
_ARMIJO = 1e-4       # share of the predicted rise a step must reach
_HALVINGS = 30       # most halvings of a step


def restricted_outputs(inst: Instance, start_outputs: np.ndarray) -> np.ndarray:
    """The outputs to solve on first (sorted indices into the instance's outputs).

    ``start_outputs`` widened by :func:`_within_reach` (none offered: the one output of least
    expected distortion).
    """
    kept = np.unique(start_outputs) if start_outputs.size else np.array([int(np.argmin(inst.pc @ inst.Dr))])
    return _within_reach(inst, kept)


def _within_reach(inst: Instance, kept: np.ndarray) -> np.ndarray:
    """``kept`` with the cheapest outputs of its costliest rows added.

    The fewest rows whose excess over their cheapest output brings the least distortion on
    ``kept`` down to halfway between the whole alphabet's least and the budget: the restricted
    program then has room to trade.
    """
    cheapest = inst.Dr.argmin(axis=1)
    excess = inst.pc * (inst.Dr[:, kept].min(axis=1) - inst.Dr[np.arange(cheapest.size), cheapest])
    target = 0.5 * (inst.delta - inst.least)
    over = float(excess.sum()) - target
    if over <= 0:
        return kept
    order = np.argsort(-excess)
    rows = order[:int(np.searchsorted(np.cumsum(excess[order]), over)) + 1]
    return np.union1d(kept, cheapest[rows])


def price(inst: Instance, E: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each left-out output's best codebook against the rows' least reduced costs.

    Or proof that none certifies it.

    For each column e of ``E`` (e_c = mu D(c, j) - m_c, nats per unit p(c)) the best value is
    t* = max t(l), t(l) = min_c alpha_c^T l + e_c over codebooks l with sum_a p(a) e^{l_a} = 1, a
    concave program in |A| variables. Written l = theta - log sum_a p(a) e^{theta_a}, the minimum
    is smoothed to -tau log sum_c exp(-(alpha_c^T l + e_c) / tau), concave in theta, whose Hessian
    is (sum_c w_c alpha_c alpha_c^T - pi pi^T) / tau + diag(r) - r r^T (w the rows' softmax
    weights, pi = alpha w, r the codebook's posterior p(a) e^l): :data:`_NEWTON` damped Newton
    steps at each temperature from :data:`_TAU` down by :data:`_TAU_SHRINK`, all outputs at once,
    from the posterior of the row with the least e. Each iterate's exact t(l) bounds t* from
    below, and its weights from above: t* <= KL(pi || p) + w^T e for any weights w over the rows
    (the best l against a fixed mixture of rows is log(pi / p)). An output is done once its sign
    is decided, t(l) >= 0 (it cannot lower the bound) or the upper bound < 0 (it would).

    Parameters
    ----------
    inst : Instance
        The whole program (its active rows and classes).
    E : ndarray, shape (R, n)
        The left-out outputs' e, one column each.

    Returns
    -------
    t : ndarray, shape (n,)
        The best exact t(l) found for each output (nats per unit p(c)): >= 0 where the output
        undercuts no row.
    upper : ndarray, shape (n,)
        The least upper bound found on t* (nats per unit p(c)).
    codebooks : ndarray, shape (A, n)
        The codebooks l of ``t`` (nats), each with sum_a p(a) e^{l_a} = 1.
    """
    alpha, log_p = inst.alpha, inst.log_p_a[:, None]
    A, n = alpha.shape[0], E.shape[1]
    pairs = inst.pair_products / (inst.pc * inst.pc)[None, :]          # (A * A, R) alpha_a alpha_b
    theta = np.log(np.maximum(alpha[:, E.argmin(axis=0)], _FLOOR)) - log_p
    best, best_theta, least_upper = np.full(n, -np.inf), theta.copy(), np.full(n, np.inf)
    active, tau = np.arange(n), _TAU[0]
    diagonal = np.arange(A)
    while tau >= _TAU[1] and active.size:
        for _ in range(_NEWTON):
            th, e = theta[:, active], E[:, active]
            V, Z = _values(alpha, log_p, th, e)
            t = V.min(axis=0)
            up = t > best[active]
            best[active[up]], best_theta[:, active[up]] = t[up], th[:, up]
            w = np.exp(-(V - t) / tau)
            w /= w.sum(axis=0)
            pi = alpha @ w
            with np.errstate(divide="ignore", invalid="ignore"):     # 0 log 0 = 0
                upper = np.where(pi > 0, pi * (np.log(pi) - log_p), 0.0).sum(axis=0) + (w * e).sum(axis=0)
            least_upper[active] = np.minimum(least_upper[active], upper)
            r = np.exp(th + log_p - Z)
            gradient = pi - r
            H = ((pairs @ w).T.reshape(-1, A, A) - pi.T[:, :, None] * pi.T[:, None, :]) / tau
            H[:, diagonal, diagonal] += r.T
            H -= r.T[:, :, None] * r.T[:, None, :]
            H += 1.0                                   # the direction along 1 changes nothing
            H[:, diagonal, diagonal] += 1e-9 * np.trace(H, axis1=1, axis2=2)[:, None] / A
            d = np.linalg.solve(H, gradient.T[:, :, None])[:, :, 0].T
            step = _armijo(alpha, log_p, th, d, e, tau, _smoothed(V, tau), (gradient * d).sum(axis=0))
            theta[:, active] = th + step * d
            active = active[(t < 0) & (upper >= 0)]
            if not active.size:
                break
        tau *= _TAU_SHRINK
    V, Z = _values(alpha, log_p, theta, E)
    t = V.min(axis=0)
    up = t > best
    best[up], best_theta[:, up] = t[up], theta[:, up]
    return best, least_upper, best_theta - _logsumexp(best_theta + log_p)[None, :]


def _armijo(alpha, log_p, theta, d, E, tau, smooth, slope):
    """Each column's step along ``d`` (n,): 1, halved until the smoothed minimum rises enough.

    Enough: by :data:`_ARMIJO` of its predicted rise; 0 after :data:`_HALVINGS` halvings. Only the
    columns still falling short are evaluated again.
    """
    step = np.ones(theta.shape[1])
    pending = np.arange(theta.shape[1])
    for _ in range(_HALVINGS):
        trial = theta[:, pending] + step[pending] * d[:, pending]
        rises = _smoothed(_values(alpha, log_p, trial, E[:, pending])[0], tau) >= (
            smooth[pending] + _ARMIJO * step[pending] * slope[pending])
        pending = pending[~rises]
        if not pending.size:
            return step
        step[pending] *= 0.5
    step[pending] = 0.0
    return step


def _values(alpha, log_p, theta, E):
    """alpha_c^T l + e_c (R, n) for the codebooks l = theta - Z, and Z (n,)."""
    Z = _logsumexp(theta + log_p)
    return alpha.T @ theta + E - Z[None, :], Z


def _smoothed(V, tau):
    """-tau log sum_c exp(-V_c / tau) of each column of ``V``: below its minimum by at most tau log R."""
    return -tau * _logsumexp(-V / tau)


def _logsumexp(X):
    """The log-sum-exp of each column of ``X``: ``scipy.special.logsumexp(X, axis=0)`` without its checks.

    The checks took twice as long on (1,024, 837) arrays, and pricing calls it about 1,600 times.
    """
    top = X.max(axis=0)
    return top + np.log(np.exp(X - top).sum(axis=0))


def priced(inst: Instance, kept: np.ndarray, restricted: SolveResult, allowed: float
           ) -> tuple[SolveResult | None, np.ndarray]:
    """Steps 3 and 4 of the method (module docstring) after the ``restricted`` answer on the outputs ``kept``.

    The whole program's answer where the left-out outputs take at most ``allowed`` nats from its
    bound (and ``kept``), else None and ``kept`` with the outputs that would lower the bound.
    """
    assert restricted.codebook is not None             # both points answer with their codebook
    mu = restricted.multiplier * LN2
    left = np.setdiff1d(np.arange(inst.D.shape[1]), kept)
    E = mu * inst.Dr[:, left] - _row_minima(inst, restricted.codebook[inst.keep], mu, kept)[:, None]
    t, _, codebooks = price(inst, E)
    if bound_loss(inst, inst.alpha.T @ codebooks + E) <= allowed:
        return _whole(inst, kept, restricted, codebooks), kept
    return None, np.union1d(kept, left[t < 0])


def _row_minima(inst: Instance, L: np.ndarray, mu: float, kept: np.ndarray) -> np.ndarray:
    """Each row's least reduced cost m (R,) over the outputs ``kept``.

    m_c = min alpha_c^T L_j + mu D(c, j) (nats per unit p(c)), ``L`` (A, |kept|) their codebook
    and ``mu`` nats per unit distortion.
    """
    return (inst.alpha.T @ L + mu * inst.Dr[:, kept]).min(axis=1)


def bound_loss(inst: Instance, V: np.ndarray) -> float:
    """What the left-out outputs take from the restricted bound (nats).

    sum_c p(c) max(0, -min_j V(c, j)), ``V`` (R, n) their alpha_c^T l_j + mu D(c, j) - m_c.
    """
    if V.shape[1] == 0:
        return 0.0
    return float(inst.pc @ np.maximum(0.0, -V.min(axis=1)))


def _whole(inst: Instance, kept: np.ndarray, restricted: SolveResult, codebooks: np.ndarray) -> SolveResult:
    """The restricted answer as an answer of the whole program.

    Its table (K, |kept|) placed in the columns ``kept`` of a (K, K_out) table, its codebook with
    the left-out outputs' ``codebooks`` (A, K_out - |kept|) beside it (classes without mass keep 0).
    """
    K, K_out = inst.D.shape
    left = np.setdiff1d(np.arange(K_out), kept)
    table = np.zeros((K, K_out))
    table[:, kept] = restricted.table
    codebook = np.zeros((inst.keep.size, K_out))
    codebook[:, kept] = restricted.codebook
    codebook[np.ix_(inst.keep, left)] = codebooks
    return SolveResult(table=table, leakage_bits=restricted.leakage_bits, distortion=restricted.distortion,
                       multiplier=restricted.multiplier, gap_bits=math.inf, status=restricted.status,
                       solver=restricted.solver, message=restricted.message, info=restricted.info,
                       codebook=codebook)


def sub_instance(p_ac, inst: Instance, kept: np.ndarray) -> Instance:
    """The program on the outputs ``kept`` alone (:func:`._program.instance` of ``D[:, kept]``)."""
    return instance(p_ac, inst.D[:, kept], inst.delta)
