"""Reading a small file without blocking on a FIFO or device node."""
from __future__ import annotations

import os
import stat

__all__ = ["NotRegularFile", "read_regular"]


class NotRegularFile(OSError):
    """The path is a FIFO, socket, device or directory; it was opened non-blocking, never read."""


def read_regular(path, cap: int) -> bytes:
    """At most ``cap + 1`` bytes of the regular file ``path``.

    The file is opened with ``O_NONBLOCK`` (so opening a FIFO with no writer returns at once) and
    ``O_NOFOLLOW``, then checked with ``fstat``: anything but a regular file raises
    :class:`NotRegularFile`. The caller compares the length with ``cap``. Other failures raise
    ``OSError``.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
                 | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegularFile(f"{os.fspath(path)!r} is not a regular file")
        chunks, size = [], 0
        while size <= cap:
            chunk = os.read(fd, cap + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks)
