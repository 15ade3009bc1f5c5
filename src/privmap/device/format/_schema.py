"""Closed-schema validation of a decoded payload (see docs/bundle-format.md).

Exact types throughout: an int field accepts ``int`` only (never ``bool`` or ``float``), a number
field accepts ``int`` or ``float`` (never ``bool``) and must be finite. Unknown and missing keys
are refused. Structural problems raise :class:`BundleFormatError` (:class:`WrongTypeError` for a
foreign ``type``); problems inside ``table`` raise :class:`TableError`.

This module holds the header check and the field validators every kind's body parse is built
from (:mod:`privmap.device.kinds`); the kinds own their bodies.
"""
from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import NoReturn, TypeGuard

from ..constants import (
    MAX_ABS_CELL,
    MAX_MISSING_TOKEN,
    MAX_VERSION,
    PAYLOAD_KEYS,
    PAYLOAD_TYPE,
    REAL_PAYLOAD_KEYS,
    REQUIRED_METRICS,
    REQUIRED_PROVENANCE,
    SCHEMA_VERSION,
)
from ..errors import BundleFormatError, TableError, WrongTypeError
from ._limits import Limits

__all__ = [
    "Feature",
    "DECIMAL",
    "MISSING_RULES",
    "NUMERIC_FEATURE_KEYS",
    "CATEGORICAL_FEATURE_KEYS",
    "PRIVATE_KEYS",
    "TABLE_KEYS",
    "MAXCORR_PAYLOAD_KEYS",
    "RECOMMENDER_PAYLOAD_KEYS",
    "KEY_SETS",
    "payload_keys",
    "parse_header",
    "fail",
    "closed_map",
    "string",
    "array",
    "unique_strings",
    "parse_feature",
    "parse_cells",
    "parse_table",
    "parse_prior",
    "parse_metrics",
    "parse_provenance",
]

#: A strict decimal number as a row's cell may spell it (and as a missing token may not, inside
#: the domain): optional sign, digits with an optional fraction, optional exponent.
DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
NUMERIC_FEATURE_KEYS = ("name", "kind", "min", "max", "integer", "missing", "fill", "missing_token")
CATEGORICAL_FEATURE_KEYS = ("name", "kind", "values")
PRIVATE_KEYS = ("name", "classes")
TABLE_KEYS = ("bits", "index", "weight")
#: Payload keys of a max-correlation bundle, in canonical order (no private attribute: the public
#: marginal ``p_x`` in place of ``private`` and ``prior``).
MAXCORR_PAYLOAD_KEYS = (
    "type", "schema_version", "version", "issued_at", "expires", "device_class", "mechanism", "metric",
    "features", "inputs", "outputs", "table", "p_x", "metrics", "provenance",
)
#: What a numeric feature does with a missing cell (see docs/bundle-format.md section 4).
MISSING_RULES = ("refuse", "mask", "impute")
#: Longest device class name (``device_class``: printable ASCII), characters.
MAX_DEVICE_CLASS = 64
#: Tolerance on the prior's total mass.
PRIOR_MASS_TOLERANCE = 1e-6


@dataclass(frozen=True)
class Feature:
    """One column of a row.

    ``kind`` is ``"numeric"`` (``min``/``max`` finite numbers: the declared domain; ``integer``
    says whether cells are whole numbers; ``values`` is empty) or ``"categorical"`` (``values``
    the category strings, a cell is an index into them; ``min``/``max`` are ``None`` and
    ``integer`` is False).

    Missing answers (numeric features only): a cell that is blank or whose text equals
    ``missing_token`` is missing (the token may be a number such as ``"0"``, a survey's code for
    a skipped question, if it lies outside [min, max]; older bundles hold only words such as
    "NA"); ``missing`` says what the lookup does with it: ``"refuse"`` (InputError),
    ``"mask"`` (the cell is left out of the distance) or ``"impute"`` (the cell takes the value
    ``fill``, a point of the domain; ``fill`` is ``None`` for the other two rules).
    """

    name: str
    kind: str
    min: int | float | None = None
    max: int | float | None = None
    integer: bool = False
    values: tuple[str, ...] = ()
    missing: str = "refuse"
    fill: int | float | None = None
    missing_token: str = ""

    @property
    def categorical(self) -> bool:
        return self.kind == "categorical"

    def clip(self, value: float) -> float:
        """``value`` brought within a numeric feature's ``[min, max]``.

        Raises
        ------
        TypeError
            The feature is categorical (it has no range).
        """
        if self.min is None or self.max is None:
            raise TypeError(f"feature {self.name!r} is categorical: it has no range to clip to")
        return min(max(value, self.min), self.max)


def fail(message: str, error: type[Exception] = BundleFormatError) -> NoReturn:
    """Raise ``error`` (BundleFormatError by default) with ``message``."""
    raise error(message)


def _is_int(x: object) -> TypeGuard[int]:
    return type(x) is int


def _is_number(x: object) -> TypeGuard[int | float]:
    return type(x) is int or (type(x) is float and math.isfinite(x))


def closed_map(obj: object, keys: Iterable[str], what: str) -> dict[str, object]:
    """``obj`` if it is a map with exactly ``keys``; else BundleFormatError naming ``what``."""
    if type(obj) is not dict:
        fail(f"{what} must be a map")
    if set(obj) != set(keys):
        unknown = sorted(set(obj) - set(keys))
        missing = sorted(set(keys) - set(obj))
        fail(f"{what}: unknown keys {unknown}, missing keys {missing}")
    return obj


def string(x: object, what: str, limits: Limits) -> str:
    """``x`` if it is a non-empty string; else BundleFormatError naming ``what``."""
    if type(x) is not str or not x:
        fail(f"{what} must be a non-empty string")
    return x


def array(x: object, what: str, lo: int, hi: int,
          error: type[Exception] = BundleFormatError) -> list[object]:
    """``x`` if it is an array of ``lo..hi`` items; else ``error`` naming ``what``."""
    if type(x) is not list:
        fail(f"{what} must be an array", error)
    if not lo <= len(x) <= hi:
        fail(f"{what} must have {lo}..{hi} items, has {len(x)}", error)
    return x


def unique_strings(x: object, what: str, lo: int, hi: int, limits: Limits) -> tuple[str, ...]:
    """``lo..hi`` distinct non-empty strings, as a tuple; else BundleFormatError."""
    items = tuple(string(s, f"{what}[{i}]", limits) for i, s in enumerate(array(x, what, lo, hi)))
    if len(set(items)) != len(items):
        fail(f"{what} has duplicates")
    return items


def parse_header(obj: object) -> tuple[int, int, int]:
    """The checked header of a payload map.

    Check the envelope of the payload map: type, key set, schema version, version, times,
    device class.

    Returns ``(version, issued_at, expires)``.
    """
    if type(obj) is not dict:
        fail("payload must be a map")
    kind = obj.get("type")
    if kind != PAYLOAD_TYPE or type(kind) is not str:
        fail(f"payload type is not {PAYLOAD_TYPE!r}", WrongTypeError)
    closed_map(obj, payload_keys(obj.get("mechanism")), "payload")
    schema = obj["schema_version"]
    if not _is_int(schema) or schema != SCHEMA_VERSION:
        fail(f"unsupported schema_version (this runtime reads {SCHEMA_VERSION})")
    version = obj["version"]
    if not _is_int(version) or not 1 <= version <= MAX_VERSION:
        fail("version must be an int in 1..2**63-1")
    issued_at, expires = obj["issued_at"], obj["expires"]
    if not _is_int(issued_at) or not 0 <= issued_at <= MAX_VERSION:
        fail("issued_at must be an int (unix seconds) in 0..2**63-1")
    if not _is_int(expires) or not issued_at < expires <= MAX_VERSION:
        fail("expires must be an int (unix seconds) greater than issued_at")
    device_class = obj["device_class"]
    if (type(device_class) is not str or not 1 <= len(device_class) <= MAX_DEVICE_CLASS
            or not all(" " < ch <= "~" for ch in device_class)):
        fail(f"device_class must be 1..{MAX_DEVICE_CLASS} printable ASCII characters without spaces")
    return version, issued_at, expires


def parse_feature(spec: object, position: int, limits: Limits) -> Feature:
    """The :class:`Feature` of the feature map ``spec`` at ``position``; raises BundleFormatError."""
    what = f"features[{position}]"
    if type(spec) is not dict:
        fail(f"{what} must be a map")
    kind = spec.get("kind")
    if kind == "numeric":
        closed_map(spec, NUMERIC_FEATURE_KEYS, what)
        name = string(spec["name"], f"{what}.name", limits)
        lo, hi, integer = spec["min"], spec["max"], spec["integer"]
        if not (_is_number(lo) and _is_number(hi)) or not -MAX_ABS_CELL <= lo <= hi <= MAX_ABS_CELL:
            fail(f"{what}: min and max must be numbers with -{MAX_ABS_CELL:g} <= min <= max <= {MAX_ABS_CELL:g}")
        if type(integer) is not bool:
            fail(f"{what}.integer must be a bool")
        missing, fill, token = spec["missing"], spec["fill"], spec["missing_token"]
        if type(missing) is not str or missing not in MISSING_RULES:
            fail(f"{what}.missing must be one of {MISSING_RULES}")
        if missing == "impute":
            if not _is_number(fill) or not lo <= fill <= hi or (integer and not _is_int(fill)):
                fail(f"{what}.fill must be a number in [min, max] (an int for an integer feature)")
        elif fill is not None:
            fail(f"{what}.fill must be nil unless missing is 'impute'")
        if type(token) is not str or len(token) > MAX_MISSING_TOKEN or token != token.strip():
            fail(f"{what}.missing_token must be a string of at most {MAX_MISSING_TOKEN} characters, "
                  "without surrounding spaces")
        if token and DECIMAL.match(token) and lo <= float(token) <= hi:
            # a number may code a skipped answer (surveys' 0), but never one the domain accepts
            fail(f"{what}.missing_token is a number inside [min, max]: a cell would be both an answer and missing")
        return Feature(name, "numeric", lo, hi, integer, (), missing, fill, token)
    if kind == "categorical":
        closed_map(spec, CATEGORICAL_FEATURE_KEYS, what)
        name = string(spec["name"], f"{what}.name", limits)
        values = unique_strings(spec["values"], f"{what}.values", 1, limits.max_categories, limits)
        return Feature(name, "categorical", None, None, False, values)
    fail(f"{what}.kind must be 'numeric' or 'categorical'")


def parse_cells(rows: object, what: str, features: Sequence[Feature], lo: int, hi: int,
                allow_nil: bool) -> tuple[tuple[int | float | None, ...], ...]:
    """Validate a K x d array of cells; returns a tuple of tuples (values as in the bundle)."""
    d = len(features)
    out = []
    for i, row in enumerate(array(rows, what, lo, hi)):
        if type(row) is not list or len(row) != d:
            fail(f"{what}[{i}] must be an array of {d} cells")
        for k, (cell, feature) in enumerate(zip(row, features)):
            if cell is None:
                if allow_nil:
                    continue
                fail(f"{what}[{i}][{k}]: nil cells are allowed only in outputs with metric 'erasures'")
            if feature.kind == "categorical":
                if not _is_int(cell) or not 0 <= cell < len(feature.values):
                    fail(f"{what}[{i}][{k}]: categorical cell must be an index into values")
            else:
                if not _is_number(cell) or feature.clip(cell) != cell:  # outside [min, max]
                    fail(f"{what}[{i}][{k}]: numeric cell must be a finite number in [min, max]")
                if feature.integer and not _is_int(cell):
                    fail(f"{what}[{i}][{k}]: cell of an integer feature must be an int")
        out.append(tuple(row))
    return tuple(out)


def parse_table(obj: object, n_inputs: int, n_outputs: int, limits: Limits
                ) -> tuple[int, tuple[tuple[int, ...], ...], tuple[tuple[int, ...], ...]]:
    """The checked integer table of a payload.

    ``(bits, index, weight)`` of a ``table`` map with one sparse row per input (K_in rows of
    increasing output indexes in 0..K_out-1, weights summing to 2**bits); raises TableError.
    """
    table = closed_map(obj, TABLE_KEYS, "table")
    bits = table["bits"]
    if not _is_int(bits) or not 1 <= bits <= limits.max_bits:
        fail(f"table.bits must be an int in 1..{limits.max_bits}", TableError)
    total = 1 << bits
    index, weight = table["index"], table["weight"]
    if type(index) is not list or type(weight) is not list:
        fail("table.index and table.weight must be arrays", TableError)
    if len(index) != n_inputs or len(weight) != n_inputs:
        fail(f"table must have one row per input ({n_inputs}); "
              f"index has {len(index)}, weight has {len(weight)}", TableError)
    rows_index, rows_weight = [], []
    for c in range(n_inputs):
        idx, w = index[c], weight[c]
        if type(idx) is not list or type(w) is not list or len(idx) != len(w) or not idx:
            fail(f"table row {c}: index and weight must be non-empty arrays of equal length", TableError)
        previous = -1
        for j in idx:
            if not _is_int(j) or not previous < j < n_outputs:
                fail(f"table row {c}: output indexes must be strictly increasing ints in "
                      f"0..{n_outputs - 1}", TableError)
            previous = j
        running = 0
        for v in w:
            if not _is_int(v) or not 0 < v <= total:
                fail(f"table row {c}: weights must be ints in 1..2**{bits}", TableError)
            running += v
        if running != total:
            fail(f"table row {c}: weights sum to {running}, not 2**{bits}", TableError)
        rows_index.append(tuple(idx))
        rows_weight.append(tuple(w))
    return bits, tuple(rows_index), tuple(rows_weight)


def parse_prior(obj: object, n_classes: int, n_inputs: int) -> tuple[tuple[float, ...], ...]:
    """The prior p(a, c), |A| x K_in floats >= 0 summing to 1; raises BundleFormatError."""
    mass = []
    out = []
    for a, row in enumerate(array(obj, "prior", n_classes, n_classes)):
        if type(row) is not list or len(row) != n_inputs:
            fail(f"prior[{a}] must be an array of {n_inputs} numbers")
        for v in row:
            if not _is_number(v) or v < 0:
                fail(f"prior[{a}] entries must be finite numbers >= 0")
        mass.extend(row)
        out.append(tuple(float(v) for v in row))
    total = math.fsum(mass)
    if not abs(total - 1.0) <= PRIOR_MASS_TOLERANCE:
        fail(f"prior must sum to 1 (within {PRIOR_MASS_TOLERANCE}), sums to {total!r}")
    return tuple(out)


def parse_metrics(obj: object, limits: Limits,
                  required: Iterable[str] = REQUIRED_METRICS) -> dict[str, int | float]:
    """The ``metrics`` map (strings to finite numbers, ``required`` present) as a dict."""
    if type(obj) is not dict:
        fail("metrics must be a map")
    if len(obj) > limits.max_map_entries:
        fail(f"metrics has more than {limits.max_map_entries} entries")
    for key, value in obj.items():
        if type(key) is not str or not _is_number(value):
            fail("metrics must map strings to finite numbers")
    missing = [k for k in required if k not in obj]
    if missing:
        fail(f"metrics: missing {missing}")
    return dict(obj)


def parse_provenance(obj: object, limits: Limits) -> dict[str, str | int]:
    """The ``provenance`` map (strings to str or int, REQUIRED_PROVENANCE present) as a dict."""
    if type(obj) is not dict:
        fail("provenance must be a map")
    if len(obj) > limits.max_map_entries:
        fail(f"provenance has more than {limits.max_map_entries} entries")
    for key, value in obj.items():
        if type(key) is not str or type(value) not in (str, int):
            fail("provenance must map strings to strings or ints")
    missing = [k for k in REQUIRED_PROVENANCE if k not in obj]
    if missing:
        fail(f"provenance: missing {missing}")
    return dict(obj)


#: Payload keys of a recommender or ranking bundle, in canonical order: the quantized keys and
#: ``model``, the way between rows and the table's space (privmap.device.kinds.recommender,
#: privmap.device.kinds.ranking).
RECOMMENDER_PAYLOAD_KEYS = PAYLOAD_KEYS + ("model",)
#: The mechanisms whose payload has another closed key set than :data:`PAYLOAD_KEYS` (the
#: format's, read before any kind parses the body: docs/bundle-format.md), and that key set.
KEY_SETS = MappingProxyType({
    "max-correlation": MAXCORR_PAYLOAD_KEYS,
    "recommender": RECOMMENDER_PAYLOAD_KEYS, "ranking": RECOMMENDER_PAYLOAD_KEYS,
    "nullspace": REAL_PAYLOAD_KEYS, "gaussian": REAL_PAYLOAD_KEYS,
})


def payload_keys(mechanism: object) -> tuple[str, ...]:
    """The closed top-level key set of a payload of ``mechanism``, in canonical order.

    :data:`KEY_SETS` names the set of a known mechanism; any other value, a name or not,
    gets :data:`PAYLOAD_KEYS`.
    """
    return KEY_SETS.get(mechanism, PAYLOAD_KEYS) if type(mechanism) is str else PAYLOAD_KEYS
