"""The privmap CLI end to end on the bundled ratings, and its one-line failures."""
import csv
import json

import pytest


@pytest.fixture(scope="module")
def bundle(tmp_path_factory, keys, ratings_csv, run):
    out = tmp_path_factory.mktemp("b") / "demo.bundle"
    run("build", ratings_csv, "--private", "gender", "--clusters", 24, "--delta-fraction", 0.5,
        "--key", keys / "private.pem", "--out", out, "--issued-at", 1_700_000_000, "--valid-days", 36500)
    return out


def test_keygen_writes_a_private_key_readable_by_owner_only(keys):
    assert (keys / "private.pem").stat().st_mode & 0o777 == 0o600
    assert (keys / "public.pem").read_bytes().startswith(b"-----BEGIN PUBLIC KEY-----")


def test_keygen_never_overwrites(keys, run):
    before = (keys / "private.pem").read_bytes()
    result = run("keygen", keys, ok=False)
    assert result.exit_code != 0 and (keys / "private.pem").read_bytes() == before


def test_verify_and_inspect_report_the_same_metrics(bundle, keys, run):
    verified = json.loads(run("verify", bundle, "--trusted", keys / "public.pem", "--json").output)
    inspected = json.loads(run("inspect", bundle, "--json").output)
    assert verified["ok"] is True and inspected["signature_verified"] is False
    for key in ("leakage_bits", "distortion", "delta", "clusters"):
        assert verified[key] == inspected[key]
    assert verified["recomputed_leakage_bits"] == pytest.approx(verified["leakage_bits"], abs=1e-9)
    assert 0 <= inspected["leakage_bits"] < inspected["metrics"]["leakage_before_bits"]
    metrics = inspected["metrics"]
    # the codebook step (on by default) prices the table by raw rows: its distortion is the measured one,
    # no more than before the step, which Theorem 2 bounds by Delta + r
    assert inspected["distortion"] == pytest.approx(metrics["measured_distortion"], rel=1e-12)
    assert metrics["measured_distortion"] <= metrics["codebook_start_distortion"] + 1e-12
    assert metrics["codebook_start_distortion"] <= metrics["delta_plus_r"]


def test_inspect_json_declares_cross_fitted_leakage_beside_in_sample(bundle, run):
    inspected = json.loads(run("inspect", bundle, "--json").output)
    low, high = inspected["holdout_leakage_interval_bits"]
    assert inspected["leakage_bits"] == inspected["metrics"]["leakage_bits"]
    assert 0 <= low <= inspected["holdout_leakage_bits"] <= high
    assert inspected["metrics"]["holdout_folds"] == 5


def test_no_codebook_keeps_the_symbol_budget(tmp_path, keys, ratings_csv, run):
    out = tmp_path / "plain.bundle"
    run("build", ratings_csv, "--private", "gender", "--clusters", 8, "--delta-fraction", 0.5, "--no-codebook",
        "--holdout-folds", 0, "--key", keys / "private.pem", "--out", out)
    inspected = json.loads(run("inspect", out, "--json").output)
    assert inspected["distortion"] <= inspected["delta"] + 1e-12
    assert inspected["holdout_leakage_bits"] is None and "codebook_iterations" not in inspected["metrics"]


def test_verify_with_an_untrusted_key_fails_with_one_line(bundle, tmp_path, run):
    run("keygen", tmp_path / "other")
    result = run("verify", bundle, "--trusted", tmp_path / "other" / "public.pem", ok=False)
    assert result.exit_code == 1
    assert result.output.strip().count("\n") == 0 and "not trusted" in result.output


def test_sanitize_writes_public_columns_only(bundle, keys, ratings_csv, tmp_path, run):
    users = tmp_path / "users.csv"
    users.write_text("".join(ratings_csv.read_text().splitlines(keepends=True)[:31]))
    out = tmp_path / "released.csv"
    run("sanitize", bundle, users, out, "--trusted", keys / "public.pem")
    rows = list(csv.reader(out.open()))
    assert "gender" not in rows[0] and len(rows[0]) == 20 and len(rows) == 31
    assert all(0 <= int(v) <= 3 for row in rows[1:] for v in row)


def test_build_on_an_unknown_column_fails_and_writes_nothing(keys, ratings_csv, tmp_path, run):
    out = tmp_path / "x.bundle"
    result = run("build", ratings_csv, "--private", "party", "--clusters", 8, "--delta", 0.5,
                 "--key", keys / "private.pem", "--out", out, ok=False)
    assert result.exit_code == 1 and "unknown private column 'party'" in result.output
    assert not out.exists()


def test_build_needs_exactly_one_budget_named_by_its_options(keys, ratings_csv, tmp_path, run):
    for budget in ((), ("--delta", 0.5, "--delta-fraction", 0.5)):
        result = run("build", ratings_csv, "--private", "gender", "--clusters", 8, *budget,
                     "--key", keys / "private.pem", "--out", tmp_path / "x.bundle", ok=False)
        assert result.exit_code == 1
        assert result.output == "error: give exactly one of --delta and --delta-fraction\n"


def test_same_seed_gives_a_byte_identical_bundle(keys, ratings_csv, tmp_path, monkeypatch, run):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    outs = [tmp_path / f"{i}.bundle" for i in range(2)]
    for out in outs:
        run("build", ratings_csv, "--private", "gender", "--clusters", 16, "--delta-fraction", 0.3,
            "--seed", 7, "--key", keys / "private.pem", "--out", out)
    assert outs[0].read_bytes() == outs[1].read_bytes()


def test_help_teaches_the_main_commands(run):
    text = run("--help").output
    for command in ("keygen", "build", "verify", "inspect", "sanitize"):
        assert command in text


def test_written_bundles_are_world_readable_like_any_shared_file(bundle):
    assert bundle.stat().st_mode & 0o044 == 0o044
