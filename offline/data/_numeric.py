"""Read named numeric columns of a CSV (for the real-valued mechanisms, issue 16)."""
from __future__ import annotations

import csv
import hashlib
import io
import math
import pathlib
from typing import Sequence

import numpy as np

from .._errors import DatasetError
from ._dataset import MAX_CSV_BYTES, MIN_ROWS, _cell

__all__ = ["read_numeric_columns"]


def read_numeric_columns(path, columns: Sequence[str], *, min_rows: int = MIN_ROWS
                         ) -> tuple[np.ndarray, tuple[str, ...], str]:
    """The cells of ``columns`` of the CSV at ``path`` as float64.

    Parameters
    ----------
    path : path-like
        UTF-8 CSV with a header row.
    columns : sequence of str
        Columns to read, in the order wanted.
    min_rows : int
        Fewest data rows accepted.

    Returns
    -------
    (values, header, sha256) : ndarray (m, len(columns)), the file's header, hex SHA-256 of its bytes.

    Raises
    ------
    DatasetError
        Unreadable or oversized file, unknown or duplicate column, a row of the wrong length, an
        empty, non-numeric or non-finite cell (named by line and column), too few rows.
    """
    path = pathlib.Path(path)
    try:
        with path.open("rb") as f:
            raw = f.read(MAX_CSV_BYTES + 1)
    except OSError as exc:
        raise DatasetError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if len(raw) > MAX_CSV_BYTES:
        raise DatasetError(f"{path}: larger than {MAX_CSV_BYTES} bytes")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{path}: not UTF-8 text (byte {exc.start})") from exc
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = tuple(h.strip() for h in next(reader))
        if len(set(header)) != len(header):
            raise DatasetError(f"{path}: duplicate column names in the header")
        for name in columns:
            if name not in header:
                raise DatasetError(f"{path}: unknown column {name!r}; columns are {', '.join(header)}")
        if len(set(columns)) != len(columns):
            raise DatasetError(f"{path}: a column is named twice")
        at = [header.index(name) for name in columns]
        rows = []
        for row in reader:
            if not row or (len(row) == 1 and not row[0].strip()):
                continue
            if len(row) != len(header):
                raise DatasetError(f"{path}, line {reader.line_num}: {len(row)} cells, header has {len(header)}")
            cells = [_cell(row[i], path, reader.line_num, header[i], False, "") for i in at]
            for value, i in zip(cells, at):
                if math.isnan(value):
                    raise DatasetError(f"{path}, line {reader.line_num}, column {header[i]!r}: empty cell "
                                       "(the real-valued mechanisms need every cell)")
            rows.append(cells)
    except StopIteration:
        raise DatasetError(f"{path}: empty file, expected a header row") from None
    except csv.Error as exc:
        raise DatasetError(f"{path}, line {reader.line_num}: {exc}") from exc
    if len(rows) < min_rows:
        raise DatasetError(f"{path}: {len(rows)} data rows, need at least {min_rows}")
    return np.array(rows, dtype=np.float64).reshape(len(rows), len(columns)), header, hashlib.sha256(raw).hexdigest()
