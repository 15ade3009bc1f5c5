"""Batch sanitize: many simulated devices, one per CSV row, each refusing or releasing on its own.

A bad row (bytes that are not UTF-8, wrong length, non-numeric, out of the declared domain, a missing answer where none is
allowed, every cell missing) is refused with its line number and reason, and nothing is released
for it; every valid row is still released, in input order. Reasons come from the device's typed
errors, whose messages never hold a raw cell, so no raw value of a refused row reaches any output.
"""
from __future__ import annotations

import csv
import io
import pathlib
from collections import Counter
from dataclasses import dataclass, field

from privmap.device import Bundle, InputError

from .._errors import BuildError
from .._listing import name_some

__all__ = ["BatchResult", "sanitize_csv", "rejects_csv"]


@dataclass
class BatchResult:
    """``released``: the output CSV text (header + one row per valid input row, input order);
    ``rows``: data rows read; ``refused``: (line number, reason) of each refused row."""

    released: str
    rows: int = 0
    refused: list[tuple[int, str]] = field(default_factory=list)


def sanitize_csv(bundle: Bundle, infile: pathlib.Path, *, release=None, stamp: bool = False,
                 tick=None) -> BatchResult:
    """Release every valid row of ``infile`` through ``bundle``; refuse the others one by one.

    ``infile`` has a header naming the bundle's public features (any order); the private column,
    if present, is ignored and never written. Blank cells are missing answers (the bundle's
    per-feature rule applies). ``release`` (default ``bundle.sanitize``) maps a row's cells to the
    released cells, e.g. a device state's permanent release; with ``stamp`` every output row ends
    with the bundle's sha256 and version. ``tick`` (optional) is called once per data row.

    Raises
    ------
    BuildError
        The header lacks a feature, names an unknown column or one twice, or is not UTF-8 (the
        file cannot be read as rows). A data line that is not UTF-8 is a refused row, not an error.
    RandomnessError
        The randomness source failed (not a row's fault: the whole batch stops).
    """
    names = [f.name for f in bundle.features]
    release = release or bundle.sanitize
    stamp_cells = [bundle.sha256, bundle.version] if stamp else []
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(names + (["bundle_sha256", "bundle_version"] if stamp else []))
    result = BatchResult(released="")
    # undecodable bytes become lone surrogates, so a bad line is refused alone (by its number)
    with infile.open(newline="", encoding="utf-8-sig", errors="surrogateescape") as f:
        reader = csv.reader(f)
        header = [h.strip() for h in next(reader, [])]
        if any(_undecodable(h) for h in header):
            raise BuildError(f"{infile}, line 1: the header is not UTF-8 text")
        at = _header_indexes(infile, header, names, bundle.withheld_columns)
        while True:
            try:
                row = next(reader)
            except StopIteration:
                break
            except csv.Error:
                result.rows += 1
                result.refused.append((reader.line_num, "malformed CSV row"))
                continue
            if not row:
                continue
            result.rows += 1
            if tick is not None:
                tick()
            if any(_undecodable(cell) for cell in row):
                result.refused.append((reader.line_num, "not UTF-8 text"))
                continue
            if len(row) != len(header):
                result.refused.append((reader.line_num, f"{len(row)} cells, header has {len(header)}"))
                continue
            try:
                released = release([row[i] for i in at])
            except InputError as exc:
                result.refused.append((reader.line_num, f"{type(exc).__name__}: {exc}"))
                continue
            writer.writerow(["" if v is None else v for v in released] + stamp_cells)
    result.released = out.getvalue()
    return result


def _undecodable(text: str) -> bool:
    """Whether ``text`` holds a byte that was not UTF-8 (decoded as a lone surrogate)."""
    return any("\udc80" <= ch <= "\udcff" for ch in text) if not text.isascii() else False


def _header_indexes(infile: pathlib.Path, header: list[str], names: list[str], withheld) -> list[int]:
    """Index in ``header`` of each of the bundle's features ``names``; linear in the header's width.

    Raises
    ------
    BuildError
        A column named twice, a feature missing, or a column that is neither a feature nor one
        of the ``withheld`` (private) columns; the first few offenders are named, the rest counted.
    """
    dupes = sorted(name for name, count in Counter(header).items() if count > 1)
    if dupes:
        raise BuildError(f"{infile}: duplicate column name(s) in header: {name_some(dupes)}")
    where = {h: i for i, h in enumerate(header)}
    missing = [n for n in names if n not in where]
    if missing:
        raise BuildError(f"{infile}: missing public column(s) {name_some(missing)}")
    known = set(names) | set(withheld)
    extra = [h for h in header if h not in known]
    if extra:
        also = f" and {name_some(withheld)}" if withheld else ""
        raise BuildError(f"{infile}: unknown column(s) {name_some(extra)}; remove them "
                         f"(only the bundle's features{also} are accepted)")
    return [where[n] for n in names]


def rejects_csv(refused: list[tuple[int, str]]) -> str:
    """The ``--rejects`` file: header ``line,reason`` and one row per refused input row."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["line", "reason"])
    writer.writerows(refused)
    return out.getvalue()
