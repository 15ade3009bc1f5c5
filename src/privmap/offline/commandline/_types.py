"""Parameter types the commands share beyond click's own, and the parsing of list options.

List options: ``--deltas 0,0.5,1`` or ``START:STOP:COUNT``, ``--clusters 0,8,16``.
"""
from __future__ import annotations

import math

import click

from .._errors import BuildError


class AutoOr(click.ParamType):
    """A number (of ``kind``, at least ``minimum``) or the word ``auto``.

    Parameters
    ----------
    kind : type
        ``int`` or ``float``: what a number is converted to.
    minimum : int or float
        The least number accepted.
    """

    def __init__(self, kind, minimum):
        self.kind, self.minimum = kind, minimum
        self.name = f"{kind.__name__}|auto"

    def convert(self, value, param, ctx):
        if isinstance(value, str) and value.strip().lower() == "auto":
            return "auto"
        try:
            number = self.kind(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is neither {'an integer' if self.kind is int else 'a number'} nor 'auto'",
                      param, ctx)
        if not (math.isfinite(number) and number >= self.minimum):
            self.fail(f"{value!r} must be >= {self.minimum} (or 'auto')", param, ctx)
        return number


class Columns(click.ParamType):
    """Comma-separated column names (``COLS``) as a tuple, blank names dropped.

    A value with no name is None (the command's default columns), or a usage error where
    ``required``.
    """

    name = "cols"

    def __init__(self, *, required: bool = False):
        self.required = required

    def convert(self, value, param, ctx):
        if isinstance(value, tuple):
            return value
        names = tuple(c.strip() for c in str(value).split(",") if c.strip())
        if not names and self.required:
            self.fail("needs COLS (comma-separated)", param, ctx)
        return names or None


def parse_floats(text: str, what: str) -> list[float]:
    """``"0,0.5,1"`` or ``"START:STOP:COUNT"`` (COUNT evenly spaced values, both ends included)."""
    text = text.strip()
    try:
        if ":" in text:
            parts = text.split(":")
            if len(parts) != 3:
                raise ValueError
            start, stop, count = float(parts[0]), float(parts[1]), int(parts[2])
            if count < 1:
                raise ValueError
            values = [start + (stop - start) * i / max(count - 1, 1) for i in range(count)]
        else:
            values = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise BuildError(f"{what}: expected a comma-separated list or START:STOP:COUNT, got {text!r}") from None
    if not values or any(not math.isfinite(v) or v < 0 for v in values):
        raise BuildError(f"{what}: values must be finite and >= 0, got {text!r}")
    return values


def parse_ints(text: str, what: str) -> list[int]:
    """``"0,8,16"``: comma-separated integers >= 0."""
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise BuildError(f"{what}: expected comma-separated integers, got {text!r}") from None
    if not values or any(v < 0 for v in values):
        raise BuildError(f"{what}: values must be integers >= 0 (0 = no quantization), got {text!r}")
    return values
