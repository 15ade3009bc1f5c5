"""Naming user-supplied names in error messages, capped, and what a name not found may mean.

An error message that quotes a file's column names must stay one readable line however wide
the file is: a header of a million columns once produced an 8.9 MB message. :func:`name_some`
names the first few (each cut to a bounded length) and counts the rest. :func:`name_hint` adds
what the fix likely is: the close spelling of a misspelt column, or the delimiter of a file that
is not comma-separated (its header then reads as one column).
"""
from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence

__all__ = ["name_some", "name_hint", "MAX_NAMED", "MAX_NAME_CHARS", "MAX_HINTED"]

#: Names quoted in one message before the rest are only counted.
MAX_NAMED = 5
#: Characters of one name quoted before it is cut (with "...").
MAX_NAME_CHARS = 40
#: Names of a header compared with a name not found (the first ones; the comparison is linear).
MAX_HINTED = 10_000
#: Delimiters of files that are not comma-separated, by the word that names them.
_DELIMITERS = {";": "semicolon", "\t": "tab", "|": "pipe"}


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


def name_hint(name: str, names: Sequence[str]) -> str:
    """What to add to the message of a column ``name`` that ``names`` (a header) does not hold.

    ``"; did you mean 'gender'?"`` for a close spelling, ``"; the header is one column holding
    ';': ..."`` for a file that another delimiter separates, or ``""``.
    """
    if len(names) == 1:
        sep = next((d for d in _DELIMITERS if d in names[0]), None)
        if sep is not None:
            return (f"; the header is one column holding {sep!r}: the file looks {_DELIMITERS[sep]}-separated, "
                    "and privmap reads comma-separated CSV (save it with ',' between cells)")
    close = difflib.get_close_matches(name, list(names[:MAX_HINTED]), n=1)
    return f"; did you mean {name_some(close)}?" if close else ""
