"""The rows' Schur complement that the interior points of this package factorise.

Each solves a Newton system whose matrix is block-diagonal by output j, each block a positive
diagonal W_j (weights over the rows) less a product of rank a through a small a x a matrix T_j,
and whose constraints include every row's sum. Eliminating the blocks leaves, over the rows,

    S = diag(sum_j W_j) - sum_j W_j U T_j U^T W_j

(U, shape (R, a), the rows' coefficients in the blocks' rank-a part): program (19)'s primal-dual
point and log barrier (``interior``, W = q / z and q^2, U = p(a, c)^T, a = |A|) and the
perfect-privacy program's primal-dual point (``perfect._interior``, W = q / z,
U = p(c|a) - p(c|a0), a = |A| - 1). It is built by one matrix product of R x (K_out a) by
(K_out a) x R, O(R^2 K_out a), the cost of a step of each.

Near an optimum S subtracts nearly equal terms and loses definiteness in its last digits, so each
point factorises it with the least relative diagonal shift of its own list that keeps it positive
definite (:func:`shifted_cholesky`) and refines each direction against its exact products.
"""
from __future__ import annotations

import numpy as np
import scipy.linalg as sla


class SchurBreakdown(Exception):
    """No shift tried leaves the Schur complement positive definite."""


def row_schur(U: np.ndarray, weights: np.ndarray, T: np.ndarray) -> np.ndarray:
    """S of the module docstring, symmetrised: ``U`` (R, a), ``weights`` (R, K_out) the diagonals
    W_j as columns, ``T`` (K_out, a, a) symmetric; returns (R, R). Raises nothing."""
    R, K_out = weights.shape
    a = U.shape[1]
    Y = (U[:, None, :] * weights[:, :, None]).reshape(R, K_out * a)
    YT = ((U @ T.transpose(1, 0, 2).reshape(a, K_out * a)).reshape(R, K_out, a)
          * weights[:, :, None]).reshape(R, -1)
    S = np.diag(weights.sum(axis=1)) - YT @ Y.T
    return 0.5 * (S + S.T)


def shifted_cholesky(schur: np.ndarray, shifts: tuple[float, ...]):
    """The lower Cholesky factor (``scipy.linalg.cho_factor`` form) of ``schur`` (n, n) with the
    first diagonal shift of ``shifts`` (increasing, relative to its largest diagonal) that leaves it
    positive definite.

    Raises
    ------
    SchurBreakdown
        None of them does.
    """
    diagonal = np.diag_indices(schur.shape[0])
    largest = float(np.diag(schur).max())
    for shift in shifts:
        shifted = schur.copy()
        shifted[diagonal] += shift * largest
        try:
            return sla.cho_factor(shifted, lower=True, check_finite=False)
        except (np.linalg.LinAlgError, ValueError):
            continue
    raise SchurBreakdown(f"no diagonal shift up to {shifts[-1]:.0e} of the largest leaves the Schur complement "
                         "positive definite")
