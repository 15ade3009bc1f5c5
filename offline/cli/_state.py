"""``privmap sanitize --state DIR``: the CLI as a device with installed state.

Kept apart from the command itself so that the sanitize command only chooses a release function.
"""
from __future__ import annotations

import pathlib
from typing import Callable

from privmap.device import Binding, Bundle, DeviceState, Keyring, RollbackError


def stateful_release(state_dir: pathlib.Path, bundle_path: pathlib.Path, keyring: Keyring,
                     min_version: int, binding: Binding | None = None) -> tuple[Bundle, Callable[[list], list]]:
    """Install ``bundle_path`` into the device state ``state_dir`` (created if absent) and return
    the bundle in use with its permanent release function (same row -> same released row).
    ``binding`` is the simulated device's configuration (device class, ...), checked at install.

    Raises whatever :meth:`DeviceState.install_file` and :meth:`DeviceState.active` raise
    (``RollbackError`` for a version below the installed one, ``EquivocationError``, ...);
    the state directory is then unchanged.
    """
    state = DeviceState(state_dir, keyring, binding=binding)
    state.install_file(bundle_path)
    loaded = state.active()
    if loaded.version < min_version:
        raise RollbackError(f"bundle version {loaded.version} is below the minimum {min_version}")
    return loaded, lambda cells: state.sanitize(loaded, cells)
