"""The alphabet of observed categorical tuples that the funnel and max-correlation bundles share.

Each tuple as bundle cells (category indexes) and each row's tuple.
"""
from __future__ import annotations

import numpy as np

from .table import categorical_code, input_alphabet

__all__ = ["categorical_alphabet"]


def categorical_alphabet(features, public) -> tuple[list[dict], list[tuple], list[list[int]], np.ndarray]:
    """Observed tuples as bundle cells.

    Parameters
    ----------
    features : sequence of str, length d
    public : array-like of str, shape (n, d)

    Returns
    -------
    (specs, tuples, cells, labels)
        Categorical feature specs (values sorted), the K distinct tuples (sorted), their cells
        (category indexes, shape (K, d)) and each row's tuple index (shape (n,)).
    """
    tuples, labels = input_alphabet(public)
    specs, code = categorical_code(features, tuples)
    cells = [[code[i][v] for i, v in enumerate(t)] for t in tuples]
    return specs, tuples, cells, labels
