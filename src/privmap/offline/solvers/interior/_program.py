"""Program (19) as both interior points of this package read it.

Notation as in :mod:`..fast._solver`: q (R x K_out, the active rows R with p(c) > 0),
P = p(a, c) q (|A| x K_out), S_j = sum_a P(a, j), J(q) = I(A; C_hat) in nats, and the budget
sum_c p(c) D(c, j) q(c, j) <= delta. Here: the instance's arrays and the instances neither point
takes (:func:`instance`), the leakage of a table (:func:`leakage`), the shared start
(:func:`start_table`), each output's block of the Newton systems (:func:`woodbury_blocks`), the
optimum's support as a point's duals see it (:func:`support`) and the answer (:func:`answer`).
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..._errors import SolverError
from .._problem import check_instance
from .._result import SolveResult

LN2 = math.log(2.0)
#: Most entries |A| x R x K_out of the arrays one step holds (several of them, float64):
#: 2^24 is 128 MiB each, UCI Adult's 15 occupations at K = 1,024.
MAX_ENTRIES = 1 << 24
#: Diagonal shifts of a Newton system's Schur complement tried, relative to its largest diagonal
#: (:func:`.._row_schur.shifted_cholesky`): none first, as the barrier's path needs the unshifted
#: factor (with 1e-12 first, UCI Adult's 15 occupations at K = 64 ran out of its 400 steps; 74 without).
SHIFTS = (0.0, 1e-12, 1e-10, 1e-8)
_START_MIX = 0.5         # most weight of the uniform table in the start (each row's cheapest output else)
_SUPPORT_NATS = 1e-3     # pairs within this of their row's least reduced cost (per unit p(c)) are
                         # the optimum's support (1e-4 and 1e-5 with the barrier: sparser, and some
                         # polishes had to follow their path on UCI Adult's occupations)


@dataclasses.dataclass(frozen=True)
class Instance:
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
    keep: np.ndarray      # (n_private,) bool: the classes with mass
    rows: np.ndarray      # (R,) int: the active rows' indices in the full table
    D: np.ndarray         # (K, K_out) the whole distortion


def instance(p_ac, distortion, delta) -> Instance:
    """The checked instance in the arrays the points read.

    Raises what :func:`.._problem.check_instance` raises (ValueError, InfeasibleError), and
    SolverError for an instance neither point takes: more than :data:`MAX_ENTRIES` entries
    |A| x K x K_out, a forbidden pair on a row with mass (every pair is a variable), or a budget
    equal to the least distortion (no point is strictly inside).
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
    pr = p[:, rows]
    pc = pr.sum(axis=0)
    Dr = D[rows]
    A = pr.shape[0]
    least = float(pc @ Dr.min(axis=1))
    if delta <= least * (1.0 + 1e-9):
        raise SolverError("interior point: the budget is the least distortion, so no point is strictly inside")
    return Instance(pr=pr, pc=pc, alpha=pr / pc, Dr=Dr, B=pc[:, None] * Dr, log_p_a=np.log(p.sum(axis=1)),
                    pair_products=(pr[:, None, :] * pr[None, :, :]).reshape(A * A, -1), delta=float(delta),
                    least=least, keep=keep, rows=rows, D=D)


def leakage(inst: Instance, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """P (A, K_out), S (K_out,), the codebook L = log(P / (p(a) S)) (A, K_out) and J (nats) of the table q (R, K_out).

    A class with no mass in an output has L = -inf there and adds 0 to J.
    """
    P = inst.pr @ q
    S = P.sum(axis=0)
    with np.errstate(divide="ignore"):
        L = np.log(P) - np.log(S)[None, :] - inst.log_p_a[:, None]
    return P, S, L, float(np.where(P > 0, P * L, 0.0).sum())


def start_table(inst: Instance) -> np.ndarray:
    """Each row's cheapest output mixed with the uniform table, inside the budget by half its room.

    Shape (R, K_out), every entry positive.
    """
    R, K_out = inst.Dr.shape
    low = np.zeros((R, K_out))
    low[np.arange(R), inst.Dr.argmin(axis=1)] = 1.0
    uniform_cost = float(inst.B.sum()) / K_out
    room = inst.delta - inst.least
    mix = _START_MIX if uniform_cost <= inst.least else min(_START_MIX, 0.5 * room / (uniform_cost - inst.least))
    return (1.0 - mix) * low + mix / K_out


def woodbury_blocks(inst: Instance, W: np.ndarray, P: np.ndarray, S: np.ndarray, t: float) -> np.ndarray:
    """T (K_out, A, A), symmetric: each output's block of the Woodbury inverse of a Newton system.

    Each output's block of a Newton system t H_j + diag(1 / W_j), H_j = pr^T Gamma_j pr the
    Hessian of J (Gamma_j = diag(1 / P_j) - 1 1^T / S_j), has the inverse
    W_j - W_j pr^T T_j pr W_j with T_j = t (I + t Gamma_j G_j)^{-1} Gamma_j and G_j = pr W_j pr^T
    (the Woodbury identity through one |A| x |A| solve). ``W`` (R, K_out) positive.
    """
    A, K_out = P.shape
    gram = (inst.pair_products @ W).T.reshape(K_out, A, A)
    gamma = np.zeros((K_out, A, A))
    gamma[:, np.arange(A), np.arange(A)] = (1.0 / P).T
    gamma -= (1.0 / S)[:, None, None]
    T = t * np.linalg.solve(np.eye(A)[None] + t * gamma @ gram, gamma)
    return 0.5 * (T + T.transpose(0, 2, 1))


def support(inst: Instance, q: np.ndarray, L: np.ndarray, mu: float) -> np.ndarray:
    """The optimum's support as the duals see it, (R, K_out) bool.

    The duals are the codebook ``L`` and the multiplier ``mu`` in nats per unit distortion. The
    pairs within :data:`_SUPPORT_NATS` of their row's least reduced cost alpha^T L + mu D (per unit
    p(c)), and each output's largest contributor of every class under ``q`` (a class cut out of an
    output would put log 0 into J).

    An interior point ends near the centre of the optimal face: every pair keeps mass (about its
    temperature over its reduced cost off the support), so its table is dense, and its downstream
    costs follow (the polish's candidates, the codebook step's weighted medians over every pair).
    """
    reduced = inst.alpha.T @ L + mu * inst.Dr
    keep = reduced <= reduced.min(axis=1, keepdims=True) + _SUPPORT_NATS
    A, K_out = L.shape
    weight = inst.pr[:, :, None] * q[None, :, :]             # (A, R, K_out) p(a, c) q(c, j)
    keep[weight.argmax(axis=1).ravel(), np.tile(np.arange(K_out), A)] = True
    return keep


def answer(inst: Instance, q: np.ndarray, L: np.ndarray, mu: float, *, solver: str, message: str,
           info: dict) -> SolveResult:
    """The uncertified answer, with the duals that certify it in the polish.

    The table ``q`` (R, K_out) on the active rows (rows without mass on their cheapest output),
    its leakage and distortion, and the duals that certify it in the polish: the codebook ``L``
    (A, K_out) and the multiplier ``mu`` (nats per unit distortion).
    """
    K, K_out = inst.D.shape
    table = np.zeros((K, K_out))
    table[inst.rows] = q
    idle = np.setdiff1d(np.arange(K), inst.rows)
    table[idle, np.argmin(inst.D[idle], axis=1)] = 1.0
    codebook = np.zeros((inst.keep.size, K_out))
    codebook[inst.keep] = L
    return SolveResult(table=table, leakage_bits=leakage(inst, q)[3] / LN2, distortion=float((inst.B * q).sum()),
                       multiplier=mu / LN2, gap_bits=math.inf, status="optimal", solver=solver, message=message,
                       info=info, codebook=codebook)
