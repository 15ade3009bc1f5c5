"""The columns of a real-valued CSV that the gaussian and nullspace builds share.

Two groups of withheld target columns named by the options, and every other column released.

Both read named numeric columns (:func:`privmap.offline.data.read_numeric_columns`); the
payload layout is in docs/bundle-format.md.
"""
from __future__ import annotations

from .._errors import BuildError
from ..data import read_numeric_columns
from ._header import payload_header

__all__ = ["released_columns", "check_target_groups", "split_targets", "real_header"]


def released_columns(path, withheld) -> tuple[str, ...]:
    """All columns of the CSV header except ``withheld`` (file order)."""
    _, header, _ = read_numeric_columns(path, [], min_rows=0)
    return tuple(h for h in header if h not in set(withheld))


def check_target_groups(first, second) -> None:
    """Raise :class:`BuildError` for an empty group of target columns or a column in both."""
    for group, what in ((first, "first"), (second, "second")):
        if not group:
            raise BuildError(f"the {what} group of target columns is empty")
    if set(first) & set(second):
        raise BuildError("a column cannot be in both target groups")


def split_targets(path, first, second):
    """The released columns of the CSV at ``path`` and its rows split into them and the two target groups.

    ``(columns, x, y_first, y_second, data_sha256)``.

    Raises
    ------
    BuildError
        No column left to release, or bad data (unreadable, non-numeric, too few rows).
    """
    columns = released_columns(path, tuple(first) + tuple(second))
    if not columns:
        raise BuildError("no columns are left to release")
    values, _, sha = read_numeric_columns(path, list(columns) + list(first) + list(second))
    n, a = len(columns), len(first)
    return columns, values[:, :n], values[:, n:n + a], values[:, n + a:], sha


def real_header(mechanism: str, columns, options) -> dict:
    """The header fields of a real-valued payload (:func:`payload_header`) and its ``features``."""
    return {**payload_header(options, mechanism), "features": list(columns)}
