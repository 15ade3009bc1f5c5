"""Small files of the device: reading without blocking, writing atomically, locking a directory.

Public so that the offline tools read key, passphrase and keyring files as the device does.
The state directory (:mod:`privmap.device.state`) needs POSIX: ``fcntl.flock`` advisory locks, ``rename`` and
``link`` that are atomic within one directory, and ``fsync`` of a directory. On a platform without
``fcntl`` this module still imports (the bundle loader does not need it); :func:`locked` then
raises :class:`LockUnavailable`.

A directory is given as a path or as the descriptor of a directory held open (an ``int``):
with a descriptor every access is relative to it (``dir_fd``), so renaming or swapping the
directory's path after it was opened and checked changes nothing; the writer keeps writing in
the directory it checked.

A lock is never waited for without bound: :func:`locked` polls a non-blocking ``flock`` until
its ``wait`` runs out, then raises :class:`LockTimeout` naming the processes that hold the lock
where the platform tells them (Linux's ``/proc/locks``), so a stopped holder or a reader that
never finishes costs a caller at most ``wait`` seconds and one clear error. With a turnstile
(a second directory's lock that a writer holds exclusively from before it waits, and a reader
only until it is in) a waiting writer keeps new readers out, so a stream of readers cannot
starve it.
"""
from __future__ import annotations

import contextlib
import errno
import os
import stat
import time
from collections.abc import Iterator
from types import ModuleType
from typing import Union

from .constants import DEFAULT_LOCK_WAIT

fcntl: ModuleType | None
try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no state directory, bundles still load
    fcntl = None

__all__ = ["NotRegularFile", "LockUnavailable", "LockTimeout", "Directory", "read_regular", "atomic_write",
           "create_exclusive", "fsync_dir", "open_directory", "locked", "lock_holders", "check_private",
           "check_ancestors", "TMP_PREFIX"]

#: Every temporary file this module writes starts with this prefix.
TMP_PREFIX = ".tmp-"
#: A directory: its path, or the descriptor of the directory held open (accesses relative to it).
Directory = Union[str, "os.PathLike[str]", int]
_NOFOLLOW, _CLOEXEC = getattr(os, "O_NOFOLLOW", 0), getattr(os, "O_CLOEXEC", 0)
_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _CLOEXEC


class NotRegularFile(OSError):
    """The path is a FIFO, socket, device or directory; it was opened non-blocking, never read."""


class LockUnavailable(OSError):
    """The platform has no ``fcntl.flock`` (not POSIX): a state directory cannot be locked."""


class LockTimeout(OSError):
    """The lock, not free within the wait.

    The lock was not free within the wait. ``holders`` lists the pids holding a lock on the
    directory (empty where the platform does not tell them); ``wait`` is the wait, seconds.
    """

    def __init__(self, message: str, holders: list[int], wait: float) -> None:
        super().__init__(errno.EWOULDBLOCK, message)
        self.holders, self.wait = holders, wait


def read_regular(path: str | os.PathLike[str], cap: int, *, private: bool = False, dir_fd: int | None = None,
                 label: str | None = None) -> bytes:
    """The bytes of a regular file, read once and bounded.

    At most ``cap + 1`` bytes of the regular file ``path`` (relative to the open directory
    ``dir_fd`` if given; messages call it ``label``, ``path`` by default).

    The file is opened with ``O_NONBLOCK`` (so opening a FIFO with no writer returns at once) and
    ``O_NOFOLLOW``, then checked with ``fstat``: anything but a regular file raises
    :class:`NotRegularFile`. With ``private`` a file that grants any permission to group or
    others (mode & 0o077) raises ``PermissionError`` naming the mode. The caller compares the
    length with ``cap``. Other failures raise ``OSError``.
    """
    shown = os.fspath(path) if label is None else label
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | _NOFOLLOW | _CLOEXEC, dir_fd=dir_fd)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegularFile(f"{shown!r} is not a regular file")
        if private:
            check_private(shown, info, "600")
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


def check_private(path: str | os.PathLike[str], info: os.stat_result, fix_mode: str) -> None:
    """The check that a file is the effective user's alone.

    Raise ``PermissionError`` unless ``info`` (the ``stat`` of ``path``) is owned by the
    effective user and grants nothing to group or others (mode & 0o077 == 0).

    The message is one line ending with the command that fixes it (``chown UID PATH`` or
    ``chmod FIX_MODE PATH``). Whoever owns a file, or may read it, knows what it holds: for
    the device secret that is every release's randomness.
    """
    euid = os.geteuid() if hasattr(os, "geteuid") else None
    if euid is not None and info.st_uid != euid:
        raise PermissionError(f"{os.fspath(path)!r} is owned by uid {info.st_uid}, not by the effective "
                              f"user (uid {euid}); run: chown {euid} {os.fspath(path)!r}")
    if info.st_mode & 0o077:
        mode = stat.S_IMODE(info.st_mode)
        writable = ", group- or world-writable" if info.st_mode & 0o022 else ""
        raise PermissionError(f"{os.fspath(path)!r} is open to group or others (mode {mode:04o}{writable}); "
                              f"run: chmod {fix_mode} {os.fspath(path)!r}")


def check_ancestors(path: str | os.PathLike[str]) -> None:
    """The check that no other user can rename a path away.

    Raise ``PermissionError`` if another user could rename ``path`` away (and put another
    in its place): an existing directory above it that is writable by others without the
    sticky bit, or owned by a uid other than root's and the effective user's.

    Both chains are checked: the directories named by ``path`` as written (each resolved as the
    lookup resolves it) and those of its real path (links resolved). The message is one line
    ending with the command that fixes it. Nothing is checked where the platform has no uids.
    """
    if not hasattr(os, "geteuid"):  # pragma: no cover - not POSIX
        return
    euid = os.geteuid()
    for chain_end in (os.path.abspath(path), os.path.realpath(path)):
        here = os.path.dirname(chain_end)
        while True:
            try:
                info = os.stat(here)
            except FileNotFoundError:
                info = None                         # to be created (mode 0700): its parent decides
            if info is not None:
                if info.st_uid not in (0, euid):
                    raise PermissionError(f"{here!r}, above {os.fspath(path)!r}, is owned by uid {info.st_uid}, "
                                          f"who could move the directory away; use a directory whose every "
                                          f"ancestor is yours or root's, or run: chown {euid} {here!r}")
                if info.st_mode & stat.S_IWOTH and not info.st_mode & stat.S_ISVTX:
                    raise PermissionError(f"{here!r}, above {os.fspath(path)!r}, is writable by others without "
                                          f"the sticky bit, so anyone could move the directory away; "
                                          f"run: chmod o-w {here!r} (or chmod +t {here!r})")
            parent = os.path.dirname(here)
            if parent == here:
                break
            here = parent


def open_directory(path: str | os.PathLike[str], *, dir_fd: int | None = None) -> int:
    """A descriptor of a directory, links refused.

    A descriptor of the directory ``path`` (relative to ``dir_fd`` if given), opened with
    ``O_DIRECTORY`` and ``O_NOFOLLOW``: a symlink or anything but a directory in its place raises
    ``OSError`` (``ELOOP``, ``ENOTDIR``). The caller closes it.
    """
    return os.open(path, _DIR_FLAGS | _NOFOLLOW, dir_fd=dir_fd)


@contextlib.contextmanager
def _held(directory: Directory) -> Iterator[int]:
    """A descriptor of a directory for a ``with`` block.

    The descriptor of ``directory`` for a ``with`` block: the one given, or the path opened
    (links followed, as a lookup of a file in it would) and closed after.
    """
    if isinstance(directory, int):
        yield directory
        return
    fd = os.open(directory, _DIR_FLAGS)
    try:
        yield fd
    finally:
        os.close(fd)


def fsync_dir(directory: Directory) -> None:
    """``fsync`` the directory (a path or an open descriptor): makes a rename or link in it durable."""
    with _held(directory) as fd:
        os.fsync(fd)


def _write_temp(dir_fd: int, name: str, data: bytes, mode: int) -> str:
    """A new fsynced temp file's name.

    A new, fsynced temp file in the directory ``dir_fd`` holding ``data``; its name. The name is
    unique (pid and 8 random bytes) and created with ``O_EXCL``, so two writers never share one.
    """
    tmp = f"{TMP_PREFIX}{name}.{os.getpid()}.{os.urandom(8).hex()}"
    fd = os.open(tmp, _WRITE_FLAGS, mode, dir_fd=dir_fd)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
    except BaseException:
        _unlink_quietly(tmp, dir_fd)
        raise
    return tmp


def _unlink_quietly(name: str, dir_fd: int) -> None:
    with contextlib.suppress(OSError):
        os.unlink(name, dir_fd=dir_fd)


def atomic_write(directory: Directory, name: str, data: bytes, mode: int = 0o600) -> None:
    """An atomic write of a file.

    Write ``data`` to ``name`` in ``directory`` (a path or an open descriptor): temp file,
    fsync, rename, fsync directory.

    On any failure the temp file is removed and ``name`` is as it was.
    """
    with _held(directory) as dir_fd:
        tmp = _write_temp(dir_fd, name, data, mode)
        try:
            os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            _unlink_quietly(tmp, dir_fd)
            raise
        os.fsync(dir_fd)


def create_exclusive(directory: Directory, name: str, data: bytes, mode: int = 0o600) -> bool:
    """Whether this call created a new file.

    Create ``name`` in ``directory`` (a path or an open descriptor) holding ``data`` only if
    no such name exists; True if this call created it, False if it existed.

    The bytes are written to a temp file and fsynced first, then ``link``-ed to the name (which
    fails if the name exists), so the name never points at a partial file and two callers
    never both succeed: exactly one file, whole, ever appears under ``name``.
    """
    with _held(directory) as dir_fd:
        tmp = _write_temp(dir_fd, name, data, mode)
        try:
            os.link(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except FileExistsError:
            return False
        finally:
            _unlink_quietly(tmp, dir_fd)
        os.fsync(dir_fd)
    return True


def lock_holders(fd: int) -> list[int]:
    """The pids holding a lock on an open file.

    Pids holding an ``flock`` on the file open as ``fd``, as the platform reports them
    (Linux: ``/proc/locks``, matched by device and inode); ``[]`` where it does not tell.
    Waiters (``->`` lines) are left out. Never raises.
    """
    try:
        info = os.fstat(fd)
        with open("/proc/locks", encoding="ascii", errors="replace") as f:
            lines = f.read(1 << 20).splitlines()
    except OSError:
        return []
    exact = f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}:{info.st_ino}"
    pids, by_inode = [], []
    for line in lines:
        fields = line.split()
        if len(fields) < 6 or fields[1] != "FLOCK" or not fields[4].isdigit():
            continue  # a waiter ("->"), a POSIX lock or a line of another shape
        pid, where = int(fields[4]), fields[5]
        if where == exact:
            pids.append(pid)
        elif where.rpartition(":")[2] == str(info.st_ino):
            by_inode.append(pid)  # overlay file systems report another device number
    return sorted(set(pids or by_inode))


def _describe_holders(holders: list[int]) -> str:
    if not holders:
        return "another process (the platform does not say which)"
    return ("process " if len(holders) == 1 else "processes ") + ", ".join(f"pid {p}" for p in holders)


def _lock_handle(directory: Directory) -> int:
    """A new open file description of a directory, to lock.

    ``flock`` belongs to the description, not the process, so two locks taken in one process,
    by two threads, exclude each other as two processes' do.
    """
    if isinstance(directory, int):
        return os.open(".", _DIR_FLAGS, dir_fd=directory)
    return open_directory(directory)


def _flock(fd: int, exclusive: bool, deadline: float, wait: float, shown: str) -> None:
    """A lock taken by polling until a deadline.

    Take the lock on ``fd``, polling with growing pauses (1 ms to 50 ms) until ``deadline``
    (``time.monotonic``), then raise :class:`LockTimeout` naming its holders.
    """
    assert fcntl is not None
    pause = 0.001
    while True:
        try:
            fcntl.flock(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
            return
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
        left = deadline - time.monotonic()
        if left <= 0:
            holders = lock_holders(fd)
            kind = "an exclusive" if exclusive else "a shared"
            raise LockTimeout(f"{shown!r} is locked by {_describe_holders(holders)}; {kind} lock "
                              f"did not come free within {wait:g} s", holders, wait)
        time.sleep(min(pause, left))
        pause = min(pause * 2, 0.05)


@contextlib.contextmanager
def locked(directory: Directory, *, exclusive: bool, wait: float = DEFAULT_LOCK_WAIT,
           turnstile: Directory | None = None, label: str | None = None) -> Iterator[None]:
    """An advisory lock on a directory for a ``with`` block.

    Hold a ``flock`` advisory lock on the directory itself (a path, or an open descriptor;
    shared or exclusive) for the ``with`` block. The lock is on an open file description of its
    own, so it is released when the block ends or the process dies (kill -9 included); nothing
    is left on disk.

    The lock is tried without blocking, then again with growing pauses (1 ms to 50 ms) until
    ``wait`` seconds (>= 0; 0 tries once) have passed. A shared lock is granted beside other
    shared holders at once. A path is opened with ``O_NOFOLLOW``.

    ``turnstile``, another directory, makes writers fair to readers: an exclusive locker takes
    the turnstile's lock exclusively first and holds it until it lets go of the directory's; a
    shared locker takes the turnstile's shared, then the directory's, then lets go of the
    turnstile. A writer waiting for readers to finish so keeps new readers out, and gets the
    directory once those already in are done (within ``wait`` overall). Both are always taken
    in that order, so two lockers never wait on each other. Messages call the directory
    ``label`` (the path given by default).

    Raises :class:`LockUnavailable` where ``fcntl`` is missing, :class:`LockTimeout` (naming
    the holders' pids where the platform tells them) when the wait runs out, and ``OSError``
    if the directory cannot be opened.
    """
    if fcntl is None:  # pragma: no cover - not POSIX
        raise LockUnavailable("a state directory needs POSIX advisory locks (fcntl.flock)")
    if label is not None:
        shown = label
    else:
        shown = f"the directory open as fd {directory}" if isinstance(directory, int) else os.fspath(directory)
    deadline = time.monotonic() + max(0.0, wait)
    gate = None if turnstile is None else _lock_handle(turnstile)
    try:
        if gate is not None:
            _flock(gate, exclusive, deadline, wait, shown)
        fd = _lock_handle(directory)
        try:
            _flock(fd, exclusive, deadline, wait, shown)
            if gate is not None and not exclusive:
                os.close(gate)  # a reader in lets a writer queue at the turnstile again
                gate = None
            yield
        finally:
            os.close(fd)
    finally:
        if gate is not None:
            os.close(gate)
