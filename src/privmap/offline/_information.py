"""Information measures of a mapping on a prior, in bits.

All functions take the joint prior ``p_ac`` of shape ``(n_private, n_inputs)``
(non-negative, summing to 1) and a row-stochastic mapping ``q`` of shape
``(n_inputs, n_outputs)`` with ``q[c, c_hat] = P(C_hat = c_hat | C = c)``.
"""
from __future__ import annotations

import numpy as np


def joint_output(p_ac: np.ndarray, q) -> np.ndarray:
    """p(a, c_hat) = sum_c p(a, c) q(c_hat | c); shape ``(n_private, n_outputs)``.

    ``q`` may be a dense array or a scipy sparse matrix.
    """
    return np.asarray((q.T @ np.asarray(p_ac, dtype=float).T).T)


def mutual_information_bits(p_joint: np.ndarray) -> float:
    """I(A; X) in bits for a joint distribution ``p_joint`` of shape ``(n_a, n_x)``.

    Zero cells contribute nothing (0 log 0 = 0). The result is clipped at 0 to
    remove negative round-off.
    """
    p = np.asarray(p_joint, dtype=float)
    total = p.sum()
    if total <= 0:
        raise ValueError("joint distribution has no mass")
    p = p / total
    pa = p.sum(axis=1, keepdims=True)
    px = p.sum(axis=0, keepdims=True)
    mask = p > 0
    rows, cols = np.nonzero(mask)
    # log of each factor separately: p(a) p(x) can underflow where p(a, x) is subnormal
    logs = np.log2(p[mask]) - np.log2(pa[rows, 0]) - np.log2(px[0, cols])
    value = float(np.sum(p[mask] * logs))
    return max(value, 0.0)


def leakage_bits(p_ac: np.ndarray, q) -> float:
    """Leakage J = I(A; C_hat) in bits of mapping ``q`` applied to prior ``p_ac``."""
    return mutual_information_bits(joint_output(p_ac, q))


def expected_distortion(p_c: np.ndarray, q, distortion: np.ndarray) -> float:
    """E d(C, C_hat) = sum_{c, c_hat} p(c) q(c_hat|c) d(c, c_hat).

    ``p_c`` has shape ``(n_inputs,)``; ``distortion`` has shape ``(n_inputs, n_outputs)``.
    Entries of ``distortion`` that are ``inf`` (forbidden transitions) count only
    where ``q`` puts mass on them, which makes the result ``inf``.
    """
    p_c = np.asarray(p_c, dtype=float)
    if hasattr(q, "multiply"):  # scipy sparse: touch only stored entries
        coo = q.tocoo()
        return float(np.sum(p_c[coo.row] * coo.data * distortion[coo.row, coo.col]))
    q = np.asarray(q, dtype=float)
    d = np.where(q > 0, distortion, 0.0)
    return float(np.sum(p_c[:, None] * q * d))


def output_posterior_ratios(p_ac: np.ndarray, q) -> tuple[np.ndarray, np.ndarray]:
    """log2( p(a | c_hat) / p(a) ) for every class a and output c_hat with positive mass.

    Parameters
    ----------
    p_ac : ndarray, shape (n_private, n_inputs)
        Joint prior (the training prior of a build).
    q : array_like or scipy sparse, shape (n_inputs, n_outputs)
        Row-stochastic mapping (an integer table divided by 2^B is exact in float64 for B <= 52).

    Returns
    -------
    (ratios, outputs)
        ``ratios`` of shape (n_private, m) for the m outputs of positive mass (``-inf`` where an
        output rules a class out: p(a, c_hat) = 0 < p(a)); ``outputs`` (m,) their indexes.
        Classes with p(a) = 0 are left at 0 (they cannot be learned about).
    """
    joint = joint_output(p_ac, q)
    p_a = joint.sum(axis=1)
    mass = joint.sum(axis=0)
    outputs = np.nonzero(mass > 0)[0]
    joint = joint[:, outputs]
    with np.errstate(divide="ignore"):
        ratios = np.log2(joint) - np.log2(mass[outputs])[None, :] - np.log2(np.where(p_a > 0, p_a, 1.0))[:, None]
    ratios[p_a <= 0, :] = 0.0
    return ratios, outputs


def max_output_leakage_bits(p_ac: np.ndarray, q) -> float:
    """Per-output leakage epsilon in bits.

    The max over outputs c_hat of positive mass and classes a of |log2 p(a | c_hat) - log2 p(a)|
    (seed 002's information privacy, on the prior ``p_ac``).

    Shapes as :func:`output_posterior_ratios`. ``inf`` when some output of positive mass rules a
    class of positive prior out (p(a | c_hat) = 0); 0 for a mapping whose every output has the
    prior as its posterior (perfect privacy).
    """
    ratios, _ = output_posterior_ratios(p_ac, q)
    return float(np.max(np.abs(ratios))) if ratios.size else 0.0


def ruled_out(p_ac: np.ndarray, q) -> tuple[int, int] | None:
    """Where the per-output leakage is unbounded: (output, class) indexes, or None.

    An output of positive mass that a class of positive prior never reaches (p(a | c_hat) = 0, so
    seeing it rules that class out), the first in class-major order; None where
    :func:`max_output_leakage_bits` is finite.

    Shapes as :func:`output_posterior_ratios`. Raises nothing.
    """
    ratios, outputs = output_posterior_ratios(p_ac, q)
    if np.isfinite(ratios).all():
        return None
    a, k = np.unravel_index(int(np.argmin(ratios)), ratios.shape)
    return int(outputs[k]), int(a)
