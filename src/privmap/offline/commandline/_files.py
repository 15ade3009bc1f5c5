"""The small files a command reads whole (keys, keyring documents, bundles, passphrases).

Each a regular file of bounded size, read once without blocking.
"""
from __future__ import annotations

from privmap.device.files import NotRegularFile, read_regular

from .._errors import BuildError


def read_small_file(path, cap: int, what: str) -> bytes:
    """The bytes of the regular file ``path``, at most ``cap`` of them.

    The file is opened non-blocking and checked before anything is read
    (:func:`privmap.device.files.read_regular`), so a FIFO is refused at once and a device
    such as ``/dev/zero`` is never read.

    Raises
    ------
    BuildError
        One line naming ``what`` and the path: not a regular file, unreadable, or larger than
        ``cap`` bytes.
    """
    try:
        data = read_regular(path, cap)
    except NotRegularFile:
        raise BuildError(f"{what} {str(path)!r} is not a regular file") from None
    except OSError as exc:
        raise BuildError(f"cannot read {what} {str(path)!r}: {exc.strerror or exc}") from None
    if len(data) > cap:
        raise BuildError(f"{what} {str(path)!r} is larger than {cap} bytes")
    return data
