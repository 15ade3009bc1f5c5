"""Small files of the device: reading without blocking, writing atomically, locking a directory.

The state directory (``_state.py``) needs POSIX: ``fcntl.flock`` advisory locks, ``rename`` and
``link`` that are atomic within one directory, and ``fsync`` of a directory. On a platform without
``fcntl`` this module still imports (the bundle loader does not need it); :func:`locked` then
raises :class:`LockUnavailable`.
"""
from __future__ import annotations

import contextlib
import os
import stat

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no state directory, bundles still load
    fcntl = None

__all__ = ["NotRegularFile", "LockUnavailable", "read_regular", "atomic_write", "create_exclusive",
           "fsync_dir", "locked", "TMP_PREFIX"]

#: Every temporary file this module writes starts with this prefix.
TMP_PREFIX = ".tmp-"
_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


class NotRegularFile(OSError):
    """The path is a FIFO, socket, device or directory; it was opened non-blocking, never read."""


class LockUnavailable(OSError):
    """The platform has no ``fcntl.flock`` (not POSIX): a state directory cannot be locked."""


def read_regular(path, cap: int, *, private: bool = False) -> bytes:
    """At most ``cap + 1`` bytes of the regular file ``path``.

    The file is opened with ``O_NONBLOCK`` (so opening a FIFO with no writer returns at once) and
    ``O_NOFOLLOW``, then checked with ``fstat``: anything but a regular file raises
    :class:`NotRegularFile`. With ``private`` a file that grants any permission to group or
    others (mode & 0o077) raises ``PermissionError`` naming the mode. The caller compares the
    length with ``cap``. Other failures raise ``OSError``.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
                 | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegularFile(f"{os.fspath(path)!r} is not a regular file")
        if private and info.st_mode & 0o077:
            mode = stat.S_IMODE(info.st_mode)
            raise PermissionError(f"{os.fspath(path)!r} is open to group or others (mode {mode:04o}); "
                                  f"run: chmod 600 {os.fspath(path)!r}")
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


def fsync_dir(path: str) -> None:
    """``fsync`` the directory ``path`` (makes a rename or link in it durable)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_temp(directory: str, name: str, data: bytes, mode: int) -> str:
    """A new, fsynced temp file in ``directory`` holding ``data``; its path. Its name is unique
    (pid and 8 random bytes) and created with ``O_EXCL``, so two writers never share one."""
    tmp = os.path.join(directory, f"{TMP_PREFIX}{name}.{os.getpid()}.{os.urandom(8).hex()}")
    fd = os.open(tmp, _WRITE_FLAGS, mode)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
    except BaseException:
        _unlink_quietly(tmp)
        raise
    return tmp


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def atomic_write(directory: str, name: str, data: bytes, mode: int = 0o600) -> None:
    """Write ``data`` to ``directory/name``: temp file, fsync, rename, fsync directory.

    On any failure the temp file is removed and ``directory/name`` is as it was."""
    tmp = _write_temp(directory, name, data, mode)
    try:
        os.replace(tmp, os.path.join(directory, name))
    except BaseException:
        _unlink_quietly(tmp)
        raise
    fsync_dir(directory)


def create_exclusive(directory: str, name: str, data: bytes, mode: int = 0o600) -> bool:
    """Create ``directory/name`` holding ``data`` only if no such name exists; True if this
    call created it, False if it existed.

    The bytes are written to a temp file and fsynced first, then ``link``-ed to the name (which
    fails if the name exists), so the name never points at a partial file and two callers
    never both succeed: exactly one file, whole, ever appears under ``name``.
    """
    tmp = _write_temp(directory, name, data, mode)
    try:
        os.link(tmp, os.path.join(directory, name))
    except FileExistsError:
        return False
    finally:
        _unlink_quietly(tmp)
    fsync_dir(directory)
    return True


@contextlib.contextmanager
def locked(directory: str, *, exclusive: bool):
    """Hold a ``flock`` advisory lock on the directory itself (shared or exclusive) for the
    ``with`` block. The lock is on the directory's open file description, so it is released
    when the block ends or the process dies (kill -9 included); nothing is left on disk.

    Raises :class:`LockUnavailable` where ``fcntl`` is missing and ``OSError`` if the directory
    cannot be opened.
    """
    if fcntl is None:  # pragma: no cover - not POSIX
        raise LockUnavailable("a state directory needs POSIX advisory locks (fcntl.flock)")
    fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)
