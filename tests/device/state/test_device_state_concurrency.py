"""Two processes on one state directory (THREATS G8): many racing process pairs.

Each scenario forks PAIRS pairs of processes that wait on a barrier and then act on one
directory at once; every pair is checked, so one lost race fails the test. With the directory
lock turned off the three race scenarios fail within the first pairs (tests/device/state/race_state.py
counts how often; figures in docs/threats-coverage.md).
"""
from __future__ import annotations

import hashlib
import multiprocessing
import time
import traceback

import pytest
from harness import NOW

from privmap.device import DeviceState, PrivmapDeviceError
from privmap.device.errors import NoValidBundleError, RollbackError

PAIRS = 24
ROWS = [[1, 0.0, 0.0], [3, 0.5, 12.0], [5, 1.0, 24.0]]
_CTX = multiprocessing.get_context("fork")


def _child(target, args, barrier, queue, slot):
    try:
        barrier.wait(timeout=30)
        queue.put((slot, "ok", target(*args)))
    except BaseException as exc:  # reported to the parent, which fails the test with it
        queue.put((slot, "error", f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"))


def race(*jobs) -> list:
    """Run each ``(function, args)`` in its own forked process, all released at once by a
    barrier; return their results in order (an exception comes back as ``("raised", name)``
    if the function returns it so, else fails the test)."""
    barrier, queue = _CTX.Barrier(len(jobs)), _CTX.Queue()
    procs = [_CTX.Process(target=_child, args=(fn, args, barrier, queue, i)) for i, (fn, args) in enumerate(jobs)]
    for p in procs:
        p.start()
    results = dict((slot, (kind, value)) for slot, kind, value in (queue.get(timeout=60) for _ in procs))
    for p in procs:
        p.join(timeout=60)
    for slot in range(len(jobs)):
        kind, value = results[slot]
        if kind == "error":
            pytest.fail(f"process {slot} crashed: {value}")
    return [results[slot][1] for slot in range(len(jobs))]


def _open(root, keyring):
    return DeviceState(root, keyring, clock=lambda: NOW)


def _install_and_release(root, keyring, data):
    """Open, install ``data``, release ROWS with the bundle in use; report what happened."""
    try:
        state = _open(root, keyring)
        result = state.install(data)
        bundle = state.active()
    except PrivmapDeviceError as exc:
        return ("refused", type(exc).__name__, None, None)
    secret = hashlib.sha256(state._store.secret).hexdigest()
    return (result.status, bundle.version, [state.release_index(bundle, row) for row in ROWS], secret)


def _release_many(root, keyring, rounds):
    """Release ROWS ``rounds`` times through the state while someone else installs."""
    state = _open(root, keyring)
    seen = []
    for _ in range(rounds):
        status = state.status()
        bundle = state.active()
        seen.append((status["state"], bundle.version, [state.release_index(bundle, row) for row in ROWS]))
    return seen


def _final(root, keyring):
    state = _open(root, keyring)
    bundle = state.active()
    return state, bundle, [state.release_index(bundle, row) for row in ROWS]


def test_two_processes_on_a_fresh_directory_share_one_secret_and_release_alike(sim, tmp_path):
    data = sim.bundle()
    for pair in range(PAIRS):
        root = tmp_path / f"d{pair}"
        a, b = race((_install_and_release, (root, sim.keyring, data)),
                    (_install_and_release, (root, sim.keyring, data)))
        assert sorted([a[0], b[0]]) == ["installed", "no_update"], (pair, a, b)
        assert a[3] == b[3], f"pair {pair}: two device secrets"
        assert a[2] == b[2], f"pair {pair}: different releases for the same rows"
        state, bundle, releases = _final(root, sim.keyring)
        assert bundle.version == 5 and releases == a[2]
        assert hashlib.sha256(state._store.secret).hexdigest() == a[3]


def test_racing_installs_of_two_versions_never_leave_the_floor_below_a_reported_success(sim, tmp_path):
    v1, v2, v3 = (sim.bundle(version=v) for v in (1, 2, 3))
    outcomes = set()
    for pair in range(PAIRS):
        root = tmp_path / f"d{pair}"
        _open(root, sim.keyring).install(v1)
        a, b = race((_install_and_release, (root, sim.keyring, v2)),
                    (_install_and_release, (root, sim.keyring, v3)))
        assert b[0] == "installed", (pair, b)                  # the highest version always installs
        assert a[0] in ("installed", "refused"), (pair, a)
        outcomes.add(a[0] if a[0] == "installed" else a[1])
        state, bundle, _ = _final(root, sim.keyring)
        assert state.installed_version == 3, f"pair {pair}: floor {state.installed_version} after v3 succeeded"
        assert bundle.version == 3 and bundle.sha256 == state.active_sha256, f"pair {pair}: active bundle lost"
        assert state.status()["state"] == "ok"
        with pytest.raises(RollbackError):
            state.install(v2)
    assert outcomes <= {"installed", "RollbackError"}


def test_an_install_racing_releases_never_removes_the_bundle_in_use(sim, tmp_path):
    v1, v2 = sim.bundle(version=1), sim.bundle(version=2)
    for pair in range(PAIRS // 2):
        root = tmp_path / f"d{pair}"
        state = _open(root, sim.keyring)
        state.install(v1)
        before = [state.release_index(state.active(), row) for row in ROWS]
        installed, seen = race((_install_and_release, (root, sim.keyring, v2)),
                               (_release_many, (root, sim.keyring, 20)))
        assert installed[0] == "installed" and installed[1] == 2
        after = installed[2]
        for status, version, releases in seen:               # never a fallback, never nothing
            assert status == "ok", (pair, status)
            assert (version, releases) in ((1, before), (2, after)), pair
        versions = [version for _, version, _ in seen]
        assert versions == sorted(versions), f"pair {pair}: a reader went back to v1 after seeing v2"


def test_readers_are_concurrent_while_an_install_waits(sim, tmp_path):
    """A shared lock: a reader gets in while another reader holds the directory; an install
    (exclusive) waits until the reader lets go."""
    state = _open(tmp_path / "s", sim.keyring)
    state.install(sim.bundle())
    holding, release = _CTX.Event(), _CTX.Event()
    reader = _CTX.Process(target=_hold_shared, args=(str(tmp_path / "s"), holding, release))
    reader.start()
    installer = None
    try:
        assert holding.wait(timeout=30)
        assert state.active().version == 5                  # a second reader still gets in
        installer = _CTX.Process(target=_install, args=(tmp_path / "s", sim.keyring, sim.bundle(version=6)))
        installer.start()
        installer.join(timeout=1.0)
        assert installer.is_alive(), "an install ran while a reader held the directory"
    finally:
        release.set()
        reader.join(timeout=30)
        if installer is not None:
            installer.join(timeout=30)
    assert installer.exitcode == 0
    assert _open(tmp_path / "s", sim.keyring).active().version == 6


def _hold_shared(root, holding, release):
    from privmap.device.files import locked
    with locked(root, exclusive=False):
        holding.set()
        release.wait(timeout=30)


def _install(root, keyring, data):
    DeviceState(root, keyring, clock=lambda: NOW).install(data)


READERS = 12


def _read_until_stopped(root, keyring, ready, stop, queue):
    """Release through the state in a loop until ``stop``; put how many rounds (or the error)."""
    try:
        state, rounds = _open(root, keyring), 0
        while not stop.is_set():
            with state._store.locked(exclusive=False):   # a reader whose reads take 5 ms (a large
                time.sleep(0.005)                        # bundle, a slow disk), as active() holds it
            bundle = state.active()
            state.release_index(bundle, ROWS[1])
            rounds += 1
            if rounds == 1:
                ready.release()
        queue.put(rounds)
    except BaseException as exc:
        ready.release()
        queue.put(f"{type(exc).__name__}: {exc}")


def test_installs_are_not_starved_by_a_stream_of_readers(sim, tmp_path):
    """Twelve processes read in a loop, their shared locks overlapping without a gap; each of
    three installs still gets the exclusive lock within its wait (a waiting writer holds the
    turnstile, so new readers queue behind it), and every reader keeps going."""
    root = tmp_path / "s"
    state = _open(root, sim.keyring)
    state.install(sim.bundle(version=1))
    ready, stop, queue = _CTX.Semaphore(0), _CTX.Event(), _CTX.Queue()
    readers = [_CTX.Process(target=_read_until_stopped, args=(root, sim.keyring, ready, stop, queue))
               for _ in range(READERS)]
    for p in readers:
        p.start()
    waits = []
    try:
        for _ in readers:
            assert ready.acquire(timeout=30), "a reader did not start"
        for version in (2, 3, 4):
            started = time.monotonic()
            assert state.install(sim.bundle(version=version)).status == "installed"
            waits.append(time.monotonic() - started)
    finally:
        stop.set()
        rounds = [queue.get(timeout=60) for _ in readers]
        for p in readers:
            p.join(timeout=60)
    assert all(type(r) is int and r > 0 for r in rounds), rounds
    assert max(waits) < state.lock_wait, waits
    assert _open(root, sim.keyring).active().version == 4


def test_no_valid_bundle_is_not_raised_to_readers_on_a_fresh_directory_after_install(sim, tmp_path):
    root = tmp_path / "s"
    with pytest.raises(NoValidBundleError):
        _open(root, sim.keyring).active()
    _open(root, sim.keyring).install(sim.bundle())
    assert _open(root, sim.keyring).active().version == 5
