"""Writing files so that no reader ever sees half of one: bundles, sanitized CSVs, schemas."""
from __future__ import annotations

import contextlib
import os
import pathlib
import tempfile

__all__ = ["atomic_write", "atomic_output"]


@contextlib.contextmanager
def atomic_output(path: pathlib.Path, *, binary: bool = False):
    r"""A file to write ``path`` by streaming: a text file (UTF-8, ``\n`` line ends), or a binary one.

    What is written goes to a temporary file in the same folder, which is fsynced and renamed
    over ``path`` when the ``with`` block ends normally; on any exception it is removed and ``path``
    is as it was, so no reader ever sees half of the file. The file gets the usual permissions
    (0666 less the umask), not mkstemp's 0600: bundles and sanitized CSVs are meant to be shared.

    Raises ``OSError`` (the folder cannot be written, the disk is full, the rename fails).
    """
    path = pathlib.Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent or ".")
    umask = os.umask(0)
    os.umask(umask)
    try:
        os.fchmod(fd, 0o666 & ~umask)
        with (os.fdopen(fd, "wb") if binary else open(fd, "w", encoding="utf-8", newline="")) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        pathlib.Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write(path: pathlib.Path, data: bytes) -> None:
    """Write ``data`` to ``path`` whole or not at all (:func:`atomic_output`)."""
    with atomic_output(path, binary=True) as f:
        f.write(data)
