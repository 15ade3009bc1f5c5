"""Labelled data in many CSV or Parquet files, read one partition at a time.

A source is a directory (its ``*.csv``, ``*.parquet`` and ``*.pq`` files), a glob pattern or
one file. It is cut into partitions (a CSV byte range, or a few Parquet row groups) that a
Dask worker reads and validates on its own; nothing ever holds all rows at once.

Validation is the in-memory reader's (:mod:`privmap.offline.data._dataset`): a CSV block
is parsed by pandas only as a fast path, and any block pandas does not accept as clean
numbers is parsed again by ``_dataset.parse_rows``, which names the file, line and column
of the first bad cell with the same message as ``load_dataset``. Parquet cells are named
by file, row (1-based, counted over the file) and column. A blank cell (or the column's
declared missing token) is a missing answer and becomes NaN, as ``load_dataset`` reads it;
a Parquet null (or NaN) likewise.
"""
from __future__ import annotations

import csv
import glob
import hashlib
import io
import os
import pathlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from privmap.device.constants import MAX_ABS_CELL

from .._errors import DatasetError
from .._joint import joint_class, joint_name
from ._dataset import column_indexes, parse_rows, select_columns

#: Target size of a CSV partition, in bytes.
CSV_BLOCK_BYTES = 64 << 20
#: Target number of rows in a Parquet partition (whole row groups are kept together).
PARQUET_BLOCK_ROWS = 250_000
_SUFFIXES = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}


@dataclass(frozen=True)
class Partition:
    """One unit of work: rows of one file.

    ``start``/``stop`` are byte offsets for CSV (the block holds the lines that begin in
    [start, stop)) and row-group indexes for Parquet; ``first_row`` is the 0-based row
    number of the block's first row in its file (Parquet only; a CSV block finds its line
    number when it needs one for a message).
    """

    path: str
    kind: str
    start: int
    stop: int
    first_row: int = 0


@dataclass(frozen=True)
class Source:
    """Files of a partitioned dataset and their common columns.

    Attributes
    ----------
    files : tuple of str
        Sorted paths.
    features : tuple of str
        Public columns, in the first file's order (or ``public=`` order).
    private_name : str
        The private column, or with several the name of their joint
        (:func:`~privmap.offline._joint.joint_name`).
    partitions : tuple of Partition
    private_columns : tuple of str
        With several private columns, their names (protected as their joint attribute:
        :func:`read_partition` labels each row with its tuple's class); empty with one.
    """

    files: tuple[str, ...]
    features: tuple[str, ...]
    private_name: str
    partitions: tuple[Partition, ...]
    private_columns: tuple[str, ...] = ()

    @property
    def private(self) -> str | tuple[str, ...]:
        """The private column(s) as :func:`read_partition` takes them: the name, or the names."""
        return self.private_columns or self.private_name


def resolve_files(source: str | os.PathLike) -> list[str]:
    """The data files a directory, glob pattern or file names, sorted.

    Raises
    ------
    DatasetError
        Nothing matches, or a matched file is neither CSV nor Parquet.
    """
    text = os.fspath(source)
    if os.path.isdir(text):
        files = [str(p) for p in sorted(pathlib.Path(text).iterdir()) if p.suffix.lower() in _SUFFIXES and p.is_file()]
        if not files:
            raise DatasetError(f"{text}: no .csv, .parquet or .pq files in this directory")
        return files
    if os.path.isfile(text):
        files = [text]
    else:
        files = sorted(p for p in glob.glob(text) if os.path.isfile(p))
        if not files:
            raise DatasetError(f"{text}: no such file, directory or matching files")
    for f in files:
        if pathlib.Path(f).suffix.lower() not in _SUFFIXES:
            raise DatasetError(f"{f}: not a .csv, .parquet or .pq file")
    return files


def open_source(source, *, private: str | Sequence[str], public: Sequence[str] | None = None,
                csv_block_bytes: int = CSV_BLOCK_BYTES, parquet_block_rows: int = PARQUET_BLOCK_ROWS) -> Source:
    """Read every file's header (not its rows) and cut the files into partitions.

    ``private`` is the private column, or a sequence of two or more protected as their joint
    attribute (:attr:`Source.private_columns`).

    Raises
    ------
    DatasetError
        As :func:`resolve_files`; a header that ``load_dataset`` would refuse; a file
        whose columns differ from the first file's; an empty file.
    """
    files = resolve_files(source)
    privates = (private,) if isinstance(private, str) else tuple(private)
    features = None
    partitions: list[Partition] = []
    for f in files:
        kind = _SUFFIXES[pathlib.Path(f).suffix.lower()]
        header = _csv_header(f)[0] if kind == "csv" else _parquet_columns(f)
        names = _public_columns(header, f, privates, public)
        if features is None:
            features, first_header = tuple(names), (f, sorted(header))
        elif public is None and sorted(header) != first_header[1]:
            raise DatasetError(f"{f}: columns differ from those of {first_header[0]}")
        partitions += _csv_partitions(f, csv_block_bytes) if kind == "csv" else _parquet_partitions(f, parquet_block_rows)
    assert features is not None                     # resolve_files gives at least one file
    return Source(files=tuple(files), features=features, partitions=tuple(partitions),
                  private_name=privates[0] if len(privates) == 1 else joint_name(privates),
                  private_columns=privates if len(privates) > 1 else ())


def _public_columns(header: list[str], path, privates: tuple[str, ...], public: Sequence[str] | None) -> list[str]:
    """The public columns of a file's ``header`` (:func:`select_columns`' checks).

    With several ``privates`` each must be in the header, none public, and the others are kept
    out of the default public columns as the first is.
    """
    others = privates[1:]
    column_indexes(list(others), header, path, "private ")
    both = next((name for name in others if name in (public or ())), None)
    if both is not None:
        raise DatasetError(f"{path}: column {both!r} cannot be both private and public")
    return select_columns([h for h in header if h not in others], path, privates[0], public)[0]


def read_partition(part: Partition, features: Sequence[str], private: str | tuple[str, ...],
                   tokens: Mapping[str, str] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Read and validate one partition.

    ``private`` is the private column, or a tuple of several (:attr:`Source.private`): each row is
    then labelled with its values' joint class (:func:`~privmap.offline._joint.joint_class`, as
    the in-memory reader labels it).

    ``tokens`` maps a column to the text that spells a missing answer besides a blank cell
    (CSV only, as ``load_dataset``'s ``missing_tokens``).

    Returns
    -------
    public : ndarray of float64, shape (m, d)
        Columns in ``features`` order; NaN = a missing answer.
    labels : ndarray of str objects, shape (m,)
        Private values, stripped (Parquet numbers written as text, e.g. ``"1"``), or their
        joint classes.

    Raises
    ------
    DatasetError
        The first bad cell, named as ``load_dataset`` names it (file, line or row, column).
    """
    if isinstance(private, tuple):
        X, first = read_partition(part, features, private[0], tokens)
        others = [read_partition(part, (), name, tokens)[1] for name in private[1:]]
        return X, np.array([joint_class(values) for values in zip(first, *others)], dtype=object)
    if part.kind == "csv":
        return _read_csv_block(part, features, private, dict(tokens or {}))
    return _read_parquet_block(part, features, private)


def describe_partition(part: Partition) -> str:
    """Where a partition begins, for a message: ``"FILE, lines from L"`` or ``"FILE, rows from R"``."""
    if part.kind == "csv":
        _, begin = _block_bytes(part)
        return f"{part.path}, lines from {_line_of(part.path, begin)}"
    return f"{part.path}, rows from {part.first_row + 1}"


def row_keys(seed: int, ordinal: int, m: int) -> np.ndarray:
    """A 64-bit key of each of a partition's ``m`` rows that depends on nothing but where the row is.

    splitmix64 of (``seed``, the partition's ``ordinal``, the row's index in it), shape (m,)
    uint64. Keys are distinct for distinct (ordinal, row < 2**32) under one seed, so a row's rank
    among them is a seeded, deterministic random order (samples; cross-fitting folds by remainder).
    """
    with np.errstate(over="ignore"):
        x = (np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15) + (np.uint64(ordinal) << np.uint64(32))
             + np.arange(m, dtype=np.uint64))
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        x ^= x >> np.uint64(31)
    return x


def file_sha256(path: str) -> str:
    """Hex SHA-256 of a file's bytes, read in 16 MiB pieces."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for piece in iter(lambda: f.read(16 << 20), b""):
            digest.update(piece)
    return digest.hexdigest()


def source_sha256(files: Sequence[str], digests: Sequence[str]) -> str:
    r"""Provenance of a source: the SHA-256 of its one file, or of its files' digests.

    The file's own SHA-256 for one file (as ``load_dataset``), else the SHA-256 of the lines
    ``"<sha256>  <file name>\n"`` in sorted path order.
    """
    if len(files) == 1:
        return digests[0]
    listing = "".join(f"{h}  {os.path.basename(f)}\n" for f, h in zip(files, digests))
    return hashlib.sha256(listing.encode("utf-8")).hexdigest()


# --- CSV -------------------------------------------------------------------------------------------

def _csv_header(path: str) -> tuple[list[str], int]:
    """Header names (stripped) and the byte offset where the data lines begin."""
    try:
        with open(path, "rb") as f:
            line = f.readline(1 << 20)
            offset = f.tell()
    except OSError as exc:
        raise DatasetError(f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        text = line.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{path}: not UTF-8 text (byte {exc.start})") from exc
    try:
        header = next(csv.reader([text]), None)
    except csv.Error as exc:
        raise DatasetError(f"{path}, line 1: {exc}") from exc
    if not header:
        raise DatasetError(f"{path}: empty file, expected a header row")
    return [h.strip() for h in header], offset


def _csv_partitions(path: str, block: int) -> list[Partition]:
    _, begin = _csv_header(path)
    size = os.path.getsize(path)
    if size <= begin:
        raise DatasetError(f"{path}: no data rows")
    cuts = list(range(begin, size, block)) + [size]
    return [Partition(path, "csv", a, b) for a, b in zip(cuts[:-1], cuts[1:])]


def _block_bytes(part: Partition) -> tuple[bytes, int]:
    """The whole lines that begin in [start, stop), and the offset of the first."""
    with open(part.path, "rb") as f:
        f.seek(part.start - 1)
        if f.read(1) != b"\n":
            f.readline()  # the line that straddles start belongs to the previous block
        begin = f.tell()
        if begin >= part.stop:
            return b"", begin
        data = f.read(part.stop - begin)
        if not data.endswith(b"\n"):
            data += f.readline()
    return data, begin


def _line_of(path: str, offset: int) -> int:
    """Line number (1-based) of the line that begins at byte ``offset``."""
    count = 0
    with open(path, "rb") as f:
        remaining = offset
        while remaining > 0:
            piece = f.read(min(remaining, 16 << 20))
            if not piece:
                break
            count += piece.count(b"\n")
            remaining -= len(piece)
    return count + 1


def _read_csv_block(part: Partition, features, private, tokens: dict[str, str]):
    import pandas as pd

    data, begin = _block_bytes(part)
    if not data.strip():
        return np.empty((0, len(features))), np.empty(0, dtype=object)
    header, _ = _csv_header(part.path)
    # Fast path: only an empty field (or the column's token) is read as NaN; any other text that
    # is not a number ("nan" included) makes pandas raise, and the block goes to the slow path.
    missing = {name: ["", tokens[name]] if tokens.get(name) else [""] for name in features}
    try:
        frame = pd.read_csv(io.BytesIO(data), header=None, names=header, usecols=[*features, private],
                            dtype={**{name: np.float64 for name in features}, private: str},
                            keep_default_na=False, na_values=missing, skipinitialspace=False)
        X = frame[list(features)].to_numpy(dtype=np.float64)
        labels = frame[private].str.strip().to_numpy(dtype=object)
        clean = not (np.abs(X) > MAX_ABS_CELL).any() and bool((labels != "").all())   # inf included
    except (ValueError, TypeError, AttributeError, pd.errors.ParserError):
        clean = False
    if clean:
        return X, labels
    # Slow path: the in-memory reader's own row parser, for its exact messages.
    first_line = _line_of(part.path, begin)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = first_line + data[:exc.start].count(b"\n")
        raise DatasetError(f"{part.path}, line {line}: not UTF-8 text") from exc
    public_at = [header.index(name) for name in features]
    cells, labels = parse_rows(csv.reader(io.StringIO(text, newline="")), part.path, header, public_at,
                               header.index(private), False, first_line=first_line - 1, tokens=tokens)
    X = np.array(cells, dtype=np.float64).reshape(len(cells), len(features))
    return X, np.array(labels, dtype=object)


# --- Parquet ---------------------------------------------------------------------------------------

def _parquet_file(path: str):
    import pyarrow.parquet as pq
    try:
        return pq.ParquetFile(path)
    except Exception as exc:  # pyarrow raises its own error types for a damaged file
        raise DatasetError(f"{path}: not a readable Parquet file ({exc})") from exc


def _parquet_columns(path: str) -> list[str]:
    """The file's data columns: its schema's names less the index pandas stored beside them.

    ``DataFrame.to_parquet`` writes a non-range index as a column such as ``__index_level_0__``,
    named in the file's pandas metadata: row labels, not a public answer.
    """
    schema = _parquet_file(path).schema_arrow
    index = {c for c in (schema.pandas_metadata or {}).get("index_columns", []) if isinstance(c, str)}  # range: a dict
    return [name for name in schema.names if name not in index]


def _parquet_partitions(path: str, block_rows: int) -> list[Partition]:
    meta = _parquet_file(path).metadata
    parts, start, first, rows, at = [], 0, 0, 0, 0
    for g in range(meta.num_row_groups):
        rows += meta.row_group(g).num_rows
        if rows >= block_rows or g == meta.num_row_groups - 1:
            parts.append(Partition(path, "parquet", start, g + 1, first))
            start, first = g + 1, at + rows
            at, rows = first, 0
    if not parts or meta.num_rows == 0:
        raise DatasetError(f"{path}: no data rows")
    return parts


def _read_parquet_block(part: Partition, features, private):
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        table = _parquet_file(part.path).read_row_groups(range(part.start, part.stop), columns=[*features, private])
    except Exception as exc:
        raise DatasetError(f"{part.path}: cannot read row groups {part.start}..{part.stop - 1} ({exc})") from exc

    def where(i: int) -> str:
        return f"{part.path}, row {part.first_row + i + 1}"

    columns = []
    for name in features:
        column = table.column(name)
        if not (pa.types.is_integer(column.type) or pa.types.is_floating(column.type)):
            raise DatasetError(f"{part.path}, column {name!r}: type {column.type}, expected numbers")
        values = column.to_numpy(zero_copy_only=False).astype(np.float64, copy=False)
        if column.null_count:
            values = values.copy()
            values[pc.is_null(column).to_numpy(zero_copy_only=False)] = np.nan
        inf = np.isinf(values)
        if inf.any():
            raise DatasetError(f"{where(int(np.argmax(inf)))}, column {name!r}: not finite: {float(values[inf][0])!r}")
        huge = np.abs(values) > MAX_ABS_CELL
        if huge.any():
            raise DatasetError(f"{where(int(np.argmax(huge)))}, column {name!r}: {float(values[huge][0])!r} is beyond "
                               f"+-{MAX_ABS_CELL:g}, the largest magnitude a device reads")
        columns.append(values)
    labels = pc.utf8_trim_whitespace(pc.cast(table.column(private), pa.string()))
    empty = pc.fill_null(pc.equal(labels, ""), True).to_numpy(zero_copy_only=False)
    if empty.any():
        raise DatasetError(f"{where(int(np.argmax(empty)))}, column {private!r}: empty private value")
    X = np.column_stack(columns) if columns else np.empty((table.num_rows, 0))
    return X, labels.to_numpy(zero_copy_only=False).astype(object)
