"""The privmap CLI end to end on the bundled ratings, and its one-line failures."""
import csv
import gc
import io
import json
import os
import subprocess
import sys
import time

import pytest

from privmap.offline.commandline._group import EXIT_CLOSED_PIPE, TRACEBACK_ENV

#: ``privmap`` in a child process, so that stdout is a real file descriptor 1.
_PRIVMAP = [sys.executable, "-c", "from privmap.offline.cli import main; main(prog_name='privmap')"]


def privmap_process(*args, stdout=subprocess.PIPE, script=None):
    """Run ``privmap ARGS`` (or ``script``, which calls main itself) in a child process; text output."""
    command = [sys.executable, "-c", script] if script else _PRIVMAP
    return subprocess.run([*command, *map(str, args)], stdout=stdout, stderr=subprocess.PIPE, text=True,
                          timeout=600)


@pytest.fixture(scope="module")
def bundle(ratings_bundle):
    return ratings_bundle(24, 0.5)


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
    assert high - low >= inspected["metrics"]["holdout_standard_error_bits"] > 0


def test_inspect_json_declares_the_share_of_new_users_exposed_beside_the_in_sample_share(bundle, run):
    inspected = json.loads(run("inspect", bundle, "--json").output)
    assert 0 <= inspected["holdout_exposed_4x"] <= inspected["holdout_exposed_2x"] <= 1
    assert inspected["holdout_exposed_2x"] == inspected["metrics"]["holdout_exposed_2x"]
    assert 0 <= inspected["in_sample_exposed_4x"] <= inspected["in_sample_exposed_2x"] <= 1
    assert "exposure, share whose release raises the odds" in run("inspect", bundle).output


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


# -- stdout carries the command's output only ---------------------------------------------------

def test_build_json_prints_exactly_one_json_object_on_a_real_stdout(keys, ratings_csv, tmp_path):
    # the perfect-privacy LP (highspy) prints its banner on descriptor 1 from C++
    done = privmap_process("build", ratings_csv, "--private", "gender", "--clusters", 4, "--delta-fraction", 0.5,
                           "--holdout-folds", 0, "--key", keys / "private.pem", "--out", tmp_path / "b.bundle",
                           "--json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)  # the whole of stdout, nothing before or after
    assert summary["out"] == str(tmp_path / "b.bundle") and summary["clusters"] == 4


# A command of the CLI package whose work writes through a library at both levels.
_SOLVERLIB = "import os\ndef solve():\n    print('python-level solver log')\n    os.write(1, b'C-level solver log\\n')\n"
_PROBE = """
from privmap.offline.commandline import emit, guard
@click.command()
@guard
def noisy():
    solverlib.solve()
    emit({"answer": 42})
    solverlib.solve()
"""
_NOISY_COMMAND = f"""
import types, click
from privmap.offline.cli import main
solverlib = types.ModuleType("solverlib")
exec({_SOLVERLIB!r}, solverlib.__dict__)
probe = types.ModuleType("privmap.offline.cli._probe")
probe.__dict__.update(click=click, solverlib=solverlib)
exec({_PROBE!r}, probe.__dict__)
main.add_command(probe.noisy)
main(prog_name="privmap")
"""


def test_library_output_at_c_and_python_level_goes_to_stderr_and_the_command_output_to_stdout():
    done = privmap_process("noisy", script=_NOISY_COMMAND)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"answer": 42}
    assert done.stderr.count("python-level solver log") == 2 and done.stderr.count("C-level solver log") == 2


def test_sys_stdout_is_restored_after_a_command(run):
    before = sys.stdout
    run("--help")
    assert sys.stdout is before


def test_a_command_stdout_finalised_at_interpreter_exit_touches_no_stream():
    """At exit a module's globals may be None before its objects are finalised; IOBase's finaliser
    closed, hence flushed, through them (Python 3.13 printed 'Exception ignored' for each command
    run; earlier versions hid the error). The streams are the process's: finalising leaves them."""
    from privmap.offline.commandline._group import _CommandStdout
    flushed = []

    class Recorder(io.StringIO):
        def flush(self):
            flushed.append(self)

    stream = _CommandStdout(Recorder(), Recorder())
    del stream
    gc.collect()
    assert flushed == []


# -- every failure is one error: line ------------------------------------------------------------

def _one_error_line(result, status):
    assert result.exit_code == status, result.output
    assert result.stdout == ""
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr
    return result.stderr


@pytest.mark.parametrize("args, says", [
    (("build", "--nope"), "No such option"),
    (("build", "data.csv", "--clusters", "many", "--key", "k", "--out", "o"), "neither an integer nor 'auto'"),
    (("verify",), "Missing argument"),
    (("frobnicate",), "No such command"),
    ((), "no command given"),
    (("keyring",), "no command given"),
])
def test_click_usage_errors_are_one_error_line_with_status_2(run, args, says):
    line = _one_error_line(run(*args, ok=False), 2)
    assert says in line and "--help'" in line


def test_verify_needs_one_kind_of_trusted_key(bundle, keys, tmp_path, run):
    assert "no trusted key" in _one_error_line(run("verify", bundle, ok=False), 2)
    both = run("verify", bundle, "--trusted", keys / "public.pem", "--keyring", tmp_path / "ring.bin", ok=False)
    assert "not both" in _one_error_line(both, 2)


def test_an_unexpected_exception_is_one_line_unless_the_traceback_is_asked_for(bundle, keys, run, monkeypatch):
    def broken(*args, **kwargs):
        raise TypeError("boom\nsecond line")
    monkeypatch.setattr("privmap.offline.cli._verify.read_bundle_file", broken)
    line = _one_error_line(run("verify", bundle, "--trusted", keys / "public.pem", ok=False), 1)
    assert line == f"error: internal error: TypeError: boom second line (set {TRACEBACK_ENV}=1 for the traceback)\n"
    monkeypatch.setenv(TRACEBACK_ENV, "1")
    with pytest.raises(TypeError, match="boom"):
        run("verify", bundle, "--trusted", keys / "public.pem", ok=False)


@pytest.mark.parametrize("args", [("inspect", "{bundle}", "--json"), ("inspect", "{bundle}"), ("--help",)])
def test_a_closed_stdout_ends_quietly_with_status_141(bundle, args):
    read, write = os.pipe()
    os.close(read)  # the reader has gone before the first byte: every write is EPIPE
    try:
        done = privmap_process(*(a.format(bundle=bundle) for a in args), stdout=write)
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (EXIT_CLOSED_PIPE, "")


def test_a_public_key_as_key_says_a_private_key_is_needed(keys, ratings_csv, tmp_path, run):
    result = run("build", ratings_csv, "--private", "gender", "--clusters", 4, "--delta", 1,
                 "--key", keys / "public.pem", "--out", tmp_path / "x.bundle", ok=False)
    line = _one_error_line(result, 1)
    assert "holds a public key; signing needs the private key" in line and "chmod" not in line


# -- a bundle dated in the future ---------------------------------------------------------------

def _redated(bundle, keys, tmp_path, issued_at):
    """``bundle`` with ``issued_at`` moved, signed again with the test key."""
    from privmap.offline.bundle import encode_payload, load_private_key, sign_bundle
    from privmap.offline.bundle._inspect import read_unverified
    payload, _ = read_unverified(bundle.read_bytes())
    payload = {**payload, "issued_at": issued_at, "expires": issued_at + 30 * 86400}
    out = tmp_path / f"issued-{issued_at}.bundle"
    out.write_bytes(sign_bundle(encode_payload(payload), load_private_key(keys / "private.pem")))
    return out


def test_sanitize_without_state_refuses_a_bundle_issued_beyond_the_clock_skew(bundle, keys, ratings_csv, tmp_path,
                                                                              run):
    from privmap.device.constants import MAX_CLOCK_SKEW
    users = tmp_path / "users.csv"
    users.write_text("".join(ratings_csv.read_text().splitlines(keepends=True)[:4]))
    now = int(time.time())
    late = _redated(bundle, keys, tmp_path, now + 3 * MAX_CLOCK_SKEW)
    refused = run("sanitize", late, users, tmp_path / "out.csv", "--trusted", keys / "public.pem", ok=False)
    assert "issued_at" in _one_error_line(refused, 1) and not (tmp_path / "out.csv").exists()
    soon = _redated(bundle, keys, tmp_path, now + MAX_CLOCK_SKEW // 2)
    run("sanitize", soon, users, tmp_path / "out.csv", "--trusted", keys / "public.pem")
    assert len((tmp_path / "out.csv").read_text().splitlines()) == 4
