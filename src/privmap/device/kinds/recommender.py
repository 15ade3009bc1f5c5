"""The ``recommender`` kind.

The ``recommender`` kind: a user's ratings folded into a latent factor, a released factor
decoded into a full row of predicted ratings (docs/bundle-format.md, section "recommender").

A recommender bundle is a quantized table over a *factor space*: its ``features`` are the
coordinates of a whitened user factor and its inputs and outputs are points of that space.
The ``model`` map carries what takes a user from ratings to that space and back:

- ``columns`` and the rating domain (``min``, ``max``, ``integer``, ``missing_token``): a row
  holds one cell per column, a blank or the token meaning "not rated";
- ``items``: per column the item bias and then the item factor, ``rank + 1`` whole numbers,
  read as fixed point (the value times ``2**scale_bits``); ``mean`` the global mean rating;
- ``reg``: the ridge penalty of the fold-in: the user's factor ``theta = (b_u, u)`` minimises
  ``sum over rated j of (r_j - mean - b_j - x_j . theta)^2 + reg * |theta|^2`` with
  ``x_j = (1, v_j)``: the user step of the alternating least squares the builder fitted with,
  solved here by a pure-Python Cholesky on ``rank + 1`` unknowns;
- ``whiten``: the upper-triangular ``W`` with ``z = W theta``, chosen so that the Euclidean
  distance between two points ``z`` is the root mean square, over the columns, of the
  difference of their predicted ratings (before clipping): the l2 table distortion is then in
  stars;
- ``decimals``: released ratings are rounded to this many decimals.

The release is the predicted row of the sampled output, ``mean + b_j + x_j . theta_out``
rounded to ``decimals`` and then clipped to the rating domain, for *every* column: nothing of the
user's row, not even which items were rated, reaches the release except through the sampled
output. Nor does the fold-in's time: it does the same work for a blank cell as for a rating
(adds a zero outer product), so a row costs m x (rank + 1)(rank + 2) / 2 additions whatever it
holds. Every sum is either accumulated left to right in float64 or taken by :func:`math.fsum`
(correctly rounded), never by the built-in ``sum`` (whose float algorithm changed in Python
3.12), so a release is the same on every device.

Finite by construction: :func:`parse_model` bounds every number of the model and refuses a
whitening under which some point of the factor space's domain would predict a rating beyond
:data:`~privmap.device.constants.MAX_ABS_CELL`, so that decoding any output is finite and
free of NaN; a row whose fold-in still fails (an ill-conditioned solve) raises
:class:`InputError` for that row alone.
"""
from __future__ import annotations

import math
from array import array
from collections.abc import Sequence
from itertools import repeat
from operator import add, mul
from typing import NoReturn, cast

from ..constants import MAX_ABS_CELL, MAX_RANK
from ..errors import InputError, WorkLimitError
from ..format import Feature, Limits
from . import table
from ._rating_columns import column_names, model_body, model_int, rating_columns
from ._rating_columns import fail_model as _fail

__all__ = ["MECHANISM", "MODEL_KEYS", "MAX_FOLD_IN_WORK", "FactorModel", "parse_model", "parse_body",
           "check_figures"]

MECHANISM = "recommender"
#: Keys of the ``model`` map, in canonical order.
MODEL_KEYS = ("columns", "min", "max", "integer", "missing_token", "mean", "reg", "scale_bits", "items",
              "whiten", "decimals")
#: Largest m x (rank + 1)^2: bounds the per-column outer products a device keeps (about half that
#: many float64, 8 MiB at the cap) and every row's fold-in work (the same for every row).
MAX_FOLD_IN_WORK = 1 << 21
#: Largest magnitude of a fixed-point item entry (int32).
_MAX_FIXED = (1 << 31) - 1


def _finite(x: object, what: str, lo: float = -MAX_ABS_CELL, hi: float = MAX_ABS_CELL) -> float:
    if (type(x) is not int and type(x) is not float) or not math.isfinite(x) or not lo <= x <= hi:
        _fail(f"{what} must be a finite number in [{lo:g}, {hi:g}]")
    return float(x)


class FactorModel:
    """The fold-in and decode of a recommender bundle (module docstring). Read-only.

    Attributes
    ----------
    columns : tuple of Feature, length m
        The rating columns, numeric with rule ``"mask"`` (a blank cell is "not rated").
    mean : float; reg : float
        Global mean rating; ridge penalty of the fold-in (> 0).
    bias : tuple of m floats; factors : tuple of m tuples of rank + 1 floats
        Item biases b_j, and x_j = (1, v_j) for each column.
    whiten : tuple of rank + 1 tuples of rank + 1 floats
        Upper-triangular W with z = W theta.
    decimals : int
        Released ratings are rounded to this many decimals.
    """

    __slots__ = ("columns", "mean", "reg", "bias", "factors", "whiten", "decimals", "_lo", "_hi", "_outer",
                 "_zeros")

    columns: tuple[Feature, ...]
    mean: float
    reg: float
    bias: tuple[float, ...]
    factors: tuple[tuple[float, ...], ...]
    whiten: tuple[tuple[float, ...], ...]
    decimals: int
    _lo: float  # the rating domain, shared by every column
    _hi: float
    _outer: tuple[array, ...]  # each column's x_j x_j^T, upper triangle row by row (float64)
    _zeros: array  # the zero outer product a blank cell adds

    def __init__(self, columns: tuple[Feature, ...], mean: float, reg: float, bias: tuple[float, ...],
                 factors: tuple[tuple[float, ...], ...], whiten: tuple[tuple[float, ...], ...], decimals: int) -> None:
        # each column's x_j x_j^T, upper triangle row by row: a rated cell adds it to the Gram matrix
        outer = tuple(array("d", [xi * xj for i, xi in enumerate(x) for xj in x[i:]]) for x in factors)
        lo, hi = cast(float, columns[0].min), cast(float, columns[0].max)  # rating columns are bounded
        for name, value in (("columns", columns), ("mean", mean), ("reg", reg), ("bias", bias),
                            ("factors", factors), ("whiten", whiten), ("decimals", decimals),
                            ("_lo", float(lo)), ("_hi", float(hi)), ("_outer", outer),
                            ("_zeros", array("d", bytes(len(outer[0]) * 8)))):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> NoReturn:
        """Refused: a FactorModel is read-only."""
        raise AttributeError("FactorModel is read-only")

    @property
    def dimension(self) -> int:
        """The length of theta and z: rank + 1."""
        return len(self.whiten)

    def fold_in(self, cells: Sequence[float | None]) -> tuple[float, ...]:
        """The fold-in theta (rank + 1 floats) of a parsed row (m cells, ``None`` = not rated).

        Constant work: every column adds its outer product (a blank cell a zero one) and its
        share of the right-hand side, so the time does not tell how many cells are rated.

        Raises :class:`InputError` if no cell is rated or the solve is not finite.
        """
        k1, mean, zeros = self.dimension, self.mean, self._zeros
        flat = [0.0] * len(zeros)
        rhs = [0.0] * k1
        rated = 0
        for r, b, x, outer in zip(cells, self.bias, self.factors, self._outer):
            if r is None:
                y, outer = 0.0, zeros
            else:
                y, rated = r - mean - b, rated + 1
            rhs = list(map(add, rhs, map(mul, x, repeat(y))))
            flat = list(map(add, flat, outer))
        if not rated:
            raise InputError("every cell of the row is missing")
        gram, start = [], 0
        for i in range(k1):
            row = [0.0] * i + flat[start:start + k1 - i]
            row[i] += self.reg
            gram.append(row)
            start += k1 - i
        return _cholesky_solve(gram, rhs)

    def point(self, cells: Sequence[float | None]) -> tuple[float, ...]:
        """The point z = W theta of a parsed row in the bundle's factor space (finite).

        Raises :class:`InputError` as :meth:`fold_in` does, or if z is not finite.
        """
        theta = self.fold_in(cells)
        try:
            z = tuple(math.fsum(map(mul, row[i:], theta[i:])) for i, row in enumerate(self.whiten))
        except (OverflowError, ValueError):
            z = (math.nan,)
        if not all(map(math.isfinite, z)):
            raise InputError("the row's ratings give no finite point of the factor space")
        return z

    def ratings(self, z: Sequence[float]) -> list[float]:
        """The released ratings of a point ``z`` of the factor space.

        ``z`` lies inside the factor space's domain. One float per column, rounded to
        ``decimals`` and then clipped to the rating domain.
        """
        theta = _back_substitute(self.whiten, z)
        lo, hi, places, mean = self._lo, self._hi, self.decimals, self.mean
        return [min(max(round(mean + b + math.fsum(map(mul, x, theta)), places), lo), hi) + 0.0
                for b, x in zip(self.bias, self.factors)]


def _cholesky_solve(a: Sequence[Sequence[float]], b: Sequence[float]) -> tuple[float, ...]:
    """The solution x of a x = b, a symmetric positive definite given by its upper triangle (pure Python).

    Raises :class:`InputError` if a pivot is not positive and finite or the solution is not
    finite (ratings an ill-conditioned model cannot fold in).
    """
    try:
        x = _cholesky(a, b)
    except (OverflowError, ValueError):   # math.fsum met an overflow or inf - inf
        x = (math.nan,)
    if not all(map(math.isfinite, x)):
        raise InputError("the row's ratings give no finite fold-in")
    return x


def _cholesky(a: Sequence[Sequence[float]], b: Sequence[float]) -> tuple[float, ...]:
    n = len(b)
    low = [[0.0] * n for _ in range(n)]
    for j in range(n):
        row_j = low[j]
        pivot = a[j][j] - math.fsum(map(mul, row_j[:j], row_j[:j]))
        if not (pivot > 0 and math.isfinite(pivot)):
            raise InputError("the row's ratings give no solvable fold-in")
        root = math.sqrt(pivot)
        row_j[j] = root
        for i in range(j + 1, n):
            row_i = low[i]
            row_i[j] = (a[j][i] - math.fsum(map(mul, row_i[:j], row_j[:j]))) / root
    y = [0.0] * n
    for i in range(n):
        y[i] = (b[i] - math.fsum(map(mul, low[i][:i], y[:i]))) / low[i][i]
    x = [0.0] * n
    for i in reversed(range(n)):
        x[i] = (y[i] - math.fsum(low[k][i] * x[k] for k in range(i + 1, n))) / low[i][i]
    return tuple(x)


def _back_substitute(upper: Sequence[Sequence[float]], z: Sequence[float]) -> tuple[float, ...]:
    """The theta with W theta = z, W upper triangular with a positive diagonal."""
    n = len(z)
    theta = [0.0] * n
    for i in reversed(range(n)):
        row = upper[i]
        theta[i] = (z[i] - math.fsum(map(mul, row[i + 1:], theta[i + 1:]))) / row[i]
    return tuple(theta)


def parse_model(obj: object, factor_features: Sequence[Feature], limits: Limits) -> FactorModel:
    """The validated ``model`` map of a recommender payload.

    Validate the ``model`` map of a recommender payload against its ``factor_features``
    (the rank + 1 numeric features of the factor space); returns the :class:`FactorModel`.

    Raises :class:`BundleFormatError` naming the first field that fails, and
    :class:`WorkLimitError` for more columns x (rank + 1)^2 than :data:`MAX_FOLD_IN_WORK`.
    """
    if type(obj) is not dict or set(obj) != set(MODEL_KEYS) or any(type(k) is not str for k in obj):
        _fail(f"must be a map with exactly the keys {', '.join(MODEL_KEYS)}")
    k1 = len(factor_features)
    if not 2 <= k1 <= MAX_RANK + 1 or any(f.categorical or f.integer for f in factor_features):
        _fail(f"needs 2..{MAX_RANK + 1} real numeric features (the factor space)")
    names = column_names(obj, limits, _fail)
    if len(names) * k1 * k1 > MAX_FOLD_IN_WORK:
        raise WorkLimitError(f"model: {len(names)} columns x (rank + 1)^2 = {k1 * k1} exceeds the fold-in work "
                             f"cap {MAX_FOLD_IN_WORK}")
    columns = rating_columns(obj, names, _fail)
    lo, hi = float(obj["min"]), float(obj["max"])            # checked finite by rating_columns
    mean = _finite(obj["mean"], "mean")
    reg = _finite(obj["reg"], "reg", 1e-9, 1e9)
    scale = 2.0 ** model_int(obj["scale_bits"], "scale_bits", 0, 30)
    items = obj["items"]
    if type(items) is not list or len(items) != len(names):
        _fail("items must hold one entry per column")
    bias, factors = [], []
    for j, row in enumerate(items):
        if type(row) is not list or len(row) != k1:
            _fail(f"items[{j}] must hold {k1} fixed-point numbers (the bias, then the factor)")
        values = [model_int(v, f"items[{j}]", -_MAX_FIXED, _MAX_FIXED) / scale for v in row]
        bias.append(values[0])
        factors.append((1.0, *values[1:]))
    whiten = obj["whiten"]
    if type(whiten) is not list or len(whiten) != k1:
        _fail(f"whiten must be {k1} rows")
    rows = []
    for i, row in enumerate(whiten):
        if type(row) is not list or len(row) != k1:
            _fail(f"whiten[{i}] must hold {k1} numbers")
        entries = tuple(_finite(v, f"whiten[{i}]") for v in row)
        if any(entries[:i]) or not entries[i] > 0:
            _fail("whiten must be upper triangular with a positive diagonal")
        rows.append(entries)
    decimals = model_int(obj["decimals"], "decimals", 0, 6)
    if round(lo, decimals) != lo or round(hi, decimals) != hi:
        _fail(f"min and max must be multiples of 10**-{decimals} (decimals): a released rating is "
              f"rounded, then clipped to them")
    span = max(max(-cast(float, f.min), cast(float, f.max)) for f in factor_features)  # numeric: bounded
    reach = _rating_reach(mean, bias, factors, rows, span)
    if not reach <= MAX_ABS_CELL:
        _fail(f"whiten and items let a point of the factor space predict ratings up to {reach:g} "
              f"(at most {MAX_ABS_CELL:g}): the whitening is too ill-conditioned for the space's domain")
    return FactorModel(columns, mean, reg, tuple(bias), tuple(factors), tuple(rows), decimals)


def _rating_reach(mean: float, bias: Sequence[float], factors: Sequence[Sequence[float]],
                  whiten: Sequence[Sequence[float]], span: float) -> float:
    """An upper bound on the magnitude of any predicted rating.

    The bound is on |mean + b_j + x_j . theta| over the columns j and the points z with every
    |z_i| <= ``span``, theta = W^-1 z (inf where the bound overflows).

    |W^-1| <= M(W)^-1 entrywise, M(W) the comparison matrix of the upper-triangular W (its
    diagonal, minus the magnitudes of the rest), so ``span`` times M(W)^-1 times ones bounds
    every |theta_i|. Plain left-to-right float arithmetic on non-negative terms: it overflows
    to inf (returned as such) rather than raising, and the bound is the same on every device.
    """
    n = len(whiten)
    u = [0.0] * n
    for i in reversed(range(n)):
        acc = 1.0
        for w, v in zip(whiten[i][i + 1:], u[i + 1:]):
            acc += abs(w) * v
        u[i] = acc / whiten[i][i]
    if not all(map(math.isfinite, u)):      # inf, or 0 x inf = NaN further up
        return math.inf
    theta = span * max(u)
    reach = 0.0
    for b, x in zip(bias, factors):
        norm = 0.0
        for v in x:
            norm += abs(v)
        reach = max(reach, abs(b) + norm * theta)
    return abs(mean) + reach


def parse_body(obj: dict, limits: Limits) -> dict:
    """The validated fields of a recommender payload after the header.

    Validate a recommender payload after the header: the table fields over its factor space
    (:func:`._rating_columns.model_body` with :func:`parse_model`).
    Raises BundleFormatError, TableError or WorkLimitError.
    """
    return model_body(obj, limits, parse_model)


#: The declared figures: the leakage of the factor-space table on its prior.
check_figures = table.check_figures
