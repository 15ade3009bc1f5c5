"""Batch sanitize with one bad row among many: the others are released in order, the bad one is
refused with its line number, and none of its raw values reaches any output."""
import csv
import json
import re

import numpy as np
import pytest

COLUMNS = [
    "bigb", "blug", "coun", "blue", "musi", "clas", "folk", "gosp", "jazz",
    "lati", "mood", "newa", "oper", "rap", "regg", "conr", "oldi", "hvym",
]
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
    assert "3 column domain(s) inferred" in stderr and "bigb" not in stderr
    assert [line for line in stderr.splitlines() if line.startswith("  integer [1, 5]: ")] == [
        "  integer [1, 5]: " + ", ".join(c for c in COLUMNS[:4] if c != "bigb")]      # one line per domain
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


# -- streaming: bounded lines, flat memory, nothing half-written ----------------------------------

class _AnyBundle:
    """A bundle of no particular kind, used only through the interface the batch may rely on:
    ``features`` (with ``.name``), ``withheld_columns``, ``sha256``, ``version``, ``sanitize``.
    It records the cells each release was given."""

    def __init__(self, names, withheld=("secret",)):
        from types import SimpleNamespace
        self.features = [SimpleNamespace(name=n) for n in names]
        self.withheld_columns = tuple(withheld)
        self.sha256, self.version = "ab" * 32, 3
        self.seen = []

    def sanitize(self, cells, rng=None):
        from privmap.device.errors import InputError
        self.seen.append(list(cells))
        if cells[0] == "bad":
            raise InputError("feature 'f0': not a decimal number")
        return [f"r{c}" for c in cells]


def _batch(tmp_path, text: str, bundle, **kw):
    """Run the batch on ``text`` as IN.csv; the result, OUT's text and the rejects' text."""
    import io

    from privmap.offline.cli._batch import sanitize_csv
    infile = tmp_path / "in.csv"
    infile.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    out, rejects = io.StringIO(), io.StringIO()
    result = sanitize_csv(bundle, infile, out, rejects=rejects, **kw)
    return result, out.getvalue(), rejects.getvalue()


def test_an_over_long_line_is_one_refused_row_and_the_others_are_released(identity_bundle, keys, users, tmp_path, run):
    path, rows = users
    lines = path.read_text().splitlines(keepends=True)
    lines = [line for line in lines if "31337" not in line]
    lines.insert(6, ",".join(["2"] * 3000) + "\n")                 # line 7: 5,999 characters
    bad = tmp_path / "long.csv"
    bad.write_text("".join(lines))
    out, rejects = tmp_path / "o.csv", tmp_path / "r.csv"
    result = run("sanitize", identity_bundle, bad, out, "--trusted", keys / "public.pem", "--rejects", rejects,
                 "--max-line-length", 2000, ok=False)
    assert result.exit_code == 1 and f"1 of {len(rows) + 1} rows refused" in result.output
    assert list(csv.reader(rejects.open()))[1:] == [["7", "line longer than 2000 characters"]]
    assert len(list(csv.reader(out.open()))) == len(rows) + 1    # header + every other row
    result = run("sanitize", identity_bundle, bad, out, "--trusted", keys / "public.pem", "--rejects", rejects,
                 ok=False)                                          # the default limit admits it: wrong length
    assert "3000 cells, header has 18" in rejects.read_text()


def test_line_numbers_stay_right_after_a_dropped_line_and_a_quoted_cell_spanning_lines(tmp_path):
    import io
    bundle = _AnyBundle(["f0", "f1"])
    text = ("f0,f1\r\n" "1,2\r\n" + "x" * 300 + "\r\n" "3,4\r\n" '"5\r\n5",6\r\n'
            '"' + "y\n" * 200 + '",7\n' "8,9\n")
    result, out, rejects = _batch(tmp_path, text, bundle, max_line=100)
    assert list(csv.reader(io.StringIO(out, newline=""))) == [["f0", "f1"], ["r1", "r2"], ["r3", "r4"], ["r5\r\n5", "r6"],
                                                  ["r8", "r9"]]
    refused = list(csv.reader(rejects.splitlines()))[1:]
    assert [r[0] for r in refused] == ["3", "207"]                 # a record is named by its last line
    assert refused[0][1] == "line longer than 100 characters" and "quoted cell" in refused[1][1]
    assert (result.rows, result.released, result.refused) == (6, 4, 2)


def test_an_over_long_line_is_read_in_bounded_pieces(tmp_path):
    import tracemalloc
    bundle = _AnyBundle(["f0", "f1"])
    import io

    from privmap.offline.cli._batch import sanitize_csv
    infile = tmp_path / "in.csv"
    with infile.open("w") as f:                                   # one 40 MiB line between two rows
        f.write("f0,f1\n1,2\n")
        for _ in range(40):
            f.write("9" * (1 << 20))
        f.write("\n3,4\n")
    tracemalloc.start()
    try:
        result = sanitize_csv(bundle, infile, io.StringIO(), max_line=1 << 20)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (result.released, result.refused) == (2, 1)
    assert peak < 16 << 20, f"peak {peak / 2**20:.1f} MiB for a 40 MiB line"


def test_memory_is_flat_in_the_number_of_rows_released_or_refused(tmp_path):
    import tracemalloc

    from privmap.offline.cli._batch import sanitize_csv
    bundle = _AnyBundle(["f0", "f1", "f2"])
    peaks = []
    for n in (2_000, 20_000):
        infile = tmp_path / f"in{n}.csv"
        with infile.open("w") as f:
            f.write("f0,f1,f2,secret\n")
            for i in range(n):
                f.write(f"{'bad' if i % 3 == 0 else i},{i},{i},s\n")
        with open(tmp_path / "out.csv", "w") as out, open(tmp_path / "rej.csv", "w") as rejects:
            tracemalloc.start()
            try:
                result = sanitize_csv(bundle, infile, out, rejects=rejects, release=lambda cells: cells)
                peaks.append(tracemalloc.get_traced_memory()[1])
            finally:
                tracemalloc.stop()
        assert result.rows == n and result.refused == 0
    assert peaks[1] - peaks[0] < 64 * 1024, peaks


def test_a_failing_batch_leaves_the_old_output_whole_and_no_temp_file(identity_bundle, keys, users, tmp_path, run,
                                                                      monkeypatch):
    from privmap.device import Bundle
    from privmap.device.errors import RandomnessError
    path, rows = users
    out, rejects = tmp_path / "o.csv", tmp_path / "r.csv"
    out.write_text("old output\n")
    calls = {"n": 0}
    real = Bundle.sanitize

    def failing(self, cells, rng=None):
        calls["n"] += 1
        if calls["n"] == 10:
            raise RandomnessError("the randomness source failed")
        return real(self, cells, rng=rng)
    monkeypatch.setattr(Bundle, "sanitize", failing)
    result = run("sanitize", identity_bundle, path, out, "--trusted", keys / "public.pem", "--rejects", rejects,
                 ok=False)
    assert result.exit_code == 1 and "randomness" in result.output
    assert out.read_text() == "old output\n" and not rejects.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o.csv"]


# -- --id: a row key carried through unmapped -----------------------------------------------------

def _with_ids(users, tmp_path):
    path, rows = users
    lines = list(csv.reader(path.open(newline="")))
    ids = [f"user {i:03d}, ü" if i % 7 else f"  {i}  " for i in range(len(lines) - 1)]
    keyed = tmp_path / "keyed.csv"
    with keyed.open("w", newline="") as f:
        csv.writer(f).writerows([lines[0] + ["uid"]] + [line + [uid] for line, uid in zip(lines[1:], ids)])
    return keyed, ids


def test_the_id_column_is_the_first_column_of_out_exactly_as_read_and_never_mapped(identity_bundle, keys, users,
                                                                                    tmp_path, run):
    keyed, ids = _with_ids(users, tmp_path)
    path, rows = users
    out, plain, rejects = tmp_path / "o.csv", tmp_path / "plain.csv", tmp_path / "r.csv"
    run("sanitize", identity_bundle, keyed, out, "--trusted", keys / "public.pem", "--id", "uid", "--rejects",
        rejects, "--skip-invalid")
    run("sanitize", identity_bundle, path, plain, "--trusted", keys / "public.pem", "--skip-invalid")
    released = list(csv.reader(out.open(newline="")))
    assert released[0] == ["uid"] + COLUMNS
    bad = 20                                                      # the 21st data row is refused
    assert [r[0] for r in released[1:]] == ids[:bad] + ids[bad + 1:]
    assert [r[1:] for r in released] == list(csv.reader(plain.open(newline="")))   # Delta = 0: same releases
    assert list(csv.reader(rejects.open(newline=""))) == [["line", "id", "reason"],
                                                          ["22", ids[bad], list(csv.reader(rejects.open()))[1][2]]]
    for marker in MARKERS[:5]:
        assert marker not in out.read_text() + rejects.read_text()


def test_the_id_column_is_never_fed_to_any_bundle_kind(tmp_path):
    bundle = _AnyBundle(["f0", "f1"])
    result, out, rejects = _batch(tmp_path, "key,f1,secret,f0\nk1,2,s,1\nk2,3,s,bad\nk3\n", bundle, id_column="key")
    assert bundle.seen == [["1", "2"], ["bad", "3"]]
    assert out == "key,f0,f1\nk1,r1,r2\n"
    assert rejects.splitlines()[1:] == ["3,k2,InputError: feature 'f0': not a decimal number",
                                        "4,,\"1 cells, header has 4\""]


@pytest.mark.parametrize("uid", ["a\rb", "a\x0bb", "a\x85b", "a\u2028b", "a\x00b", "a\x1fb"])
def test_an_id_holding_a_control_character_stays_one_record_in_out_and_the_rejects(tmp_path, uid):
    """A bare CR (or any control character, or a Unicode line separator) in an id: OUT and the
    rejects hold it quoted, so every reader sees one record with the id exactly as read."""
    import io
    bundle = _AnyBundle(["f0"])
    text = io.StringIO()
    csv.writer(text, lineterminator="\n", quoting=csv.QUOTE_ALL).writerows(
        [["key", "f0"], [uid, "1"], [uid, "bad"], ["plain", "2"]])
    result, out, rejects = _batch(tmp_path, text.getvalue(), bundle, id_column="key")
    assert result.released == 2 and result.refused == 1
    assert list(csv.reader(io.StringIO(out, newline=""))) == [["key", "f0"], [uid, "r1"], ["plain", "r2"]]
    assert list(csv.reader(io.StringIO(rejects, newline="")))[1][1] == uid
    assert out.endswith("\nplain,r2\n")                                  # rows without one: as before
    control = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
    for written in (out, rejects):                                       # such a row has every cell quoted
        assert all(line.startswith('"') for line in written.split("\n") if control.search(line))


def test_an_id_longer_than_the_csv_modules_cell_limit_is_judged_by_the_line_limit(tmp_path):
    """Ids of 200,000 characters: released under a 1 Mi line limit (the csv module's own limit
    is 131,072), refused as a line over the limit under a 150,000 one, never "malformed"."""
    bundle = _AnyBundle(["f0"])
    uid = "u" * 200_000
    result, out, _ = _batch(tmp_path, f"key,f0\n{uid},1\nk,2\n", bundle, id_column="key")
    assert result.released == 2 and out.splitlines()[1] == f"{uid},r1"
    result, _, rejects = _batch(tmp_path, f"key,f0\n{uid},1\nk,2\n", bundle, id_column="key", max_line=150_000)
    assert result.released == 1 and rejects.splitlines()[1] == "2,,line longer than 150000 characters"


@pytest.mark.parametrize("column, words", [("bigb", "one of the bundle's features"), ("sex", "private column"),
                                           ("nope", "no column 'nope'")])
def test_an_id_column_that_is_a_feature_the_private_column_or_absent_is_refused(identity_bundle, keys, users,
                                                                                 tmp_path, run, column, words):
    path, _ = users
    out = tmp_path / "o.csv"
    result = run("sanitize", identity_bundle, path, out, "--trusted", keys / "public.pem", "--id", column, ok=False)
    assert result.exit_code == 1 and words in result.stderr and result.stderr.count("\n") == 1
    assert not out.exists()


def test_a_note_on_many_inferred_domains_names_a_few_columns_per_domain(keys, tmp_path, run):
    rng = np.random.default_rng(0)
    data = tmp_path / "wide.csv"
    names = [f"item{j}" for j in range(12)]
    with data.open("w") as f:
        f.write(",".join(names + ["a"]) + "\n")
        for row in rng.integers(1, 6, size=(60, 12)):
            f.write(",".join(map(str, row)) + f",{rng.integers(2)}\n")
    result = run("build", data, "--private", "a", "--clusters", 4, "--delta-fraction", 0.5, "--holdout-folds", 0,
                 "--key", keys / "private.pem", "--out", tmp_path / "b.bundle")
    stderr = getattr(result, "stderr", result.output)
    assert "  integer [1, 5]: " + ", ".join(names[:8]) + " and 4 more" in stderr.splitlines()
