"""Batch sanitize: many simulated devices, one per CSV row, each refusing or releasing on its own.

A bad row (bytes that are not UTF-8, wrong length, non-numeric, out of the declared domain, a missing answer where none is
allowed, every cell missing, a line longer than the line limit) is refused with its line number and reason, and nothing
is released for it; every valid row is still released, in input order. Reasons come from the device's typed errors,
whose messages never hold a raw cell, so no raw value of a refused row reaches any output.

The batch streams: each released row is written to the output stream as it is released and each refusal to the
rejects stream as it comes, so memory does not grow with the number of rows; a line (or the lines one quoted cell
spans) is read at most ``max_line`` characters at a time, so one over-long line costs a bounded amount of memory
and is refused alone. The bundle is used only through its interface (``features`` with ``.name``,
``withheld_columns``, ``sha256``, ``version`` and the release function), so every bundle kind passes through it.
"""
from __future__ import annotations

import csv
import pathlib
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TextIO

from privmap.device.errors import InputError

from .._errors import BuildError
from .._joint import withheld_names
from .._listing import name_hint, name_some

__all__ = ["BatchResult", "sanitize_csv", "MAX_LINE_CHARS", "REJECTS_HEADER"]

#: Default longest line of IN.csv, in characters, terminator included (``--max-line-length``): far
#: above a row of the device's largest bundle (4,096 features of a few characters each).
MAX_LINE_CHARS = 1 << 20
#: The header line may be longer (a header naming too many columns is refused by name, not by size).
MAX_HEADER_CHARS = 1 << 24
#: Header of the ``--rejects`` file (with ``--id``: ``line``, ``id``, ``reason``).
REJECTS_HEADER = ["line", "reason"]
_PIECE = 1 << 16


@dataclass
class BatchResult:
    """What a batch did: the rows it read, released and refused, and its first refusal.

    Attributes
    ----------
    rows : int
        Data rows read.
    released : int
        Rows written.
    refused : int
        Rows refused.
    first_refused : tuple of (int, str) or None
        (line number, reason) of the first refused row, or None.
    """

    rows: int = 0
    released: int = 0
    refused: int = 0
    first_refused: tuple[int, str] | None = None


class _LineTooLong(Exception):
    """Raised by :class:`_CappedLines` in place of a line (or record) over the limit."""


#: Inside a quoted cell: everything up to a lone closing quote ("" is an escaped quote).
_QUOTED_RUN = re.compile(r'[^"]*(?:""[^"]*)*')
#: A written cell holding one of these is quoted: every control character (a bare CR, a vertical
#: tab, NEL) and the Unicode line and paragraph separators, which some reader splits lines on.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


class _QuotingWriter:
    r"""``csv.writer`` that quotes every cell of a row in which a cell holds a control character.

    Otherwise it writes ``\n`` line ends with minimal quoting. The csv module quotes only the
    delimiter, the quote and ``\n``, so a bare CR in an id would split the record for any reader.
    """

    def __init__(self, stream: TextIO):
        self._minimal = csv.writer(stream, lineterminator="\n")
        self._all = csv.writer(stream, lineterminator="\n", quoting=csv.QUOTE_ALL)

    def writerow(self, row: list) -> None:
        risky = any(type(cell) is str and _CONTROL.search(cell) for cell in row)
        (self._all if risky else self._minimal).writerow(row)


def _quote_state(text: str, state: str) -> str:
    """The csv module's quoting state (default dialect) after ``text``, from ``state``.

    The states: ``"s"`` at the start of a cell, ``"u"`` inside an unquoted cell, ``"q"`` inside a
    quoted one, ``"e"`` just after a quote inside a quoted cell. Only quotes that open a cell (after
    a comma, or first) start quoting, as in the csv module. Runs in C-speed steps: one ``find`` or
    regex match per quoted cell, not per character.
    """
    i, n = 0, len(text)
    while i < n:
        if state == "q":
            run = _QUOTED_RUN.match(text, i)
            assert run is not None                          # the pattern matches the empty string too
            i = run.end()
            if i < n:
                state, i = "e", i + 1
        elif state == "e":
            state = "q" if text[i] == '"' else "s" if text[i] == "," else "u"
            i += 1
        else:
            if state == "s" and text[i] == '"':
                state, i = "q", i + 1
                continue
            j = text.find(',"', i)
            if j < 0:
                return "s" if text.endswith(",") else "u"
            state, i = "q", j + 2
    return state


class _CappedLines:
    r"""The physical lines of a text file, for ``csv.reader``, each read at most ``limit`` characters at a time.

    The file is opened with ``newline=""`` (``\n``, ``\r\n`` or ``\r`` ends a line, as the csv
    module expects).

    A line longer than ``limit`` characters (terminator included), or one that takes the current
    record (the lines since :meth:`new_record`, which a quoted cell spans) beyond ``limit``, is
    read through in pieces of 64 Ki characters and dropped, with every further line of its
    record (while a quoted cell is open, tracked by :func:`_quote_state`), and
    :class:`_LineTooLong` is raised in their place; ``csv.reader`` starts afresh at its next
    call, with the line after the record. ``line_num`` counts the lines read, as
    ``csv.reader.line_num`` does.
    """

    def __init__(self, f: TextIO, limit: int):
        self.f, self.limit = f, limit
        self.line_num = 0
        self._record = 0
        self._after_cr = False

    def new_record(self) -> None:
        self._record = 0

    def _read(self, size: int) -> str:
        piece = self.f.readline(size)
        if self._after_cr and piece == "\n":  # the \n of a \r\n that the size cut off
            piece = self.f.readline(size)
        self._after_cr = piece.endswith("\r")
        return piece

    def __iter__(self):
        return self

    def __next__(self) -> str:
        line = self._read(self.limit + 1)
        if not line:
            raise StopIteration
        self.line_num += 1
        if len(line) <= self.limit and self._record + len(line) <= self.limit:
            self._record += len(line)
            return line
        what = "line" if len(line) > self.limit else "record (a quoted cell spans its lines)"
        state = _quote_state(line, "q" if self._record else "s")  # a line read on inside a record is quoted
        while True:
            while not line.endswith(("\n", "\r")):  # the rest of this line, in bounded pieces
                line = self._read(_PIECE)
                if not line:
                    break
                state = _quote_state(line, state)
            if state != "q" or not line:
                break
            line = self._read(_PIECE)  # a quoted cell runs on: its next line belongs to this record
            if not line:
                break
            self.line_num += 1
            state = _quote_state(line, state)
        self._record = 0
        raise _LineTooLong(f"{what} longer than {self.limit} characters")


def sanitize_csv(bundle, infile: pathlib.Path, out: TextIO, *, release: Callable[[list], list] | None = None,
                 stamp: bool = False, rejects: TextIO | None = None, id_column: str | None = None,
                 max_line: int = MAX_LINE_CHARS, tick=None) -> BatchResult:
    r"""Release every valid row of ``infile`` through ``bundle`` into ``out``; refuse the others one by one.

    ``infile`` has a header naming the bundle's public features (any order); the private column,
    if present, is ignored and never written (a joint bundle's: its columns one by one, or under the
    joint name). Blank cells are missing answers (the bundle's
    per-feature rule applies). ``out`` receives the header and then each released row as soon as
    it is released, in input order; ``rejects`` (optional) receives the header ``line,reason``
    (``line,id,reason`` with ``id_column``) and each refused row as soon as it is refused. Neither
    is held in memory: memory is flat in the number of rows and bounded per row by ``max_line``.

    Parameters
    ----------
    bundle
        A loaded bundle of any kind: ``features`` (each with ``.name``), ``withheld_columns``,
        ``sha256``, ``version``, and ``sanitize(cells)`` unless ``release`` is given.
    infile : pathlib.Path
        UTF-8 CSV (a byte-order mark is allowed).
    out, rejects : text streams
        Written with ``\n`` line ends; the caller makes them atomic (``atomic_output``).
    release : callable (list of str) -> list, optional
        Maps a row's feature cells (in the bundle's order) to the released cells; default
        ``bundle.sanitize`` (fresh draws), e.g. a device state's permanent release.
    stamp : bool
        End every output row with the bundle's sha256 and version.
    id_column : str, optional
        A row key column of ``infile`` carried through unmapped: written as the first column of
        ``out`` exactly as read, never passed to ``release``; a refused row's id (when its cells
        could be read) goes to ``rejects``. It may not be a feature or a withheld column. A row
        with a control character in a cell (a bare CR in an id) is written with every cell
        quoted, so it stays one record.
    max_line : int
        Longest line, or record spanning lines, in characters (>= 1); a longer one is one
        refused row, read through in bounded pieces, whatever cell makes it long (the csv
        module's process-wide cell limit is raised to this and the header's, never lowered).
        The header may be up to 16 Mi characters.
    tick : callable, optional
        Called once per data row.

    Returns
    -------
    BatchResult
        Counts of rows read, released and refused, and the first refusal.

    Raises
    ------
    BuildError
        The file is empty; the header lacks a feature, names an unknown column or one twice, names ``id_column``
        not at all or as a feature or withheld column, is longer than its limit or is not UTF-8
        (the file cannot be read as rows). A data line that is not UTF-8 is a refused row, not
        an error.
    RandomnessError
        The randomness source failed (not a row's fault: the whole batch stops).
    """
    if type(max_line) is not int or max_line < 1:
        raise ValueError("the line limit must be an int >= 1 (characters)")
    names = [f.name for f in bundle.features]
    release = release or bundle.sanitize
    stamp_cells = [bundle.sha256, bundle.version] if stamp else []
    writer = _QuotingWriter(out)
    refuse_writer = _QuotingWriter(rejects) if rejects is not None else None
    # every record is bounded by the line limit (_CappedLines): the csv module's own, process-wide
    # cap on a cell (131,072 characters) must not refuse a shorter one as "malformed" first
    if csv.field_size_limit() < max(max_line, MAX_HEADER_CHARS):
        csv.field_size_limit(max(max_line, MAX_HEADER_CHARS))
    # undecodable bytes become lone surrogates, so a bad line is refused alone (by its number)
    with infile.open(newline="", encoding="utf-8-sig", errors="surrogateescape") as f:
        lines = _CappedLines(f, max(max_line, MAX_HEADER_CHARS))
        reader = csv.reader(lines)
        header = _read_header(infile, lines, reader)
        at, id_at = _header_indexes(infile, header, names, withheld_names(bundle.withheld_columns), id_column)
        writer.writerow(([id_column] if id_column is not None else []) + names
                        + (["bundle_sha256", "bundle_version"] if stamp else []))
        if refuse_writer is not None:
            refuse_writer.writerow(REJECTS_HEADER if id_at is None else ["line", "id", "reason"])
        batch = _Batch(header=header, at=at, id_at=id_at, release=release,
                       stamp_cells=stamp_cells, writer=writer, refuse_writer=refuse_writer)
        lines.limit = max_line
        _release_rows(batch, lines, reader, tick)
    return batch.result


@dataclass
class _Batch:
    """What every data row of :func:`sanitize_csv` reads and updates once the header is read.

    Where the features and the id sit in the header, how a row is released, the two writers and
    the running counts. One state, so releasing a row and refusing it are functions of it.
    """

    header: list[str]
    at: list[int]
    id_at: int | None
    release: Callable[[list], list]
    stamp_cells: list
    writer: _QuotingWriter
    refuse_writer: _QuotingWriter | None
    result: BatchResult = field(default_factory=BatchResult)


def _read_header(infile: pathlib.Path, lines: _CappedLines, reader) -> list[str]:
    """The header's cells, stripped: read first, under the header's own length limit.

    A bad header is refused as a whole (the file cannot be read as rows without it).

    Raises
    ------
    BuildError
        The header is longer than its limit, is not CSV or not UTF-8, or the file is empty.
    """
    try:
        header = [h.strip() for h in next(reader, [])]
    except _LineTooLong:
        raise BuildError(f"{infile}, line 1: the header is longer than {lines.limit} characters") from None
    except csv.Error as exc:
        raise BuildError(f"{infile}, line 1: {exc}") from None
    if not header:
        raise BuildError(f"{infile}: empty file; expected a header row naming the bundle's features, then one "
                         "row per user")
    if any(_undecodable(h) for h in header):
        raise BuildError(f"{infile}, line 1: the header is not UTF-8 text")
    return header


def _release_rows(batch: _Batch, lines: _CappedLines, reader, tick) -> None:
    """Read the data rows one record at a time and release or refuse each.

    A record over the line limit or not CSV is refused by its line number, a blank line is skipped,
    and ``tick`` is called once per data row.
    """
    while True:
        lines.new_record()
        try:
            row = next(reader)
        except StopIteration:
            break
        except _LineTooLong as exc:
            batch.result.rows += 1
            _refuse(batch, lines.line_num, str(exc))
            continue
        except csv.Error:
            batch.result.rows += 1
            _refuse(batch, lines.line_num, "malformed CSV row")
            continue
        if not row:
            continue
        batch.result.rows += 1
        if tick is not None:
            tick()
        _release_row(batch, lines.line_num, row)


def _release_row(batch: _Batch, line: int, row: list[str]) -> None:
    """Write one data row's released cells (after its id, before the stamp), or refuse it.

    A row is refused for bytes that are not UTF-8, the wrong number of cells, or the device's typed
    refusal of its cells.
    """
    if any(_undecodable(cell) for cell in row):
        _refuse(batch, line, "not UTF-8 text")
        return
    if len(row) != len(batch.header):
        _refuse(batch, line, f"{len(row)} cells, header has {len(batch.header)}", row)
        return
    try:
        released = batch.release([row[i] for i in batch.at])
    except InputError as exc:
        _refuse(batch, line, f"{type(exc).__name__}: {exc}", row)
        return
    batch.writer.writerow(([row[batch.id_at]] if batch.id_at is not None else [])
                          + ["" if v is None else v for v in released] + batch.stamp_cells)
    batch.result.released += 1


def _refuse(batch: _Batch, line: int, reason: str, row=None) -> None:
    """Count a refused row and write it to the rejects stream, if any.

    The rejects row holds its line, its id where the row's cells could be read (one id per header
    column, UTF-8), and the reason.
    """
    result = batch.result
    result.refused += 1
    if result.first_refused is None:
        result.first_refused = (line, reason)
    if batch.refuse_writer is not None:
        if batch.id_at is None:
            batch.refuse_writer.writerow([line, reason])
        else:
            readable = row is not None and len(row) == len(batch.header) and not _undecodable(row[batch.id_at])
            batch.refuse_writer.writerow([line, row[batch.id_at] if readable else "", reason])


def _undecodable(text: str) -> bool:
    """Whether ``text`` holds a byte that was not UTF-8 (decoded as a lone surrogate)."""
    return any("\udc80" <= ch <= "\udcff" for ch in text) if not text.isascii() else False


def _header_indexes(infile: pathlib.Path, header: list[str], names: list[str], withheld,
                    id_column: str | None = None) -> tuple[list[int], int | None]:
    """Index in ``header`` of each of the bundle's features ``names``, and of ``id_column``.

    The second is None without an ``id_column``. Linear in the header's width.

    Raises
    ------
    BuildError
        A column named twice, a feature missing, a column that is neither a feature, nor one
        of the ``withheld`` (private) columns, nor ``id_column``; an ``id_column`` missing or
        naming a feature or a withheld column (it would release that column unmapped). The
        first few offenders are named, the rest counted.
    """
    dupes = sorted(name for name, count in Counter(header).items() if count > 1)
    if dupes:
        raise BuildError(f"{infile}: duplicate column name(s) in header: {name_some(dupes)}")
    if id_column is not None:
        if id_column in withheld:
            raise BuildError(f"--id {id_column!r} is the bundle's private column: it is never written")
        if id_column in names:
            raise BuildError(f"--id {id_column!r} is one of the bundle's features: a feature is released "
                             "only through the mapping, never as it is")
    where = {h: i for i, h in enumerate(header)}
    missing = [n for n in names if n not in where]
    if missing:
        raise BuildError(f"{infile}: missing public column(s) {name_some(missing)}{name_hint(missing[0], header)}")
    if id_column is not None and id_column not in where:
        raise BuildError(f"{infile}: no column {id_column!r} (given with --id)")
    known = set(names) | set(withheld) | ({id_column} if id_column is not None else set())
    extra = [h for h in header if h not in known]
    if extra:
        also = f" and {name_some(withheld)}" if withheld else ""
        also += f" and the --id column {id_column!r}" if id_column is not None else ""
        raise BuildError(f"{infile}: unknown column(s) {name_some(extra)}; remove them "
                         f"(only the bundle's features{also} are accepted){name_hint(extra[0], names)}")
    return [where[n] for n in names], (where[id_column] if id_column is not None else None)
