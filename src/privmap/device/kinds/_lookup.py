"""Parsing a user's row and finding its input representative.

Distances (``metric``), summed over the d cells from left to right in float64 arithmetic:

* numeric cell, ``"l2"``: ``(x - y) ** 2`` (so the sum is the squared Euclidean distance);
* numeric cell, ``"l1"``: ``abs(x - y)``;
* numeric cell, ``"hamming"`` or ``"erasures"``: ``0.0`` if ``x == y`` else ``1.0``;
* categorical cell, any metric: ``0.0`` if the categories are equal else ``1.0``.

(Input representatives never hold erased cells, so ``"erasures"`` looks up like ``"hamming"``.)
The nearest representative is the one with the smallest sum; ties go to the **lowest input index**.

Missing answers: a numeric cell that is blank (after stripping spaces), ``None``, or equal to the
feature's ``missing_token`` is missing. Under the feature's rule it is refused (``"refuse"``),
replaced by the feature's ``fill`` before anything else (``"impute"``), or **skipped** in the sum
(``"mask"``: the cell adds nothing, and the other cells are still summed left to right). The sum is
never rescaled on the device: rescaling a row's sum by d / d_observed multiplies every
representative's sum by the same constant, so it could only change the answer by rounding. A row
whose every cell is missing is refused whatever the rules.
"""
from __future__ import annotations

import math
import numbers
import re
from collections.abc import Iterable, Mapping, Sequence, Set
from itertools import islice
from operator import itemgetter
from typing import Any, NoReturn, cast

from ..errors import InputError
from ..format import DECIMAL, Feature

__all__ = ["parse_row", "canonical", "distance_modes", "nearest_pure", "nearest_numpy", "MODE_EQUAL", "MODE_L2", "MODE_L1"]

_INTEGER = re.compile(r"[+-]?[0-9]+\Z")
_MAX_CELL_STRING = 64

MODE_EQUAL, MODE_L2, MODE_L1 = 0, 1, 2


def distance_modes(features: Iterable[Feature], metric: str) -> tuple[int, ...]:
    """Per-cell distance rule for ``metric``: MODE_EQUAL, MODE_L2 or MODE_L1."""
    modes = []
    for f in features:
        if f.kind == "categorical" or metric in ("hamming", "erasures"):
            modes.append(MODE_EQUAL)
        elif metric == "l2":
            modes.append(MODE_L2)
        else:
            modes.append(MODE_L1)
    return tuple(modes)


def canonical(cells: Iterable[float], features: Iterable[Feature]) -> tuple[float, ...]:
    """Cells as used by lookups: numeric cells as float, categorical cells as int index."""
    return tuple(c if f.kind == "categorical" else float(c) for c, f in zip(cells, features))


def _bad(position: int, feature: Feature, rule: str) -> NoReturn:
    # Never include the raw value: the row is the user's private input.
    raise InputError(f"cell {position} (feature {feature.name!r}): {rule}")


def _numeric(value: object, position: int, feature: Feature) -> int | float:
    number: int | float
    if type(value) is float or type(value) is int:
        number = value
    elif isinstance(value, str):
        text = value.strip()
        if len(text) > _MAX_CELL_STRING or not DECIMAL.match(text):
            _bad(position, feature, "not a decimal number")
        number = int(text) if feature.integer and _INTEGER.match(text) else float(text)
    elif isinstance(value, bool) or type(value).__name__ == "bool_":
        _bad(position, feature, "a boolean is not a number")
    elif isinstance(value, numbers.Integral):
        number = int(value)
    elif isinstance(value, numbers.Real):
        try:
            number = float(value)
        except (OverflowError, ValueError, TypeError):  # e.g. Fraction(10**400)
            _bad(position, feature, "not finite")
    else:
        _bad(position, feature, "expected a number or a decimal string")
    if isinstance(number, float):
        if not math.isfinite(number):
            _bad(position, feature, "not finite")
        if feature.integer:
            if not number.is_integer():
                _bad(position, feature, "not a whole number")
            number = int(number)
    if feature.clip(number) != number:  # outside [min, max]
        _bad(position, feature, f"outside the feature's [min, max] = [{feature.min:g}, {feature.max:g}]")
    return number


def _is_missing(value: object, feature: Feature) -> bool:
    if value is None:
        return True
    if isinstance(value, str):
        text = value.strip()
        return not text or (bool(feature.missing_token) and text == feature.missing_token)
    return False


def parse_row(row: Sequence[object], features: Sequence[Feature]) -> tuple[float | None, ...]:
    """Validate a user's row and return it canonical (see :func:`canonical`).

    ``row`` is a sequence of d cells: numeric cells are ints, floats or strict decimal strings,
    finite and within [min, max] (whole numbers for integer features), or missing (``None``, a
    blank string or the feature's ``missing_token``); categorical cells are category strings.
    A missing cell comes back as ``None`` (rule ``"mask"``) or as ``float(fill)`` (rule
    ``"impute"``). Raises :class:`InputError` (never echoing a raw value), also for a missing
    cell of a feature with rule ``"refuse"`` and for a row whose every cell is missing.
    """
    d = len(features)
    if type(row) is list or type(row) is tuple:
        cells = row
    elif isinstance(row, (str, bytes, bytearray, memoryview, Mapping, Set)) or row is None:
        raise InputError(f"a row is a sequence of {d} cells")
    else:
        try:
            cells = list(islice(iter(row), d + 1))
        except TypeError:
            raise InputError(f"a row is a sequence of {d} cells") from None
    if len(cells) != d:
        raise InputError(f"a row has exactly {d} cells")
    out: list[float | None] = []
    missing = 0
    for position, (value, feature) in enumerate(zip(cells, features)):
        if feature.kind == "numeric" and _is_missing(value, feature):
            missing += 1
            if feature.missing == "mask":
                out.append(None)
            elif feature.missing == "impute":
                out.append(float(cast(float, feature.fill)))  # an imputing feature has a fill
            else:
                _bad(position, feature, "a missing answer is not allowed")
            continue
        if feature.kind == "categorical":
            if type(value) is not str:
                _bad(position, feature, "expected a category string")
            try:
                out.append(feature.values.index(value))
            except ValueError:
                _bad(position, feature, "not one of the feature's categories")
        else:
            out.append(float(_numeric(value, position, feature)))
    if missing == d:
        raise InputError("every cell of the row is missing")
    return tuple(out)


def nearest_pure(reps: Iterable[Sequence[float]], modes: Sequence[int], x: Sequence[float | None]) -> int:
    """Index of the representative nearest to a row, in pure Python.

    ``x`` holds canonical cells; a ``None`` cell is masked and skipped. Ties go to the lowest
    index.
    """
    observed = [k for k, a in enumerate(x) if a is not None]
    if len(observed) < len(x):  # drop masked cells once, not once per representative
        modes = tuple(modes[k] for k in observed)
        x = tuple(x[k] for k in observed)
        reps = [tuple(rep[k] for k in observed) for rep in reps] if len(observed) < 2 else \
            map(itemgetter(*observed), reps)
    best_index = 0
    best = None
    for i, rep in enumerate(reps):
        s = 0.0
        for mode, a, b in zip(modes, cast("Sequence[float]", x), rep):  # masked cells dropped above
            if mode == MODE_L2:
                diff = a - b
                s += diff * diff
            elif mode == MODE_L1:
                s += abs(a - b)
            else:
                s += 0.0 if a == b else 1.0
        if best is None or s < best:
            best = s
            best_index = i
    return best_index


def nearest_numpy(reps_array: Any, modes: Iterable[int], x: Sequence[float | None]) -> int:
    """Same answer as :func:`nearest_pure`, vectorised over representatives.

    ``reps_array`` is a float64 array of shape (K_in, d) holding the canonical representatives
    (typed ``Any``: the device imports numpy only inside its fast path, not for a type).
    Dimensions are accumulated left to right with the same float64 operations (masked cells,
    ``None`` in ``x``, skipped as in the pure path), so the sums are
    bitwise equal to the pure path; ``argmin`` returns the first (lowest) index among ties.
    """
    import numpy as np  # fast path

    dist = np.zeros(reps_array.shape[0], dtype=np.float64)
    for k, mode in enumerate(modes):
        if x[k] is None:
            continue
        column = reps_array[:, k]
        a = np.float64(x[k])
        if mode == MODE_L2:
            diff = a - column
            dist += diff * diff
        elif mode == MODE_L1:
            dist += np.abs(a - column)
        else:
            dist += (column != a).astype(np.float64)
    return int(np.argmin(dist))
