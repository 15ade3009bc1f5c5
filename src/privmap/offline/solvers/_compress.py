"""Compress a solved mapping into sparse integer rows that sum exactly to 2^B.

The device samples a row by drawing B bits and walking the integer running
total, so the table it holds must be integers. Rounding a row q(. | c) to
multiples of 2^-B uses the largest-remainder method (exact sum, each entry
within one unit of q * 2^B). Rounding can push the expected distortion above
the budget (measured on rating data: 0.2% at B = 8), so a repair step then moves
units of mass, cheapest first, from each row's most expensive output to its
cheapest one until the budget holds again. Leakage and distortion are always
recomputed from the integer table: those are the figures the bundle declares.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .._errors import SolverError
from .._information import expected_distortion, leakage_bits

#: Default denominator bits: B = 16 changes leakage by under 1e-6 bits on rating data.
DEFAULT_BITS = 16


@dataclass(frozen=True)
class CompressedTable:
    """An integer mapping table.

    Attributes
    ----------
    bits : int
        B; every row's weights sum to 2^B.
    weights : scipy.sparse.csr_matrix of int64, shape (K, K_out)
        Integer weights; only positive entries are stored, column indexes sorted.
    leakage_bits : float
        I(A; C_hat) of ``weights / 2^B`` on the prior (bits).
    distortion : float
        E d(C, C_hat) of ``weights / 2^B`` on the prior.
    repaired_units : int
        Units of 2^-B mass moved by the repair step (0 when rounding met the budget).
    """

    bits: int
    weights: sp.csr_matrix
    leakage_bits: float
    distortion: float
    repaired_units: int

    def probabilities(self) -> sp.csr_matrix:
        """The mapping as floats, ``weights / 2^B`` (shape (K, K_out))."""
        return (self.weights.astype(float) / float(1 << self.bits)).tocsr()

    def rows(self) -> tuple[list[list[int]], list[list[int]]]:
        """Per input row: (output indexes ascending, positive weights), as Python ints."""
        index, weight = [], []
        for c in range(self.weights.shape[0]):
            lo, hi = self.weights.indptr[c], self.weights.indptr[c + 1]
            index.append([int(j) for j in self.weights.indices[lo:hi]])
            weight.append([int(w) for w in self.weights.data[lo:hi]])
        return index, weight


def compress(table: np.ndarray, p_ac: np.ndarray, distortion: np.ndarray, delta: float,
             *, bits: int = DEFAULT_BITS) -> CompressedTable:
    """Round ``table`` to integer rows summing to 2^bits, keeping E d <= delta.

    Parameters
    ----------
    table : ndarray, shape (K, K_out)
        Row-stochastic mapping q(c_hat | c) from a solver.
    p_ac : ndarray, shape (n_private, K)
        Prior the metrics are computed on.
    distortion : ndarray, shape (K, K_out)
        d(c, c_hat); ``inf`` entries never receive mass.
    delta : float
        Budget to hold after rounding.
    bits : int, keyword-only
        B in 1..32.

    Raises
    ------
    ValueError
        ``bits`` out of range or a table that is not row-stochastic on allowed entries.
    SolverError
        The budget cannot be met even by sending every row to its cheapest output.
    """
    if not 1 <= bits <= 32:
        raise ValueError(f"bits must be in 1..32, got {bits}")
    q = np.where(np.isfinite(distortion), np.clip(np.asarray(table, dtype=float), 0.0, None), 0.0)
    sums = q.sum(axis=1, keepdims=True)
    if np.any(sums <= 0):
        raise ValueError("a row of the table has no mass on allowed outputs")
    total = 1 << bits
    scaled = q / sums * total
    weights = np.floor(scaled).astype(np.int64)
    short = total - weights.sum(axis=1)
    order = np.argsort(-(scaled - weights), axis=1, kind="stable")
    for c in np.nonzero(short)[0]:
        weights[c, order[c, :short[c]]] += 1
    p_c = p_ac.sum(axis=0)
    D = np.where(np.isfinite(distortion), distortion, 0.0)
    moved = _repair(weights, p_c, D, np.isfinite(distortion), delta, total)
    csr = sp.csr_matrix(weights)
    csr.eliminate_zeros()
    csr.sort_indices()
    probs = csr.astype(float) / float(total)
    return CompressedTable(bits=bits, weights=csr, leakage_bits=leakage_bits(p_ac, probs),
                           distortion=expected_distortion(p_c, probs, distortion), repaired_units=moved)


def _repair(weights: np.ndarray, p_c: np.ndarray, D: np.ndarray, allowed: np.ndarray,
            delta: float, total: int) -> int:
    """Move mass in place until sum p(c) w(c,j) d(c,j) / total <= delta; return units moved."""
    excess = float(np.sum(p_c[:, None] * weights * D)) / total - delta
    if excess <= 0:
        return 0
    cheapest = np.argmin(np.where(allowed, D, np.inf), axis=1)
    heap: list[tuple[float, int, int]] = []
    for row in np.nonzero(p_c > 0)[0]:
        _push(heap, weights, p_c, D, cheapest, int(row))
    moved = 0
    while excess > 0:
        if not heap:
            raise SolverError(f"cannot meet delta = {delta:.6g} after rounding to integer weights")
        _, c, j = heapq.heappop(heap)
        if weights[c, j] == 0:
            _push(heap, weights, p_c, D, cheapest, c)
            continue
        gain = p_c[c] * (D[c, j] - D[c, cheapest[c]]) / total
        units = int(min(weights[c, j], np.ceil(excess / gain)))
        weights[c, j] -= units
        weights[c, cheapest[c]] += units
        excess -= units * gain
        moved += units
        _push(heap, weights, p_c, D, cheapest, c)
    return moved


def _push(heap: list[tuple[float, int, int]], weights: np.ndarray, p_c: np.ndarray, D: np.ndarray,
          cheapest: np.ndarray, c: int) -> None:
    """Queue row c's costliest loaded output, keyed by the distortion one unit moved saves."""
    support = np.nonzero(weights[c])[0]
    j = support[np.argmax(D[c, support])]
    gain = p_c[c] * (D[c, j] - D[c, cheapest[c]])
    if gain > 0:
        heapq.heappush(heap, (-gain, int(c), int(j)))
