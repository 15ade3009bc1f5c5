"""Distinct rows of a 2-D array, as ``np.unique(..., axis=0)`` gives them, at a fraction of its cost."""
from __future__ import annotations

from typing import Literal, overload

import numpy as np


@overload
def unique_rows(A: np.ndarray, *, return_inverse: Literal[False] = False) -> tuple[np.ndarray, np.ndarray]: ...
@overload
def unique_rows(A: np.ndarray, *, return_inverse: Literal[True]) -> tuple[np.ndarray, np.ndarray, np.ndarray]: ...


def unique_rows(A: np.ndarray, *, return_inverse: bool = False) -> tuple[np.ndarray, ...]:
    """The distinct rows of ``A`` (n, d) in lexicographic order and how many times each occurs.

    The same arrays as ``np.unique(A, axis=0, return_counts=True, return_inverse=...)``: numpy
    sorts one structured value per row, comparing them field by field through a generic routine;
    a lexicographic sort of the columns (``np.lexsort``) orders the rows the same way at about a
    sixteenth of the cost (12,600 released rows x 51 columns: 5 against 76 ms; the attacker of
    ``--clusters auto`` calls it for every candidate and cross-validation fold). Rows holding NaN
    go to numpy itself, whose placement of NaN rows is its own.

    Returns
    -------
    (distinct, counts) or (distinct, inverse, counts)
        ``distinct`` (m, d); ``inverse`` (n,) int with ``distinct[inverse] == A``; ``counts`` (m,) int.
    """
    A = np.asarray(A)
    n = A.shape[0]
    if A.ndim != 2 or n == 0 or A.shape[1] == 0 or (A.dtype.kind in "fc" and np.isnan(A).any()):
        if not return_inverse:
            return np.unique(A, axis=0, return_counts=True)
        distinct, inverse, counts = np.unique(A, axis=0, return_inverse=True, return_counts=True)
        return distinct, inverse.reshape(-1), counts
    order = np.lexsort(A.T[::-1])                           # first column most significant
    ordered = A[order]
    first = np.empty(n, dtype=bool)
    first[0] = True
    np.any(ordered[1:] != ordered[:-1], axis=1, out=first[1:])
    starts = np.flatnonzero(first)
    counts = np.diff(np.append(starts, n))
    if not return_inverse:
        return ordered[starts], counts
    inverse = np.empty(n, dtype=np.intp)
    inverse[order] = np.cumsum(first) - 1
    return ordered[starts], inverse, counts
