"""A log-barrier interior point for the perfect-privacy program, the seed of its column generation.

The program (module docstring of ``_linear_program``): minimise sum_{c, j} p(c) d(c, j) q(c, j)
subject to sum_j q(c, j) = 1 for every row and sum_c delta(c, a) q(c, j) = 0 for every output j and
class a != a0, with delta(c, a) = p(c|a) - p(c|a0) (shape (K, m), m = |A| - 1).

With many classes the column generation's masters have K + m K_out rows and its pivots are most of
its cost, so its first master is seeded with the pairs an interior point on the whole program
uses. This one follows the structure of the program: with the barrier -sum log q the Hessian is
diagonal, each output's balance constraints form an m x m block G_j = delta^T diag(q_j^2) delta
(the last output's are left out: the rows' sums and the other outputs' balances imply them, since
sum_c delta(c, a) = 0), and eliminating them leaves a dense K x K Schur complement over the rows'
sums (``.._row_schur``), one matrix product of O(K^2 K_out m) per Newton step: linear in the
classes, where Clarabel's sparse factorisation of the whole program grows faster. The start,
every row on the uniform distribution over the outputs, is strictly feasible: its outputs are
independent of the class.

The seed proposes pairs only: the answer and its certificate are the column generation's. Its
round-off limits it: the Schur complement subtracts nearly equal terms as t grows, and on UCI Adult
the path broke down or stopped moving near a relative gap of 1e-5 (the last centred point is the
seed), which ``_linear_program`` says where that is good enough.
"""
from __future__ import annotations

import numpy as np
import scipy.linalg as sla

from .._row_schur import row_schur

_GROW = 10.0          # t grows by this factor per centring
_CENTRED = 1e-3       # a centring stops when half the Newton decrement is below this (the barrier is
_CENTRED_SHARE = 1e-13  # self-concordant: its excess over the centre), or this share of |F| (round-off)
_MAX_STEPS = 300      # Newton steps in all
_GAP = 1e-7           # the path stops once its duality gap (pairs / t) is below this share of the cost
_TO_BOUNDARY = 0.99   # share of the step to the boundary of q > 0 that a step may take
_ARMIJO = 0.25
_STEP_FLOOR = 1e-12
_REFINE = 2           # iterative refinement steps of each Newton direction


def interior_support(p_c: np.ndarray, delta_a: np.ndarray, D: np.ndarray, share: float
                     ) -> tuple[np.ndarray, np.ndarray]:
    """The pairs (rows, cols) to which the barrier's last centred point gives q(c, j) >= ``share``.

    Parameters
    ----------
    p_c : ndarray, shape (K,)
    delta_a : ndarray, shape (K, m)
        p(c|a) - p(c|a0) for the present classes a != a0.
    D : ndarray, shape (K, K_out), finite
    share : float
        The least entry of a pair proposed.

    Returns
    -------
    (rows, cols) : int ndarrays
        Empty where the path breaks down before its first centring ends (the master then starts
        without a seed). Raises nothing.
    """
    cost = p_c[:, None] * D
    cost = cost / max(float(cost.max()), 1e-300)
    K, K_out = D.shape
    q = np.full((K, K_out), 1.0 / K_out)
    pair_products = (delta_a.T[:, None, :] * delta_a.T[None, :, :]).reshape(-1, K)
    t = q.size / max(float((cost * q).sum()), 1e-300)
    steps, centred = 0, None
    while steps < _MAX_STEPS:
        try:
            q, steps = _centre(cost, delta_a, pair_products, q, t, steps)
        except (np.linalg.LinAlgError, FloatingPointError, _Stalled):
            break
        centred = q
        if q.size / t <= _GAP * float((cost * q).sum()):
            break
        t *= _GROW
    if centred is None:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    rows, cols = np.nonzero(centred >= share)
    return rows, cols


class _Stalled(Exception):
    """A centring whose line search found no decrease, or that ran past :data:`_MAX_STEPS`."""


def _centre(cost, delta_a, pair_products, q, t, steps):
    """Damped Newton on t cost.q - sum log q with the rows' sums and the balances held."""
    F = t * float((cost * q).sum()) - float(np.log(q).sum())
    while True:
        steps += 1
        if steps > _MAX_STEPS:
            raise _Stalled
        grad = t * cost - 1.0 / q
        dq = _direction(delta_a, pair_products, q, grad)
        decrement = -float((grad * dq).sum())
        if decrement / 2.0 < max(_CENTRED, _CENTRED_SHARE * abs(F)) or decrement < 0:
            return q, steps
        step = 1.0
        falling = dq < 0
        if falling.any():
            step = min(step, _TO_BOUNDARY * float(np.min(-q[falling] / dq[falling])))
        while True:
            trial = q + step * dq
            trial /= trial.sum(axis=1, keepdims=True)
            F_trial = t * float((cost * trial).sum()) - float(np.log(trial).sum())
            if F_trial <= F - _ARMIJO * step * decrement:
                q, F = trial, F_trial
                break
            step *= 0.5
            if step < _STEP_FLOOR:
                raise _Stalled


def _direction(delta_a, pair_products, q, grad):
    """Newton's direction of the barrier at q: dq = -Q^2 (grad + nu + delta w) with E dq = 0 and
    delta^T dq_j = 0 for every output j, by the Schur complement over the rows (module docstring),
    refined against the exact constraint products."""
    K, K_out = q.shape
    m = delta_a.shape[1]
    q2 = q * q
    gram = (pair_products @ q2).T.reshape(K_out, m, m)
    inverse_gram = np.linalg.inv(gram)
    inverse_gram = 0.5 * (inverse_gram + inverse_gram.transpose(0, 2, 1))
    inverse_gram[-1] = 0.0      # the last output's balances follow from the others' and the rows' sums
    factor = sla.cho_factor(row_schur(delta_a, q2, inverse_gram), lower=True, check_finite=False)

    def solve(r_q, r_rows, r_balance):
        # dq = Q^2 (r_q - nu - delta w); E dq = r_rows; delta^T dq_j = r_balance[:, j]
        inner = delta_a.T @ (q2 * r_q) - r_balance                          # (m, K_out)
        rhs = (q2 * r_q).sum(axis=1) - r_rows - (q2 * (delta_a @ np.einsum("jab,bj->aj", inverse_gram, inner))).sum(axis=1)
        nu = sla.cho_solve(factor, rhs, check_finite=False)
        w = np.einsum("jab,bj->aj", inverse_gram, delta_a.T @ (q2 * (r_q - nu[:, None])) - r_balance)
        return q2 * (r_q - nu[:, None] - delta_a @ w), nu, w

    dq, nu, w = solve(-grad, np.zeros(K), np.zeros((m, K_out)))
    for _ in range(_REFINE):
        r_q = -(grad + dq / q2 + nu[:, None] + delta_a @ w)
        ddq, dnu, dw = solve(r_q, -dq.sum(axis=1), -(delta_a.T @ dq))
        dq, nu, w = dq + ddq, nu + dnu, w + dw
    if not np.all(np.isfinite(dq)):
        raise FloatingPointError
    return dq
