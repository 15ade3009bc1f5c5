"""``privmap sanitize --state DIR`` and ``privmap state``: the CLI as a device with installed state.

Kept apart from the sanitize command so that it only chooses a release function. The state
directory keeps the keys it trusts (``DeviceState``): the keys given with ``--trusted`` must be
those, and other keys are taken only as a signed keyring rotation (``privmap state rotate``).
``--counter FILE`` simulates the firmware's monotonic counter with a file (:class:`FileCounter`),
and ``privmap state reprovision`` is the operator's way back for a counter-bound device whose
directory was lost. No lock is waited for longer than ``--lock-wait`` seconds.
"""
from __future__ import annotations

import os
import pathlib
from collections.abc import Callable

import click

from privmap.device import Binding, Bundle, DeviceState, Keyring
from privmap.device.constants import DEFAULT_LOCK_WAIT, MAX_KEYRING_BYTES
from privmap.device.errors import RollbackError, StateError, StateLockedError
from privmap.device.files import NotRegularFile, read_regular
from privmap.device.kinds import GaussianBundle, NullspaceBundle

from .._errors import BuildError
from .._files import atomic_write
from ..commandline import emit, guard, read_small_file, trust_options, trusted_keyring

_DIR = click.Path(file_okay=False, path_type=pathlib.Path)
_FILE = click.Path(dir_okay=False, path_type=pathlib.Path)
_MAX_COUNTER_BYTES = 32


class FileCounter:
    """A monotonic counter kept in a file: the command line's stand-in for the firmware's hardware counter.

    Given with ``--counter FILE``; it has :class:`privmap.device.MonotonicCounter`'s interface.

    The file holds the value in decimal ASCII; a missing file reads 0 (a device never
    committed), so deleting it later makes every state that committed to a higher value
    refused ("ahead of the device counter"), never accepted. It protects a state directory
    against replay only where the file itself cannot be put back with it: keep it out of the
    state directory (refused there) and on storage the replaying party cannot rewrite. Each
    increment is an atomic write (temp file, fsync, rename); :class:`DeviceState` increments
    only under the directory's exclusive lock, so one counter per state directory is safe.
    """

    def __init__(self, path: pathlib.Path):
        self.path = pathlib.Path(path)

    def read(self) -> int:
        """The value, an int >= 0.

        Raises ``OSError`` or ``ValueError`` for an unreadable file, one that is not a regular file,
        or text that is not a decimal number.
        """
        try:
            raw = read_regular(self.path, _MAX_COUNTER_BYTES)
        except FileNotFoundError:
            return 0
        except NotRegularFile:
            raise ValueError(f"counter {str(self.path)!r} is not a regular file") from None
        text = raw.decode("ascii", "replace").strip()
        if len(raw) > _MAX_COUNTER_BYTES or not text.isdigit() or not text.isascii():
            raise ValueError(f"counter file {str(self.path)!r} does not hold a decimal number")
        return int(text)

    def increment(self) -> int:
        """Write the value plus one, atomically, and return it."""
        value = self.read() + 1
        atomic_write(self.path, f"{value}\n".encode("ascii"))
        return value


def inside(path: pathlib.Path, directory: pathlib.Path) -> bool:
    """Whether ``path``, links resolved, is ``directory`` or lies under it.

    Checked by name, and by identity, ``(st_dev, st_ino)`` of ``path`` and each of its existing
    ancestors against ``directory``'s, so that a bind mount of the directory (another name for the
    same files) is caught too.
    """
    real, folder = os.path.realpath(path), os.path.realpath(directory)
    if real == folder or real.startswith(folder.rstrip(os.sep) + os.sep):
        return True
    try:
        target = os.stat(folder)
    except OSError:
        return False
    here = real
    while True:
        try:
            info = os.stat(here)
        except OSError:
            pass                                   # not there (yet): its parent may be
        else:
            if (info.st_dev, info.st_ino) == (target.st_dev, target.st_ino):
                return True
        parent = os.path.dirname(here)
        if parent == here:
            return False
        here = parent


def file_counter(counter: pathlib.Path | None, state_dir: pathlib.Path) -> FileCounter | None:
    """The :class:`FileCounter` of ``--counter`` (None without one).

    Raises :class:`BuildError` for a counter file inside the state directory (it would be put back
    with it).
    """
    if counter is None:
        return None
    if inside(counter, state_dir):
        raise BuildError(f"--counter {counter} is inside the state directory {state_dir}: a counter must live "
                         "where the state cannot be put back with it")
    return FileCounter(counter)


def _locked_hint(exc: StateLockedError) -> StateLockedError:
    return StateLockedError(f"{exc} (--lock-wait SECONDS waits longer)", exc.holders)


def stateful_release(state_dir: pathlib.Path, bundle_path: pathlib.Path, keyring: Keyring,
                     min_version: int, binding: Binding | None = None, *, counter: FileCounter | None = None,
                     lock_wait: float = DEFAULT_LOCK_WAIT,
                     ) -> tuple[Bundle | GaussianBundle | NullspaceBundle, Callable[[list], list]]:
    """Install ``bundle_path`` into the device state ``state_dir``; return the bundle in use and its release.

    The state directory is created if absent, pinning ``keyring``. The release function returned
    with the bundle is its permanent one (same row -> same released row). ``keyring`` however it
    was loaded (PEM keys, a keyring document) must be the one the directory trusts. ``binding`` is
    the simulated device's configuration (device class, ...), checked at install. Offering the
    active bundle again repairs a lost or damaged stored copy of it, and takes only a shared lock
    when the copy is intact. ``counter`` binds the state to a monotonic counter; ``lock_wait``
    bounds every wait for the directory's lock.

    Raises whatever :class:`DeviceState` and its ``install_file`` and ``active`` raise
    (``KeyringMismatchError`` for other keys, ``RollbackError`` for a version below the floor,
    ``EquivocationError``, ``StateLockedError`` when another process holds the lock for all of
    ``lock_wait``, ...; the state directory is then unchanged), and :class:`StateError` rather
    than release under the previous bundle when the active one's stored copy fails.
    """
    try:
        state = DeviceState(state_dir, keyring, binding=binding, counter=counter, lock_wait=lock_wait)
        state.install_file(bundle_path)
        loaded = state.active()
    except StateLockedError as exc:
        raise _locked_hint(exc) from None
    if loaded.sha256 != state.active_sha256:
        raise StateError(f"the stored copy of the active bundle fails ({state.last_error}); offer that "
                         "bundle again to restore it (nothing was released)")
    if loaded.version < min_version:
        raise RollbackError(f"bundle version {loaded.version} is below the minimum {min_version}")
    return loaded, lambda cells: state.sanitize(loaded, cells)


def counter_option(fn):
    """``--counter FILE``: the simulated device's monotonic counter (:class:`FileCounter`)."""
    return click.option("--counter", type=_FILE, default=None,
                        help="Bind the state to a monotonic counter kept in FILE (a missing file reads 0), as "
                             "firmware binds it to a hardware counter: an old state put back is then refused. "
                             "Keep FILE outside DIR; give it on every use of DIR.")(fn)


def lock_wait_option(fn):
    """``--lock-wait SECONDS``: how long to wait for the state directory's lock."""
    return click.option("--lock-wait", type=click.FloatRange(min=0, max=86400), default=DEFAULT_LOCK_WAIT,
                        show_default=True,
                        help="Seconds to wait for the state directory's lock held by another process, then "
                             "fail with one error line naming it (0: do not wait).")(fn)


@click.group("state")
def state():
    """A device state directory made by sanitize --state DIR: show it, rotate its keys, re-provision it.

    \b
    The directory keeps the keys it trusts. To move it to other keys, make a
    keyring document signed by the keys it trusts now and by the new ones
    (privmap keyring create / rotate), then:
      privmap state rotate DIR keyring-v1.bin
    A directory bound to a counter (--counter FILE) that was lost is made
    afresh only by: privmap state reprovision DIR --counter FILE --trusted PEM
    """  # noqa: D301 - click's no-rewrap marker \b must stay a backspace, which a raw string would not make


@state.command("rotate")
@click.argument("state_dir", metavar="DIR", type=_DIR)
@click.argument("documents", metavar="KEYRING...", nargs=-1, required=True, type=_FILE)
@counter_option
@lock_wait_option
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@guard
def rotate(state_dir, documents, counter, lock_wait, as_json):
    """Rotate the keys DIR trusts through the signed keyring documents KEYRING..., in order.

    Each must be the next version, signed by a threshold of the keys DIR trusts
    and of its own keys; if one fails nothing changes. The version and time
    floors are then what the new keys still vouch for: a date a kept key signed
    beyond the new keyring's window (after its expiry, or over a day after the
    clock) is reset, so a bundle issued now installs right after.
    """
    device = _existing(state_dir, counter, lock_wait)
    try:
        applied = device.rotate_keyring([read_small_file(path, MAX_KEYRING_BYTES, "keyring") for path in documents])
    except StateLockedError as exc:
        raise _locked_hint(exc) from None
    info = {"dir": str(state_dir), "applied": applied, "keyring_version": device.keyring_version,
            "version": device.installed_version, "time_floor": device.time_floor}
    if as_json:
        emit(info)
    else:
        click.echo(f"{state_dir}: keyring version {info['keyring_version']} ({applied} rotation(s)); "
                   f"version floor {info['version']}, time floor {info['time_floor']}")


@state.command("show")
@click.argument("state_dir", metavar="DIR", type=_DIR)
@counter_option
@lock_wait_option
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@guard
def show(state_dir, counter, lock_wait, as_json):
    """Show DIR's status: bundle in use, floors, keyring version, last error.

    Reads only (a shared lock): never held up by another reader.
    """
    try:
        report = _existing(state_dir, counter, lock_wait).status()
    except StateLockedError as exc:
        raise _locked_hint(exc) from None
    if as_json:
        emit(report)
        return
    for key, value in report.items():
        click.echo(f"{key}: {value}")


@state.command("reprovision")
@click.argument("state_dir", metavar="DIR", type=_DIR)
@click.option("--counter", type=_FILE, required=True, help="The device's monotonic counter file.")
@trust_options(required=True)
@lock_wait_option
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@guard
def reprovision(state_dir, counter, trusted, keyrings, lock_wait, as_json):
    """Make DIR afresh for a counter-bound device whose state directory was lost.

    A device bound to a counter refuses to start over by itself (the counter
    says states were committed: a wiped directory). This explicit command makes
    a fresh DIR (absent or empty: move the old one aside) bound at the counter's
    current value, trusting --trusted / --keyring. It is a new device as far as
    releases go (a new secret: every input is released with new draws), and the
    old directory put back is refused from then on. Offer the current bundle next.
    """
    keyring = trusted_keyring(trusted, keyrings)
    try:
        device = DeviceState.reprovision(state_dir, keyring, counter=file_counter(counter, state_dir),
                                         lock_wait=lock_wait)
    except StateLockedError as exc:
        raise _locked_hint(exc) from None
    info = {"dir": str(state_dir), "counter": device.status()["counter"], "keyring_version": device.keyring_version}
    if as_json:
        emit(info)
    else:
        click.echo(f"{state_dir}: re-provisioned, bound at counter {info['counter']}; "
                   "a new device as far as releases go")


def _existing(state_dir: pathlib.Path, counter: pathlib.Path | None = None,
              lock_wait: float = DEFAULT_LOCK_WAIT) -> DeviceState:
    if not (state_dir / "state.json").exists():
        raise StateError(f"{state_dir} is not a device state directory (no state.json)")
    return DeviceState(state_dir, counter=file_counter(counter, state_dir), lock_wait=lock_wait)
