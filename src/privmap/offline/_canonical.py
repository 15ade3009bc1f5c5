"""Canonical payload values shared by every payload encoder.

Floats rounded to 12 significant digits, numpy values made plain, maps put in their fixed or
sorted key order.

Both :mod:`.bundle._write` (table bundles) and :mod:`.bundle._write_real` (the real-valued
kinds) encode with these, so neither imports the other's internals (the rounding rule itself is
explained in :mod:`.bundle._write`'s docstring). It sits below every stage because a build also
checks figures as the bundle will declare them (``--clusters auto`` against its target).
"""
from __future__ import annotations

import math

from privmap.device.constants import PAYLOAD_FLOAT_DIGITS

from ._errors import BuildError

__all__ = ["FLOAT_SIGNIFICANT_DIGITS", "canonical_float", "canonical_floats"]

#: Significant digits every computed payload float is rounded to (module docstring; the device's
#: ``PAYLOAD_FLOAT_DIGITS``, whose tolerances are set for it).
FLOAT_SIGNIFICANT_DIGITS = PAYLOAD_FLOAT_DIGITS


def canonical_float(value, direction: str = "nearest") -> float:
    """``value`` (a finite real number) as a float64 rounded to :data:`FLOAT_SIGNIFICANT_DIGITS` significant digits.

    ``"nearest"`` (ties to even, on the exact binary value), ``"down"`` or
    ``"up"`` (the nearest 12-digit decimal not above / not below ``value``). ``-0.0`` stays
    ``-0.0``; non-finite values are returned unchanged (the schema check refuses them).
    Deterministic: Python's decimal conversion is correctly rounded on every platform.
    Raises ValueError for another ``direction``.
    """
    if direction not in ("nearest", "down", "up"):
        raise ValueError(f"direction must be 'nearest', 'down' or 'up', not {direction!r}")
    value = float(value)
    if not math.isfinite(value) or value == 0.0:
        return value
    rounded = float(format(value, f".{FLOAT_SIGNIFICANT_DIGITS - 1}e"))
    if direction == "nearest" or rounded == value:
        return rounded
    exponent = math.floor(math.log10(abs(rounded))) - (FLOAT_SIGNIFICANT_DIGITS - 1)
    step = 10.0 ** exponent
    if direction == "down" and rounded > value:
        rounded = float(format(rounded - step, f".{FLOAT_SIGNIFICANT_DIGITS - 1}e"))
    elif direction == "up" and rounded < value:
        rounded = float(format(rounded + step, f".{FLOAT_SIGNIFICANT_DIGITS - 1}e"))
    return rounded


def canonical_floats(value):
    """Every float in ``value`` passed through :func:`canonical_float`.

    ``value``: nested lists and dicts; ints, bools, strings, None kept.
    """
    if isinstance(value, list):
        return [canonical_floats(v) for v in value]
    if isinstance(value, dict):
        return {k: canonical_floats(v) for k, v in value.items()}
    if isinstance(value, float):
        return canonical_float(value)
    return value


def _plain(value):
    """NumPy scalars/arrays and tuples to plain Python values (without importing numpy)."""
    module = type(value).__module__
    if (module == "numpy" or module.startswith("numpy.")) and hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, tuple):
        value = list(value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _ordered(mapping, keys, what):
    if not isinstance(mapping, dict):
        raise BuildError(f"{what} must be a dict")
    unknown = sorted(set(mapping) - set(keys), key=str)
    missing = [k for k in keys if k not in mapping]
    if unknown or missing:
        raise BuildError(f"{what}: unknown keys {unknown}, missing keys {missing}")
    return {k: mapping[k] for k in keys}


def _sorted_map(mapping, what):
    if not isinstance(mapping, dict) or not all(isinstance(k, str) for k in mapping):
        raise BuildError(f"{what} must be a dict with string keys")
    return {k: mapping[k] for k in sorted(mapping)}
