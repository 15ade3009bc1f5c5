"""Batch sanitize with one bad row among many: the others are released in order, the bad one is
refused with its line number, and none of its raw values reaches any output."""
import csv
import json

import pytest

COLUMNS = "bigb blug coun blue musi clas folk gosp jazz lati mood newa oper rap regg conr oldi hvym".split()
#: Cells of the bad row: each is refused by the device, none occurs in a valid output.
MARKERS = ["31337", "-0.000123", "1e300", "abc123xyz", "4.75"] + ["2"] * 13


@pytest.fixture(scope="module")
def identity_bundle(tmp_path_factory, keys, music_csv, run):
    """Delta = 0: each row is released as its own representative, so the output order is checkable."""
    out = tmp_path_factory.mktemp("b") / "music.bundle"
    run("build", music_csv, "--private", "sex", "--public", ",".join(COLUMNS), "--clusters", 12, "--delta", 0,
        "--domain", "1:5", "--key", keys / "private.pem", "--out", out, "--issued-at", 1_700_000_000,
        "--valid-days", 36500)
    return out


@pytest.fixture(scope="module")
def users(tmp_path_factory, music_csv):
    """40 held-in users (blank cells kept) with the bad row as the 21st data row (line 22)."""
    with music_csv.open(newline="") as f:
        rows = [[r[c] for c in COLUMNS] for r in list(csv.DictReader(f))[:40]]
    rows = [r for r in rows if any(c.strip() for c in r)]
    path = tmp_path_factory.mktemp("u") / "users.csv"
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(COLUMNS)
        writer.writerows(rows[:20] + [MARKERS] + rows[20:])
    return path, rows


def test_one_bad_row_is_refused_and_every_other_row_is_released_in_order(identity_bundle, keys, users, tmp_path, run):
    from privmap.device import Keyring, read_bundle_file
    path, rows = users
    out, rejects = tmp_path / "released.csv", tmp_path / "rejects.csv"
    result = run("sanitize", identity_bundle, path, out, "--trusted", keys / "public.pem", "--rejects", rejects,
                 ok=False)
    assert result.exit_code == 1 and f"1 of {len(rows) + 1} rows refused" in result.output
    released = list(csv.reader(out.open()))
    assert released[0] == COLUMNS and len(released) == len(rows) + 1
    bundle = read_bundle_file(identity_bundle, Keyring.from_pem_files(keys / "public.pem"), now=1_700_000_001)
    expected = [[str(v) for v in bundle.representative(bundle.lookup(r))] for r in rows]
    assert released[1:] == expected  # Delta = 0: psi(row)'s representative, in input order
    refused = list(csv.reader(rejects.open()))
    assert refused[0] == ["line", "reason"] and len(refused) == 2 and refused[1][0] == "22"
    everything = out.read_text() + rejects.read_text() + result.output + getattr(result, "stderr", "")
    for marker in MARKERS[:5]:
        assert marker not in everything


def test_skip_invalid_exits_zero_and_json_counts_the_refusals(identity_bundle, keys, users, tmp_path, run):
    path, rows = users
    result = run("sanitize", identity_bundle, path, tmp_path / "o.csv", "--trusted", keys / "public.pem",
                 "--skip-invalid", "--json")
    summary = json.loads(result.stdout if hasattr(result, "stdout") else result.output)
    assert summary["rows"] == len(rows) and summary["refused"] == 1


def test_sanitize_of_sparse_rows_without_the_bad_one_exits_zero(identity_bundle, keys, users, tmp_path, run):
    path, rows = users
    clean = tmp_path / "clean.csv"
    clean.write_text("".join(line for line in path.read_text().splitlines(keepends=True) if "31337" not in line))
    run("sanitize", identity_bundle, clean, tmp_path / "o.csv", "--trusted", keys / "public.pem")
    assert sum(1 for _ in (tmp_path / "o.csv").open()) == len(rows) + 1


def test_build_prints_the_inferred_schema_and_writes_it_for_editing(keys, music_csv, tmp_path, run):
    schema = tmp_path / "schema.json"
    result = run("build", music_csv, "--private", "sex", "--public", ",".join(COLUMNS[:4]), "--clusters", 6,
                 "--delta-fraction", 0.5, "--domain", "bigb=1:5", "--key", keys / "private.pem",
                 "--out", tmp_path / "b.bundle", "--schema-out", schema)
    stderr = getattr(result, "stderr", result.output)
    assert "3 column domain(s) inferred" in stderr and "blug: integer [1, 5]" in stderr and "bigb:" not in stderr
    columns = json.loads(schema.read_text())["columns"]
    assert list(columns) == COLUMNS[:4] and columns["bigb"] == {
        "type": "integer", "min": 1, "max": 5, "missing": True, "missing_token": ""}
    again = run("build", music_csv, "--private", "sex", "--public", ",".join(COLUMNS[:4]), "--clusters", 6,
                "--delta-fraction", 0.5, "--schema", schema, "--key", keys / "private.pem",
                "--out", tmp_path / "c.bundle")
    assert "inferred" not in getattr(again, "stderr", again.output)


def test_inspect_shows_each_declared_domain_and_missing_rule(identity_bundle, run):
    info = json.loads(run("inspect", identity_bundle, "--json").output)
    assert info["domains"]["rap"] == {"min": 1, "max": 5, "integer": True, "missing": "mask", "fill": None,
                                      "missing_token": ""}


def test_evaluate_reads_blank_cells_as_missing_answers(identity_bundle, keys, music_csv, run):
    result = run("evaluate", identity_bundle, music_csv, "--private", "sex", "--trusted", keys / "public.pem",
                 "--no-attacker", "--json")
    summary = json.loads(result.stdout if hasattr(result, "stdout") else result.output)
    assert summary["rows"] == 1585 and summary["unmatched_rows"] == 12  # the 12 all-blank respondents
    assert summary["distortion"] <= summary["distortion_bound"] + 1e-9


def test_short_and_non_numeric_rows_are_refused_with_their_reason(identity_bundle, keys, users, tmp_path, run):
    path, rows = users
    text = path.read_text().splitlines(keepends=True)
    bad = tmp_path / "bad.csv"
    bad.write_text("".join(text[:3] + ["1,2,3\n", ",".join(["zz9"] + ["3"] * 17) + "\n"] + text[3:]))
    out, rejects = tmp_path / "o.csv", tmp_path / "r.csv"
    result = run("sanitize", identity_bundle, bad, out, "--trusted", keys / "public.pem", "--rejects", rejects,
                 ok=False)
    assert result.exit_code == 1
    refused = list(csv.DictReader(rejects.open()))
    assert [r["line"] for r in refused] == ["4", "5", "24"]
    assert "3 cells, header has 18" in refused[0]["reason"] and "not a decimal number" in refused[1]["reason"]
    assert "zz9" not in rejects.read_text() + out.read_text() + result.output
    assert sum(1 for _ in out.open()) == len(rows) + 1


def _with_undecodable_line(users, tmp_path):
    """The users file (bad row dropped) with a 0xff byte in the cells of line 12, its 11th data row."""
    path, rows = users
    lines = path.read_bytes().split(b"\n")
    lines = [line for line in lines if b"31337" not in line]
    lines[11] = lines[11][:1] + b"\xff" + lines[11][1:]
    bad = tmp_path / "undecodable.csv"
    bad.write_bytes(b"\n".join(lines))
    return bad, rows


def test_an_undecodable_line_is_one_refused_row_and_skip_invalid_releases_the_others(identity_bundle, keys,
                                                                                        users, tmp_path, run):
    bad, rows = _with_undecodable_line(users, tmp_path)
    out, rejects = tmp_path / "o.csv", tmp_path / "r.csv"
    result = run("sanitize", identity_bundle, "--trusted", keys / "public.pem", bad, out, "--skip-invalid")
    assert result.exit_code == 0 and len(list(csv.reader(out.open()))) == len(rows)  # header + all but one
    result = run("sanitize", identity_bundle, "--trusted", keys / "public.pem", bad, out, "--rejects", rejects,
                 ok=False)
    assert result.exit_code == 1 and f"1 of {len(rows)} rows refused" in result.stderr
    assert list(csv.reader(rejects.open()))[1:] == [["12", "not UTF-8 text"]]


@pytest.mark.parametrize("header, words", [
    (COLUMNS[:1] + COLUMNS, ["duplicate column", repr(COLUMNS[0])]),
    (COLUMNS + [f"x{i}" for i in range(200_000)], ["unknown column", "'x0'", "199,995 more"]),
])
def test_a_bad_header_is_one_short_error_line_naming_the_columns(identity_bundle, keys, tmp_path, run, header,
                                                                 words):
    infile = tmp_path / "in.csv"
    infile.write_text(",".join(header) + "\n")
    result = run("sanitize", identity_bundle, "--trusted", keys / "public.pem", infile, tmp_path / "o.csv",
                 ok=False)
    assert result.exit_code == 1 and result.stderr.startswith("error: ") and len(result.stderr) < 500
    assert result.stderr.count("\n") == 1 and all(w in result.stderr for w in words)
