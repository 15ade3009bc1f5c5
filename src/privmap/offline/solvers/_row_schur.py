"""The rows' Schur complement that the interior points of this package factorise.

Each solves a Newton system whose matrix is block-diagonal by output j, each block a positive
diagonal W_j (weights over the rows) less a product of rank a through a small a x a matrix T_j,
and whose constraints include every row's sum. Eliminating the blocks leaves, over the rows,

    S = diag(sum_j W_j) - sum_j W_j U T_j U^T W_j

(U, shape (R, a), the rows' coefficients in the blocks' rank-a part): program (19)'s primal-dual
point and log barrier (``interior``, W = q / z and q^2, U = p(a, c)^T, a = |A|) and the
perfect-privacy program's primal-dual point (``perfect._interior``, W = q / z,
U = p(c|a) - p(c|a0), a = |A| - 1). It is built by one matrix product of R x (K_out a) by
(K_out a) x R, its lower half only, O(R^2 K_out a): the cost of a step of each.

Near an optimum S subtracts nearly equal terms and loses definiteness in its last digits, so each
point factorises it with the least relative diagonal shift of its own list that keeps it positive
definite (:func:`shifted_cholesky`) and refines each direction against its exact products.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import numpy as np
import scipy.linalg as sla

_Answer = TypeVar("_Answer")

_STRIP = 128     # rows of each strip of the product (64 and 256: within 10 % of 128's time at R = 1,024)
#: Largest last correction of a direction's iterative refinement, relative to the direction's
#: largest entry, at which a direction from a float32 Schur complement is taken (:class:`SingleFalls`).
#: Float64 directions' last corrections run from 1e-16 to 1e-11 along a path; float32 ones from
#: 1e-15, passing 1e-9 two thirds of the way (UCI Adult, 15 classes, K = 1,024, program (19)).
SINGLE_CORRECTION = 1e-9


class SchurBreakdown(Exception):
    """No shift tried leaves the Schur complement positive definite."""


class SingleFalls(Exception):
    """A float32 Schur complement's direction whose iterative refinement had not settled.

    A direction from a float32 Schur complement (``row_schur(single=True)``) whose iterative
    refinement against the exact float64 products had not settled: its last correction was above
    :data:`SINGLE_CORRECTION` of the direction. The interior point takes that step again from
    float64 products, and every later one (mixed-precision refinement: float32 cuts the product's
    time by about two fifths, and far from the optimum its factor is accurate enough for
    refinement to recover the float64 directions; near the optimum it is not).
    """


class MixedPrecision:
    """Where one interior point's path is: float32 Schur products, or float64 for good.

    float32 Schur products until a step raises :class:`SingleFalls`, float64 for that step again
    and every later one.
    """

    def __init__(self) -> None:
        self.single = True

    def step(self, step: Callable[..., _Answer], *args) -> _Answer:
        """``step(*args, single=...)`` at the path's precision; SingleFalls sets it to float64 for good.

        Raises what ``step`` raises but SingleFalls.
        """
        if self.single:
            try:
                return step(*args, single=True)
            except SingleFalls:
                self.single = False
        return step(*args, single=False)


def require_settled(correction: np.ndarray, direction: np.ndarray) -> None:
    """Raise :class:`SingleFalls` unless a direction's last refinement ``correction`` has settled.

    Settled: within :data:`SINGLE_CORRECTION` of the direction's largest entry (both any shape, the
    same; a NaN falls too). A point calls it on directions from a float32 Schur complement only.
    """
    if not float(np.abs(correction).max()) <= SINGLE_CORRECTION * float(np.abs(direction).max()):
        raise SingleFalls


def row_schur(U: np.ndarray, weights: np.ndarray, T: np.ndarray, *, single: bool = False) -> np.ndarray:
    """S of the module docstring, symmetric, shape (R, R) in float64.

    ``U`` (R, a), ``weights`` (R, K_out) the diagonals W_j as columns, ``T`` (K_out, a, a)
    symmetric. Raises nothing.

    ``single`` (keyword-only) forms Y and the strips' products in float32: 0.30 s against 0.52 at
    R = 1,024, K_out a = 14,336, one thread (:class:`SingleFalls` says when a caller may).

    The product is formed by strips of :data:`_STRIP` rows up to the diagonal and mirrored, about
    half the multiplications of the whole product (R = 1,024, K_out a = 15,360, one thread, random
    data: 0.41 to 0.45 s against 0.63). Each entry is a dot product of the same vectors as in the
    whole product: unlike a symmetric rank-k update through factors of T (which lost the last
    digits near the optimum), nothing is factorised.
    """
    R, K_out = weights.shape
    a = U.shape[1]
    dtype = np.float32 if single else np.float64
    U_, W_, T_ = (x.astype(dtype, copy=False) for x in (U, weights, T))
    Y = (U_[:, None, :] * W_[:, :, None]).reshape(R, K_out * a)
    YT = ((U_ @ T_.transpose(1, 0, 2).reshape(a, K_out * a)).reshape(R, K_out, a) * W_[:, :, None]).reshape(R, -1)
    S = np.empty((R, R))
    for start in range(0, R, _STRIP):
        stop = min(start + _STRIP, R)
        S[start:stop, :stop] = YT[start:stop] @ Y[:stop].T
        S[:start, start:stop] = S[start:stop, :start].T
        block = S[start:stop, start:stop]
        S[start:stop, start:stop] = 0.5 * (block + block.T)
    S *= -1.0
    S[np.diag_indices(R)] += weights.sum(axis=1)
    return S


def shifted_cholesky(schur: np.ndarray, shifts: tuple[float, ...], *, single: bool = False):
    """The lower Cholesky factor of ``schur`` (n, n) with the first diagonal shift that leaves it positive definite.

    In ``scipy.linalg.cho_factor`` form; the shifts of ``shifts`` are increasing, relative to its
    largest diagonal. ``single`` (keyword-only): ``schur`` came from float32 products
    (``row_schur(single=True)``), whose round-off alone can cost it its definiteness.

    Raises
    ------
    SingleFalls
        ``single``, and none of the shifts does (the step is taken again in float64).
    SchurBreakdown
        Not ``single``, and none of them does.
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
    if single:
        raise SingleFalls("no shift leaves the float32 Schur complement positive definite")
    raise SchurBreakdown(f"no diagonal shift up to {shifts[-1]:.0e} of the largest leaves the Schur complement "
                         "positive definite")
