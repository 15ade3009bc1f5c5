"""Trusted keys of the commands that verify bundles: ``--trusted PEM`` or ``--keyring FILE``."""
from __future__ import annotations

import pathlib
import time

import click

from privmap.device import Keyring, KeyringChain
from privmap.device.errors import KeyringError

from .._errors import BuildError
from ._files import read_small_file


def trust_options(*, required: bool):
    """Decorator adding ``--trusted PEM`` and ``--keyring FILE`` (both repeatable; give one kind).

    The command receives ``trusted`` and ``keyrings`` (tuples of paths); pass them to
    :func:`trusted_keyring`. ``required`` only changes the help text: the check is made there.
    """
    path = click.Path(dir_okay=False, path_type=pathlib.Path)
    need = " Give --trusted or --keyring." if required else ""
    trusted = click.option(
        "--trusted", multiple=True, type=path,
        help="Trusted public key (PEM); repeat for several (any one signature suffices)." + need)
    keyring = click.option(
        "--keyring", "keyrings", multiple=True, type=path,
        help="Trusted keyring document (privmap keyring create|rotate): its keys and threshold, k of n. "
             "Repeat to walk rotations as a device does: the pinned version first, then each next one.")
    return lambda fn: trusted(keyring(fn))


def read_keyring_chain(paths) -> KeyringChain:
    """The keyring chain of ``paths``.

    The first document pinned, each later one a rotation checked as a device checks it
    (version + 1, both thresholds).

    Raises :class:`BuildError` naming the file for an unreadable or refused document.
    """
    from privmap.device.constants import MAX_KEYRING_BYTES
    chain = None
    for path in paths:
        document = read_small_file(path, MAX_KEYRING_BYTES, "keyring")
        try:
            if chain is None:
                chain = KeyringChain(document)
            else:
                chain.rotate(document)
        except KeyringError as exc:
            raise BuildError(f"keyring {str(path)!r} refused: {exc}") from None
    if chain is None:
        raise BuildError("no keyring document given")
    return chain


def trusted_keyring(trusted, keyrings, *, required: bool = True, now: float | None = None) -> Keyring | None:
    """The :class:`Keyring` a command verifies with, or ``None``.

    PEM keys (threshold 1) or the current keyring of a keyring chain at ``now`` (default: the
    clock), or ``None`` when neither is given and not ``required``. Raises
    :class:`click.UsageError` (exit 2) for both or (``required``) neither, and
    :class:`BuildError` or :class:`KeyringError` for unreadable, refused or expired keys.
    """
    if trusted and keyrings:
        raise click.UsageError("give either --trusted PEM keys or --keyring documents, not both")
    if trusted:
        return Keyring.from_pem_files(*trusted)
    if keyrings:
        return read_keyring_chain(keyrings).current(time.time() if now is None else now)
    if required:
        raise click.UsageError("no trusted key: give --trusted PEM (repeatable) or --keyring FILE")
    return None
