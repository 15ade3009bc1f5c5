"""The ``ranking`` kind.

The ``ranking`` kind: which items a user rated embedded as a direction of a score space, a
released direction decoded into a full row of item scores (docs/bundle-format.md, section
"ranking").

A ranking bundle is a quantized table over a *score space*: its ``features`` are the ``k``
coordinates of a unit vector, and its inputs and outputs are points of that space. The ``model``
map carries what takes a user from a row to that space and back:

- ``columns`` and the rating domain (``min``, ``max``, ``integer``, ``missing_token``): a row
  holds one cell per column, a blank or the token meaning "not rated", each rated cell a value
  in the domain; only *which* cells are rated enters the embedding;
- ``embed``: per column ``k`` whole numbers; a user's point is the sum ``y`` of the rows of the
  rated columns, scaled to unit length (``z = y / |y|``). The builder made them the user's
  item-item (EASE) score vector projected on the score space, so that the distance between two
  points is the distance between two users' normalised score vectors, as far as rank ``k``
  keeps it;
- ``basis``: per column ``k`` whole numbers read as fixed point (the value times
  ``2**basis_bits``): the released score of column ``j`` for point ``z`` is ``basis_j . z``,
  rounded to ``decimals`` (higher = recommend sooner); ``z`` enters as whole numbers times
  ``2**30`` (:data:`POINT_BITS`), so that the product is exact integer arithmetic too.

The release is the score row of the sampled output for *every* column: nothing of the user's row,
not even which items were rated, reaches the release except through the sampled output. The
embedding adds every column's row times 0 or 1, so its work does not depend on how many cells are
rated; it and the decode are sums of whole numbers (the built-in ``sum`` over ints: exact, and
run in C), each ended by one correctly rounded division, so a release is the same on every device
and Python version, and fast: at 1,000 columns and k = 32 the embedding and the decode each take
about a millisecond in CPython.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from operator import mul
from typing import NoReturn, cast

from ..constants import MAX_RANK
from ..errors import InputError, WorkLimitError
from ..format import Feature, Limits
from . import table
from ._rating_columns import column_names, model_body, model_int, rating_columns
from ._rating_columns import fail_model as _fail

__all__ = ["MECHANISM", "MODEL_KEYS", "MAX_SCORE_WORK", "POINT_BITS", "ScoreModel", "parse_model", "parse_body",
           "check_figures"]

MECHANISM = "ranking"
#: Keys of the ``model`` map, in canonical order.
MODEL_KEYS = ("columns", "min", "max", "integer", "missing_token", "embed", "basis", "basis_bits", "decimals")
#: Largest m x k: bounds the embedding's and the decode's work per row (2 m k integer and float
#: products: about 10 ms in CPython at 1,000 columns and k = 32; 4,096 columns at k = 32).
MAX_SCORE_WORK = 1 << 17
#: Largest magnitude of an ``embed`` or ``basis`` entry (int16, as the builder writes them): the
#: embedding's integer sums then stay far below 2**53 at every size the work cap allows.
MAX_ENTRY = (1 << 15) - 1
#: A point's coordinates enter the decode as whole numbers times ``2**POINT_BITS``.
POINT_BITS = 30


class ScoreModel:
    """The embedding and decode of a ranking bundle (module docstring). Read-only.

    Attributes
    ----------
    columns : tuple of Feature, length m
        The item columns, numeric with rule ``"mask"`` (a blank cell is "not rated").
    embed : tuple of m tuples of k ints
        Each column's embedding row.
    basis : tuple of m tuples of k ints
        Each column's score row times ``2**basis_bits``.
    basis_bits : int
    decimals : int
        Released scores are rounded to this many decimals.
    """

    __slots__ = ("columns", "embed", "basis", "basis_bits", "decimals", "_by_coordinate", "_scale")

    columns: tuple[Feature, ...]
    embed: tuple[tuple[int, ...], ...]
    basis: tuple[tuple[int, ...], ...]
    basis_bits: int
    decimals: int
    _by_coordinate: tuple[tuple[int, ...], ...]  # embed transposed: k tuples of m ints
    _scale: int  # 2 ** (basis_bits + POINT_BITS): a decoded score's denominator

    def __init__(self, columns: tuple[Feature, ...], embed: tuple[tuple[int, ...], ...],
                 basis: tuple[tuple[int, ...], ...], basis_bits: int, decimals: int) -> None:
        for name, value in (("columns", columns), ("embed", embed), ("basis", basis), ("basis_bits", basis_bits),
                            ("decimals", decimals), ("_by_coordinate", tuple(zip(*embed))),
                            ("_scale", 1 << (basis_bits + POINT_BITS))):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> NoReturn:
        """Refused: a ScoreModel is read-only."""
        raise AttributeError("ScoreModel is read-only")

    @property
    def dimension(self) -> int:
        """k: the length of a point."""
        return len(self.embed[0])

    def point(self, cells: Sequence[float | None]) -> tuple[float, ...]:
        """The point z (k floats, unit length) of a parsed row (m cells, ``None`` = not rated).

        Every column's row is added times 0 or 1, so the work is the same whatever is rated.

        Raises
        ------
        InputError
            No cell is rated, or the rated columns' rows cancel out (no direction to embed).
        """
        flags = [cell is not None for cell in cells]
        y = [sum(map(mul, flags, column)) for column in self._by_coordinate]
        if not any(flags):
            raise InputError("every cell of the row is missing")
        length = math.sqrt(sum(a * a for a in y))      # an exact integer, then one rounding
        if not length > 0:
            raise InputError("the row's rated items give no direction to embed")
        return tuple(a / length for a in y)

    def ratings(self, z: Sequence[float]) -> list[float]:
        """The released scores of a point ``z`` of the score space.

        One float per column, ``basis_j . z`` rounded to ``decimals`` (higher = recommend
        sooner), ``z`` taken to :data:`POINT_BITS` bits.
        """
        places, scale = self.decimals, self._scale
        fixed = [round(v * (1 << POINT_BITS)) for v in z]
        return [round(sum(map(mul, row, fixed)) / scale, places) + 0.0 for row in self.basis]


def _matrix(obj: object, what: str, m: int, k: int) -> list[tuple[int, ...]]:
    if type(obj) is not list or len(obj) != m:
        _fail(f"{what} must hold one row per column")
    rows = []
    for j, row in enumerate(obj):
        if type(row) is not list or len(row) != k:
            _fail(f"{what}[{j}] must hold {k} ints")
        rows.append(tuple(model_int(v, f"{what}[{j}]", -MAX_ENTRY, MAX_ENTRY) for v in row))
    return rows


def parse_model(obj: object, score_features: Sequence[Feature], limits: Limits) -> ScoreModel:
    """The validated ``model`` map of a ranking payload.

    Validate the ``model`` map of a ranking payload against its ``score_features`` (the k
    real numeric features of the score space); returns the :class:`ScoreModel`.

    Raises :class:`BundleFormatError` naming the first field that fails, and
    :class:`WorkLimitError` for more columns x k than :data:`MAX_SCORE_WORK`.
    """
    if type(obj) is not dict or set(obj) != set(MODEL_KEYS) or any(type(k) is not str for k in obj):
        _fail(f"must be a map with exactly the keys {', '.join(MODEL_KEYS)}")
    k = len(score_features)
    if not 2 <= k <= MAX_RANK or any(f.categorical or f.integer for f in score_features):
        _fail(f"needs 2..{MAX_RANK} real numeric features (the score space)")
    for f in score_features:
        if not (-1.0 <= cast(float, f.min) and cast(float, f.max) <= 1.0):  # numeric: bounded
            _fail("the score space's features lie in [-1, 1] (coordinates of a unit vector)")
    names = column_names(obj, limits, _fail)
    if len(names) * k > MAX_SCORE_WORK:
        raise WorkLimitError(f"model: {len(names)} columns x k = {k} exceeds the score work cap {MAX_SCORE_WORK}")
    columns = rating_columns(obj, names, _fail)
    embed = _matrix(obj["embed"], "embed", len(names), k)
    bits = model_int(obj["basis_bits"], "basis_bits", 0, 30)
    basis = _matrix(obj["basis"], "basis", len(names), k)
    decimals = model_int(obj["decimals"], "decimals", 0, 6)
    return ScoreModel(columns, tuple(embed), tuple(basis), bits, decimals)


def parse_body(obj: dict, limits: Limits) -> dict:
    """The validated fields of a ranking payload after the header.

    Validate a ranking payload after the header: the table fields over its score space
    (:func:`._rating_columns.model_body` with :func:`parse_model`).
    Raises BundleFormatError, TableError or WorkLimitError.
    """
    return model_body(obj, limits, parse_model)


#: The declared figures: the leakage of the score-space table on its prior.
check_figures = table.check_figures
