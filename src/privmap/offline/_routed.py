"""Warnings of many like tasks routed to one tally, so that an operator reads one line, not a flood.

A build's cross-fitting folds and ``--clusters auto``'s candidates run the same steps many times
(hundreds of (candidate, fold) tasks, in this process and in worker processes): a library warning
that one fold raises (scikit-learn's ``y_pred contains classes not in y_true`` where a held-out
fold lacks a rare class) came once per task, 65 to 100 copies on stderr. Each task runs in
:func:`caught` (every warning it raises recorded, none printed), its records travel back with its
result wherever it ran, and :func:`route` counts them in this process's tally; the command that
ran the tasks prints :func:`summary` (one line, each distinct warning with its count) and
:func:`clear` starts a new tally.
"""
from __future__ import annotations

import contextlib
import threading
import warnings
from collections import Counter
from collections.abc import Iterator

__all__ = ["caught", "route", "summary", "clear"]

#: (category, message) -> how many times the routed tasks raised it, in this process.
_TALLY: Counter = Counter()
_LOCK = threading.Lock()


@contextlib.contextmanager
def caught() -> Iterator[list]:
    """Record every warning raised inside (none printed) into the list yielded.

    As ``(category name, message)`` pairs that pickle.
    """
    records: list[tuple[str, str]] = []
    with warnings.catch_warnings(record=True) as raised:
        warnings.simplefilter("always")
        try:
            yield records
        finally:
            records.extend((w.category.__name__, str(w.message)) for w in raised)


def route(records) -> None:
    """Count ``records`` (from :func:`caught`) in this process's tally."""
    if records:
        with _LOCK:
            _TALLY.update(records)


#: Distinct warnings :func:`summary` names before it counts the rest.
NAMED = 3


def summary(*, source: str = "the folds' tasks") -> str | None:
    """The tally in one line, or None when it is empty.

    The total, then each distinct warning (its category, the first line of its message, its
    count; the :data:`NAMED` most frequent); ``source`` names what raised them.
    """
    with _LOCK:
        if not _TALLY:
            return None
        total, common = sum(_TALLY.values()), _TALLY.most_common()
    each = "; ".join(f"{category}: {message.strip().splitlines()[0] if message.strip() else ''} (x{count})"
                     for (category, message), count in common[:NAMED])
    rest = f"; and {len(common) - NAMED} other kind(s)" if len(common) > NAMED else ""
    return f"note: {source} raised {total} warning(s), each kind once here: {each}{rest}"


def clear() -> None:
    """Start a new tally."""
    with _LOCK:
        _TALLY.clear()
