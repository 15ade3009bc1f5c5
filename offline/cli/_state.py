"""``privmap sanitize --state DIR`` and ``privmap state``: the CLI as a device with installed state.

Kept apart from the sanitize command so that it only chooses a release function. The state
directory keeps the keys it trusts (``DeviceState``): the keys given with ``--trusted`` must be
those, and other keys are taken only as a signed keyring rotation (``privmap state rotate``).
"""
from __future__ import annotations

import pathlib
from typing import Callable

import click
from privmap.device import Binding, Bundle, DeviceState, Keyring, RollbackError, StateError

from ._common import emit, guard

_DIR = click.Path(file_okay=False, path_type=pathlib.Path)
_FILE = click.Path(dir_okay=False, path_type=pathlib.Path)


def stateful_release(state_dir: pathlib.Path, bundle_path: pathlib.Path, keyring: Keyring,
                     min_version: int, binding: Binding | None = None) -> tuple[Bundle, Callable[[list], list]]:
    """Install ``bundle_path`` into the device state ``state_dir`` (created if absent, pinning
    ``keyring``) and return the bundle in use with its permanent release function (same row ->
    same released row). ``keyring`` however it was loaded (PEM keys, a keyring document) must be
    the one the directory trusts. ``binding`` is the simulated device's configuration (device
    class, ...), checked at install. Offering the active bundle again repairs a lost or damaged
    stored copy of it.

    Raises whatever :class:`DeviceState` and its ``install_file`` and ``active`` raise
    (``KeyringMismatchError`` for other keys, ``RollbackError`` for a version below the floor,
    ``EquivocationError``, ...; the state directory is then unchanged), and :class:`StateError`
    rather than release under the previous bundle when the active one's stored copy fails.
    """
    state = DeviceState(state_dir, keyring, binding=binding)
    state.install_file(bundle_path)
    loaded = state.active()
    if loaded.sha256 != state.active_sha256:
        raise StateError(f"the stored copy of the active bundle fails ({state.last_error}); offer that "
                         "bundle again to restore it (nothing was released)")
    if loaded.version < min_version:
        raise RollbackError(f"bundle version {loaded.version} is below the minimum {min_version}")
    return loaded, lambda cells: state.sanitize(loaded, cells)


@click.group("state")
def state():
    """A device state directory made by sanitize --state DIR: show it, rotate its keys.

    \b
    The directory keeps the keys it trusts. To move it to other keys, make a
    keyring document signed by the keys it trusts now and by the new ones
    (privmap keyring create / rotate), then:
      privmap state rotate DIR keyring-v1.bin
    """


@state.command("rotate")
@click.argument("state_dir", metavar="DIR", type=_DIR)
@click.argument("documents", metavar="KEYRING...", nargs=-1, required=True, type=_FILE)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@guard
def rotate(state_dir, documents, as_json):
    """Rotate the keys DIR trusts through the signed keyring documents KEYRING..., in order.

    Each must be the next version, signed by a threshold of the keys DIR trusts
    and of its own keys; if one fails nothing changes. The version and time
    floors are then what the new keys still vouch for.
    """
    device = _existing(state_dir)
    applied = device.rotate_keyring([path.read_bytes() for path in documents])
    info = {"dir": str(state_dir), "applied": applied, "keyring_version": device.keyring_version,
            "version": device.installed_version, "time_floor": device.time_floor}
    if as_json:
        emit(info)
    else:
        click.echo(f"{state_dir}: keyring version {info['keyring_version']} ({applied} rotation(s)); "
                   f"version floor {info['version']}, time floor {info['time_floor']}")


@state.command("show")
@click.argument("state_dir", metavar="DIR", type=_DIR)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@guard
def show(state_dir, as_json):
    """Show DIR's status: bundle in use, floors, keyring version, last error."""
    report = _existing(state_dir).status()
    if as_json:
        emit(report)
        return
    for key, value in report.items():
        click.echo(f"{key}: {value}")


def _existing(state_dir: pathlib.Path) -> DeviceState:
    if not (state_dir / "state.json").exists():
        raise StateError(f"{state_dir} is not a device state directory (no state.json)")
    return DeviceState(state_dir)
