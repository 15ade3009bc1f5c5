"""Parameter types the commands share beyond click's own."""
from __future__ import annotations

import math

import click


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
    """Comma-separated column names (``COLS``) as a tuple, blank names dropped. A value with no name
    is None (the command's default columns), or a usage error where ``required``."""

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
