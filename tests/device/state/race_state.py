"""Count lost races on one state directory, with the directory lock and with it turned off.

    python tests/device/state/race_state.py --pairs 40

Runs the three scenarios of test_device_state_concurrency.py (fresh directory, racing v2/v3
installs, an install racing releases) ``--pairs`` times each, first with ``DeviceState`` as it is,
then with its lock replaced by a no-op (what the state did before it locked its directory, as far
as locking goes), and prints how many pairs broke each rule, side by side.
"""
from __future__ import annotations

import argparse
import contextlib
import pathlib
import sys
import tempfile

_HERE = pathlib.Path(__file__).resolve().parent
sys.path[:0] = [str(_HERE), str(_HERE.parent)]  # the state tests it runs, the device harness

from harness import Sim  # noqa: E402
from test_device_state_concurrency import (  # noqa: E402
    ROWS,
    _final,
    _install_and_release,
    _open,
    _release_many,
    race,
)

from privmap.device import PrivmapDeviceError  # noqa: E402
from privmap.device.state._store import Store  # noqa: E402


def fresh(sim, root) -> list[str]:
    a, b = race((_install_and_release, (root, sim.keyring, sim.bundle())),
                (_install_and_release, (root, sim.keyring, sim.bundle())))
    broken = [f"refused ({r[1]})" for r in (a, b) if r[0] == "refused"]
    if a[3] and b[3] and a[3] != b[3]:
        broken.append("two secrets")
    if a[2] and b[2] and a[2] != b[2]:
        broken.append("different releases")
    try:
        _final(root, sim.keyring)
    except PrivmapDeviceError:
        broken.append("directory unusable")
    return broken


def versions(sim, root) -> list[str]:
    _open(root, sim.keyring).install(sim.bundle(version=1))
    a, b = race((_install_and_release, (root, sim.keyring, sim.bundle(version=2))),
                (_install_and_release, (root, sim.keyring, sim.bundle(version=3))))
    broken = [f"v3 refused ({b[1]})"] if b[0] == "refused" else []
    try:
        state, bundle, _ = _final(root, sim.keyring)
    except PrivmapDeviceError:
        return ["directory unusable"]
    if b[0] == "installed" and state.installed_version < 3:
        broken.append("floor below a reported success")
    if bundle.sha256 != state.active_sha256:
        broken.append("active bundle deleted (fallback)")
    return broken


def releases(sim, root) -> list[str]:
    state = _open(root, sim.keyring)
    state.install(sim.bundle(version=1))
    try:
        _, seen = race((_install_and_release, (root, sim.keyring, sim.bundle(version=2))),
                       (_release_many_safe, (root, sim.keyring, 20)))
    except BaseException:
        return ["reader crashed"]
    return sorted({"reader saw " + s for s in seen if s != "ok"})


def _release_many_safe(root, keyring, rounds):
    try:
        return [status for status, _, _ in _release_many(root, keyring, rounds)]
    except PrivmapDeviceError as exc:
        return [type(exc).__name__]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=40)
    args = parser.parse_args()
    sim = Sim()
    print(f"{args.pairs} pairs per scenario; pairs that broke a rule (with lock | lock turned off)")
    counts = {}
    for locking in (True, False):
        if not locking:
            Store.locked = lambda self, *, exclusive, wait=None: contextlib.nullcontext()
        for scenario in (fresh, versions, releases):
            with tempfile.TemporaryDirectory() as tmp:
                tally = {}
                for pair in range(args.pairs):
                    for rule in scenario(sim, pathlib.Path(tmp) / f"d{pair}") or ["(none)"]:
                        tally[rule] = tally.get(rule, 0) + 1
            counts[(scenario.__name__, locking)] = tally
    for scenario in ("fresh", "versions", "releases"):
        rules = sorted(set(counts[(scenario, True)]) | set(counts[(scenario, False)]))
        for rule in rules:
            print(f"  {scenario:9s} {rule:36s} {counts[(scenario, True)].get(rule, 0):4d} | "
                  f"{counts[(scenario, False)].get(rule, 0):4d}")
    print("(ROWS released per process:", len(ROWS), ")")


if __name__ == "__main__":
    main()
