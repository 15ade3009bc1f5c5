"""The empirical joint prior p(a, c) of private class and quantized symbol."""
from __future__ import annotations

import numpy as np


def joint_prior(private: np.ndarray, symbols: np.ndarray, n_classes: int, n_symbols: int,
                *, smoothing: float = 0.0) -> np.ndarray:
    """Empirical p(a, c) with optional additive (Laplace) smoothing.

    Parameters
    ----------
    private : ndarray of int, shape (n,)
        Private class codes in [0, n_classes).
    symbols : ndarray of int, shape (n,)
        Quantized symbol (cluster) of each row in [0, n_symbols).
    smoothing : float, keyword-only
        Pseudo-count added to every cell (>= 0).

    Returns
    -------
    ndarray, shape (n_classes, n_symbols)
        Non-negative, sums to 1.
    """
    counts = np.zeros((n_classes, n_symbols))
    np.add.at(counts, (np.asarray(private), np.asarray(symbols)), 1.0)
    return prior_from_counts(counts, smoothing=smoothing)


def prior_from_counts(counts: np.ndarray, *, smoothing: float = 0.0) -> np.ndarray:
    """p(a, c) from a table of counts, shape (n_classes, n_symbols), with additive smoothing.

    Counts from several partitions can be added first: the result is the same as
    :func:`joint_prior` on all their rows at once.

    Raises
    ------
    ValueError
        Negative smoothing.
    """
    if smoothing < 0:
        raise ValueError(f"smoothing must be >= 0, got {smoothing}")
    counts = np.ascontiguousarray(counts, dtype=float) + smoothing  # layout decides float sums downstream
    return counts / counts.sum()
