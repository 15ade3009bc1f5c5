"""Read and validate a labelled CSV: public columns plus one private attribute.

Or several private columns, protected as their joint: :mod:`privmap.offline._joint`.

Every input row is treated as hostile: each problem is reported with the file's
line number and the column name, and nothing is built from a file that fails.
"""
from __future__ import annotations

import csv
import hashlib
import json
import math
import pathlib
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from privmap.device import Limits
from privmap.device.constants import MAX_ABS_CELL

from .._errors import DatasetError
from .._joint import PrivateColumns, check_names, joint_class, joint_name
from .._listing import name_hint, name_some
from ._frames import csv_source

if TYPE_CHECKING:
    from _csv import Reader as CsvReader  # typeshed's name for what csv.reader returns (it has line_num)

#: Fewest data rows a prior can be estimated from.
MIN_ROWS = 10
#: Largest CSV the builder reads, in bytes (1 GiB).
MAX_CSV_BYTES = 1 << 30
#: The device's default limits: what a header or a first pass already decides is checked against
#: them before any clustering, so that a build the device would refuse stops in seconds.
DEVICE_LIMITS = Limits()


@dataclass(frozen=True)
class Dataset:
    """A validated labelled dataset.

    Attributes
    ----------
    features : tuple of str, length d
        Names of the public columns, in file order (or ``public=`` order).
    public : ndarray, shape (n, d)
        Public data: float64 for numeric data (NaN = a missing answer: a blank cell or
        the column's missing token), ``str`` objects for categorical.
    private : ndarray of int64, shape (n,)
        Code of each row's private class, an index into ``classes``.
    classes : tuple of str
        The private classes, sorted (or as given by ``classes=``). With several private
        columns: the observed tuples of their values (:func:`privmap.offline._joint.joint_class`),
        in the order of the tuples.
    private_name : str
        Name of the private column (several: :func:`privmap.offline._joint.joint_name`).
    categorical : bool
        Whether public cells are categories (strings) rather than numbers.
    sha256 : str
        Hex SHA-256 of the file's bytes (provenance).
    columns : PrivateColumns or None
        With several private columns, their names, values and each joint class's value codes;
        None for one private column.
    """

    features: tuple[str, ...]
    public: np.ndarray
    private: np.ndarray
    classes: tuple[str, ...]
    private_name: str
    categorical: bool
    sha256: str
    columns: PrivateColumns | None = None

    @property
    def n(self) -> int:
        """Number of rows."""
        return int(self.public.shape[0])

    @property
    def d(self) -> int:
        """Number of public features."""
        return int(self.public.shape[1])

    @property
    def class_counts(self) -> np.ndarray:
        """Rows of each private class, shape (|A|,), in the order of ``classes``."""
        return np.bincount(self.private, minlength=len(self.classes))

    @property
    def missing(self) -> np.ndarray:
        """Boolean mask, shape (n, d), of missing answers (all False for categorical data)."""
        if self.categorical:
            return np.zeros(self.public.shape, dtype=bool)
        return np.isnan(self.public)

    def without_all_missing(self) -> tuple[Dataset, int]:
        """The dataset less the rows whose every public cell is missing, and how many were left out.

        A device refuses such rows. Raises :class:`DatasetError` if no row is left.
        """
        keep = ~np.all(self.missing, axis=1)
        dropped = int(keep.size - keep.sum())
        if dropped == 0:
            return self, 0
        if not keep.any():
            raise DatasetError("every row has every public cell missing")
        return replace(self, public=self.public[keep], private=self.private[keep]), dropped

    @classmethod
    def from_csv(cls, path: str | pathlib.Path, **kwargs) -> Dataset:
        """The rows of a labelled CSV file: :func:`load_dataset`, whose keyword arguments it takes.

        Its keyword arguments are ``private``, ``public``, ``categorical``, ``missing_tokens``, ...
        Raises :class:`DatasetError` as it does.
        """
        return load_dataset(path, **kwargs)

    @classmethod
    def from_frame(cls, table, *, columns: Sequence[str] | None = None, **kwargs) -> Dataset:
        """The rows of a table in memory (a pandas DataFrame, or a NumPy array whose ``columns`` are named).

        Read as :meth:`from_csv` reads the CSV :func:`._frames.csv_source` writes of it (so
        ``sha256`` is that CSV's, and a bundle built from either is the same); messages name the
        table ``DataFrame``.

        Raises
        ------
        BuildError
            A NumPy table that is not 2-D, or without ``columns`` naming each column.
        DatasetError
            As :func:`load_dataset`.
        """
        with csv_source(table, columns) as path:
            return load_dataset(path, **kwargs)


def load_dataset(
    path: str | pathlib.Path,
    *,
    private: str | Sequence[str],
    public: Sequence[str] | None = None,
    classes: Sequence[str] | None = None,
    categorical: bool = False,
    min_rows: int = MIN_ROWS,
    missing_tokens: Mapping[str, str] | None = None,
) -> Dataset:
    """Read a CSV with a header row into a :class:`Dataset`.

    Parameters
    ----------
    path : path-like
        CSV file (UTF-8, comma separated, first line is the header).
    private : str or sequence of str
        Name of the private column, or (a sequence of two or more) the private columns protected
        as their joint attribute: each observed tuple of their values is one class
        (:class:`Dataset`, ``columns``). A sequence of one name is that column.
    public : sequence of str, optional
        Public columns to use; default all columns except the private ones.
    classes : sequence of str, optional
        The expected private classes. Every one must occur and no other value may.
        Default: the distinct values found (at least two). One private column only.
    categorical : bool
        Keep public cells as category strings instead of parsing numbers.
    min_rows : int
        Fewest data rows accepted.
    missing_tokens : mapping column -> str, optional
        Besides a blank cell, the text that spells a missing answer in that column
        (for example ``"NA"``, or ``"0"`` where a survey codes a skipped question as 0); the key
        ``"*"`` gives every other column's. Missing numeric cells become NaN.

    Raises
    ------
    DatasetError
        Unreadable or oversized file, missing or duplicate header names, unknown
        column, a row of the wrong length, a non-numeric or non-finite cell, an
        empty categorical cell (named by line and column), too few rows, fewer
        than two private classes, or a listed class with no rows. Several private columns: one
        named twice, one also public, more than ``MAX_PRIVATE_COLUMNS``, or more joint classes
        than a device takes (``Limits.max_classes``).
    """
    names = (private,) if isinstance(private, str) else tuple(private)
    if len(names) > 1:
        if classes is not None:
            raise DatasetError("classes= applies to one private column")
        return _load_joint(pathlib.Path(path), names, public, categorical, min_rows, missing_tokens)
    if not names:
        raise DatasetError(f"{path}: no private column named")
    private = names[0]
    path = pathlib.Path(path)
    raw, reader, header = read_csv(path)
    public, public_at, private_at = select_columns(header, path, private, public)
    cells, labels = parse_rows(reader, path, header, public_at, private_at, categorical, tokens=missing_tokens)
    _check_rows(cells, min_rows, path)
    classes = check_classes(sorted(set(labels)), classes, path, private)
    return _assembled(raw, public, cells, labels, classes, private, categorical, path)


def _check_rows(cells: Sequence, min_rows: int, path) -> None:
    """Raise DatasetError when fewer than ``min_rows`` data rows were read."""
    if len(cells) < min_rows:
        raise DatasetError(f"{path}: {len(cells)} data rows, need at least {min_rows}")


def _assembled(raw: bytes, public: Sequence[str], cells: list, labels: list[str], classes: Sequence[str],
               private_name: str, categorical: bool, path, columns: PrivateColumns | None = None) -> Dataset:
    """The :class:`Dataset` of parsed rows, hashed from the file's ``raw`` bytes.

    ``cells`` (n, d) under ``public``, each row's private label in ``labels`` coded by its index
    in ``classes``. Raises DatasetError for a categorical column beyond the device's limits.
    """
    if categorical:
        check_categories(cells, public, path)
    code = {cls: i for i, cls in enumerate(classes)}
    return Dataset(
        features=tuple(public),
        public=np.array(cells, dtype=object if categorical else np.float64),
        private=np.array([code[label] for label in labels], dtype=np.int64),
        classes=tuple(classes),
        private_name=private_name,
        categorical=categorical,
        sha256=hashlib.sha256(raw).hexdigest(),
        columns=columns,
    )


def _load_joint(path: pathlib.Path, names: tuple[str, ...], public: Sequence[str] | None, categorical: bool,
                min_rows: int, missing_tokens: Mapping[str, str] | None) -> Dataset:
    """:func:`load_dataset` of several private columns, protected as their joint attribute.

    Each column is checked as a private column is (a blank value refused, named by line and
    column), and each observed tuple of their values becomes one class. Raises as
    :func:`load_dataset`.
    """
    check_names(names, DEVICE_LIMITS.max_string_bytes, path)
    raw, reader, header = read_csv(path)
    check_unique(header, path)
    at = column_indexes(list(names), header, path, "private ")
    if public is not None:
        both = [c for c in public if c in names]
        if both:
            raise DatasetError(f"{path}: column {both[0]!r} cannot be both private and public")
    elif "" in header:
        raise DatasetError(f"{path}: column {header.index('') + 1} has no name in the header; name it, or list "
                           "the public columns with --public")
    public = [h for h in header if h not in names] if public is None else list(public)
    if not public:
        raise DatasetError(f"{path}: no public columns")
    public_at = column_indexes(public, header, path, "public ")
    joint_header = [*header, "\x00joint"]

    def with_joint():  # each data row with its private tuple appended as one more cell
        for line, row in data_rows(reader, path, header):
            for name, i in zip(names, at):
                if not row[i].strip():
                    raise DatasetError(f"{path}, line {line}, column {name!r}: empty private value")
            yield [*row, joint_class([row[i].strip() for i in at])]

    cells, labels = parse_rows(_Counted(with_joint(), reader), path, joint_header, public_at, len(header),
                               categorical, tokens=missing_tokens)
    _check_rows(cells, min_rows, path)
    classes, columns = joint_classes(names, labels, path)
    return _assembled(raw, public, cells, labels, classes, joint_name(names), categorical, path, columns=columns)


def joint_classes(names: tuple[str, ...], labels: Iterable[str], path) -> tuple[list[str], PrivateColumns]:
    """The joint classes of private columns ``names``, and how each decomposes.

    The rows' ``labels`` are :func:`~privmap.offline._joint.joint_class` texts. Returns the
    observed tuples in order (each as its text), and how each decomposes
    (:class:`~privmap.offline._joint.PrivateColumns`).

    Raises
    ------
    DatasetError
        More joint values than a device takes, a single joint value, or a joint name or class
        longer than a device reads (``path`` names where).
    """
    tuples = sorted({tuple(json.loads(label)) for label in labels})
    listed = ", ".join(map(repr, names))
    if len(tuples) > DEVICE_LIMITS.max_classes:
        raise DatasetError(f"{path}: private columns {listed} take {len(tuples):,} joint values; a device takes at "
                           f"most {DEVICE_LIMITS.max_classes:,} classes (Limits.max_classes): protect fewer columns "
                           "together, or coarsen one")
    if len(tuples) < 2:
        raise DatasetError(f"{path}: private columns {listed} take a single joint value; need two or more")
    classes = [joint_class(t) for t in tuples]
    for text in (joint_name(names), *classes):
        if len(text.encode("utf-8", "surrogatepass")) > DEVICE_LIMITS.max_string_bytes:
            raise DatasetError(f"{path}: joint private name or class {text[:40]!r}... is longer than "
                               f"{DEVICE_LIMITS.max_string_bytes} bytes (Limits.max_string_bytes)")
    values = tuple(tuple(sorted({t[i] for t in tuples})) for i in range(len(names)))
    where = [{v: k for k, v in enumerate(vs)} for vs in values]
    codes = np.array([[where[i][t[i]] for i in range(len(names))] for t in tuples], dtype=np.int64)
    return classes, PrivateColumns(names=names, values=values, codes=codes)


class _Counted:
    """An iterator of rows that reports the line number of the ``csv.reader`` beneath it."""

    def __init__(self, rows, reader):
        self._rows, self._reader = rows, reader

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._rows)

    @property
    def line_num(self) -> int:
        return self._reader.line_num


def read_capped(path: pathlib.Path, limit: int, what: str = "") -> bytes:
    """The bytes of the file at ``path``, refused beyond ``limit`` bytes (read at most limit + 1).

    ``what`` (for example ``"schema "``) names the kind of file before the path in messages.

    Raises
    ------
    DatasetError
        An unreadable file or one larger than ``limit`` bytes.
    """
    try:
        with path.open("rb") as f:
            raw = f.read(limit + 1)
    except OSError as exc:
        raise DatasetError(f"cannot read {what}{path}: {exc.strerror or exc}") from exc
    if len(raw) > limit:
        raise DatasetError(f"{what}{path}: larger than {limit} bytes")
    return raw


def read_csv(path: pathlib.Path) -> tuple[bytes, CsvReader, list[str]]:
    """Read a CSV file whole and its header row; the one place a builder's CSV bytes are read.

    Parameters
    ----------
    path : pathlib.Path
        UTF-8 CSV (a byte-order mark is allowed) with a header row, at most ``MAX_CSV_BYTES``.

    Returns
    -------
    (raw, reader, header)
        The file's bytes (for its SHA-256), a ``csv.reader`` positioned after the header, and
        the header's column names, stripped, in file order (the caller checks them:
        :func:`select_columns` or :func:`check_unique` and :func:`column_indexes`).

    Raises
    ------
    DatasetError
        Unreadable or oversized file, text that is not UTF-8 (named by its first bad line), no
        header row, or a CSV syntax error in the header.
    """
    raw = read_capped(path, MAX_CSV_BYTES)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise DatasetError(f"{path}, line {line}: not UTF-8 text (byte {exc.start} of the file)") from exc

    reader = csv.reader(_lines(text))
    try:
        header = [h.strip() for h in next(reader)]
    except StopIteration:
        raise DatasetError(f"{path}: empty file, expected a header row") from None
    except csv.Error as exc:
        raise DatasetError(f"{path}, line 1: {exc}") from exc
    return raw, reader, header


#: One physical line: ``\r\n``, ``\r`` or ``\n`` ends it, as ``newline=""`` text files split lines.
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")


def _lines(text: str) -> Iterator[str]:
    """The physical lines of ``text``, each with its terminator, one at a time.

    What a ``StringIO(text, newline="")`` yields, without its copy of the whole text (up to 4
    bytes a character).
    """
    return (match.group() for match in _LINE.finditer(text))


def check_unique(header: Sequence[str], path) -> None:
    """Raise :class:`DatasetError` naming the column names that ``header`` gives more than once.

    It names the first few of them. Linear in the header's width.
    """
    if len(set(header)) == len(header):
        return
    dupes = sorted(name for name, count in Counter(header).items() if count > 1)
    if dupes:
        raise DatasetError(f"{path}: duplicate column name(s) in header: {name_some(dupes)}")


def check_device_width(names: Sequence[str], path, what: str = "") -> None:
    """Refuse columns a device could not take as a bundle's features (or private column).

    More than ``Limits.max_features`` of them, or a name longer than ``Limits.max_string_bytes``
    bytes of UTF-8. Decided by the header alone, so it runs before any row is parsed.

    Raises
    ------
    DatasetError
        Naming the count or the first long name (shortened) and the device limit.
    """
    if len(names) > DEVICE_LIMITS.max_features:
        raise DatasetError(f"{path}: {len(names):,} {what}columns; a device takes at most "
                           f"{DEVICE_LIMITS.max_features:,} features (Limits.max_features): select fewer "
                           "(--public)")
    for name in names:
        if len(name) * 4 > DEVICE_LIMITS.max_string_bytes and len(name.encode("utf-8", "surrogatepass")) \
                > DEVICE_LIMITS.max_string_bytes:
            raise DatasetError(f"{path}: {what}column name {name[:40]!r}... is longer than "
                               f"{DEVICE_LIMITS.max_string_bytes} bytes, the longest string a device reads "
                               "(Limits.max_string_bytes)")


def column_indexes(names: Sequence[str], header: Sequence[str], path, what: str = "") -> list[int]:
    """Indexes in ``header`` of the columns ``names``.

    A bundle will carry those columns: a device's width limits are checked first,
    :func:`check_device_width`.

    ``what`` (for example ``"public "``) qualifies the column in the message.

    Raises
    ------
    DatasetError
        More columns, or a longer name, than a device takes; a name that is not in ``header``
        (the first one, with the first few of the file's columns).
    """
    check_device_width(names, path, what)
    where: dict[str, int] = {}
    for i, name in enumerate(header):  # linear: the first occurrence, as list.index gives
        where.setdefault(name, i)
    for name in names:
        if name not in where:
            raise DatasetError(f"{path}: unknown {what}column {name_some([name])}; "
                               f"columns are {name_some(header)}{name_hint(name, header)}")
    return [where[name] for name in names]


def data_rows(reader, path, header: Sequence[str], *, first_line: int = 0) -> Iterator[tuple[int, list[str]]]:
    """The non-blank rows of a ``csv.reader`` (the header already read) with their file lines.

    Yields ``(line, row)``, ``line`` being ``first_line + reader.line_num``. A ``csv.Error`` from
    the reader is left to the caller (which names the line).

    Raises
    ------
    DatasetError
        A row whose number of cells is not the header's, named by line.
    """
    for row in reader:
        if not row or (len(row) == 1 and not row[0].strip()):
            continue  # blank line
        line = first_line + reader.line_num
        if len(row) != len(header):
            raise DatasetError(f"{path}, line {line}: {len(row)} cells, header has {len(header)}")
        yield line, row


def select_columns(header: list[str], path, private: str, public: Sequence[str] | None
                   ) -> tuple[list[str], list[int], int]:
    """Check a header and find the public and private columns in it.

    Parameters
    ----------
    header : list of str
        Column names, stripped, in file order.
    path : path-like
        Named in messages.
    private, public
        As in :func:`load_dataset`.

    Returns
    -------
    (public names, their indexes in ``header``, index of the private column)

    Raises
    ------
    DatasetError
        Duplicate or unknown names, a column both private and public, no public column, a public
        column without a name, more public columns (or a longer name) than a device takes
        (from the header alone: :func:`check_device_width`).
    """
    check_unique(header, path)
    (private_at,) = column_indexes([private], header, path, "private ")
    check_device_width([h for h in header if h != private] if public is None else list(public), path, "public ")
    if public is None:
        public = [h for h in header if h != private]
        if "" in public:
            raise DatasetError(f"{path}: column {header.index('') + 1} has no name in the header (a row index "
                               "written with the data, as pandas' to_csv does by default?); name it, or list the "
                               "public columns with --public")
    else:
        public = list(public)
        column_indexes(public, header, path, "public ")
        if private in public:
            raise DatasetError(f"{path}: column {private!r} cannot be both private and public")
    if not public:
        raise DatasetError(f"{path}: no public columns")
    return public, column_indexes(public, header, path), private_at


def check_classes(found: list[str], classes: Sequence[str] | None, path, private: str) -> list[str]:
    """The private classes of a dataset, checked against the ones asked for.

    Parameters
    ----------
    found : list of str
        The distinct private values present, sorted.
    classes : sequence of str, optional
        As in :func:`load_dataset`.
    path : path-like
        Named in messages.
    private : str
        Name of the private column.

    Raises
    ------
    DatasetError
        A single class found, a listed class with no rows, a value not listed, or more classes
        (or a longer class name) than a device takes (``Limits.max_classes``,
        ``Limits.max_string_bytes``).
    """
    if len(found) > DEVICE_LIMITS.max_classes:
        raise DatasetError(f"{path}: private column {private!r} has {len(found):,} distinct values; a device "
                           f"takes at most {DEVICE_LIMITS.max_classes:,} classes (Limits.max_classes)")
    for cls in found:
        if len(cls.encode("utf-8", "surrogatepass")) > DEVICE_LIMITS.max_string_bytes:
            raise DatasetError(f"{path}: private class {cls[:40]!r}... of column {private!r} is longer than "
                               f"{DEVICE_LIMITS.max_string_bytes} bytes (Limits.max_string_bytes)")
    if classes is None:
        classes = found
        if len(classes) < 2:
            raise DatasetError(
                f"{path}: private column {private!r} has a single class {classes[0]!r}; need two or more")
    else:
        classes = list(classes)
        for cls in classes:
            if cls not in found:
                raise DatasetError(f"{path}: private class {cls!r} of column {private!r} has no rows")
        for cls in found:
            if cls not in classes:
                raise DatasetError(f"{path}: private column {private!r} has value {cls!r}, not among the classes {classes}")
    return classes


def check_categories(cells: Sequence[Sequence[str]], features: Sequence[str], path) -> None:
    """Refuse categorical columns a device could not take.

    More distinct values in one column than ``Limits.max_categories``, or a value longer than
    ``Limits.max_string_bytes`` bytes of UTF-8. One pass over the (n, d) cells, before any
    clustering.

    Raises
    ------
    DatasetError
        Naming the column and the limit.
    """
    for j, name in enumerate(features):
        values = {row[j] for row in cells}
        if len(values) > DEVICE_LIMITS.max_categories:
            raise DatasetError(f"{path}: column {name!r} has {len(values):,} distinct values; a device takes at "
                               f"most {DEVICE_LIMITS.max_categories:,} categories (Limits.max_categories)")
        for value in values:
            if len(value.encode("utf-8", "surrogatepass")) > DEVICE_LIMITS.max_string_bytes:
                raise DatasetError(f"{path}: column {name!r} has a value longer than "
                                   f"{DEVICE_LIMITS.max_string_bytes} bytes (Limits.max_string_bytes)")


def parse_rows(reader, path, header: list[str], public_at: list[int], private_at: int, categorical: bool,
               *, first_line: int = 0, tokens: Mapping[str, str] | None = None) -> tuple[list[list], list[str]]:
    """Validate and parse the data rows of a ``csv.reader`` (the header already read).

    This is the one place where a cell's text becomes a value (blank lines are skipped, every
    cell goes through ``_cell``); the partitioned reader defers to it for any block that its
    fast parser does not accept, so both report the same line and column.

    Parameters
    ----------
    reader : csv.reader
        Positioned after the header (or at the start of a block of data lines).
    path : path-like
        Named in messages.
    header : list of str
        Column names.
    public_at, private_at
        Column indexes, from :func:`select_columns`.
    categorical : bool
        Keep public cells as strings.
    first_line : int, keyword-only
        Added to ``reader.line_num`` in messages (lines before the reader's text).
    tokens : mapping column -> str, keyword-only, optional
        Missing-answer spellings besides a blank cell (see :func:`load_dataset`); a missing
        numeric cell becomes NaN.

    Returns
    -------
    (cells, labels): list of n rows of d values, list of n private labels.

    Raises
    ------
    DatasetError
        A row of the wrong length, an empty private value, a non-numeric or
        non-finite cell, an empty categorical cell, or a CSV syntax error, named by line and column.
    """
    private = header[private_at]
    tokens = dict(tokens or {})
    default = tokens.get("*", "")  # --missing-token: every column without its own
    cells: list[list] = []
    labels: list[str] = []
    try:
        for line, row in data_rows(reader, path, header, first_line=first_line):
            label = row[private_at].strip()
            if not label:
                raise DatasetError(f"{path}, line {line}, column {private!r}: empty private value")
            labels.append(label)
            cells.append([_cell(row[i], path, line, header[i], categorical, tokens.get(header[i], default))
                          for i in public_at])
    except csv.Error as exc:
        raise DatasetError(f"{path}, line {first_line + reader.line_num}: {exc}") from exc

    return cells, labels


def _cell(text: str, path: pathlib.Path, line: int, column: str, categorical: bool, token: str):
    value = text.strip()
    if categorical:
        if not value:
            raise DatasetError(f"{path}, line {line}, column {column!r}: empty cell "
                               "(missing answers need numeric columns and the quantized mechanism)")
        return value
    if not value or (token and value == token):
        return math.nan
    try:
        number = float(value)
    except ValueError:
        raise DatasetError(f"{path}, line {line}, column {column!r}: not a number: {value[:40]!r}") from None
    if not math.isfinite(number):
        raise DatasetError(f"{path}, line {line}, column {column!r}: not finite: {value[:40]!r}")
    if abs(number) > MAX_ABS_CELL:
        raise DatasetError(f"{path}, line {line}, column {column!r}: {value[:40]!r} is beyond +-{MAX_ABS_CELL:g}, "
                           "the largest magnitude a device reads (its squared distances would overflow)")
    return number
