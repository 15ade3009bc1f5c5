"""What the model kinds share in their ``model`` map.

The model kinds are the recommender and ranking kinds; what they share is the rating columns a
user's row holds, and their one rating domain.

Both kinds read a row of ratings (a blank cell or the missing token: not rated) and validate it
against the domain before their model sees it; the parse lives here once so that the two kinds
refuse the same malformed columns with the same messages.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import NoReturn

from ..constants import MAX_ABS_CELL
from ..errors import BundleFormatError
from ..format import Feature, Limits
from . import table

__all__ = ["column_names", "rating_columns", "fail_model", "model_int", "model_body", "MAX_TOKEN"]

#: Longest missing-value token (as the quantized features' ``missing_token``).
MAX_TOKEN = 16


def model_body(obj: dict, limits: Limits, parse_model: Callable[[object, list, Limits], object]) -> dict:
    """A model kind's parsed payload after the header.

    A model kind's payload after the header: the table fields over its space
    (:func:`privmap.device.kinds.table.parse_body`), then ``model`` parsed by the kind's
    ``parse_model(model, features, limits)`` against those features. Raises BundleFormatError,
    TableError or WorkLimitError.
    """
    body = table.parse_body(obj, limits, table.MODEL_RULES)
    body["model"] = parse_model(body["model"], body["features"], limits)
    return body


def fail_model(message: str) -> NoReturn:
    """Raise :class:`BundleFormatError` for the ``model`` map's field named in ``message``."""
    raise BundleFormatError(f"model: {message}")


def model_int(x: object, what: str, lo: int, hi: int) -> int:
    """``x`` if it is an int in [lo, hi]; :func:`fail_model` naming ``what`` otherwise."""
    if type(x) is not int or not lo <= x <= hi:
        fail_model(f"{what} must be an int in [{lo}, {hi}]")
    return x


def column_names(obj: dict, limits: Limits, fail: Callable[[str], NoReturn]) -> list:
    """The checked column names of a ``model`` map.

    ``obj["columns"]``: 1..``limits.max_features`` distinct non-empty names, each within the
    string limit; ``fail(message)`` raises (the kind's BundleFormatError) otherwise.
    """
    names = obj["columns"]
    if type(names) is not list or not 1 <= len(names) <= limits.max_features:
        fail(f"columns must be an array of 1..{limits.max_features} names")
    for i, name in enumerate(names):
        if type(name) is not str or not name or len(name.encode("utf-8")) > limits.max_string_bytes:
            fail(f"columns[{i}] must be a non-empty string")
    if len(set(names)) != len(names):
        fail("column names must be unique")
    return names


def rating_columns(obj: dict, names: Iterable[str], fail: Callable[[str], NoReturn]) -> tuple[Feature, ...]:
    """The rating columns of a ``model`` map, as features.

    The numeric, masked :class:`Feature` of each of ``names`` over the map's one rating domain
    (``min`` < ``max``, finite within ``MAX_ABS_CELL``; ``integer``, whole-number bounds when true;
    ``missing_token``, at most :data:`MAX_TOKEN` characters); ``fail(message)`` raises otherwise.
    """
    lo, hi = obj["min"], obj["max"]
    for what, x in (("min", lo), ("max", hi)):
        if type(x) not in (int, float) or not math.isfinite(x) or not -MAX_ABS_CELL <= x <= MAX_ABS_CELL:
            fail(f"{what} must be a finite number in [{-MAX_ABS_CELL:g}, {MAX_ABS_CELL:g}]")
    lo, hi = float(lo), float(hi)
    if not lo < hi:
        fail("min must be below max")
    integer = obj["integer"]
    if type(integer) is not bool:
        fail("integer must be a bool")
    if integer and not (lo.is_integer() and hi.is_integer()):
        fail("an integer rating domain needs whole-number bounds")
    token = obj["missing_token"]
    if type(token) is not str or len(token) > MAX_TOKEN:
        fail(f"missing_token must be a string of at most {MAX_TOKEN} characters")
    bound = (int if integer else float)
    return tuple(Feature(name=n, kind="numeric", min=bound(lo), max=bound(hi), integer=integer, missing="mask",
                         missing_token=token) for n in names)
