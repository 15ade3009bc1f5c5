"""The state directory under hostile neighbours and operator slips: a lock holder that never lets
go costs a bounded wait and one error naming it, readers never wait on readers, a directory or
secret another user owns or can read is refused, a symlink is named as one, and a counter-bound
device whose directory was lost is re-provisioned only by an explicit call."""
from __future__ import annotations

import os
import pathlib
import shutil
import signal
import stat
import subprocess
import sys
import time

import pytest
from harness import NOW, MemoryCounter

from privmap.device import DeviceState
from privmap.device.constants import DEFAULT_LOCK_WAIT
from privmap.device.errors import NoValidBundleError, StateError, StateLockedError, StateReplayError

ROWS = [[1, 0.0, 0.0], [3, 0.5, 12.0], [5, 1.0, 24.0]]

_HOLDER = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
fcntl.flock(fd, fcntl.LOCK_SH if sys.argv[2] == "shared" else fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(120)
"""


def snapshot(directory: pathlib.Path) -> dict:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


class Holder:
    """A separate process holding a lock on ``directory`` (``kind``: shared or exclusive) until
    ended; ``stop()`` freezes it with SIGSTOP, as a stopped service would be."""

    def __init__(self, directory: pathlib.Path, kind: str):
        self.proc = subprocess.Popen([sys.executable, "-c", _HOLDER, str(directory), kind],
                                     stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout.readline().strip() == "held"
        self.pid = self.proc.pid

    def stop(self) -> None:
        os.kill(self.pid, signal.SIGSTOP)

    def end(self) -> None:
        self.proc.kill()  # SIGKILL ends a stopped process too
        self.proc.wait(timeout=30)
        self.proc.stdout.close()


@pytest.fixture
def holder():
    made = []

    def start(directory, kind):
        made.append(Holder(directory, kind))
        return made[-1]
    yield start
    for h in made:
        if h.proc.poll() is None:
            h.end()


def _pid_reported() -> bool:
    return os.path.exists("/proc/locks")


@pytest.fixture
def installed(sim, tmp_path):
    state = DeviceState(tmp_path / "state", sim.keyring, clock=lambda: NOW)
    state.install(sim.bundle())
    return tmp_path / "state"


# -- bounded locks ---------------------------------------------------------------------------------

def test_a_foreign_shared_lock_holder_makes_an_install_fail_within_its_wait_naming_the_pid(sim, installed, holder):
    state = DeviceState(installed, sim.keyring, clock=lambda: NOW, lock_wait=0.5)
    reader = holder(installed, "shared")
    before = snapshot(installed)
    started = time.monotonic()
    with pytest.raises(StateLockedError) as info:
        state.install(sim.bundle(version=6))
    assert time.monotonic() - started < 5.0
    assert "\n" not in str(info.value) and "within 0.5 s" in str(info.value)
    if _pid_reported():
        assert f"pid {reader.pid}" in str(info.value) and info.value.holders == [reader.pid]
    assert snapshot(installed) == before and "StateLockedError" in state.status()["last_error"]
    reader.end()
    assert state.install(sim.bundle(version=6)).status == "installed"


def test_a_stopped_exclusive_holder_costs_an_open_its_wait_and_one_error(sim, installed, holder):
    writer = holder(installed, "exclusive")
    writer.stop()
    started = time.monotonic()
    with pytest.raises(StateLockedError, match="locked by"):
        DeviceState(installed, sim.keyring, clock=lambda: NOW, lock_wait=0.3)
    assert time.monotonic() - started < 5.0
    writer.end()
    assert DeviceState(installed, sim.keyring, clock=lambda: NOW, lock_wait=0.3).active().version == 5


def test_reading_the_installed_state_is_never_held_up_by_a_shared_reader(sim, installed, holder):
    holder(installed, "shared")                              # a reader that never finishes
    state = DeviceState(installed, sim.keyring, clock=lambda: NOW, lock_wait=0)
    assert state.install(sim.bundle()).status == "no_update"     # the bundle already installed
    bundle = state.active()
    assert [state.release_index(bundle, row) for row in ROWS]
    assert state.status()["state"] == "ok"
    assert DeviceState(installed, clock=lambda: NOW, lock_wait=0).status()["version"] == 5   # state show


def test_an_open_that_finds_leftovers_cleans_them_only_if_nobody_holds_the_lock(sim, installed, holder):
    leftover = installed / ".tmp-state.json.999"
    leftover.write_bytes(b"{half")
    reader = holder(installed, "shared")
    DeviceState(installed, sim.keyring, clock=lambda: NOW, lock_wait=0)      # reads, does not wait to clean
    assert leftover.exists()
    reader.end()
    DeviceState(installed, sim.keyring, clock=lambda: NOW, lock_wait=0)
    assert not leftover.exists()


def test_a_writer_waiting_on_a_reader_keeps_new_readers_out_until_it_is_done(sim, installed, holder):
    """The turnstile: while an install waits for a reader that holds on, a reader arriving after
    it is not let in ahead of it (so a stream of readers cannot starve it); once the first
    reader ends, the install goes through and readers get in again."""
    import threading
    reader = holder(installed, "shared")
    state = DeviceState(installed, sim.keyring, clock=lambda: NOW, lock_wait=10)
    late = DeviceState(installed, sim.keyring, clock=lambda: NOW, lock_wait=0)
    outcome = []
    writer = threading.Thread(target=lambda: outcome.append(state.install(sim.bundle(version=6)).status))
    writer.start()
    try:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:           # until the install holds the turnstile
            try:
                late.active()
            except StateLockedError:
                break
            time.sleep(0.005)
        with pytest.raises(StateLockedError):
            late.active()                            # a reader arriving while the install waits
        assert writer.is_alive() and not outcome
    finally:
        reader.end()
        writer.join(timeout=30)
    assert outcome == ["installed"] and late.active().version == 6


def test_two_threads_locking_through_one_device_exclude_each_other(sim, installed):
    """The directory is held by one descriptor, but each lock is taken on an open file
    description of its own: two threads of one process exclude each other as two processes do."""
    state = DeviceState(installed, sim.keyring, clock=lambda: NOW, lock_wait=0)
    with state._store.locked(exclusive=True):
        with pytest.raises(StateLockedError):
            state.install(sim.bundle(version=6))
        with pytest.raises(StateLockedError):
            state.active()
    assert state.install(sim.bundle(version=6)).status == "installed"


@pytest.mark.parametrize("wait", [-1, float("nan"), float("inf"), "5", None])
def test_the_lock_wait_must_be_a_finite_number_of_seconds(sim, tmp_path, wait):
    with pytest.raises(ValueError, match="lock_wait"):
        DeviceState(tmp_path / "state", sim.keyring, lock_wait=wait)


def test_the_default_lock_wait_is_a_few_seconds():
    assert 1 <= DEFAULT_LOCK_WAIT <= 30


# -- owners and modes ------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", [0o755, 0o750, 0o711, 0o701, 0o770], ids=lambda m: f"{m:04o}")
def test_a_pre_made_state_directory_open_to_group_or_others_is_refused_with_the_chmod_that_fixes_it(
        sim, tmp_path, mode):
    root = tmp_path / "state"
    root.mkdir()
    root.chmod(mode)
    with pytest.raises(StateError, match=f"mode {mode:04o}") as info:
        DeviceState(root, sim.keyring, clock=lambda: NOW)
    assert f"chmod 700 '{root}'" in str(info.value) and "\n" not in str(info.value)
    assert list(root.iterdir()) == [] and stat.S_IMODE(root.stat().st_mode) == mode   # nothing made, kept as it was
    root.chmod(0o700)
    assert DeviceState(root, sim.keyring, clock=lambda: NOW).installed_version == 0


def test_a_bundles_folder_open_to_others_is_refused(sim, installed):
    (installed / "bundles").chmod(0o755)
    with pytest.raises(StateError, match="chmod 700"):
        DeviceState(installed, sim.keyring, clock=lambda: NOW)


def test_a_fresh_state_directory_is_made_0700_whatever_the_umask(sim, tmp_path):
    old = os.umask(0)
    try:
        DeviceState(tmp_path / "state", sim.keyring, clock=lambda: NOW)
    finally:
        os.umask(old)
    for directory in (tmp_path / "state", tmp_path / "state" / "bundles"):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700


def test_a_state_directory_owned_by_another_user_is_refused_with_the_chown_that_fixes_it(sim, installed,
                                                                                         monkeypatch):
    other = os.geteuid() + 1                                 # the process runs as another user than the owner
    monkeypatch.setattr(os, "geteuid", lambda: other)
    with pytest.raises(StateError, match=f"owned by uid {os.stat(installed).st_uid}") as info:
        DeviceState(installed, sim.keyring, clock=lambda: NOW)
    assert f"chown {other} '{installed}'" in str(info.value)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="chown to another uid needs root")
def test_a_secret_made_by_another_user_is_refused_even_at_mode_0600(sim, installed):
    secret = installed / "device.secret"
    os.chown(secret, 54321, 54321)
    before = snapshot(installed)
    with pytest.raises(StateError, match="owned by uid 54321") as info:
        DeviceState(installed, sim.keyring, clock=lambda: NOW)
    assert f"chown 0 '{secret}'" in str(info.value) and snapshot(installed) == before
    os.chown(installed, 54321, 54321)
    with pytest.raises(StateError, match="owned by uid 54321"):   # the directory is checked first
        DeviceState(installed, sim.keyring, clock=lambda: NOW)
    os.chown(installed, 0, 0)
    os.chown(secret, 0, 0)
    assert DeviceState(installed, sim.keyring, clock=lambda: NOW).active().version == 5


def test_a_symlinked_state_directory_is_refused_as_a_symlink(sim, installed, tmp_path):
    link = tmp_path / "link"
    link.symlink_to(installed)
    with pytest.raises(StateError, match="is a symlink"):
        DeviceState(link, sim.keyring, clock=lambda: NOW)
    (tmp_path / "file").write_text("x")
    with pytest.raises(StateError, match="not a directory"):
        DeviceState(tmp_path / "file", sim.keyring, clock=lambda: NOW)


# -- held by handle --------------------------------------------------------------------------------

def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts descriptors in /proc")
def test_a_device_lets_go_of_its_directory_when_closed_or_collected(sim, installed):
    before = _open_fds()
    with DeviceState(installed, sim.keyring, clock=lambda: NOW) as state:
        assert _open_fds() == before + 2                 # the directory and bundles/, held
        assert state.active().version == 5
    assert _open_fds() == before
    with pytest.raises(StateError, match="not open"):
        state.active()
    state.close()                                        # idempotent
    for _ in range(20):
        DeviceState(installed, sim.keyring, clock=lambda: NOW).active()
    assert _open_fds() == before                         # collected: nothing leaks
    (installed / "bundles").chmod(0o755)
    with pytest.raises(StateError, match="chmod 700"):
        DeviceState(installed, sim.keyring, clock=lambda: NOW)
    assert _open_fds() == before                         # a refused open holds nothing either


def test_a_device_renamed_away_keeps_working_in_its_directory_and_nothing_appears_at_the_path(
        sim, installed, tmp_path):
    state = DeviceState(installed, sim.keyring, clock=lambda: NOW)
    moved = tmp_path / "moved"
    os.rename(installed, moved)
    assert state.install(sim.bundle(version=6)).status == "installed"
    assert state.active().version == 6 and not installed.exists()
    assert DeviceState(moved, sim.keyring, clock=lambda: NOW).active().version == 6


# -- re-provisioning a counter-bound device --------------------------------------------------------


def test_a_counter_bound_device_whose_directory_was_lost_is_reprovisioned_only_by_an_explicit_call(sim, tmp_path):
    counter, root = MemoryCounter(), tmp_path / "state"
    state = DeviceState(root, sim.keyring, clock=lambda: NOW, counter=counter)
    state.install(sim.bundle())
    shutil.copytree(root, tmp_path / "old")
    shutil.rmtree(root)
    with pytest.raises(StateReplayError, match="wiped"):                # a plain open never re-provisions
        DeviceState(root, sim.keyring, clock=lambda: NOW, counter=counter)
    (root / "device.secret").write_bytes(b"x")
    with pytest.raises(StateError, match="not empty"):
        DeviceState.reprovision(root, sim.keyring, counter=counter, clock=lambda: NOW)
    shutil.rmtree(root)
    at = counter.value
    fresh = DeviceState.reprovision(root, sim.keyring, counter=counter, clock=lambda: NOW)
    assert counter.value == at + 1 and fresh.status()["counter"] == at + 1 and fresh.installed_version == 0
    with pytest.raises(NoValidBundleError):
        fresh.active()
    assert fresh.install(sim.bundle()).status == "installed"
    assert (root / "device.secret").read_bytes() != (tmp_path / "old" / "device.secret").read_bytes()  # a new device
    reopened = DeviceState(root, sim.keyring, clock=lambda: NOW, counter=counter)    # an ordinary open now
    assert reopened.active().version == 5
    shutil.rmtree(root)
    shutil.copytree(tmp_path / "old", root)                             # the lost directory put back
    with pytest.raises(StateReplayError, match="older state file"):
        DeviceState(root, sim.keyring, clock=lambda: NOW, counter=counter)


def test_reprovisioning_needs_a_counter_and_a_keyring(sim, tmp_path):
    with pytest.raises(TypeError):
        DeviceState.reprovision(tmp_path / "s", sim.keyring, counter=None)
    with pytest.raises(TypeError):
        DeviceState.reprovision(tmp_path / "s", None, counter=MemoryCounter())


# -- ancestors: nobody else may move the directory away -------------------------------------------

@pytest.mark.parametrize("depth", [1, 2], ids=["parent", "grandparent"])
def test_a_state_directory_under_a_directory_others_can_write_is_refused_before_anything_is_made(
        sim, tmp_path, depth):
    """Another user who can write a directory above the state directory can rename it away and
    put another in its place (a wipe, a fork, a rollback): refused, naming the chmod that fixes
    it, nothing made; the sticky bit (as on /tmp) makes it safe."""
    shared = tmp_path / "shared"
    root = shared / "box" / "state" if depth == 2 else shared / "state"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(StateError, match="writable by others without the sticky bit") as info:
        DeviceState(root, sim.keyring, clock=lambda: NOW)
    assert f"chmod o-w '{shared}'" in str(info.value) and "\n" not in str(info.value)
    assert list(shared.iterdir()) == []
    shared.chmod(0o1777)
    assert DeviceState(root, sim.keyring, clock=lambda: NOW).installed_version == 0
    shared.chmod(0o777)
    with pytest.raises(StateError, match="writable by others"):          # an existing one too
        DeviceState(root, sim.keyring, clock=lambda: NOW)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="chown to another uid needs root")
def test_a_state_directory_under_another_users_directory_is_refused(sim, installed, tmp_path):
    parent, owner = installed.parent, installed.parent.stat()
    os.chown(parent, 54321, 54321)
    try:
        with pytest.raises(StateError, match="owned by uid 54321, who could move the directory away"):
            DeviceState(installed, sim.keyring, clock=lambda: NOW)
    finally:
        os.chown(parent, owner.st_uid, owner.st_gid)
    assert DeviceState(installed, sim.keyring, clock=lambda: NOW).active().version == 5


class _FileCounter:
    """A monotonic counter in a file (as NVRAM would keep it: it survives the process)."""

    def __init__(self, path):
        self.path = path

    def read(self):
        return int(self.path.read_text()) if self.path.exists() else 0

    def increment(self):
        value = self.read() + 1
        self.path.write_text(str(value))
        return value


@pytest.mark.parametrize("dies_at", ["before the rename", "after the counter's increment"])
def test_a_reprovisioning_killed_midway_leaves_the_path_as_it_was_and_can_be_repeated(sim, tmp_path, dies_at):
    """kill -9 during a re-provisioning left a directory that nothing accepted: the directory
    is now made whole beside the path and renamed over it, so a process killed first (here a
    forked child ending with os._exit) leaves the path absent, and the call is simply repeated."""
    import privmap.device.state._state as module
    counter, root = _FileCounter(tmp_path / "counter"), tmp_path / "state"
    counter.path.write_text("4")                                   # states were committed, the directory lost
    pid = os.fork()
    if pid == 0:                                                   # the child dies at the chosen point
        if dies_at == "before the rename":
            module.os.rename = lambda *a: os._exit(9)
        else:
            increment = counter.increment
            counter.increment = lambda: (increment(), os._exit(9))
        try:
            DeviceState.reprovision(root, sim.keyring, counter=counter, clock=lambda: NOW)
        finally:
            os._exit(0)
    assert os.waitpid(pid, 0)[1] >> 8 == 9
    assert not root.exists()                                       # nothing half-made at the path
    fresh = DeviceState.reprovision(root, sim.keyring, counter=counter, clock=lambda: NOW)
    assert fresh.install(sim.bundle()).status == "installed"
    assert DeviceState(root, sim.keyring, clock=lambda: NOW, counter=counter).active().version == 5
