"""The loaders refuse what a device would refuse as soon as a header or a first pass decides it:
too many feature columns, names or values longer than a device reads, too many private classes
or categories; never after clustering."""
from __future__ import annotations

import pytest

from privmap.device import Limits
from privmap.offline._errors import DatasetError
from privmap.offline.data import _dataset
from privmap.offline.data._dataset import load_dataset
from privmap.offline.data._numeric import read_numeric_columns

LIMITS = Limits()


def _write(path, header, rows):
    path.write_text("\n".join(",".join(map(str, r)) for r in [header, *rows]) + "\n")
    return path


def _wide(tmp_path, columns, rows=12):
    header = [f"c{i}" for i in range(columns)] + ["p"]
    return _write(tmp_path / "wide.csv", header, [[i % 4] * columns + [i % 2] for i in range(rows)])


def test_more_public_columns_than_a_device_takes_are_refused_before_any_row_is_parsed(tmp_path, monkeypatch):
    wide = _wide(tmp_path, LIMITS.max_features + 1)
    monkeypatch.setattr(_dataset, "_cell", lambda *a, **k: pytest.fail("a cell was parsed"))
    with pytest.raises(DatasetError, match=r"4,097 public columns; a device takes at most 4,096 features"):
        load_dataset(wide, private="p")
    with pytest.raises(DatasetError, match="Limits.max_features"):
        read_numeric_columns(wide, [f"c{i}" for i in range(LIMITS.max_features + 1)])


def test_a_few_columns_of_a_wide_file_and_exactly_the_limit_are_accepted(tmp_path):
    wide = _wide(tmp_path, LIMITS.max_features)
    assert load_dataset(wide, private="p").d == LIMITS.max_features
    assert load_dataset(wide, private="p", public=["c1", "c7"]).d == 2


def test_a_column_name_longer_than_a_device_reads_is_refused(tmp_path):
    name = "é" * (LIMITS.max_string_bytes // 2 + 1)              # 2 bytes of UTF-8 each
    path = _write(tmp_path / "long.csv", [name, "b", "p"], [[1, 2, i % 2] for i in range(12)])
    with pytest.raises(DatasetError, match="max_string_bytes"):
        load_dataset(path, private="p")


def test_more_private_classes_than_a_device_takes_are_refused(tmp_path):
    n = LIMITS.max_classes + 1
    path = _write(tmp_path / "classes.csv", ["a", "p"], [[1, f"class{i}"] for i in range(n)])
    with pytest.raises(DatasetError, match="4,097 distinct values; a device takes at most 4,096 classes"):
        load_dataset(path, private="p")


def test_a_categorical_column_beyond_the_device_limits_is_refused(tmp_path):
    n = LIMITS.max_categories + 1
    path = _write(tmp_path / "cats.csv", ["a", "b", "p"], [[f"v{i}", "x", i % 2] for i in range(n)])
    with pytest.raises(DatasetError, match="column 'a' has 65,537 distinct values"):
        load_dataset(path, private="p", categorical=True)
    path = _write(tmp_path / "long.csv", ["a", "p"], [["x" * (LIMITS.max_string_bytes + 1) if i == 3 else "y", i % 2]
                                                       for i in range(12)])
    with pytest.raises(DatasetError, match="value longer than 4096 bytes"):
        load_dataset(path, private="p", categorical=True)
