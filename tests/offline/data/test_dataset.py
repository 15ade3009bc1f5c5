"""The dataset loader rejects every malformed input with a message naming the place."""
import numpy as np
import pytest

from privmap.offline._errors import DatasetError
from privmap.offline.data._dataset import load_dataset
from privmap.offline.data._schema import resolve


def write(tmp_path, text, name="d.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


def rows(n, label_cycle=("x", "y")):
    return "".join(f"{i % 5},{(i * 3) % 4},{label_cycle[i % len(label_cycle)]}\n" for i in range(n))


def test_reads_public_and_private_columns(tmp_path):
    ds = load_dataset(write(tmp_path, "a,b,p\n" + rows(12)), private="p")
    assert ds.features == ("a", "b")
    assert ds.public.shape == (12, 2) and ds.public.dtype == np.float64
    assert ds.classes == ("x", "y")
    assert list(ds.private[:4]) == [0, 1, 0, 1]
    assert len(ds.sha256) == 64


def test_blank_cell_and_declared_token_are_missing_answers(tmp_path):
    ds = load_dataset(write(tmp_path, "a,b,p\n" + rows(10) + " ,NA,x\n1,,y\n"), private="p",
                      missing_tokens={"b": "NA"})
    assert np.isnan(ds.public[10]).all() and np.isnan(ds.public[11, 1]) and ds.public[11, 0] == 1
    assert ds.missing.sum() == 3


def test_public_option_selects_columns(tmp_path):
    ds = load_dataset(write(tmp_path, "a,b,p\n" + rows(12)), private="p", public=["b"])
    assert ds.features == ("b",) and ds.d == 1


def test_bundled_ratings_have_twenty_features_and_two_classes(ratings_csv):
    ds = load_dataset(ratings_csv, private="gender")
    assert ds.d == 20 and ds.classes == ("female", "male") and ds.n > 2000
    assert all(column.integer for column in resolve(ds.features, ds.public))


@pytest.mark.parametrize("text, kwargs, words", [
    ("a,b,p\n" + rows(12), {"private": "q"}, ["unknown private column", "'q'"]),
    ("a,b,p\n" + rows(12), {"private": "p", "public": ["zz"]}, ["unknown public column", "'zz'"]),
    ("a,b,p\n" + rows(5) + "1,oops,x\n" + rows(6), {"private": "p"}, ["line 7", "'b'", "not a number"]),
    ("a,b,p\n" + rows(5) + "1,nan,x\n" + rows(6), {"private": "p"}, ["line 7", "not finite"]),
    ("a,b,p\n" + rows(5) + "1,-1e101,x\n" + rows(6), {"private": "p"}, ["line 7", "'b'", "beyond", "1e+100"]),
    ("a,b,p\n" + rows(5) + "1,,x\n" + rows(6), {"private": "p", "categorical": True}, ["line 7", "empty cell"]),
    ("a,b,p\n" + rows(5) + "1,2\n" + rows(6), {"private": "p"}, ["line 7", "2 cells"]),
    ("a,b,p\n" + rows(4), {"private": "p"}, ["4 data rows", "at least"]),
    ("a,b,p\n" + rows(12, ("x",)), {"private": "p"}, ["single class"]),
    ("a,b,p\n" + rows(12), {"private": "p", "classes": ["x", "y", "z"]}, ["class 'z'", "no rows"]),
    ("a,a,p\n" + rows(12), {"private": "p"}, ["duplicate column"]),
    (",b,p\n" + rows(12), {"private": "p"}, ["column 1 has no name", "--public"]),
    ("", {"private": "p"}, ["empty file"]),
])
def test_bad_input_raises_dataset_error_naming_the_problem(tmp_path, text, kwargs, words):
    with pytest.raises(DatasetError) as info:
        load_dataset(write(tmp_path, text), **kwargs)
    for word in words:
        assert word in str(info.value)


def test_an_unnamed_column_left_out_by_public_is_ignored(tmp_path):
    ds = load_dataset(write(tmp_path, ",b,p\n" + rows(12)), private="p", public=["b"])
    assert ds.features == ("b",)


def test_missing_file_is_a_dataset_error(tmp_path):
    with pytest.raises(DatasetError, match="cannot read"):
        load_dataset(tmp_path / "absent.csv", private="p")


def test_categorical_cells_stay_strings(tmp_path):
    text = "sex,age,p\n" + "".join(f"{'MF'[i % 2]},{'yo'[i % 3 == 0]},{'lh'[i % 4 == 0]}\n" for i in range(12))
    ds = load_dataset(write(tmp_path, text), private="p", categorical=True)
    assert ds.public[0].tolist() == ["M", "o"]


def test_an_undecodable_line_is_named_by_its_line_number(tmp_path):
    path = tmp_path / "d.csv"
    path.write_bytes(("a,b,p\n" + rows(5)).encode() + b"1,\xff2,x\n" + rows(6).encode())
    with pytest.raises(DatasetError, match=r"line 7: not UTF-8"):
        load_dataset(path, private="p")


def _wide(tmp_path, columns: int, name: str):
    """A 3-row file with ``columns`` public columns: refused for too few rows, after the header checks."""
    path = tmp_path / name
    header = ",".join(f"c{i}" for i in range(columns)) + ",p\n"
    path.write_text(header + ("1," * columns + "x\n") * 3)
    return path


def _seconds_to_refuse(path) -> float:
    """Seconds to refuse ``path`` for its rows, after every header check at the file's full width
    (the public columns are the most a device takes, 4,096 of them: more are refused by count)."""
    import time

    from privmap.device import Limits
    public = [f"c{i}" for i in range(Limits().max_features)]
    best = float("inf")
    for _ in range(2):
        started = time.perf_counter()
        with pytest.raises(DatasetError, match="3 data rows"):
            load_dataset(path, private="p", public=public)
        best = min(best, time.perf_counter() - started)
    return best


def test_header_checks_are_linear_in_the_width(tmp_path):
    # quadratic checks took over 100 s at 100,000 columns; linear ones take about a second at 200,000
    narrow, wide = _seconds_to_refuse(_wide(tmp_path, 20_000, "n.csv")), _seconds_to_refuse(_wide(tmp_path, 200_000, "w.csv"))
    assert wide < 20.0
    assert wide < 30 * narrow  # 10x the columns: linear is about 10x, quadratic 100x


def test_errors_quoting_a_wide_header_name_a_few_columns_and_count_the_rest(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text(",".join(f"col{i}" for i in range(100_000)) + ",p\n" + ("1," * 100_000 + "x\n") * 12)
    with pytest.raises(DatasetError) as info:
        load_dataset(path, private="nope")
    assert len(str(info.value)) < 400 and "99,996 more" in str(info.value)  # 100,001 columns, 5 named
    path.write_text(",".join(["dup"] * 100_000) + ",p\n" + ("1," * 100_000 + "x\n") * 12)
    with pytest.raises(DatasetError, match="duplicate column name.*'dup'$"):
        load_dataset(path, private="p")
