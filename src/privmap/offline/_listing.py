"""Naming user-supplied names in error messages, capped.

An error message that quotes a file's column names must stay one readable line however wide
the file is: a header of a million columns once produced an 8.9 MB message. :func:`name_some`
names the first few (each cut to a bounded length) and counts the rest.
"""
from __future__ import annotations

from typing import Iterable

__all__ = ["name_some", "MAX_NAMED", "MAX_NAME_CHARS"]

#: Names quoted in one message before the rest are only counted.
MAX_NAMED = 5
#: Characters of one name quoted before it is cut (with "...").
MAX_NAME_CHARS = 40


def name_some(names: Iterable[str], limit: int = MAX_NAMED, width: int = MAX_NAME_CHARS) -> str:
    """``'a', 'b', 'c'`` for a short list; ``'a', ..., 'e' and 99,995 more`` for a long one.

    Each name is quoted with :func:`repr` after being cut to ``width`` characters (a cut name
    ends in ``...``), so the result is at most about ``limit * (width + 6)`` characters plus
    the count, whatever ``names`` holds.
    """
    names = list(names)
    shown = [repr(n if len(n) <= width else n[:width] + "...") for n in names[:limit]]
    rest = len(names) - len(shown)
    return ", ".join(shown) + (f" and {rest:,} more" if rest > 0 else "")
