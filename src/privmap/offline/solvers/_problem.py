"""Validation of a program (19) instance, shared by every solver."""
from __future__ import annotations

from typing import overload

import numpy as np

from .._errors import InfeasibleError


@overload
def check_instance(p_ac, distortion, delta: float) -> tuple[np.ndarray, np.ndarray, float]: ...
@overload
def check_instance(p_ac, distortion, delta: None) -> tuple[np.ndarray, np.ndarray, None]: ...


def check_instance(p_ac, distortion, delta: float | None) -> tuple[np.ndarray, np.ndarray, float | None]:
    """Validate and convert an instance of program (19).

    Parameters
    ----------
    p_ac : array_like, shape (n_private, K)
        Joint prior, non-negative, summing to 1 (within 1e-9).
    distortion : array_like, shape (K, K_out)
        Non-negative; ``inf`` marks a forbidden transition. Every row needs one finite entry.
    delta : float or None
        Distortion budget, finite and >= 0; None skips the budget checks.

    Returns
    -------
    (p_ac, distortion, delta) as float64 arrays and float.

    Raises
    ------
    ValueError
        Shapes, signs, NaN, or a prior that does not sum to 1.
    InfeasibleError
        ``delta`` below the least distortion any mapping reaches,
        sum_c p(c) min_j d(c, j).
    """
    p_ac = np.asarray(p_ac, dtype=float)
    D = np.asarray(distortion, dtype=float)
    if p_ac.ndim != 2 or p_ac.shape[0] < 1 or p_ac.shape[1] < 1:
        raise ValueError(f"p_ac must have shape (n_private, K), got {p_ac.shape}")
    if D.ndim != 2 or D.shape[0] != p_ac.shape[1] or D.shape[1] < 1:
        raise ValueError(f"distortion must have shape (K={p_ac.shape[1]}, K_out), got {D.shape}")
    if not np.all(np.isfinite(p_ac)) or np.any(p_ac < 0) or abs(p_ac.sum() - 1.0) > 1e-9:
        raise ValueError("p_ac must be finite, non-negative and sum to 1")
    if np.any(np.isnan(D)) or np.any(D < 0):
        raise ValueError("distortion must be non-negative (inf marks a forbidden transition)")
    if not np.all(np.any(np.isfinite(D), axis=1)):
        raise ValueError("every row of distortion needs at least one allowed (finite) output")
    if delta is None:
        return p_ac, D, None
    delta = float(delta)
    if not np.isfinite(delta) or delta < 0:
        raise ValueError(f"delta must be finite and >= 0, got {delta}")
    least = minimum_distortion(p_ac, D)
    if delta < least - 1e-12 * max(1.0, least):
        raise InfeasibleError(
            f"delta = {delta:.6g} is below the least distortion any mapping reaches ({least:.6g})")
    return p_ac, D, delta


def minimum_distortion(p_ac: np.ndarray, distortion: np.ndarray) -> float:
    """sum_c p(c) min_j d(c, j): the distortion of mapping each input to its cheapest output."""
    return float(np.asarray(p_ac).sum(axis=0) @ np.min(distortion, axis=1))
