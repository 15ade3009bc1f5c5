"""``--passphrase-file``: the passphrase of an encrypted private key, read from a file.

Never from a command-line argument (visible to every user in ``ps``) and never echoed.
"""
from __future__ import annotations

import pathlib

import click

from .._errors import BuildError
from ._files import read_small_file

_MAX_PASSPHRASE_BYTES = 4096

#: The click option shared by ``keygen`` and ``build``.
passphrase_option = click.option(
    "--passphrase-file", type=click.Path(dir_okay=False, path_type=pathlib.Path),
    envvar="PRIVMAP_PASSPHRASE_FILE", show_envvar=True,
    help="File whose first line is the private key's passphrase (keygen: encrypt the new key; "
         "build: decrypt it).")


def read_passphrase(path: pathlib.Path | None) -> bytes | None:
    """The passphrase in ``path`` (first line, trailing newline removed), or None without a path.

    Raises :class:`BuildError` for an unreadable, non-regular, oversized or empty file.
    """
    if path is None:
        return None
    data = read_small_file(path, _MAX_PASSPHRASE_BYTES, "passphrase file")
    passphrase = data.split(b"\n", 1)[0].rstrip(b"\r")
    if not passphrase:
        raise BuildError(f"passphrase file {str(path)!r} is empty")
    return passphrase
