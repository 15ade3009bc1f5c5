"""``privmap sanitize B --trusted PUB --state DIR IN.csv OUT.csv``: the CLI as one device."""
import csv
import os
import pathlib
import signal
import subprocess
import sys

import pytest


def resigned(source: pathlib.Path, version: int, key: pathlib.Path, out: pathlib.Path, **fields) -> pathlib.Path:
    """``source``'s payload with another ``version`` (and other ``fields``, e.g. ``issued_at``),
    signed with the private key file ``key`` (cheaper than another build; the device sees an
    ordinary bundle)."""
    import msgpack

    from privmap.offline.bundle import load_private_key, sign_bundle
    payload = msgpack.unpackb(msgpack.unpackb(source.read_bytes())[-1])
    payload["version"] = version
    payload.update(fields)
    out.write_bytes(sign_bundle(msgpack.packb(payload, use_bin_type=True), load_private_key(key)))
    return out


@pytest.fixture(scope="module")
def versions(tmp_path_factory, keys, ratings_csv, run):
    """Bundles of versions 1, 2 and 3 of the same build (1 and 3 re-signed from 2)."""
    folder = tmp_path_factory.mktemp("versions")
    out = {2: folder / "v2.bundle"}
    run("build", ratings_csv, "--private", "gender", "--clusters", 8, "--delta-fraction", 0.5,
        "--key", keys / "private.pem", "--out", out[2], "--bundle-version", 2, "--valid-days", 36500)
    for version in (1, 3):
        out[version] = resigned(out[2], version, keys / "private.pem", folder / f"v{version}.bundle")
    return out


@pytest.fixture
def users(ratings_csv, tmp_path):
    path = tmp_path / "users.csv"
    path.write_text("".join(ratings_csv.read_text().splitlines(keepends=True)[:41]))
    return path


def snapshot(directory: pathlib.Path) -> dict:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def test_running_twice_with_state_releases_identical_rows(versions, keys, users, ratings_csv, tmp_path,
                                                         run):
    state = tmp_path / "device"
    outs = [tmp_path / "a.csv", tmp_path / "b.csv"]
    for out in outs:
        run("sanitize", versions[1], "--trusted", keys / "public.pem", "--state", state, users, out)
    assert state.is_dir() and outs[0].read_bytes() == outs[1].read_bytes()
    # Without state every call draws afresh. On the 40 users two draws coincide by chance
    # (most rows are released near-deterministically: 3 in 10 draws matched one another), so
    # the fresh draws are compared on all 2,258 rows, where a coincidence is out of reach.
    fresh = [tmp_path / "c.csv", tmp_path / "d.csv"]
    for out in fresh:
        run("sanitize", versions[1], "--trusted", keys / "public.pem", ratings_csv, out)
    assert fresh[0].read_bytes() != fresh[1].read_bytes()


def test_lower_version_is_refused_once_a_higher_one_was_used(versions, keys, users, tmp_path, run):
    state = tmp_path / "device"
    run("sanitize", versions[2], "--trusted", keys / "public.pem", "--state", state, users, tmp_path / "a.csv")
    before = snapshot(state)
    out = tmp_path / "old.csv"
    result = run("sanitize", versions[1], "--trusted", keys / "public.pem", "--state", state, users, out, ok=False)
    assert result.exit_code == 1 and "below the minimum" in result.output
    assert result.output.strip().count("\n") == 0
    assert not out.exists() and snapshot(state) == before


def test_stamp_adds_the_bundle_hash_and_version_to_every_row(versions, keys, users, tmp_path, run):
    out = tmp_path / "stamped.csv"
    summary = run("sanitize", versions[2], "--trusted", keys / "public.pem", "--state", tmp_path / "s",
                  "--stamp", "--json", users, out).output
    rows = list(csv.reader(out.open()))
    assert rows[0][-2:] == ["bundle_sha256", "bundle_version"]
    assert {tuple(r[-2:]) for r in rows[1:]} == {(summary.split('"bundle_sha256": "')[1][:64], "2")}


def _privmap(*args) -> subprocess.Popen:
    exe = pathlib.Path(sys.executable).with_name("privmap")
    return subprocess.Popen([str(exe), *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _together(*arg_lists) -> list[tuple[int, str]]:
    """Start every ``privmap`` command at once; (exit status, stderr) of each."""
    procs = [_privmap(*args) for args in arg_lists]
    return [(p.wait(timeout=120), p.communicate()[1]) for p in procs]


def test_two_processes_racing_through_the_command_line(versions, keys, users, tmp_path):
    """The forms outside checks rely on, as separate ``privmap`` processes: two runs at once on
    a fresh DIR both succeed with identical releases; racing v2 and v3, a later v2 is refused
    once v3 reported success; after DIR/bundles is emptied, the active bundle offered again
    releases the same rows, stamped with its version, and exits 0."""
    pub, fresh, raced = keys / "public.pem", tmp_path / "fresh", tmp_path / "raced"
    outs = [tmp_path / f"{name}.csv" for name in ("a", "b", "c", "d", "e", "f")]
    both = _together(("sanitize", versions[2], "--trusted", pub, users, outs[0], "--state", fresh, "--stamp"),
                     ("sanitize", versions[2], "--trusted", pub, users, outs[1], "--state", fresh, "--stamp"))
    assert [code for code, _ in both] == [0, 0], both
    assert outs[0].read_bytes() == outs[1].read_bytes()
    race = _together(("sanitize", versions[2], "--trusted", pub, users, outs[2], "--state", raced, "--stamp"),
                     ("sanitize", versions[3], "--trusted", pub, users, outs[3], "--state", raced, "--stamp"))
    assert race[1][0] == 0, race
    assert race[0][0] == 0 or "RollbackError" in race[0][1] or "below" in race[0][1], race
    late = _together(("sanitize", versions[2], "--trusted", pub, users, outs[4], "--state", raced, "--stamp"))
    assert late[0][0] == 1 and late[0][1].startswith("error: ") and late[0][1].count("\n") == 1, late
    for path in (fresh / "bundles").iterdir():
        path.unlink()
    again = _together(("sanitize", versions[2], "--trusted", pub, users, outs[5], "--state", fresh, "--stamp"))
    assert again[0][0] == 0, again
    assert outs[5].read_bytes() == outs[0].read_bytes()
    assert {row[-1] for row in list(csv.reader(outs[5].open()))[1:]} == {"2"}


def test_other_trusted_keys_are_refused_unless_rotated_in_by_a_signed_keyring(versions, keys, users, tmp_path, run):
    state, old_pub, old_key = tmp_path / "device", keys / "public.pem", keys / "private.pem"
    run("sanitize", versions[2], "--trusted", old_pub, "--state", state, users, tmp_path / "a.csv")
    run("keygen", tmp_path / "new")
    new_pub, new_key = tmp_path / "new" / "public.pem", tmp_path / "new" / "private.pem"
    new_bundle = resigned(versions[2], 1, new_key, tmp_path / "new.bundle")
    before = snapshot(state)
    result = run("sanitize", new_bundle, "--trusted", new_pub, "--state", state, users, tmp_path / "b.csv", ok=False)
    assert result.exit_code == 1 and "signed keyring" in result.output and snapshot(state) == before
    # the old key's v1 is still below the floor: a different --trusted did not reset anything
    result = run("sanitize", versions[1], "--trusted", old_pub, "--state", state, users, tmp_path / "c.csv", ok=False)
    assert result.exit_code == 1
    unsigned = tmp_path / "unsigned.bin"
    run("keyring", "create", "--public", new_pub, "--threshold", 1, "--key", new_key, "--out", unsigned)
    result = run("state", "rotate", state, unsigned, ok=False)
    assert result.exit_code == 1 and snapshot(state) == before
    signed = tmp_path / "keyring-v1.bin"
    run("keyring", "create", "--public", new_pub, "--threshold", 1, "--key", new_key, "--key", old_key, "--out", signed)
    assert '"keyring_version": 1' in run("state", "rotate", state, signed, "--json").output
    run("sanitize", new_bundle, "--trusted", new_pub, "--state", state, users, tmp_path / "d.csv")
    result = run("sanitize", versions[2], "--trusted", old_pub, "--state", state, users, tmp_path / "e.csv", ok=False)
    assert result.exit_code == 1                                   # the old key is revoked
    assert '"version": 1' in run("state", "show", state, "--json").output


# -- hostile neighbours and operator slips ----------------------------------------------------------

_HOLDER = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
fcntl.flock(fd, fcntl.LOCK_SH)
print("held", flush=True)
time.sleep(120)
"""


@pytest.fixture
def reader_holding():
    """``reader_holding(DIR)``: a separate process holding a shared lock on DIR (a reader that
    never finishes, as any process that can open DIR could be); ended after the test."""
    procs = []

    def start(directory):
        proc = subprocess.Popen([sys.executable, "-c", _HOLDER, str(directory)], stdout=subprocess.PIPE, text=True)
        assert proc.stdout.readline().strip() == "held"
        procs.append(proc)
        return proc
    yield start
    for proc in procs:
        proc.kill()
        proc.wait(timeout=30)
        proc.stdout.close()


def test_a_foreign_shared_lock_holder_gets_one_error_line_within_the_wait_and_never_blocks_reads(
        versions, keys, users, tmp_path, run, reader_holding):
    import time
    pub, state = keys / "public.pem", tmp_path / "device"
    run("sanitize", versions[2], "--trusted", pub, "--state", state, users, tmp_path / "a.csv")
    holder = reader_holding(state)
    before, out = snapshot(state), tmp_path / "b.csv"
    started = time.monotonic()
    result = run("sanitize", versions[3], "--trusted", pub, "--state", state, "--lock-wait", 0.5, users, out, ok=False)
    assert time.monotonic() - started < 10
    assert result.exit_code == 1 and result.stderr.startswith("error: ") and result.stderr.count("\n") == 1
    assert "within 0.5 s" in result.stderr and "--lock-wait" in result.stderr
    if pathlib.Path("/proc/locks").exists():
        assert f"pid {holder.pid}" in result.stderr
    assert not out.exists() and snapshot(state) == before
    # reads take a shared lock: the bundle already installed and state show go through at once
    run("sanitize", versions[2], "--trusted", pub, "--state", state, "--lock-wait", 0, users, out)
    assert out.read_bytes() == (tmp_path / "a.csv").read_bytes()
    assert '"version": 2' in run("state", "show", state, "--lock-wait", 0, "--json").output


def test_the_default_lock_wait_is_a_few_seconds_and_shown_in_the_help(run):
    from privmap.device.constants import DEFAULT_LOCK_WAIT
    assert 1 <= DEFAULT_LOCK_WAIT <= 30
    assert "--lock-wait" in run("sanitize", "--help").output and "--lock-wait" in run("state", "show", "--help").output


@pytest.mark.parametrize("target", ["device.secret", "state.json", "bundles/out.csv", "new.csv"])
def test_an_output_inside_the_state_directory_is_refused_and_the_device_survives(versions, keys, users, tmp_path,
                                                                                  run, target):
    pub, state = keys / "public.pem", tmp_path / "device"
    run("sanitize", versions[2], "--trusted", pub, "--state", state, users, tmp_path / "a.csv")
    before = snapshot(state)
    link = tmp_path / "link.csv"
    link.symlink_to(state / target)
    for outputs in ([state / target], [tmp_path / "o.csv", "--rejects", state / target], [link]):
        result = run("sanitize", versions[2], "--trusted", pub, "--state", state, users, *outputs, ok=False)
        assert result.exit_code == 1 and "inside the state directory" in result.stderr
        assert result.stderr.count("\n") == 1 and snapshot(state) == before
    run("sanitize", versions[2], "--trusted", pub, "--state", state, users, tmp_path / "b.csv")
    assert (tmp_path / "b.csv").read_bytes() == (tmp_path / "a.csv").read_bytes()   # same secret, same releases


def test_an_output_on_the_input_the_bundle_or_the_other_output_is_refused(versions, keys, users, tmp_path, run):
    pub, text, bundle = keys / "public.pem", users.read_bytes(), versions[2].read_bytes()
    out = tmp_path / "o.csv"
    for args in ([users, users], [users, out, "--rejects", users], [users, out, "--rejects", out],
                 [users, versions[2]], [users, out, "--rejects", versions[2]]):
        result = run("sanitize", versions[2], "--trusted", pub, *args, ok=False)
        assert result.exit_code == 1 and result.stderr.startswith("error: ")
        assert "itself" in result.stderr or "one file" in result.stderr
    assert users.read_bytes() == text and versions[2].read_bytes() == bundle and not out.exists()


@pytest.mark.parametrize("revoke", [False, True], ids=["key-kept", "other-key-revoked"])
def test_state_rotate_keeping_the_key_of_a_mis_dated_bundle_lets_a_bundle_issued_now_install(
        versions, keys, users, tmp_path, run, revoke):
    """A box whose clock was not yet set installed a bundle mis-dated to 2100: the time floor went
    there and every install failed. A rotation that keeps that bundle's key resets the date, so
    a bundle issued now installs right after ``privmap state rotate``."""
    from privmap.device import DeviceState, KeyringChain
    from privmap.device.constants import LATEST_ISSUED_AT
    run("keygen", tmp_path / "other")
    pub, key, other = keys / "public.pem", keys / "private.pem", tmp_path / "other" / "public.pem"
    ring1, ring2 = tmp_path / "keyring-v1.bin", tmp_path / "keyring-v2.bin"
    run("keyring", "create", "--public", pub, "--public", other, "--threshold", 1, "--key", key, "--out", ring1)
    state, far = tmp_path / "device", LATEST_ISSUED_AT - 10
    misdated = resigned(versions[2], 2, key, tmp_path / "misdated.bundle", issued_at=far, expires=far + 86400)
    DeviceState(state, KeyringChain(ring1.read_bytes()), clock=lambda: 0).install_file(misdated)
    frozen = run("sanitize", versions[3], "--keyring", ring1, "--state", state, users, tmp_path / "a.csv", ok=False)
    assert frozen.exit_code == 1 and "expired" in frozen.stderr                # the floor says 2100
    kept = ["--public", pub] + ([] if revoke else ["--public", other])
    run("keyring", "rotate", ring1, *kept, "--threshold", 1, "--key", key, "--out", ring2)
    info = run("state", "rotate", state, ring2, "--json").output
    assert '"keyring_version": 2' in info and '"version": 2' in info          # the version stays
    run("sanitize", versions[3], "--keyring", ring1, "--keyring", ring2, "--state", state, users,
        tmp_path / "b.csv", "--stamp")
    assert {row[-1] for row in list(csv.reader((tmp_path / "b.csv").open()))[1:]} == {"3"}
    result = run("sanitize", versions[2], "--keyring", ring1, "--keyring", ring2, "--state", state, users,
                 tmp_path / "c.csv", ok=False)
    assert result.exit_code == 1 and ("Rollback" in result.stderr or "below" in result.stderr)  # v2 stays below


def test_a_counter_file_binds_the_state_and_only_state_reprovision_starts_it_over(versions, keys, users, tmp_path,
                                                                                   run):
    import shutil
    pub, state, counter = keys / "public.pem", tmp_path / "device", tmp_path / "nvram" / "counter"
    counter.parent.mkdir()
    run("sanitize", versions[2], "--trusted", pub, "--state", state, "--counter", counter, users, tmp_path / "a.csv")
    assert counter.read_text() == "2\n"                                        # the fresh state, then v2
    old = tmp_path / "old"
    shutil.copytree(state, old)
    run("sanitize", versions[3], "--trusted", pub, "--state", state, "--counter", counter, users, tmp_path / "b.csv")
    shutil.rmtree(state)
    shutil.copytree(old, state)                                               # the v2 directory put back
    result = run("sanitize", versions[2], "--trusted", pub, "--state", state, "--counter", counter, users,
                 tmp_path / "c.csv", ok=False)
    assert result.exit_code == 1 and "older state file" in result.stderr
    result = run("state", "show", state, ok=False)                            # without its counter
    assert result.exit_code == 1 and "counter" in result.stderr
    shutil.rmtree(state)
    result = run("sanitize", versions[3], "--trusted", pub, "--state", state, "--counter", counter, users,
                 tmp_path / "d.csv", ok=False)
    assert result.exit_code == 1 and "wiped" in result.stderr
    result = run("state", "reprovision", state, "--counter", state / "counter", "--trusted", pub, ok=False)
    assert result.exit_code == 1 and "inside the state directory" in result.stderr
    assert '"counter": 4' in run("state", "reprovision", state, "--counter", counter, "--trusted", pub,
                                 "--json").output
    run("sanitize", versions[3], "--trusted", pub, "--state", state, "--counter", counter, users, tmp_path / "e.csv")
    assert '"version": 3' in run("state", "show", state, "--counter", counter, "--json").output
    result = run("state", "reprovision", state, "--counter", counter, "--trusted", pub, ok=False)
    assert result.exit_code == 1 and "not empty" in result.stderr             # never over a live directory
    result = run("sanitize", versions[3], "--trusted", pub, users, tmp_path / "f.csv", "--counter", counter, ok=False)
    assert result.exit_code == 2                                              # --counter needs --state


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_state_rotate_refuses_a_keyring_argument_that_is_a_fifo_or_device_before_reading_it(
        versions, keys, users, tmp_path, run, kind):
    state = tmp_path / "device"
    run("sanitize", versions[2], "--trusted", keys / "public.pem", "--state", state, users, tmp_path / "a.csv")
    before = snapshot(state)
    special = pathlib.Path("/dev/zero") if kind == "device" else tmp_path / "keyring.fifo"
    if kind == "fifo":
        os.mkfifo(special)
    signal.alarm(20)                     # a blocking open or an endless read would hang: fail instead
    try:
        result = run("state", "rotate", state, special, ok=False)
    finally:
        signal.alarm(0)
    assert result.exit_code == 1 and "is not a regular file" in result.stderr, result.output
    assert result.stderr.count("\n") == 1 and snapshot(state) == before


def test_an_output_under_a_real_bind_mount_of_the_state_directory_is_refused(versions, keys, users, tmp_path, run):
    """The attack itself where mounting is allowed: OUT.csv under a bind mount of DIR (a second
    name no path comparison resolves) is refused and the device survives."""
    import subprocess
    pub, state = keys / "public.pem", tmp_path / "device"
    run("sanitize", versions[2], "--trusted", pub, "--state", state, users, tmp_path / "a.csv")
    before = snapshot(state)
    mount = tmp_path / "mount"
    mount.mkdir()
    if subprocess.run(["mount", "--bind", str(state), str(mount)], capture_output=True).returncode != 0:
        pytest.skip("bind mounts need root with CAP_SYS_ADMIN")
    try:
        result = run("sanitize", versions[2], "--trusted", pub, "--state", state, users, mount / "device.secret",
                     ok=False)
    finally:
        subprocess.run(["umount", str(mount)], check=True)
    assert result.exit_code == 1 and "inside the state directory" in result.stderr
    assert snapshot(state) == before


def test_an_output_under_another_name_of_the_state_directory_is_refused_by_identity(versions, keys, users,
                                                                                    tmp_path, run, monkeypatch):
    """A bind mount gives the state directory a second name that no path comparison resolves;
    here a link that realpath is made not to resolve stands in for one (mounting needs root):
    OUT.csv and --rejects under it are refused by (st_dev, st_ino), and the device survives."""
    pub, state = keys / "public.pem", tmp_path / "device"
    run("sanitize", versions[2], "--trusted", pub, "--state", state, users, tmp_path / "a.csv")
    before = snapshot(state)
    mount = tmp_path / "mount"
    mount.symlink_to(state)
    monkeypatch.setattr(os.path, "realpath", lambda p, **kw: os.path.abspath(p))
    for outputs in ([mount / "device.secret"], [tmp_path / "o.csv", "--rejects", mount / "state.json"]):
        result = run("sanitize", versions[2], "--trusted", pub, "--state", state, users, *outputs, ok=False)
        assert result.exit_code == 1 and "inside the state directory" in result.stderr
        assert snapshot(state) == before
