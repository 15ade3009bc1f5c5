"""Partitioned reading: every partition is validated, and a bad cell is named as the in-memory reader names it."""
import numpy as np
import pytest

from privmap.offline._errors import DatasetError
from privmap.offline.data._dataset import load_dataset
from privmap.offline.data._partitioned import open_source, read_partition, resolve_files


def _read_all(source, block=400, **kw):
    src = open_source(source, private="party", csv_block_bytes=block, **kw)
    parts = [read_partition(p, src.features, src.private_name) for p in src.partitions]
    return src, np.concatenate([X for X, _ in parts]), np.concatenate([a for _, a in parts])


def test_csv_blocks_together_hold_exactly_the_files_rows(ratings):
    src, X, labels = _read_all(ratings / "all.csv")
    assert len(src.partitions) > 10  # small blocks: lines straddle block boundaries
    ds = load_dataset(ratings / "all.csv", private="party")
    assert np.array_equal(X, ds.public)
    assert [ds.classes[c] for c in ds.private] == labels.tolist()


def test_parquet_partitions_hold_the_same_rows_as_the_csv(ratings):
    src, X, labels = _read_all(ratings / "parquet")
    assert len(src.partitions) == 2
    _, Xc, lc = _read_all(ratings / "all.csv")
    assert np.array_equal(X, Xc) and labels.tolist() == lc.tolist()


@pytest.mark.parametrize("bad, fragment", [
    ("x", "not a number"), ("inf", "not finite"), ("1e200", "beyond +-1e+100"), (None, "cells, header has"),
])
def test_bad_csv_cell_deep_in_a_file_gets_the_in_memory_message(tmp_path, ratings_frame, bad, fragment):
    frame = ratings_frame(n=300)
    text = frame.to_csv(index=False).splitlines()
    line = 251  # 1-based line of the file (header is line 1)
    cells = text[line - 1].split(",")
    if bad is None:
        cells = cells[:-2]  # a short row
    else:
        cells[3] = bad
    text[line - 1] = ",".join(cells)
    path = tmp_path / "bad.csv"
    path.write_text("\n".join(text) + "\n")
    with pytest.raises(DatasetError) as memory:
        load_dataset(path, private="party")
    with pytest.raises(DatasetError) as partitioned:
        _read_all(path, block=1000)
    assert str(partitioned.value) == str(memory.value)
    assert f"line {line}" in str(memory.value) and fragment in str(memory.value)


@pytest.mark.parametrize("bad, fragment", [(np.inf, "not finite"), (-1e200, "beyond +-1e+100")])
def test_bad_parquet_cell_is_named_by_its_row(tmp_path, ratings_frame, bad, fragment):
    frame = ratings_frame(n=100)
    column = frame.columns[2]
    frame[column] = frame[column].astype(float)
    frame.loc[40, column] = bad
    frame.to_parquet(tmp_path / "bad.parquet", row_group_size=30)
    with pytest.raises(DatasetError) as info:
        _read_all(tmp_path / "bad.parquet")
    assert all(part in str(info.value) for part in (f"row 41, column '{column}'", fragment, repr(float(bad))))


def test_empty_private_value_named_by_line(tmp_path, ratings_frame):
    text = ratings_frame(n=100).to_csv(index=False).splitlines()
    text[60] = text[60].rsplit(",", 1)[0] + ","
    path = tmp_path / "bad.csv"
    path.write_text("\n".join(text) + "\n")
    with pytest.raises(DatasetError) as memory:
        load_dataset(path, private="party")
    with pytest.raises(DatasetError) as partitioned:
        _read_all(path, block=500)
    assert str(partitioned.value) == str(memory.value)
    assert "line 61, column 'party': empty private value" in str(memory.value)


@pytest.mark.parametrize("spelling, tokens", [("", None), ("NA", {"r3": "NA"})])
def test_blank_or_token_cell_is_the_in_memory_missing_answer(tmp_path, ratings_frame, spelling, tokens):
    """A blank cell (or the column's declared token) deep in a file reads as NaN where ``load_dataset``
    puts it, blank lines before it included; a token in another column is still refused."""
    frame = ratings_frame(n=300)
    text = frame.to_csv(index=False).splitlines()
    for line in (40, 250, 251):
        cells = text[line].split(",")
        cells[3] = spelling
        text[line] = ",".join(cells)
    text.insert(100, "")
    path = tmp_path / "blank.csv"
    path.write_text("\n".join(text) + "\n")
    memory = load_dataset(path, private="party", missing_tokens=tokens).public
    src = open_source(path, private="party", csv_block_bytes=1000)
    X = np.concatenate([read_partition(p, src.features, src.private_name, tokens)[0] for p in src.partitions])
    assert np.isnan(memory).sum() == 3 and np.array_equal(X, memory, equal_nan=True)
    if spelling:
        with pytest.raises(DatasetError, match=r"line 41, column 'r3': not a number: 'NA'"):
            _read_all(path, block=1000)


def test_parquet_null_cell_is_a_missing_answer_at_its_row(tmp_path, ratings_frame):
    frame = ratings_frame(n=500).astype({"r2": "float64"})
    frame.loc[321, "r2"] = np.nan
    frame.to_parquet(tmp_path / "a.parquet", row_group_size=100)
    _, X, _ = _read_all(tmp_path / "a.parquet")
    assert np.argwhere(np.isnan(X)).tolist() == [[321, 2]]


def test_parquet_text_column_refused_by_name(tmp_path, ratings_frame):
    frame = ratings_frame(n=50).astype({"r1": str})
    frame.to_parquet(tmp_path / "a.parquet")
    with pytest.raises(DatasetError, match=r"column 'r1': type (string|large_string), expected numbers"):
        _read_all(tmp_path / "a.parquet")


def test_files_with_other_columns_are_refused(tmp_path, ratings_frame):
    ratings_frame(n=50).to_csv(tmp_path / "a.csv", index=False)
    ratings_frame(n=50).drop(columns=["r0"]).to_csv(tmp_path / "b.csv", index=False)
    with pytest.raises(DatasetError, match="columns differ"):
        open_source(tmp_path, private="party")


def test_glob_matching_nothing_is_an_error(tmp_path):
    with pytest.raises(DatasetError, match="no such file"):
        resolve_files(str(tmp_path / "*.parquet"))


@pytest.mark.parametrize("index", [None, np.arange(100, 200), [f"u{i}" for i in range(100)]])
def test_an_index_pandas_stored_in_a_parquet_file_is_not_a_public_column(tmp_path, ratings_frame, index):
    """DataFrame.to_parquet writes a non-range index as a column (__index_level_0__, or its name):
    row labels, which would otherwise become a public answer of every user."""
    frame = ratings_frame(n=100)
    if index is not None:
        frame.index = index
    frame.to_parquet(tmp_path / "rows.parquet")
    src, X, labels = _read_all(tmp_path / "rows.parquet")
    assert src.features == tuple(c for c in frame.columns if c != "party")
    assert np.array_equal(X, frame[list(src.features)].to_numpy(dtype=float))
