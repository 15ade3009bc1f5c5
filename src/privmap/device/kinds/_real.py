"""Pieces shared by the real-valued bundle kinds (``nullspace``, ``gaussian``; docs/bundle-format.md).

These kinds release real vectors, not table rows. Their payload has the closed key set
:data:`privmap.device.constants.REAL_PAYLOAD_KEYS`; ``features`` is a list of column names and
``parameters`` a closed, per-kind map. This module holds the validation helpers for numbers,
vectors and matrices, row parsing, a pure-Python Cholesky log-determinant, and the read-only
:class:`RealBundle` base class. Pure Python; every sum runs left to right in float64.
"""
from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NoReturn

from ..constants import MAX_ABS_CELL
from ..errors import BundleFormatError, InputError
from ..format import Feature, Limits

__all__ = ["MAX_REAL_DIM", "RealBundle", "number", "vector", "matrix", "names",
           "parse_real_row", "cholesky_logdet", "dot"]

#: Largest number of released coordinates (and of private/utility/target columns) of a
#: real-valued bundle: bounds the device's O(n^3) Cholesky and O(k n) release work.
MAX_REAL_DIM = 256
_DECIMAL = re.compile(r"\s*[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\s*\Z")
_MAX_CELL_STRING = 64

#: A real vector, and a matrix as a tuple of its rows.
Vector = tuple[float, ...]
Matrix = tuple[Vector, ...]


def _fail(message: str) -> NoReturn:
    raise BundleFormatError(message)


def number(x: object, what: str, lo: float = -math.inf, hi: float = math.inf) -> float:
    """A finite int/float (never bool) in [lo, hi], as float."""
    if (type(x) is not int and type(x) is not float) or not math.isfinite(x) or not lo <= x <= hi:
        _fail(f"{what} must be a finite number in [{lo}, {hi}]")
    return float(x)


def vector(x: object, what: str, length: int, lo: float = -math.inf, hi: float = math.inf) -> Vector:
    """An array of exactly ``length`` numbers (see :func:`number`), as a tuple of floats."""
    if type(x) is not list or len(x) != length:
        _fail(f"{what} must be an array of {length} numbers")
    return tuple(number(v, f"{what}[{i}]", lo, hi) for i, v in enumerate(x))


def matrix(x: object, what: str, rows: int, cols: int) -> Matrix:
    """A ``rows`` x ``cols`` array of arrays of numbers, as a tuple of tuples of floats."""
    if type(x) is not list or len(x) != rows:
        _fail(f"{what} must be an array of {rows} rows")
    return tuple(vector(row, f"{what}[{i}]", cols) for i, row in enumerate(x))


def names(x: object, what: str, lo: int, hi: int, limits: Limits) -> tuple[str, ...]:
    """``lo..hi`` distinct non-empty strings of at most ``limits.max_string_bytes`` bytes."""
    if type(x) is not list or not lo <= len(x) <= hi:
        _fail(f"{what} must be an array of {lo}..{hi} names")
    for i, s in enumerate(x):
        if type(s) is not str or not s or len(s.encode("utf-8")) > limits.max_string_bytes:
            _fail(f"{what}[{i}] must be a non-empty string")
    if len(set(x)) != len(x):
        _fail(f"{what} has duplicates")
    return tuple(x)


def symmetric(m: Matrix, what: str) -> None:
    """Refuse a matrix (tuple of tuples) that is not exactly symmetric."""
    for i, row in enumerate(m):
        for j in range(i):
            if row[j] != m[j][i]:
                _fail(f"{what} must be symmetric")


def dot(a: Iterable[float], b: Iterable[float]) -> float:
    """Left-to-right float64 sum of products."""
    total = 0.0
    for u, v in zip(a, b):
        total += u * v
    return total


def cholesky_logdet(m: Sequence[Sequence[float]]) -> float | None:
    """``log |m|`` of a symmetric matrix through its Cholesky factor (pure Python, O(n^3)).

    Returns ``None`` if ``m`` is not (numerically) positive definite: a non-positive or
    non-finite pivot.
    """
    n = len(m)
    low = [[0.0] * n for _ in range(n)]
    total = 0.0
    for j in range(n):
        row_j = low[j]
        pivot = m[j][j] - dot(row_j[:j], row_j[:j])
        if not (pivot > 0 and math.isfinite(pivot)):
            return None
        root = math.sqrt(pivot)
        row_j[j] = root
        total += math.log(root)
        for i in range(j + 1, n):
            row_i = low[i]
            row_i[j] = (m[i][j] - dot(row_i[:j], row_j[:j])) / root
    return 2.0 * total


def parse_real_row(row: Sequence[object], n: int) -> Vector:
    """The user's row as ``n`` floats.

    Cells are decimal strings, ints or floats (not bool), finite and at most
    :data:`MAX_ABS_CELL` in magnitude; ``-0.0`` becomes ``0.0``.

    Raises :class:`InputError` (naming the position only, never the value).
    """
    if isinstance(row, (str, bytes)) or not hasattr(row, "__len__"):
        raise InputError("row must be a sequence of cells")
    if len(row) != n:
        raise InputError(f"row must have {n} cells, has {len(row)}")
    out = []
    for k, cell in enumerate(row):
        if type(cell) is str:
            if len(cell) > _MAX_CELL_STRING or not _DECIMAL.match(cell):
                raise InputError(f"cell {k}: not a decimal number")
            value = float(cell)
        elif type(cell) is int or type(cell) is float:
            try:
                value = float(cell)
            except OverflowError:
                raise InputError(f"cell {k}: number out of range") from None
        else:
            raise InputError(f"cell {k}: must be a number or a decimal string")
        if not (math.isfinite(value) and abs(value) <= MAX_ABS_CELL):
            raise InputError(f"cell {k}: must be finite with magnitude <= {MAX_ABS_CELL:g}")
        out.append(value + 0.0)
    return tuple(out)


class RealBundle:
    """A verified real-valued bundle (base of NullspaceBundle and GaussianBundle). Read-only.

    Attributes
    ----------
    version, issued_at, expires : int
    device_class : str
        The device class the bundle is built for.
    mechanism : str
        ``"nullspace"`` or ``"gaussian"``.
    features : tuple[Feature, ...]
        The n released columns (numeric, unbounded: ``min``/``max`` are ``None``).
    withheld_columns : tuple[str, ...]
        Columns of the training data that are never released (targets, private, utility); an
        input CSV may carry them and ``privmap sanitize`` drops them.
    private_name : str
        The first withheld column (for callers written for table bundles).
    parameters : mapping; metrics : mapping str -> number; provenance : mapping str -> str|int
    sha256, key_id : str; data : bytes
    """

    __slots__ = ("version", "issued_at", "expires", "device_class", "mechanism", "features", "withheld_columns",
                 "private_name", "parameters", "metrics", "provenance", "sha256", "key_id", "data")

    version: int
    issued_at: int
    expires: int
    device_class: str
    mechanism: str
    features: tuple[Feature, ...]
    withheld_columns: tuple[str, ...]
    private_name: str
    parameters: Mapping[str, Any]
    metrics: Mapping[str, float]
    provenance: Mapping[str, str | int]
    sha256: str
    key_id: str
    data: bytes

    def __init__(self, **fields: object) -> None:
        for name, value in fields.items():
            object.__setattr__(self, name, value)
        object.__setattr__(self, "private_name", self.withheld_columns[0])

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise AttributeError("Bundle is read-only")

    def __delattr__(self, name: str) -> NoReturn:
        raise AttributeError("Bundle is read-only")

    @property
    def classes(self) -> tuple[str, ...]:
        """The private classes: none.

        Empty: a real-valued bundle protects columns, not the classes of a categorical private
        attribute (as a max-correlation bundle, which has none), so a device bound to classes
        refuses it (``Binding.classes``).
        """
        return ()

    def __repr__(self) -> str:
        return (f"<{type(self).__name__} version={self.version} n={len(self.features)} "
                f"sha256={self.sha256[:16]}>")

    @staticmethod
    def make_features(columns: Iterable[str]) -> tuple[Feature, ...]:
        return tuple(Feature(name, "numeric") for name in columns)
