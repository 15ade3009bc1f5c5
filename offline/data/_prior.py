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
    if smoothing < 0:
        raise ValueError(f"smoothing must be >= 0, got {smoothing}")
    counts = np.zeros((n_classes, n_symbols))
    np.add.at(counts, (np.asarray(private), np.asarray(symbols)), 1.0)
    counts += smoothing
    return counts / counts.sum()
