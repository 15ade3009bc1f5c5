"""The quantized alphabet when users skipped questions: the two missing-answer policies.

A missing answer is a NaN cell of the training data (a blank CSV cell, or the column's declared
missing token). Two policies, chosen with ``privmap build --missing``:

``"mask"`` (the default; see docs/missing-values.md for the comparison that chose it)
    Distances are taken over a row's observed cells only. k-means groups the rows with missing
    cells filled by the column mean (grouping only); each representative is the per-column
    statistic over its group's observed cells; rows are reassigned by the masked nearest rule,
    which the device runs too (a missing cell is skipped in the sum).
``"impute"``
    Every missing cell takes its column's training median (rounded on integer columns), which
    is recorded in the bundle as the feature's ``fill``; the device fills the same value, then
    looks up the full row.

Under both policies the released row is a representative (every column filled), and the
distortion figures (``r``, the mean quantization distortion, the measured distortion of
Theorem 2) are distances over each row's *observed* cells, so the bound
E d_O(b, released) <= Delta + r holds (see :func:`privmap.offline.data.pairwise`).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..._errors import BuildError
from ...data import Column, assigned_distance, quantize

__all__ = ["MISSING_POLICIES", "DEFAULT_MISSING", "MissingAlphabet", "bundle_cells", "column_fills", "feature_maps",
           "missing_alphabet"]

MISSING_POLICIES = ("mask", "impute")
DEFAULT_MISSING = "mask"


@dataclass(frozen=True)
class MissingAlphabet:
    """Representatives found under a missing policy.

    ``centers`` (K, d) float64 and ``cells`` (K lists of d bundle cells) are the representatives;
    ``features`` the bundle's feature maps; ``labels`` (n,) psi of each training row by the
    device's rule; ``r`` and ``mean_distortion`` the max and mean over rows of the distance to
    psi(row) over the row's observed cells; ``fills`` (d,) the column medians used by "impute".
    """

    centers: np.ndarray
    cells: list[list]
    features: list[dict]
    labels: np.ndarray
    r: float
    mean_distortion: float
    fills: np.ndarray


def column_fills(X: np.ndarray, schema: Sequence[Column]) -> np.ndarray:
    """Training median of each column's observed cells, within its domain; shape (d,).

    Rounded on integer columns; the domain's midpoint for a column with no observed cell.
    """
    fills = np.empty(len(schema))
    for k, column in enumerate(schema):
        observed = X[:, k][~np.isnan(X[:, k])]
        value = float(np.median(observed)) if observed.size else (column.min + column.max) / 2
        if column.integer:
            value = float(np.round(value))
        fills[k] = min(max(value, column.min), column.max)
    return fills


def bundle_cells(points: np.ndarray, integer: np.ndarray) -> list[list]:
    """Points as the bundle's cells.

    Points (K, d) as the bundle's cells: ``int`` on the columns where ``integer`` (d,) is set,
    ``float`` elsewhere.
    """
    return [[int(v) if is_int else float(v) for v, is_int in zip(row, integer)] for row in points]


def feature_maps(schema: Sequence[Column], policy: str, fills: np.ndarray | None = None) -> list[dict]:
    """The bundle's numeric feature maps of resolved columns.

    The maps are those of docs/bundle-format.md section 3. Each column that allows missing
    answers takes ``policy``'s rule, with its ``fills`` entry (shape (d,)) as the recorded fill
    under "impute"; the others refuse them.
    """
    features = []
    for k, c in enumerate(schema):
        rule = policy if c.missing else "refuse"
        fill = None
        if rule == "impute":
            if fills is None:
                raise BuildError("the impute policy records each column's fill; none were given")
            fill = int(fills[k]) if c.integer else float(fills[k])
        features.append({"name": c.name, "kind": "numeric", "integer": c.integer, "min": c.min, "max": c.max,
                         "missing": rule, "fill": fill, "missing_token": c.missing_token})
    return features


def missing_alphabet(X: np.ndarray, schema: Sequence[Column], policy: str, *, clusters: int, metric: str,
                     seed: int, quantizer: Callable | None = None) -> MissingAlphabet:
    """Quantize X (shape (n, d), NaN = missing; every row has an observed cell) under ``policy``.

    ``quantizer`` replaces :func:`quantize` (same signature; cross-fitting's warm start).
    Raises :class:`~privmap.offline._errors.DatasetError` (from :func:`quantize`) for a cluster
    count above the number of distinct rows.
    """
    integer = np.array([c.integer for c in schema], dtype=bool)
    bounds = (np.array([c.min for c in schema], float), np.array([c.max for c in schema], float))
    fills = column_fills(X, schema)
    imputing = policy == "impute"
    data = np.where(np.isnan(X), fills, X) if imputing else X
    qz = (quantizer or quantize)(data, clusters, metric=metric, seed=seed, integer=integer, bounds=bounds)
    observed = assigned_distance(X, qz.centers, qz.labels, metric)   # (n,), no (n, K) matrix
    features = feature_maps(schema, policy, fills)
    cells = bundle_cells(qz.centers, integer)
    return MissingAlphabet(centers=qz.centers, cells=cells, features=features, labels=qz.labels,
                           r=float(observed.max()), mean_distortion=float(observed.mean()), fills=fills)
