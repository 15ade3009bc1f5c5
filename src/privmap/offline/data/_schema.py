"""Declared feature domains: what each public column may hold and how a missing answer is written.

The operator declares, for each public column, its type (``"integer"`` or ``"real"``), its closed
domain [min, max], whether a missing answer is allowed and the text that spells one in a CSV
(a blank cell always does). What is not declared is inferred from the training rows (type:
integer when every observed value is whole; domain: the observed [min, max]; missing allowed).
The resolved schema goes into the signed bundle, where the device checks every cell against it.

Declarations come from a JSON schema file and from ``--domain`` options; for one column the
most specific wins: ``--domain COL=LO:HI``, then ``--domain LO:HI``, then the schema file.
Schema file (every key of a column optional; ``min`` and ``max`` go together)::

    {"columns": {
        "bigb": {"type": "integer", "min": 1, "max": 5, "missing": true, "missing_token": "NA"},
        "age":  {"type": "real", "min": 18, "max": 99, "missing": false}
    }}

``privmap build --schema-out FILE`` writes the resolved schema in this form, ready to edit.

A ``missing_token`` may be a number (``0``, or ``"0"``): surveys often code a skipped question as
0. It matches a cell whose text is exactly the token and must lie outside the column's domain, so
that no cell is both an answer and a missing one; ``privmap build --missing-token TOKEN`` gives
every column that token unless the schema file gives the column its own.
"""
from __future__ import annotations

import json
import math
import pathlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeGuard

import numpy as np

from privmap.device.constants import MAX_ABS_CELL, MAX_MISSING_TOKEN
from privmap.device.format import DECIMAL as _DECIMAL

from .._errors import DatasetError
from .._listing import name_hint, name_some
from ._dataset import read_capped

__all__ = ["Column", "Declaration", "Declared", "parse_domains", "read_schema_file", "declare", "resolve",
           "schema_json", "check_missing_token", "numeric_token"]

TYPES = ("integer", "real")
_COLUMN_KEYS = {"type", "min", "max", "missing", "missing_token"}
_NUMBER = _DECIMAL.pattern.removesuffix(r"\Z")  # the device's strict decimal syntax
_RANGE = re.compile(rf"({_NUMBER}):({_NUMBER})\Z")
#: Largest schema file read, in bytes.
MAX_SCHEMA_BYTES = 1 << 20


@dataclass(frozen=True)
class Column:
    """The resolved schema of one public column.

    ``min``/``max`` bound the closed domain (ints for an integer column); ``missing`` says whether
    a missing answer is allowed; ``missing_token`` is the extra CSV spelling of one ("" = blank
    only); ``inferred`` lists what was taken from the training rows (subset of "type", "domain").
    """

    name: str
    integer: bool
    min: float
    max: float
    missing: bool = True
    missing_token: str = ""
    inferred: tuple[str, ...] = ()


@dataclass(frozen=True)
class Declaration:
    """What the operator declared about one column (``None`` = not declared)."""

    type: str | None = None
    min: float | None = None
    max: float | None = None
    missing: bool | None = None
    missing_token: str | None = None


def _finite_number(v: object) -> TypeGuard[float]:
    """A finite int or float, not a bool (JSON's true and false)."""
    return not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v)


@dataclass(frozen=True)
class Declared:
    """All declarations, by column name (a tuple of pairs, so build options stay hashable)."""

    columns: tuple[tuple[str, Declaration], ...] = ()

    def get(self, name: str) -> Declaration:
        return dict(self.columns).get(name, Declaration())

    def missing_tokens(self) -> dict[str, str]:
        """Missing-answer token by column; key ``"*"``: every other column's (``--missing-token``)."""
        return {name: d.missing_token for name, d in self.columns if d.missing_token is not None}


def _range(text: str, what: str) -> tuple[float, float]:
    match = _RANGE.match(text.strip())
    if not match:
        raise DatasetError(f"{what}: expected LO:HI with two numbers, got {text!r}")
    lo, hi = float(match.group(1)), float(match.group(2))
    if not (math.isfinite(lo) and math.isfinite(hi) and lo <= hi):
        raise DatasetError(f"{what}: need finite LO <= HI, got {text!r}")
    if max(abs(lo), abs(hi)) > MAX_ABS_CELL:
        raise DatasetError(f"{what}: LO and HI must lie within +-{MAX_ABS_CELL:g} (devices refuse larger), got {text!r}")
    return lo, hi


def parse_domains(values: Sequence[str]) -> tuple[tuple[float, float] | None, dict[str, tuple[float, float]]]:
    """Parse ``--domain`` values: ``LO:HI`` (every public column) or ``COL=LO:HI`` (one column).

    Returns ``(default, by_column)``. Raises :class:`DatasetError` for a malformed value, a
    column given twice, or ``LO:HI`` given twice.
    """
    default, by_column = None, {}
    for value in values:
        name, sep, spec = value.rpartition("=")
        if sep:
            name = name.strip()
            if not name:
                raise DatasetError(f"--domain {value!r}: empty column name")
            if name in by_column:
                raise DatasetError(f"--domain: column {name!r} given twice")
            by_column[name] = _range(spec, f"--domain {name}")
        else:
            if default is not None:
                raise DatasetError("--domain LO:HI (every column) given twice")
            default = _range(spec, "--domain")
    return default, by_column


def read_schema_file(path) -> dict[str, Declaration]:
    """Read a JSON schema file (see the module docstring) into declarations by column.

    Raises :class:`DatasetError` for an unreadable, oversized or malformed file, an unknown key,
    a wrong type, or a domain with min > max.
    """
    path = pathlib.Path(path)
    raw = read_capped(path, MAX_SCHEMA_BYTES, "schema ")
    try:
        obj = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise DatasetError(f"schema {path}: not JSON ({exc})") from None
    if not isinstance(obj, dict) or set(obj) != {"columns"} or not isinstance(obj["columns"], dict):
        raise DatasetError(f"schema {path}: expected an object {{\"columns\": {{NAME: {{...}}}}}}")
    out = {}
    for name, spec in obj["columns"].items():
        what = f"schema {path}, column {name!r}"
        if not isinstance(spec, dict) or not set(spec) <= _COLUMN_KEYS:
            raise DatasetError(f"{what}: expected an object with keys among {sorted(_COLUMN_KEYS)}")
        kind = spec.get("type")
        if kind is not None and kind not in TYPES:
            raise DatasetError(f"{what}: type must be one of {TYPES}")
        if ("min" in spec) != ("max" in spec):
            raise DatasetError(f"{what}: give both min and max, or neither")
        lo, hi = spec.get("min"), spec.get("max")
        if lo is not None:
            if not (_finite_number(lo) and _finite_number(hi)) or lo > hi:
                raise DatasetError(f"{what}: min and max must be finite numbers with min <= max")
            if max(abs(lo), abs(hi)) > MAX_ABS_CELL:
                raise DatasetError(f"{what}: min and max must lie within +-{MAX_ABS_CELL:g} (devices refuse larger)")
        missing = spec.get("missing")
        if missing is not None and not isinstance(missing, bool):
            raise DatasetError(f"{what}: missing must be true or false")
        token = spec.get("missing_token")
        if token is not None:
            token = check_missing_token(token, what)
        out[name] = Declaration(kind, None if lo is None else float(lo), None if hi is None else float(hi),
                                missing, token)
    return out


def check_missing_token(token, what: str = "--missing-token") -> str:
    """A missing-answer token as the CSV text it matches.

    A string, or a JSON number written as its decimal text (``0`` -> ``"0"``, ``-9`` -> ``"-9"``,
    ``99.5`` -> ``"99.5"``).

    A token matches a cell whose text (spaces trimmed) is exactly the token, on the device as in
    the builder: with token ``"0"`` the cell ``0`` is missing and ``0.0`` is the number 0.

    Raises
    ------
    DatasetError
        Not a string or finite number, surrounding spaces, longer than ``MAX_MISSING_TOKEN``
        characters, or a number whose text is not the device's strict decimal syntax.
    """
    if isinstance(token, (int, float)) and not isinstance(token, bool):
        if not math.isfinite(token):
            raise DatasetError(f"{what}: missing_token must be finite")
        token = str(int(token)) if float(token).is_integer() else repr(float(token))
    if not isinstance(token, str) or token != token.strip() or len(token) > MAX_MISSING_TOKEN:
        raise DatasetError(f"{what}: missing_token must be a number or a string of at most {MAX_MISSING_TOKEN} "
                           "characters without surrounding spaces")
    if token[:1] in "+-.0123456789" and token and not re.fullmatch(_NUMBER, token):
        raise DatasetError(f"{what}: missing_token {token!r} looks like a number but is not a plain decimal")
    return token


def numeric_token(token: str) -> float | None:
    """The number a missing-answer token spells (``"0"`` -> 0.0), or None for a word such as ``"NA"``."""
    return float(token) if token and re.fullmatch(_NUMBER, token) else None


def declare(file_columns: dict[str, Declaration] | None = None, domains: Sequence[str] = (),
            missing_token: str | None = None) -> Declared:
    """Merge a schema file's declarations with ``--domain`` values and ``--missing-token``.

    The most specific ``--domain`` value wins; ``--missing-token`` is every column's token,
    unless the schema file gives the column its own.
    """
    default, by_column = parse_domains(domains)
    columns = dict(file_columns or {})
    names = list(columns) + [n for n in by_column if n not in columns]
    merged = []
    for name in names:
        d = columns.get(name, Declaration())
        lo_hi = by_column.get(name)
        if lo_hi is not None:
            d = Declaration(d.type, lo_hi[0], lo_hi[1], d.missing, d.missing_token)
        merged.append((name, d))
    if default is not None or missing_token is not None:
        token = None if missing_token is None else check_missing_token(missing_token)
        lo, hi = default or (None, None)
        merged.append(("*", Declaration(None, lo, hi, None, token)))
    return Declared(tuple(merged))


def resolve(features: Sequence[str], X: np.ndarray, declared: Declared | None = None) -> tuple[Column, ...]:
    """The schema of every public column: declarations completed by inference from ``X``.

    Parameters
    ----------
    features : sequence of str, length d
        Public column names.
    X : ndarray, shape (n, d)
        Training public data (float64, NaN = missing answer).
    declared : Declared, optional

    Raises
    ------
    DatasetError
        A declaration names a column that is not public; an integer column with a fractional
        bound or value; a training value outside its column's declared domain; a missing answer
        in a column that declares none allowed; a column with no observed value and no domain.
    """
    declared = declared or Declared()
    unknown = sorted({n for n, _ in declared.columns} - set(features) - {"*"})
    if unknown:
        raise DatasetError(f"schema/--domain: unknown public column(s) {name_some(unknown)}"
                           f"{name_hint(unknown[0], list(features))}")
    default = declared.get("*")
    out = []
    for k, name in enumerate(features):
        d = declared.get(name)
        column = X[:, k]
        observed = column[~np.isnan(column)]
        inferred = []
        if d.type is None:
            integer = bool(np.all(observed == np.round(observed)))
            inferred.append("type")
        else:
            integer = d.type == "integer"
        lo, hi = (d.min, d.max) if d.min is not None else (default.min, default.max)
        if lo is None or hi is None:                # declared together, or neither
            if observed.size == 0:
                raise DatasetError(f"column {name!r}: every training cell is missing; declare its domain")
            lo, hi = float(observed.min()), float(observed.max())
            inferred.append("domain")
        if integer and not (float(lo).is_integer() and float(hi).is_integer()):
            raise DatasetError(f"column {name!r}: an integer column needs whole-number bounds")
        if integer and not np.all(observed == np.round(observed)):
            raise DatasetError(f"column {name!r}: declared integer but a training value is not a whole number")
        outside = np.nonzero((column < lo) | (column > hi))[0]
        if outside.size:
            raise DatasetError(f"column {name!r}: {outside.size} training value(s) outside the declared domain "
                               f"[{lo:g}, {hi:g}] (first in data row {outside[0] + 1})")
        allowed = True if d.missing is None else d.missing
        if not allowed and observed.size != column.size:
            raise DatasetError(f"column {name!r}: declares no missing answers, but {column.size - observed.size} "
                               "training cell(s) are missing")
        token = d.missing_token if d.missing_token is not None else (default.missing_token or "")
        number = numeric_token(token)
        if number is not None and lo <= number <= hi:
            why = (f"the domain was inferred from the data, where {number:g} is written otherwise than {token!r}"
                   if "domain" in inferred else "declare a domain without it")
            raise DatasetError(f"column {name!r}: missing_token {token!r} lies inside the domain [{lo:g}, {hi:g}], "
                               f"so a cell would be both an answer and a missing one ({why})")
        if integer:
            lo, hi = int(lo), int(hi)
        out.append(Column(name, integer, lo, hi, allowed, token, tuple(inferred)))
    return tuple(out)


def schema_json(columns: Sequence[Column]) -> dict:
    """The schema file form of resolved columns (what ``--schema-out`` writes)."""
    return {"columns": {c.name: {"type": "integer" if c.integer else "real", "min": c.min, "max": c.max,
                                 "missing": c.missing, "missing_token": c.missing_token} for c in columns}}
