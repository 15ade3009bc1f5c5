"""The device state directory (THREATS D1-D9, G1-G7, E2, E3): installs are atomic and fail closed."""
from __future__ import annotations

import os
import pathlib
import stat

import msgpack
import pytest
from harness import NOW, MemoryCounter

from privmap.device import Binding, DeviceState
from privmap.device.constants import EXPIRY_GRACE, LATEST_ISSUED_AT, MAX_CLOCK_SKEW
from privmap.device.errors import (
    BundleError,
    BundleFormatError,
    BundleSignatureError,
    EquivocationError,
    ExpiredBundleError,
    FutureBundleError,
    InputError,
    NoValidBundleError,
    RollbackError,
    StateError,
    StateReplayError,
    WrongDomainError,
    WrongTargetError,
)
from privmap.device.trust import schema_sha256

ROW = [3, 0.5, 12.0]


def snapshot(directory: pathlib.Path) -> dict:
    """Every file under ``directory`` with its exact bytes."""
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def open_state(sim, tmp_path, **kw) -> DeviceState:
    kw.setdefault("clock", lambda: NOW)
    return DeviceState(tmp_path / "state", sim.keyring, **kw)


@pytest.fixture
def installed(sim, tmp_path):
    """A state directory with version 5 installed."""
    state = open_state(sim, tmp_path)
    assert state.install(sim.bundle()).status == "installed"
    return state


def test_fresh_state_directory_is_private_and_has_a_secret(sim, tmp_path):
    state = open_state(sim, tmp_path)
    root = tmp_path / "state"
    assert stat.S_IMODE(root.stat().st_mode) == 0o700
    assert stat.S_IMODE((root / "device.secret").stat().st_mode) == 0o600
    assert len((root / "device.secret").read_bytes()) == 32
    assert state.installed_version == 0 and state.active_sha256 is None
    with pytest.raises(NoValidBundleError):
        state.active()


def test_group_writable_state_directory_is_refused(sim, tmp_path):
    root = tmp_path / "state"
    root.mkdir()
    root.chmod(0o777)
    with pytest.raises(StateError, match="writable"):
        DeviceState(root, sim.keyring)


def test_installed_bytes_are_the_received_bytes(sim, installed, tmp_path):  # G5
    data = sim.bundle()
    stored = tmp_path / "state" / "bundles" / f"{installed.active_sha256}.bundle"
    assert stored.read_bytes() == data
    assert installed.active().sha256 == installed.active_sha256
    assert installed.active().data == data


def test_same_bytes_again_is_a_no_op_that_writes_nothing(sim, installed, tmp_path):  # D2
    before = snapshot(tmp_path / "state")
    assert installed.install(sim.bundle()).status == "no_update"
    assert snapshot(tmp_path / "state") == before


def test_lower_version_is_a_rollback_and_changes_nothing(sim, installed, tmp_path):  # D1
    before = snapshot(tmp_path / "state")
    with pytest.raises(RollbackError):
        installed.install(sim.bundle(version=4))
    assert snapshot(tmp_path / "state") == before
    assert installed.active().version == 5
    assert "RollbackError" in installed.status()["last_error"]  # G7


def test_rollback_is_refused_after_the_installed_bundle_expired(sim, tmp_path):  # D4
    state = open_state(sim, tmp_path)
    state.install(sim.bundle())
    later = NOW + 86400 + EXPIRY_GRACE + 1
    with pytest.raises(RollbackError):
        state.install(sim.bundle(version=4, expires=later + 86400), now=later)


def test_same_version_with_other_bytes_is_equivocation(sim, installed, tmp_path):  # D3
    before = snapshot(tmp_path / "state")
    with pytest.raises(EquivocationError):
        installed.install(sim.bundle(expires=NOW + 2 * 86400))
    assert snapshot(tmp_path / "state") == before


def test_clock_reset_to_zero_uses_the_time_floor(sim, tmp_path):  # D7
    state = open_state(sim, tmp_path, clock=lambda: 0)
    state.install(sim.bundle(issued_at=NOW, expires=NOW + 86400))
    assert state.time_floor == NOW
    expired_by_floor = sim.bundle(version=6, issued_at=NOW - 7200, expires=NOW - 1)
    with pytest.raises(ExpiredBundleError):
        state.install(expired_by_floor)
    state.install(sim.bundle(version=7, issued_at=NOW - 10, expires=NOW + 86400))
    assert state.time_floor == NOW  # the floor never decreases


def test_bundle_issued_beyond_the_clock_skew_is_refused(sim, tmp_path):
    state = open_state(sim, tmp_path)
    ten_years = 10 * 365 * 86400
    with pytest.raises(FutureBundleError):
        state.install(sim.bundle(issued_at=NOW + MAX_CLOCK_SKEW + 1, expires=NOW + ten_years))
    assert state.installed_version == 0
    assert state.install(sim.bundle(issued_at=NOW + MAX_CLOCK_SKEW, expires=NOW + ten_years)).status == "installed"


def test_expired_active_bundle_is_stale_within_grace_then_releases_nothing(sim, installed):  # D9
    expires = NOW + 86400
    assert installed.status(now=NOW)["state"] == "ok"
    assert installed.status(now=expires + 1)["state"] == "stale"
    installed.sanitize(installed.active(now=expires + 1), ROW)
    past = expires + EXPIRY_GRACE + 1
    assert installed.status(now=past)["state"] == "no_bundle"
    with pytest.raises(NoValidBundleError):
        installed.active(now=past)


_OS_CALLS = ("open", "write", "fsync", "replace", "link")


def _os_calls_of_an_install(sim, root, monkeypatch) -> list[tuple[str, int]]:
    """Every (os function, n-th call of it) an install of version 6 makes up to and including
    its commit point (the rename of state.json), recorded on a copy of the directory."""
    seen, counts = [], {}
    for name in _OS_CALLS:
        real = getattr(os, name)

        def recording(*args, _name=name, _real=real, **kwargs):
            counts[_name] = counts.get(_name, 0) + 1
            seen.append((_name, counts[_name], args))
            return _real(*args, **kwargs)
        monkeypatch.setattr(os, name, recording)
    state = DeviceState(root, sim.keyring, clock=lambda: NOW)
    seen.clear()
    counts.clear()
    state.install(sim.bundle(version=6))
    monkeypatch.undo()
    commit = next(i for i, (name, _, args) in enumerate(seen)
                  if name == "replace" and str(args[1]).endswith("state.json"))
    return [(name, n) for name, n, _ in seen[:commit + 1]]


def _fail_on_call(monkeypatch, name, n):
    real = getattr(os, name)
    calls = {"n": 0}

    def failing(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == n:
            raise OSError(5, f"injected failure of os.{name}")
        return real(*args, **kwargs)
    monkeypatch.setattr(os, name, failing)
    return calls


def test_a_failing_install_leaves_active_bundle_and_state_byte_identical(sim, tmp_path, monkeypatch):  # G1, G6
    """A failure injected at each os call an install makes before its commit point (lock,
    state read, bundle temp file, rename, state temp file, rename) raises StateError and leaves
    every file's bytes as they were; the next install succeeds."""
    import shutil
    template = tmp_path / "template"
    DeviceState(template, sim.keyring, clock=lambda: NOW).install(sim.bundle())
    shutil.copytree(template, tmp_path / "probe")
    faults = _os_calls_of_an_install(sim, tmp_path / "probe", monkeypatch)
    assert {name for name, _ in faults} >= {"open", "write", "fsync", "replace"} and len(faults) >= 10
    for i, (name, n) in enumerate(faults):
        root = tmp_path / f"case{i}"
        shutil.copytree(template, root)
        state = DeviceState(root, sim.keyring, clock=lambda: NOW)
        before = snapshot(root)
        _fail_on_call(monkeypatch, name, n)
        with pytest.raises(StateError):
            state.install(sim.bundle(version=6))
        monkeypatch.undo()
        assert snapshot(root) == before, (name, n)  # no temp file left, nothing changed
        reopened = DeviceState(root, sim.keyring, clock=lambda: NOW)
        assert reopened.active().version == 5
        assert reopened.install(sim.bundle(version=6)).status == "installed"  # G6
        assert reopened.active().version == 6


def test_half_written_temp_files_are_removed_at_open(sim, installed, tmp_path):  # G2
    root = tmp_path / "state"
    before = snapshot(root)
    (root / ".tmp-state.json.999").write_bytes(b"{half")
    (root / "bundles" / ".tmp-x.bundle.999").write_bytes(b"\x95\x01")
    (root / "bundles" / ("ab" * 32 + ".bundle")).write_bytes(b"orphan")
    reopened = DeviceState(root, sim.keyring, clock=lambda: NOW)
    assert snapshot(root) == before
    assert reopened.active().version == 5


def test_corrupt_active_bundle_falls_back_to_the_previous_copy(sim, tmp_path):  # G3
    state = open_state(sim, tmp_path)
    state.install(sim.bundle())
    state.install(sim.bundle(version=6))
    active_file = tmp_path / "state" / "bundles" / f"{state.active_sha256}.bundle"
    data = bytearray(active_file.read_bytes())
    data[-5] ^= 1
    active_file.write_bytes(bytes(data))
    assert state.active().version == 5
    assert state.status()["state"] == "fallback"
    for path in (tmp_path / "state" / "bundles").iterdir():
        path.write_bytes(b"garbage")
    with pytest.raises(NoValidBundleError):
        state.active()
    assert state.status()["state"] == "no_bundle"


@pytest.mark.parametrize("damage", ["flip", "missing"])
def test_corrupt_or_missing_state_file_fails_closed(sim, installed, tmp_path, damage):  # G4
    state_file = tmp_path / "state" / "state.json"
    if damage == "flip":
        state_file.write_bytes(state_file.read_bytes().replace(b'"version":5', b'"version":1'))
    else:
        state_file.unlink()
    with pytest.raises(StateError):
        DeviceState(tmp_path / "state", sim.keyring)


def test_missing_secret_fails_closed(sim, installed, tmp_path):
    (tmp_path / "state" / "device.secret").unlink()
    with pytest.raises(StateError, match="secret"):
        DeviceState(tmp_path / "state", sim.keyring)


def test_bundle_from_a_fifo_is_refused_without_blocking(sim, tmp_path):
    fifo = tmp_path / "bundle.fifo"
    os.mkfifo(fifo)
    state = open_state(sim, tmp_path)
    with pytest.raises(BundleError, match="regular file"):
        state.install_file(fifo)


def test_invalid_row_releases_nothing_through_the_state(sim, installed):
    with pytest.raises(InputError):
        installed.sanitize(installed.active(), [1, 2])


def test_bundle_for_another_attribute_or_schema_is_refused_by_a_bound_device(sim, tmp_path):  # E2
    mine = sim.load(sim.bundle())
    binding = Binding(private_name="party", classes=("left", "right"), schema_sha256=schema_sha256(mine.features))
    state = DeviceState(tmp_path / "bound", sim.keyring, clock=lambda: NOW, binding=binding)
    other_scale = sim.payload()
    other_scale["features"][0]["max"] = 10
    for data in (sim.bundle(private={"name": "income", "classes": ["left", "right"]}),
                 sim.bundle(private={"name": "party", "classes": ["right", "left"]}),
                 sim.sign_obj(other_scale)):
        before = snapshot(tmp_path / "bound")
        with pytest.raises(WrongDomainError):
            state.install(data)
        assert snapshot(tmp_path / "bound") == before
    assert state.install(sim.bundle()).status == "installed"
    rebound = DeviceState(tmp_path / "bound", sim.keyring, clock=lambda: NOW,
                          binding=Binding(schema_sha256="0" * 64))
    with pytest.raises(NoValidBundleError):  # a reconfigured device refuses the old bundle at use
        rebound.active()


def test_bundle_for_another_device_class_is_refused_by_a_bound_device(sim, tmp_path):  # E1
    state = DeviceState(tmp_path / "stb", sim.keyring, clock=lambda: NOW, binding=Binding(device_class="stb-x2"))
    for other in ("generic", "stb-x1", "STB-X2"):
        before = snapshot(tmp_path / "stb")
        with pytest.raises(WrongTargetError):
            state.install(sim.bundle(device_class=other))
        assert snapshot(tmp_path / "stb") == before
    assert state.install(sim.bundle(device_class="stb-x2")).status == "installed"
    assert state.active().device_class == "stb-x2"
    moved = DeviceState(tmp_path / "stb", sim.keyring, clock=lambda: NOW, binding=Binding(device_class="stb-x3"))
    with pytest.raises(NoValidBundleError):  # the installed bundle is not for this class: nothing released
        moved.active()


@pytest.mark.parametrize("bad", ["", "a b", "x" * 65, "caf\u00e9", 7, None, b"generic"])
def test_malformed_device_class_is_a_format_error(sim, bad):
    sim.refused(sim.bundle(device_class=bad), BundleFormatError)


def test_the_clock_is_read_once_per_install(sim, tmp_path):  # D8
    readings = iter([NOW, NOW + 10 ** 6])
    calls = []

    def clock():
        calls.append(1)
        return next(readings)
    state = DeviceState(tmp_path / "s", sim.keyring, clock=clock)
    assert state.install(sim.bundle()).status == "installed"  # judged at NOW, not at the later reading
    assert len(calls) == 1


def test_a_table_spliced_from_another_version_breaks_the_signature(sim, installed):  # E3
    v6 = msgpack.unpackb(sim.bundle(version=6))
    spliced_payload = msgpack.unpackb(v6[4])
    spliced_payload["table"]["weight"] = [[8, 8], [5, 5, 6], [16]]
    v6[4] = msgpack.packb(spliced_payload)
    with pytest.raises(BundleSignatureError):
        installed.install(msgpack.packb(v6))
    assert installed.active().version == 5


def test_fresh_device_with_clock_at_zero_refuses_a_bundle_expired_in_2020(sim, tmp_path):  # D7
    state = DeviceState(tmp_path / "s", sim.keyring, clock=lambda: 0)
    with pytest.raises(ExpiredBundleError):
        state.install(sim.bundle(issued_at=1_570_000_000, expires=1_580_000_000))


def test_secret_open_to_group_or_others_is_refused(sim, installed, tmp_path):  # the secret's file mode
    secret = tmp_path / "state" / "device.secret"
    for mode in (0o644, 0o640, 0o604, 0o660):
        secret.chmod(mode)
        with pytest.raises(StateError, match=f"mode {mode:04o}"):
            DeviceState(tmp_path / "state", sim.keyring, clock=lambda: NOW)
    secret.chmod(0o400)
    assert DeviceState(tmp_path / "state", sim.keyring, clock=lambda: NOW).active().version == 5


def test_the_secret_is_created_whole_and_only_once(sim, tmp_path, monkeypatch):
    root = tmp_path / "state"
    first = DeviceState(root, sim.keyring, clock=lambda: NOW)
    secret = (root / "device.secret").read_bytes()
    (root / "state.json").unlink()                       # no bundle yet: a fresh state is written
    DeviceState(root, sim.keyring, clock=lambda: NOW)
    assert (root / "device.secret").read_bytes() == secret
    monkeypatch.setattr(os, "link", lambda *a, **k: (_ for _ in ()).throw(OSError(28, "no space")))
    with pytest.raises(StateError):
        DeviceState(tmp_path / "other", sim.keyring, clock=lambda: NOW)
    assert sorted(p.name for p in (tmp_path / "other").iterdir()) == ["bundles"]  # no partial secret
    assert first.installed_version == 0


@pytest.mark.parametrize("damage", ["missing", "flip", "truncate", "all_bundles"])
def test_a_lost_stored_copy_is_repaired_by_the_same_bundle_with_the_same_releases(sim, tmp_path, damage):  # G10
    state = open_state(sim, tmp_path)
    state.install(sim.bundle())
    v6 = sim.bundle(version=6)
    state.install(v6)
    rows = [[1, 0.0, 0.0], ROW, [5, 1.0, 24.0]]
    before = [state.release_index(state.active(), row) for row in rows]
    bundles = tmp_path / "state" / "bundles"
    stored = bundles / f"{state.active_sha256}.bundle"
    if damage == "missing":
        stored.unlink()
    elif damage == "flip":
        stored.write_bytes(stored.read_bytes()[:-1] + bytes([stored.read_bytes()[-1] ^ 1]))
    elif damage == "truncate":
        stored.write_bytes(stored.read_bytes()[:100])
    else:
        for path in bundles.iterdir():
            path.unlink()
    assert state.install(v6) == ("repaired", 6, state.active_sha256)
    assert stored.read_bytes() == v6
    assert state.status()["state"] == "ok"
    bundle = state.active()
    assert bundle.version == 6 and [state.release_index(bundle, row) for row in rows] == before
    assert state.install(v6).status == "no_update"


def test_issued_at_beyond_the_plausibility_bound_is_refused_whatever_the_clock(sim, tmp_path):
    for clock in (0, NOW, LATEST_ISSUED_AT + 10):
        state = DeviceState(tmp_path / f"s{clock}", sim.keyring, clock=lambda clock=clock: clock)
        before = snapshot(tmp_path / f"s{clock}")
        with pytest.raises(FutureBundleError, match="2100"):
            state.install(sim.bundle(issued_at=LATEST_ISSUED_AT + 1, expires=LATEST_ISSUED_AT + 86400))
        assert snapshot(tmp_path / f"s{clock}") == before




def test_replaying_an_old_state_file_is_refused_with_a_counter(sim, tmp_path):  # G9
    counter = MemoryCounter()
    root = tmp_path / "state"
    state = open_state(sim, tmp_path, counter=counter)
    state.install(sim.bundle(version=1))
    old = snapshot(root)                                   # the attacker keeps the v1 directory
    state.install(sim.bundle(version=2))
    assert counter.value == 3 and state.status()["counter"] == 3   # fresh state, v1, v2
    for name in list(old):
        (root / name).write_bytes(old[name])               # and puts it back
    with pytest.raises(StateReplayError, match="older state file"):
        DeviceState(root, sim.keyring, clock=lambda: NOW, counter=counter)
    with pytest.raises(StateReplayError):
        state.install(sim.bundle(version=1))                # a running process refuses it too
    with pytest.raises(StateReplayError):
        state.active()
    with pytest.raises(StateReplayError, match="counter"):  # opened without its counter
        DeviceState(root, sim.keyring, clock=lambda: NOW)


def test_without_a_counter_a_replayed_state_file_restores_the_old_floor(sim, tmp_path):  # G9, file default
    """What the file-only default does not stop (docs/threats-coverage.md, G9): whoever can
    rewrite the directory puts back an older state and v1 is accepted again after v2."""
    root = tmp_path / "state"
    state = open_state(sim, tmp_path)
    state.install(sim.bundle(version=1))
    old = snapshot(root)
    state.install(sim.bundle(version=2))
    for path in (root / "bundles").iterdir():
        path.unlink()
    for name, data in old.items():
        (root / name).write_bytes(data)                    # the state file and its bundle files
    assert DeviceState(root, sim.keyring, clock=lambda: NOW).installed_version == 1


def test_a_commit_cut_short_before_the_counter_increment_is_completed(sim, tmp_path):
    class FailingOnce(MemoryCounter):
        fail = False

        def increment(self):
            if self.fail:
                self.fail = False
                raise OSError("TPM busy")
            return super().increment()
    counter = FailingOnce()
    state = open_state(sim, tmp_path, counter=counter)
    counter.fail = True
    with pytest.raises(StateError, match="TPM busy"):
        state.install(sim.bundle())                         # state renamed, counter not incremented
    assert counter.value == 1
    reopened = DeviceState(tmp_path / "state", sim.keyring, clock=lambda: NOW, counter=counter)
    assert counter.value == 2 and reopened.active().version == 5   # the writer completed the commit


def test_a_wiped_directory_is_refused_when_the_counter_says_states_were_committed(sim, tmp_path):
    import shutil
    counter = MemoryCounter()
    open_state(sim, tmp_path, counter=counter).install(sim.bundle())
    shutil.rmtree(tmp_path / "state")
    with pytest.raises(StateReplayError, match="wiped"):
        open_state(sim, tmp_path, counter=counter)
    assert not (tmp_path / "state" / "device.secret").exists()


def test_a_state_written_without_a_counter_is_bound_when_one_is_given(sim, installed, tmp_path):
    counter = MemoryCounter()
    root = tmp_path / "state"
    old = snapshot(root)
    DeviceState(root, sim.keyring, clock=lambda: NOW, counter=counter)
    assert counter.value == 1                                   # bound at open, before any install
    (root / "state.json").write_bytes(old["state.json"])        # the unbound state put back
    with pytest.raises(StateReplayError, match="not bound"):
        DeviceState(root, sim.keyring, clock=lambda: NOW, counter=counter)


def test_a_format_1_state_is_read_and_upgraded_with_its_floors(sim, installed, tmp_path):
    import hashlib
    import hmac
    import json
    root = tmp_path / "state"
    sha = installed.active_sha256
    body = {"format": 1, "version": 5, "time_floor": NOW - 3600, "installed": {"5": sha},
            "active": sha, "previous": None}
    data = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
    mac = hmac.new((root / "device.secret").read_bytes(), b"privmap-device-state-v1\x00" + data,
                   hashlib.sha256).hexdigest()
    (root / "state.json").write_text(json.dumps({"body": body, "mac": mac}))
    with pytest.raises(StateError, match="keyring"):
        DeviceState(root, clock=lambda: NOW)                     # no keyring to pin: refused
    state = DeviceState(root, sim.keyring, clock=lambda: NOW)
    assert json.loads((root / "state.json").read_text())["body"]["format"] == 2
    assert (state.installed_version, state.time_floor, state.active().version) == (5, NOW - 3600, 5)
    with pytest.raises(RollbackError):
        state.install(sim.bundle(version=4))
