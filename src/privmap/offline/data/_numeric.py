"""Read named numeric columns of a CSV (for the real-valued mechanisms)."""
from __future__ import annotations

import csv
import hashlib
import math
import pathlib
from collections.abc import Sequence

import numpy as np

from .._errors import DatasetError
from ._dataset import MIN_ROWS, _cell, check_unique, column_indexes, data_rows, read_csv

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
    raw, reader, header = read_csv(path)
    check_unique(header, path)
    at = column_indexes(columns, header, path)
    if len(set(columns)) != len(columns):
        raise DatasetError(f"{path}: a column is named twice")
    rows = []
    try:
        for line, row in data_rows(reader, path, header):
            cells = [_cell(row[i], path, line, header[i], False, "") for i in at]
            for value, i in zip(cells, at):
                if math.isnan(value):
                    raise DatasetError(f"{path}, line {line}, column {header[i]!r}: empty cell "
                                       "(the real-valued mechanisms need every cell)")
            rows.append(cells)
    except csv.Error as exc:
        raise DatasetError(f"{path}, line {reader.line_num}: {exc}") from exc
    if len(rows) < min_rows:
        raise DatasetError(f"{path}: {len(rows)} data rows, need at least {min_rows}")
    values = np.array(rows, dtype=np.float64).reshape(len(rows), len(columns))
    return values, tuple(header), hashlib.sha256(raw).hexdigest()
