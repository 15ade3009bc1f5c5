"""The state directory's path swapped under a running device: held by handle, it is never left.

Someone who can rename the state directory's path (another uid over a parent it may write, or
a race timed against a run) moves it away and puts another state directory in its place, a
prepared one with its own secret and state, then swaps them back, over and over, while the
device installs and releases. A device that looked the path up again at each access installed
into the substitute on every swap, and its cleaning deleted files there. Held by its
descriptor, the device keeps to the directory it checked: the substitute is never written,
emptied or given a new secret, and the real directory's version history only goes up.
``python tests/device/state/race_swap.py --swaps 1000`` counts the same over 1,000 swaps
(docs/threats-coverage.md).
"""
from __future__ import annotations

import hashlib
import multiprocessing
import os
import pathlib
import subprocess
import time

import pytest
from harness import NOW

from privmap.device import DeviceState, PrivmapDeviceError

ROW = [3, 0.5, 12.0]
_CTX = multiprocessing.get_context("fork")


def _snapshot(directory: pathlib.Path) -> tuple[dict[str, str], tuple[int, int]]:
    """The sha256 of every file under ``directory`` and the mtimes (ns) of it and its ``bundles/``
    (a file made and removed again, a temp file, changes them)."""
    files = {str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
             for p in sorted(directory.rglob("*")) if p.is_file()}
    return files, (directory.stat().st_mtime_ns, (directory / "bundles").stat().st_mtime_ns)


def _tally(before, after, counts: dict[str, int]) -> None:
    (old, old_times), (new, new_times) = before, after
    counts["written"] += sum(1 for name, sha in new.items() if old.get(name) != sha)
    counts["deleted"] += sum(1 for name in old if name not in new)
    counts["secret_changed"] += old.get("device.secret") != new.get("device.secret")
    counts["touched"] += old_times != new_times


def can_bind_mount(scratch: pathlib.Path) -> bool:
    """Whether this process may bind-mount (root with the capability; not in most containers)."""
    a, b = scratch / "bind-probe-a", scratch / "bind-probe-b"
    a.mkdir()
    b.mkdir()
    if subprocess.run(["mount", "--bind", str(a), str(b)], capture_output=True).returncode != 0:
        return False
    subprocess.run(["umount", str(b)], check=True)
    return True


def _swapper(parent: pathlib.Path, swaps: int, pause: float, started, done, queue, bind: bool = False) -> None:
    """Swap ``parent/other`` in at ``parent/state`` and back ``swaps`` times (renaming both, or
    with ``bind`` mounting ``other`` over ``state`` and unmounting it); after each, count what
    changed in ``other`` since the swap before."""
    state, other, away = parent / "state", parent / "other", parent / "away"
    counts = {"swaps": 0, "written": 0, "deleted": 0, "secret_changed": 0, "touched": 0}
    try:
        base = _snapshot(other)
        started.set()
        for _ in range(swaps):
            if bind:
                subprocess.run(["mount", "--bind", str(other), str(state)], check=True)
            else:
                os.rename(state, away)
                os.rename(other, state)              # the substitute at the device's path
            time.sleep(pause)
            if bind:
                subprocess.run(["umount", str(state)], check=True)
            else:
                os.rename(state, other)
                os.rename(away, state)               # the real one back
            time.sleep(pause)
            now = _snapshot(other)
            _tally(base, now, counts)
            base = now
            counts["swaps"] += 1
    finally:
        queue.put(counts)
        done.set()


def swap_race(sim, parent: pathlib.Path, swaps: int, pause: float = 0.002, *,
              bind: bool = False) -> dict[str, int | bool]:
    """Open a device at ``parent/state`` (version 1 installed), make a substitute state directory
    at ``parent/other`` (its own secret, version 1), then install v2, v3, ... and release
    through the device while another process swaps the two ``swaps`` times. Returns the counts:
    swaps done, operations (install, active, release, status) done and refused, files written
    and deleted in the substitute, swaps after which its secret changed or it was touched at
    all, whether the device's versions only went up, and whether the real directory, reopened,
    holds the last version installed with its secret unchanged."""
    real = parent / "state"
    state = DeviceState(real, sim.keyring, clock=lambda: NOW)
    state.install(sim.bundle(version=1))
    DeviceState(parent / "other", sim.keyring, clock=lambda: NOW).install(sim.bundle(version=1))
    secret = (real / "device.secret").read_bytes()
    started, done, queue = _CTX.Event(), _CTX.Event(), _CTX.Queue()
    proc = _CTX.Process(target=_swapper, args=(parent, swaps, pause, started, done, queue, bind))
    proc.start()
    versions, operations, refused, version = [], 0, 0, 1
    try:
        assert started.wait(timeout=30), "the swapper did not start"
        while not done.is_set():
            version += 1
            operations += 4
            try:
                state.install(sim.bundle(version=version))
                bundle = state.active()
                state.release_index(bundle, ROW)
                state.status()
            except PrivmapDeviceError:
                refused += 1
                continue
            versions.append(bundle.version)
        counts: dict[str, int | bool] = dict(queue.get(timeout=60))
    finally:
        proc.join(timeout=60)
    reopened = DeviceState(real, sim.keyring, clock=lambda: NOW)
    last = versions[-1] if versions else 1
    counts.update(operations=operations, refused=refused,
                  monotone=versions == sorted(set(versions)),
                  real_intact=(reopened.installed_version == last and reopened.active().version == last
                               and (real / "device.secret").read_bytes() == secret))
    return counts


def test_a_state_directory_swapped_under_a_running_device_is_never_left_for_the_substitute(sim, tmp_path):
    counts = swap_race(sim, tmp_path, swaps=100)
    assert counts["swaps"] == 100 and counts["operations"] > 0
    assert counts["refused"] == 0, counts                            # the device kept working throughout
    assert (counts["written"], counts["deleted"], counts["secret_changed"], counts["touched"]) == (0, 0, 0, 0), counts
    assert counts["monotone"] and counts["real_intact"], counts      # v1 never came back after v2


def test_a_substitute_bind_mounted_over_the_path_under_a_running_device_is_never_written(sim, tmp_path):
    """The mount covers the path, not the directory the device holds open: the same counts."""
    if not can_bind_mount(tmp_path):
        pytest.skip("bind mounts need root with CAP_SYS_ADMIN")
    counts = swap_race(sim, tmp_path, swaps=30, bind=True)
    assert counts["swaps"] == 30 and counts["operations"] > 0 and counts["refused"] == 0, counts
    assert (counts["written"], counts["deleted"], counts["secret_changed"], counts["touched"]) == (0, 0, 0, 0), counts
    assert counts["monotone"] and counts["real_intact"], counts


def test_swapping_the_path_with_no_device_running_touches_nothing(sim, tmp_path):
    """The counts above can fail: the swaps alone leave the substitute as it was, and a device
    opened at the path while the substitute is there does write into it."""
    DeviceState(tmp_path / "state", sim.keyring, clock=lambda: NOW)
    DeviceState(tmp_path / "other", sim.keyring, clock=lambda: NOW).install(sim.bundle(version=1))
    before = _snapshot(tmp_path / "other")
    started, done, queue = _CTX.Event(), _CTX.Event(), _CTX.Queue()
    _swapper(tmp_path, 5, 0.0, started, done, queue)
    assert queue.get(timeout=10)["touched"] == 0 and _snapshot(tmp_path / "other") == before
    os.rename(tmp_path / "state", tmp_path / "away")
    os.rename(tmp_path / "other", tmp_path / "state")
    DeviceState(tmp_path / "state", sim.keyring, clock=lambda: NOW).install(sim.bundle(version=2))
    os.rename(tmp_path / "state", tmp_path / "other")
    counts = {"written": 0, "deleted": 0, "secret_changed": 0, "touched": 0}
    _tally(before, _snapshot(tmp_path / "other"), counts)
    assert counts["written"] >= 2 and counts["touched"] == 1           # a new bundle file and state.json
