"""Each error an operator meets first names the problem and the fix in one line: a malformed option
value is a usage error (exit 2), a misspelt column gets the close spelling, a file that another
delimiter separates gets the delimiter, an empty IN.csv is called empty, a refused cell gives the
feature's range, and a rows build on mostly-blank data points to the recommender mode."""
import csv

import pytest


def error_lines(result):
    return [line for line in result.stderr.splitlines() if line.startswith("error:")]


@pytest.fixture(scope="module")
def small(ratings_head):
    return ratings_head(3)


@pytest.fixture(scope="module")
def small_bundle(small, keys, run, tmp_path_factory):
    out = tmp_path_factory.mktemp("fix") / "small.bundle"
    run("build", small, "--private", "gender", "--clusters", 4, "--delta-fraction", 0.5, "--holdout-folds", 0,
        "--key", keys / "private.pem", "--out", out)
    return out


@pytest.mark.parametrize("domain", ["1-5", "1:x", "col=", "5:1"])
def test_a_malformed_domain_is_a_usage_error(small, keys, tmp_path, run, domain):
    result = run("build", small, "--private", "gender", "--clusters", 4, "--delta-fraction", 0.5, "--domain", domain,
                 "--key", keys / "private.pem", "--out", tmp_path / "x.bundle", ok=False)
    assert result.exit_code == 2 and len(error_lines(result)) == 1 and "--domain" in error_lines(result)[0]
    assert not (tmp_path / "x.bundle").exists()


def test_a_misspelt_private_column_gets_the_close_spelling(small, keys, tmp_path, run):
    result = run("build", small, "--private", "gendr", "--clusters", 4, "--delta-fraction", 0.5,
                 "--key", keys / "private.pem", "--out", tmp_path / "x.bundle", ok=False)
    assert result.exit_code == 1 and len(error_lines(result)) == 1
    assert "did you mean 'gender'?" in error_lines(result)[0]


def _semicolons(small, path):
    with open(small, newline="") as f:
        rows = list(csv.reader(f))
    path.write_text("".join(";".join(r) + "\n" for r in rows))
    return path


def test_a_semicolon_separated_file_is_named_so(small, keys, tmp_path, run):
    result = run("build", _semicolons(small, tmp_path / "semi.csv"), "--private", "gender", "--clusters", 4,
                 "--delta-fraction", 0.5, "--key", keys / "private.pem", "--out", tmp_path / "x.bundle", ok=False)
    assert len(error_lines(result)) == 1 and "semicolon-separated" in error_lines(result)[0]


def test_sanitize_names_the_delimiter_and_the_empty_file(small, small_bundle, keys, tmp_path, run):
    semi = run("sanitize", small_bundle, "--trusted", keys / "public.pem", _semicolons(small, tmp_path / "semi.csv"),
               tmp_path / "out.csv", ok=False)
    assert semi.exit_code == 1 and "semicolon-separated" in error_lines(semi)[0]
    (tmp_path / "empty.csv").write_text("")
    empty = run("sanitize", small_bundle, "--trusted", keys / "public.pem", tmp_path / "empty.csv",
                tmp_path / "out.csv", ok=False)
    assert empty.exit_code == 1 and len(error_lines(empty)) == 1 and "empty file" in error_lines(empty)[0]
    assert not (tmp_path / "out.csv").exists()


def test_a_cell_outside_its_domain_is_refused_with_the_range(small, small_bundle, keys, tmp_path, run):
    with open(small, newline="") as f:
        header = next(csv.reader(f))[:-1]
    (tmp_path / "in.csv").write_text(",".join(header) + "\n" + ",".join(["7"] + ["1"] * (len(header) - 1)) + "\n")
    run("sanitize", small_bundle, "--trusted", keys / "public.pem", tmp_path / "in.csv", tmp_path / "out.csv",
        "--rejects", tmp_path / "rejects.csv", "--skip-invalid")
    (reason,) = [r["reason"] for r in csv.DictReader((tmp_path / "rejects.csv").open())]
    assert "outside the feature's [min, max] = [0, 3]" in reason and "7" not in reason


def test_a_rows_build_on_mostly_blank_cells_points_to_the_recommender_mode(small, keys, tmp_path, run):
    with open(small, newline="") as f:
        rows = list(csv.reader(f))
    for i, row in enumerate(rows[1:]):           # two of every three answers blank, none of a row all blank
        for j in range(len(row) - 1):
            if (i + j) % 3:
                row[j] = ""
    (tmp_path / "blank.csv").write_text("".join(",".join(r) + "\n" for r in rows))
    result = run("build", tmp_path / "blank.csv", "--private", "gender", "--clusters", 4, "--delta-fraction", 0.5,
                 "--holdout-folds", 0, "--key", keys / "private.pem", "--out", tmp_path / "x.bundle")
    assert "--utility recommender" in result.stderr
