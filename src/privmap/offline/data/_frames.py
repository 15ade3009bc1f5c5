"""Tables held in memory as the CSV file every stage of a build reads.

A table in memory is a pandas DataFrame, or a NumPy array with column names.

The builder reads, validates and hashes CSV bytes in one place (:func:`privmap.offline.data._dataset.read_csv`);
a table in memory goes the same way: :func:`csv_source` writes it to a private temporary CSV (header
row, no index, a missing cell -- NaN, None, pandas' NA -- as a blank cell, numbers as Python writes
them, so floats round-trip exactly), yields that path, and deletes it afterwards. The bundle's
provenance then records the SHA-256 of those bytes. Error messages name the table, not the
temporary file: ``DataFrame, line 5`` is the table's 4th row (line 1 is the header).
"""
from __future__ import annotations

import contextlib
import csv
import math
import numbers
import os
import pathlib
import tempfile
from collections.abc import Iterator, Sequence

from .._errors import BuildError

__all__ = ["csv_source", "is_table"]


def is_table(data) -> bool:
    """Whether ``data`` is a table in memory (anything with ``to_csv`` and ``columns``, or an array)."""
    return hasattr(data, "to_csv") and hasattr(data, "columns") or hasattr(data, "__array__")


def _cell(value) -> str:
    """One cell's CSV text: blank for a missing value, integers as integers, floats as ``repr``."""
    if value is None or isinstance(value, float) and math.isnan(value):
        return ""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        text = str(value)
        return "" if text in ("<NA>", "NaT") else text
    if isinstance(value, numbers.Integral):
        return str(int(value))
    number = float(value)
    return "" if math.isnan(number) else repr(number)


def _write(data, columns: Sequence[str] | None, path: pathlib.Path) -> None:
    if hasattr(data, "to_csv") and hasattr(data, "columns"):  # a pandas DataFrame
        if columns is not None:
            raise BuildError("columns= is for NumPy arrays; a DataFrame names its own columns")
        names, rows = [str(c) for c in data.columns], data.itertuples(index=False, name=None)
    else:
        import numpy as np
        array = np.asarray(data)
        if array.ndim != 2:
            raise BuildError(f"a NumPy table must be 2-D (rows x columns), got shape {array.shape}")
        if columns is None or len(columns) != array.shape[1]:
            raise BuildError(f"a NumPy table needs columns= naming its {array.shape[1]} columns")
        names, rows = [str(c) for c in columns], array.tolist()
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(names)
        for row in rows:
            writer.writerow([_cell(v) for v in row])


@contextlib.contextmanager
def csv_source(data, columns: Sequence[str] | None = None, *, name: str = "DataFrame") -> Iterator[pathlib.Path]:
    """A CSV path for ``data``.

    A path (str or path-like) as it is, or a table in memory written to a temporary CSV (module
    docstring) that is removed on exit.

    ``columns`` names a NumPy array's columns (a DataFrame names its own). Errors raised inside
    the block that mention the temporary file are re-raised with ``name`` in its place.

    Raises
    ------
    BuildError
        A NumPy table that is not 2-D or whose ``columns`` are missing or of the wrong length.
    """
    if isinstance(data, (str, os.PathLike)):
        if columns is not None:
            raise BuildError("columns= is for NumPy arrays, not for a CSV path")
        yield pathlib.Path(data)
        return
    if not is_table(data):
        raise BuildError(f"expected a CSV path, a pandas DataFrame or a NumPy array, got {type(data).__name__}")
    with tempfile.TemporaryDirectory(prefix="privmap-table-") as tmp:
        path = pathlib.Path(tmp) / "table.csv"
        _write(data, columns, path)
        try:
            yield path
        except BuildError as exc:
            message = str(exc).replace(str(path), name)
            if message == str(exc):
                raise
            raise type(exc)(message) from exc
