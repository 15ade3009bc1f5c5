"""A missing answer coded by a number: a survey's 0 for a skipped question.

``missing_token`` may be a number, from a schema file or ``build --missing-token``; it is
recorded in the bundle's schema, devices and ``evaluate`` read it from there, and a token that
the column's domain would also accept is refused (a cell cannot be both an answer and missing).
"""
import csv
import json

import numpy as np
import pytest

from privmap.offline._errors import DatasetError
from privmap.offline.data._dataset import load_dataset
from privmap.offline.data._schema import check_missing_token, declare, read_schema_file, resolve


@pytest.fixture()
def zero_coded(tmp_path):
    """Ratings 1..4 with some cells 0 (skipped), 60 rows, private column ``p``."""
    rng = np.random.default_rng(23)
    path = tmp_path / "zero.csv"
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["a", "b", "c", "p"])
        for i in range(60):
            cells = [int(v) for v in rng.integers(1, 5, size=3)]
            cells[i % 3] = 0 if i % 4 == 0 else cells[i % 3]
            writer.writerow(cells + ["x" if cells[0] > 2 else "y"])
    return path


def test_without_a_token_zero_silently_widens_the_inferred_domain(zero_coded):
    ds = load_dataset(zero_coded, private="p")
    assert min(c.min for c in resolve(ds.features, ds.public)) == 0


@pytest.mark.parametrize("token", ["0", 0, 0.0])
def test_a_numeric_token_from_a_schema_file_is_a_missing_answer(zero_coded, tmp_path, token):
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({"columns": {name: {"missing_token": token} for name in "abc"}}))
    declared = declare(read_schema_file(schema))
    ds = load_dataset(zero_coded, private="p", missing_tokens=declared.missing_tokens())
    columns = resolve(ds.features, ds.public, declared)
    assert np.isnan(ds.public).sum() == 15 and all((c.min, c.max, c.missing_token) == (1, 4, "0") for c in columns)


def test_the_cli_token_applies_to_every_column_and_a_column_may_keep_its_own(zero_coded, tmp_path):
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({"columns": {"a": {"missing_token": "NA"}}}))
    declared = declare(read_schema_file(schema), (), "0")
    assert declared.missing_tokens() == {"a": "NA", "*": "0"}
    ds = load_dataset(zero_coded, private="p", missing_tokens=declared.missing_tokens())
    missing = np.isnan(ds.public).sum(axis=0)
    assert missing[0] == 0 and missing[1] == missing[2] == 5  # column a keeps its 0s as numbers
    assert [c.missing_token for c in resolve(ds.features, ds.public, declared)] == ["NA", "0", "0"]


@pytest.mark.parametrize("domains, words", [
    (("0:4",), ["'0' lies inside the domain [0, 4]", "declare a domain without it"]),
    ((), None),
])
def test_a_token_inside_the_domain_is_refused(zero_coded, domains, words):
    declared = declare(None, domains, "0")
    ds = load_dataset(zero_coded, private="p", missing_tokens=declared.missing_tokens())
    if words is None:
        resolve(ds.features, ds.public, declared)
        return
    with pytest.raises(DatasetError) as info:
        resolve(ds.features, ds.public, declared)
    assert all(w in str(info.value) for w in words)


@pytest.mark.parametrize("token", ["1_000", "0x1", " 0", True, float("nan"), "x" * 17])
def test_malformed_tokens_are_refused(token):
    with pytest.raises(DatasetError, match="missing_token"):
        check_missing_token(token, "t")


def test_build_records_the_token_and_sanitize_and_evaluate_read_it(zero_coded, tmp_path, run, keys):
    out = tmp_path / "z.bundle"
    run("build", zero_coded, "--private", "p", "--clusters", 3, "--delta-fraction", 0.5, "--holdout-folds", 0,
        "--missing-token", 0, "--key", keys / "private.pem", "--out", out)
    info = json.loads(run("inspect", out, "--json").stdout)
    assert {name: (d["min"], d["max"], d["missing_token"]) for name, d in info["domains"].items()} == \
        {name: (1, 4, "0") for name in "abc"}
    users, released = tmp_path / "users.csv", tmp_path / "released.csv"
    users.write_text("a,b,c\n0,2,3\n1,0,0\n")
    run("sanitize", out, "--trusted", keys / "public.pem", users, released)
    assert len(released.read_text().splitlines()) == 3
    report = json.loads(run("evaluate", out, zero_coded, "--private", "p", "--no-attacker", "--json").stdout)
    assert report["rows"] == 60 and report["unmatched_rows"] == 0


def test_missing_token_with_a_categorical_mechanism_is_one_error_line(zero_coded, tmp_path, run, keys):
    out = tmp_path / "f.bundle"
    result = run("build", zero_coded, "--private", "p", "--mechanism", "funnel", "--disclosure-fraction", 0.5,
                 "--missing-token", 0, "--key", keys / "private.pem", "--out", out, ok=False)
    assert result.exit_code == 1 and result.stderr.count("\n") == 1 and "--missing-token" in result.stderr
    assert not out.exists()
