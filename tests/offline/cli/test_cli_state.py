"""``privmap sanitize B --trusted PUB --state DIR IN.csv OUT.csv``: the CLI as one device."""
import csv
import pathlib
import subprocess
import sys

import pytest


def resigned(source: pathlib.Path, version: int, key: pathlib.Path, out: pathlib.Path) -> pathlib.Path:
    """``source``'s payload with another ``version``, signed with the private key file ``key``
    (cheaper than another build; the device sees an ordinary bundle)."""
    import msgpack
    from privmap.offline.bundle import load_private_key, sign_bundle
    payload = msgpack.unpackb(msgpack.unpackb(source.read_bytes())[-1])
    payload["version"] = version
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
