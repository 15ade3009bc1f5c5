"""Writing files so that no reader ever sees half of one: bundles, sanitized CSVs, schemas."""
from __future__ import annotations

import os
import pathlib
import tempfile

__all__ = ["atomic_write"]


def atomic_write(path: pathlib.Path, data: bytes) -> None:
    """Write ``data`` to ``path`` via a temporary file in the same folder and os.replace.

    The file gets the usual permissions (0666 less the umask), not mkstemp's 0600:
    bundles and sanitized CSVs are meant to be shared. On any error nothing is left.
    """
    path = pathlib.Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent or ".")
    umask = os.umask(0)
    os.umask(umask)
    try:
        os.fchmod(fd, 0o666 & ~umask)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        pathlib.Path(tmp).unlink(missing_ok=True)
        raise
