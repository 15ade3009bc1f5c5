"""Store and lock: the state directory's files, its lock, the MAC and the monotonic counter.

Layout (the directory is created with mode 0700; it, ``bundles/`` and the secret are refused
unless owned by the effective user and closed to group and others, a symlink in their place is
refused as one, and so is a directory with an ancestor another user could rename it out of:
writable by others without the sticky bit, or owned by a uid other than root's and the
effective user's)::

    DIR/device.secret           32 bytes from the OS CSPRNG, mode 0600 (refused if open to
                                group or others); drives the releases
    DIR/state.json              the state, authenticated with HMAC-SHA256 under the secret
    DIR/bundles/<sha256>.bundle exact bytes of the active bundle and of the previous one

``state.json`` holds the version floor, the time floor (the latest ``issued_at`` verified), what
was installed under each version (sha256, ``issued_at`` and the key ids that signed it, the last
:data:`MAX_HISTORY`), the active and previous bundle, the **trusted keyring** (bare keys or the
current signed keyring document, with the sha256 of the documents it was rotated from) and the
value of the firmware's monotonic counter it commits to (:mod:`._counter`).

Held by handle: the directory is opened once (``O_DIRECTORY | O_NOFOLLOW``) after the checks
above, the descriptor itself is checked again (``fstat``: a directory, the effective user's,
closed to group and others), ``bundles/`` is opened relative to it, and from then on every
access (the secret, ``state.json``, the bundle files, temp files, renames, links, unlinks,
listings, ``fsync`` and the locks) is relative to those two descriptors, never to the path.
Renaming the path away or swapping another directory in after the open changes nothing: the
device keeps working in the directory it checked, and writes, deletes or reads nothing in the
substitute. The descriptors are closed by :meth:`DeviceState.close` (or when the object is
collected).

Processes: every read-modify-write (an open that must write, an install, a rotation) holds an
exclusive ``flock`` on the directory and re-reads ``state.json`` under it, so concurrent installs
serialise and none writes a state built from a stale copy; readers (an open that needs no write,
offering the bundle already installed, :meth:`DeviceState.active`, :meth:`~DeviceState.status`)
hold a shared lock while they read the state and the bundle files, so they run side by side,
are never held up by another reader, and never see a bundle file removed under them. Writers
are not starved by a stream of readers: ``bundles/``'s own ``flock`` is a turnstile
(:func:`~privmap.device.files.locked`) that a writer holds exclusively from before it waits
for the directory until it is done, and a reader holds shared only until it has its shared
lock on the directory; a waiting writer so keeps new readers out and gets in as soon as those
already reading finish. Both locks are taken in that order by everyone and released by the
kernel when a process dies (kill -9 included). No lock is
waited for longer than ``lock_wait`` seconds: then :class:`StateLockedError` names the holder's
pid (where the platform tells it) and nothing is done, so a stopped or never-ending holder
cannot freeze the device. Cleaning (``.tmp-*`` files, bundle files the state does not name)
runs only under the exclusive lock, when nobody else can be mid-write (an open that needs no
write cleans only if that lock is free at once). The
device secret is created once, whole, by ``link`` of a fsynced temp file (fails if the name
exists). The firmware must give each device its own directory on a local POSIX file system
(``flock``, atomic ``rename`` and ``link``, ``fsync`` of directories; not NFS or FAT) and let
only the privmap service write it.

:class:`Store` is the part of :class:`~privmap.device.DeviceState` that reads and writes them;
the other parts reach the directory only through it (:meth:`~Store.locked`, :meth:`~Store.load`,
:meth:`~Store.commit`, the bundle files). Opening a directory that holds another keyring asks
the part that keeps the trusted keyring (a :class:`KeyringPolicy`) what to do.
"""
from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import stat
import weakref
from collections.abc import Iterator, Mapping
from typing import Any, Protocol, TypedDict, TypeGuard

from ..errors import StateError, StateLockedError, StateReplayError
from ..files import (
    TMP_PREFIX,
    LockTimeout,
    LockUnavailable,
    NotRegularFile,
    atomic_write,
    check_ancestors,
    check_private,
    create_exclusive,
    locked,
    open_directory,
    read_regular,
)
from ..randomness import SECRET_BYTES
from ..trust import Keyring, KeyringChain
from ._counter import MonotonicCounter

__all__ = ["Store", "KeyringPolicy", "Body", "Entry", "TrustBody", "STATE_NAME", "SECRET_NAME", "BUNDLE_DIR",
           "os_errors", "canonical", "sha256_hex", "read_file", "chain_of", "trust_body", "clear_unprovisioned"]

STATE_NAME = "state.json"
SECRET_NAME = "device.secret"
BUNDLE_DIR = "bundles"
_STATE_FORMAT = 2
_MAX_STATE_BYTES = 1 << 20
_MAC_TAG = b"privmap-device-state-v1\x00"
_BODY_KEYS = ("format", "version", "time_floor", "installed", "active", "previous", "counter", "trust")


class Entry(TypedDict):
    """What the state remembers of an installed version.

    Its bytes' sha256, its ``issued_at`` and the key ids (hex) that signed it (``None`` for
    both in a state upgraded from format 1).
    """

    sha256: str
    issued_at: int | None
    signers: list[str] | None


class TrustBody(TypedDict):
    """The trusted keyring as the state holds it.

    The raw keys (hex, sorted) and threshold, the current signed keyring document (hex;
    ``None`` for bare keys) and the sha256 of the documents it was rotated from.
    """

    keys: list[str]
    threshold: int
    document: str | None
    history: list[str]


class Body(TypedDict):
    """The body of ``state.json``, format 2 (module docstring).

    ``installed`` maps a version (decimal string) to its :class:`Entry`; ``trust`` is ``None``
    only in a state upgraded from format 1, until an open pins the keyring given.
    """

    format: int
    version: int
    time_floor: int
    installed: dict[str, Entry]
    active: str | None
    previous: str | None
    counter: int | None
    trust: TrustBody | None


class KeyringPolicy(Protocol):
    """What opening a state directory asks of the part that keeps the trusted keyring."""

    def holds(self, body: Body, given: Keyring | KeyringChain) -> bool:
        """Whether ``given`` is the keyring ``body`` trusts (or one it was rotated from)."""

    def reconcile(self, body: Body, given: Keyring | KeyringChain | None) -> None:
        """A keyring given at open, pinned, rotated to or refused.

        Pin ``given`` in a body that holds no keyring, rotate to it, or refuse it (the caller
        holds the exclusive lock).
        """


def canonical(body: Mapping[str, Any]) -> bytes:
    """The canonical JSON bytes of ``body`` (sorted keys, no spaces, ASCII): what the MAC covers."""
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode("ascii")


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_file(path: str, cap: int, *, private: bool = False, dir_fd: int | None = None,
              label: str | None = None) -> bytes:
    """The bytes of a state file, read once and bounded.

    :func:`~privmap.device.files.read_regular` with a FIFO, device or directory refused as
    :class:`StateError`; other failures raise ``OSError``.
    """
    try:
        return read_regular(path, cap, private=private, dir_fd=dir_fd, label=label)
    except NotRegularFile as exc:
        raise StateError(str(exc)) from None


@contextlib.contextmanager
def os_errors(what: str) -> Iterator[None]:
    """OS errors turned into state errors.

    Context manager: ``OSError`` -> :class:`StateError` naming ``what`` and the cause, and a
    lock not granted in time -> :class:`StateLockedError`.
    """
    try:
        yield
    except LockTimeout as exc:
        raise StateLockedError(f"{exc.strerror}; nothing was done (end or resume that process, "
                               "or wait longer)", exc.holders) from None
    except LockUnavailable as exc:
        raise StateError(str(exc)) from None
    except OSError as exc:
        raise StateError(f"{what}: {exc.strerror or exc}") from None


def chain_of(keyring: Keyring | KeyringChain) -> KeyringChain:
    return KeyringChain.pinned(keyring) if isinstance(keyring, Keyring) else keyring


def trust_body(chain: KeyringChain, history: list[str]) -> TrustBody:
    """How the state holds ``chain``, rotated from the documents whose sha256 are ``history``."""
    keys = sorted(key.hex() for key in chain.keyring.raw_keys)
    return {"keys": keys, "threshold": chain.keyring.threshold,
            "document": None if chain.document is None else chain.document.hex(), "history": list(history)}


def clear_unprovisioned(path: str) -> None:
    """A directory that holds no device, emptied.

    Make the directory ``path``, if it exists, empty, when it holds no device: remove the
    temp files and the empty ``bundles/`` that an open refused for a wiped directory leaves.
    The directory is held open while it is looked at and cleared (every access relative to it).

    Raises
    ------
    StateError
        ``path`` holds a state, a secret, a bundle file or anything else (nothing is removed),
        or is not a directory.
    """
    if not os.path.lexists(path):
        return
    try:
        fd = open_directory(path)
    except OSError:
        raise StateError(f"{path!r} is not a directory") from None
    held = [fd]
    try:
        names = [n for n in os.listdir(fd) if not n.startswith(TMP_PREFIX)]
        if names == [BUNDLE_DIR]:
            with contextlib.suppress(OSError):  # a link or a file named bundles/ is not one it made
                held.append(open_directory(BUNDLE_DIR, dir_fd=fd))
        empty = not names or (len(held) == 2 and not any(not n.startswith(TMP_PREFIX) for n in os.listdir(held[1])))
        if not empty:
            raise StateError(f"{path!r} is not empty: re-provisioning makes a fresh state directory; "
                             "move the old one aside first")
        for directory in held:
            for name in os.listdir(directory):
                if name.startswith(TMP_PREFIX):
                    os.unlink(name, dir_fd=directory)
        if names:
            os.rmdir(BUNDLE_DIR, dir_fd=fd)
    finally:
        _close_all(held)


def _exists(name: str, dir_fd: int) -> bool:
    """Whether ``name`` exists (a link counts) in the open directory ``dir_fd``."""
    try:
        os.lstat(name, dir_fd=dir_fd)
    except FileNotFoundError:
        return False
    return True


def _close_all(fds: list[int]) -> None:
    while fds:
        os.close(fds.pop())


def _upgrade(body: dict[str, Any]) -> Body:
    """A format-1 body as format 2.

    A format-1 body (privmap before counter-bound state and signer records) as format 2: no signer records, no counter,
    no keyring (the keyring given at open is pinned).
    """
    installed: dict[str, Entry] = {v: {"sha256": s, "issued_at": None, "signers": None}
                                   for v, s in body["installed"].items()}
    return {"format": _STATE_FORMAT, "version": body["version"], "time_floor": body["time_floor"],
            "installed": installed, "active": body["active"], "previous": body["previous"], "counter": None,
            "trust": None}


def _read_counter(counter: MonotonicCounter) -> int:
    try:
        value = counter.read()
    except Exception as exc:
        raise StateError(f"cannot read the device's monotonic counter: {exc}") from None
    if type(value) is not int or value < 0:
        raise StateError("the monotonic counter must read as an int >= 0")
    return value


def _increment(counter: MonotonicCounter, value: int) -> None:
    try:
        new = counter.increment()
    except Exception as exc:
        raise StateError(f"cannot increment the device's monotonic counter: {exc}") from None
    if new != value + 1:
        raise StateError(f"the monotonic counter went from {value} to {new!r} in one increment")


class Store:
    """The state directory's files and lock (module docstring): a part of ``DeviceState``.

    Parameters
    ----------
    path : str
        The state directory (:meth:`open` creates it).
    lock_wait : float
        Seconds any one lock is waited for (:meth:`locked`).
    counter : MonotonicCounter | None
        The firmware's monotonic counter every committed state is bound to.
    bundle_cap : int
        Largest bundle file read back, bytes (the limits' ``max_bundle_bytes``).

    Attributes
    ----------
    secret : bytes
        The device secret, read by :meth:`open`.
    body : Body
        The state last read or written (set by :meth:`open`, :meth:`load`, :meth:`commit`).
    """

    secret: bytes
    body: Body

    def __init__(self, path: str, *, lock_wait: float, counter: MonotonicCounter | None, bundle_cap: int) -> None:
        self.path = path
        self.bundles = os.path.join(path, BUNDLE_DIR)
        self.lock_wait = lock_wait
        self.counter = counter
        self.bundle_cap = bundle_cap
        self._fds: list[int] = []  # the directory's and bundles/'s descriptors, once opened
        self._closer = weakref.finalize(self, _close_all, self._fds)

    # -- the handles ------------------------------------------------------------------------------

    def close(self) -> None:
        """Close the directory's descriptors (idempotent); any later access raises ``OSError``."""
        self._closer()

    def _handle(self, which: int) -> int:
        if len(self._fds) <= which:
            raise OSError(f"{self.path!r} is not open (closed, or its open failed)")
        return self._fds[which]

    @property
    def _dir(self) -> int:
        """The descriptor of the state directory, held since :meth:`open` checked it."""
        return self._handle(0)

    @property
    def _bundles(self) -> int:
        """The descriptor of ``bundles/``, opened relative to :attr:`_dir`."""
        return self._handle(1)

    # -- locking and opening ----------------------------------------------------------------------

    def locked(self, *, exclusive: bool, wait: float | None = None) -> contextlib.AbstractContextManager[None]:
        """The directory's lock for a ``with`` block.

        The directory's ``flock`` (shared or exclusive) for a ``with`` block, ``bundles/``'s
        the turnstile that keeps a waiting writer from starving (module docstring), waited for
        at most ``wait`` seconds (``lock_wait`` by default) in all; raises what
        :func:`~privmap.device.files.locked` raises.
        """
        return locked(self._dir, exclusive=exclusive, wait=self.lock_wait if wait is None else wait,
                      turnstile=self._bundles, label=self.path)

    def open(self, given: Keyring | KeyringChain | None, keyrings: KeyringPolicy, *, reprovision: bool) -> None:
        """Open the directory.

        Open the directory (creating it, its secret and its state if absent): read the
        secret and the state, bind the state to the counter, and hand a keyring ``given`` that
        is not the one the state holds to ``keyrings``. ``reprovision``: the directory must be
        empty, and is made afresh whatever the counter says (:meth:`DeviceState.reprovision`).

        Raises
        ------
        StateError, StateReplayError
            As listed by :class:`DeviceState` (``OSError`` is left to the caller).
        """
        self._hold_directories()
        if not reprovision and self._open_reading(given, keyrings):
            self._clean_if_free()
            return
        state_path = os.path.join(self.path, STATE_NAME)
        secret_path = os.path.join(self.path, SECRET_NAME)
        with self.locked(exclusive=True):
            has_state = _exists(STATE_NAME, self._dir)
            has_bundles = any(not n.startswith(TMP_PREFIX) for n in os.listdir(self._bundles))
            if not has_state and has_bundles:
                raise StateError(f"{state_path!r} is missing but bundles are installed; refusing "
                                 "(the version and time floor cannot be trusted)")
            if reprovision and (has_state or has_bundles or _exists(SECRET_NAME, self._dir)):
                raise StateError(f"{self.path!r} is not empty: re-provisioning makes a fresh state directory; "
                                 "move the old one aside first")
            if not _exists(SECRET_NAME, self._dir):
                if has_state:
                    raise StateError(f"{secret_path!r} is missing; refusing (releases would change)")
                self._check_not_wiped(reprovision)
                create_exclusive(self._dir, SECRET_NAME, os.urandom(SECRET_BYTES))
            self.secret = self._read_secret()
            if not has_state:
                self._check_not_wiped(reprovision)
                if given is None:
                    raise StateError(f"{self.path!r} holds no state yet: give the keyring to trust")
                self.commit({"format": _STATE_FORMAT, "version": 0, "time_floor": 0, "installed": {},
                             "active": None, "previous": None, "counter": None,
                             "trust": trust_body(chain_of(given), [])})
            else:
                keyrings.reconcile(self.load(writer=True), given)
                if self.counter is not None and self.body["counter"] is None:
                    self.commit(self.body)  # bind a state written before the counter was given
            self.clean()

    def _hold_directories(self) -> None:
        """Create and hold the directory and ``bundles/``.

        Create the directory (parents included) and ``bundles/`` (mode 0700) if missing, and
        open both (``bundles/`` relative to the directory): the handles every later access goes
        through. Refuse either if it is a symlink, not a directory, not the effective user's or
        open to group or others (judged on the open descriptor, ``fstat``), and the directory if
        another user could move it away (:func:`check_ancestors`: checked before it is made,
        too, so nothing is made under such an ancestor).
        """
        if self._fds:
            raise OSError(f"{self.path!r} is open already")
        if not os.path.lexists(self.path):
            self._check_ancestors()
            with contextlib.suppress(FileExistsError):  # made by a process racing this one: checked below
                os.makedirs(self.path, mode=0o700)
        self._fds.append(self._open_checked(self.path, None))
        self._fds.append(self._open_checked(BUNDLE_DIR, self._dir))
        self._check_ancestors()

    def _open_checked(self, name: str, dir_fd: int | None) -> int:
        """A checked descriptor of a directory.

        ``name`` (relative to ``dir_fd``; made 0700 there if missing) opened as a directory and
        checked on its descriptor; the descriptor (closed again if refused).
        """
        shown = name if dir_fd is None else os.path.join(self.path, name)
        if dir_fd is not None:
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, 0o700, dir_fd=dir_fd)
        info = os.lstat(name, dir_fd=dir_fd)
        if stat.S_ISLNK(info.st_mode):
            raise StateError(f"{shown!r} is a symlink (to {os.path.realpath(shown)!r}); give the "
                             "state directory itself: a link can be moved to another directory under "
                             "the device")
        if not stat.S_ISDIR(info.st_mode):
            raise StateError(f"{shown!r} is not a directory")
        fd = open_directory(name, dir_fd=dir_fd)
        try:
            info = os.fstat(fd)
            if not stat.S_ISDIR(info.st_mode):  # pragma: no cover - O_DIRECTORY refuses it first
                raise StateError(f"{shown!r} is not a directory")
            try:
                check_private(shown, info, "700")
            except PermissionError as exc:
                raise StateError(f"state directory {exc}") from None
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _check_ancestors(self) -> None:
        try:
            check_ancestors(self.path)
        except PermissionError as exc:
            raise StateError(f"state directory: {exc}") from None

    def _read_secret(self) -> bytes:
        secret_path = os.path.join(self.path, SECRET_NAME)
        try:
            secret = read_file(SECRET_NAME, SECRET_BYTES, private=True, dir_fd=self._dir, label=secret_path)
        except PermissionError as exc:
            raise StateError(f"device secret {exc}") from None
        if len(secret) != SECRET_BYTES:
            raise StateError(f"{secret_path!r} is not a {SECRET_BYTES}-byte device secret")
        return secret

    def _open_reading(self, given: Keyring | KeyringChain | None, keyrings: KeyringPolicy) -> bool:
        """Open without writing anything.

        Open without writing anything, under a shared lock, when nothing needs writing: the
        state and secret exist, the state is format 2, bound to the counter as it must be (no
        commit to complete), and ``given`` is the keyring it holds (or one it was rotated
        from). Returns False when a write is needed (the exclusive path then does it all).
        """
        with self.locked(exclusive=False):
            if not (_exists(STATE_NAME, self._dir) and _exists(SECRET_NAME, self._dir)):
                return False
            self.secret = self._read_secret()
            body, upgraded = self._read_body()
            if upgraded or body["trust"] is None:
                return False
            if self.counter is not None and body["counter"] in (None, _read_counter(self.counter) + 1):
                return False  # to bind, or to complete a commit cut short: both write
            self._check_counter(body, writer=False)
            if given is not None and not keyrings.holds(body, given):
                return False  # a rotation to apply, or a mismatch the exclusive path reports
            self.body = body
            return True

    def _leftovers(self) -> bool:
        """Whether the directories hold temp files or bundle files the state does not name."""
        keep = self._named_bundles()
        return (any(n.startswith(TMP_PREFIX) for n in os.listdir(self._dir))
                or any(n not in keep for n in os.listdir(self._bundles)))

    def _clean_if_free(self) -> None:
        """Clean leftovers if the exclusive lock is free at once.

        Clean leftovers after an open that wrote nothing, only if the exclusive lock is free
        at once (a reader never waits to clean; the next writer cleans anyway).
        """
        if not self._leftovers():
            return
        try:
            with self.locked(exclusive=True, wait=0):
                self.load(writer=False)
                self.clean()
        except LockTimeout:
            pass

    def _check_not_wiped(self, reprovision: bool) -> None:
        if reprovision:
            return  # the operator's explicit re-provisioning: bound at the counter's current value
        if self.counter is not None and _read_counter(self.counter) > 0:
            raise StateReplayError(
                f"{self.path!r} holds no state but the device counter is at {_read_counter(self.counter)}: "
                "the state directory was wiped or replaced; refusing (a new secret would change every "
                "release and the floors would restart at 0)")

    # -- the counter ------------------------------------------------------------------------------

    def _check_counter(self, body: Body, writer: bool) -> None:
        committed = body["counter"]
        if self.counter is None:
            if committed is not None:
                raise StateReplayError(f"state in {self.path!r} is bound to a monotonic counter; open it "
                                       "with that counter (counter=...)")
            return
        value = _read_counter(self.counter)
        if committed is None:
            if value != 0:
                raise StateReplayError(
                    f"state in {self.path!r} is not bound to the device counter, which is at {value}: "
                    "an older state file was put back; refusing")
            return  # a writer binds it now (DeviceState opening), a reader accepts it
        if committed == value + 1:
            if writer:  # the previous commit renamed the state but did not reach the increment
                _increment(self.counter, value)
            return
        if committed < value:
            raise StateReplayError(
                f"state in {self.path!r} commits to counter {committed} but the device counter is at "
                f"{value}: an older state file was put back; refusing")
        if committed > value:
            raise StateReplayError(
                f"state in {self.path!r} commits to counter {committed}, ahead of the device counter "
                f"({value}): the counter was reset or the state belongs to another device; refusing")

    # -- the state file ---------------------------------------------------------------------------

    def _mac(self, body: bytes) -> str:
        return hmac.new(self.secret, _MAC_TAG + body, hashlib.sha256).hexdigest()

    def load(self, *, writer: bool) -> Body:
        """The authenticated, checked state.

        Read, authenticate and check ``state.json`` (the caller holds the lock), bind it to the
        counter; a writer completes a commit cut short before its counter increment. Sets and
        returns :attr:`body`.

        Raises
        ------
        StateError
            The file is corrupt, fails its MAC, or (for a reader) holds no keyring; the counter
            cannot be read or incremented.
        StateReplayError
            The state is not bound to the counter as it must be.
        """
        body, _ = self._read_body()
        self._check_counter(body, writer)
        if body["trust"] is None and not writer:
            raise StateError(f"state file in {self.path!r} holds no keyring; open it with one")
        self.body = body
        return body

    def _read_body(self) -> tuple[Body, bool]:
        """The authenticated, checked body of ``state.json``, and whether it was format 1.

        A format-1 body is upgraded in memory. Raises :class:`StateError`.
        """
        raw = read_file(STATE_NAME, _MAX_STATE_BYTES, dir_fd=self._dir, label=os.path.join(self.path, STATE_NAME))
        try:
            if len(raw) > _MAX_STATE_BYTES:
                raise ValueError("state file too large")
            outer = json.loads(raw.decode("ascii"))
            body, mac = outer["body"], outer["mac"]
            ok = (type(outer) is dict and set(outer) == {"body", "mac"} and type(mac) is str
                  and hmac.compare_digest(mac, self._mac(canonical(body))))
        except (ValueError, KeyError, TypeError, UnicodeDecodeError):
            ok = False
        upgraded = ok and _valid_body_v1(body)
        if upgraded:
            body = _upgrade(body)
        if not ok or not _valid_body(body):
            raise StateError(f"state file in {self.path!r} is corrupt or fails its MAC; refusing")
        return body, upgraded

    def commit(self, body: Body) -> None:
        """Commit a new state.

        Write ``body`` as the new state (the caller holds the exclusive lock): the single
        commit point, then the counter increment. Raises ``OSError`` (nothing committed) and
        :class:`StateError` (the counter cannot be read or incremented).
        """
        if self.counter is None:
            self._write(body)
            return
        value = _read_counter(self.counter)
        self._write({**body, "counter": value + 1})
        _increment(self.counter, value)

    def _write(self, body: Body) -> None:
        data = canonical(body)
        atomic_write(self._dir, STATE_NAME, canonical({"body": body, "mac": self._mac(data)}))
        self.body = body

    # -- the bundle files -------------------------------------------------------------------------

    def _named_bundles(self) -> set[str]:
        return {f"{s}.bundle" for s in (self.body["active"], self.body["previous"]) if s}

    def clean(self) -> None:
        """Remove files the state does not name.

        Remove temp files and bundle files the state does not name. Called only under the
        exclusive lock: every writer holds it, so no temp file is anyone's work in progress and
        no reader is reading a file the current state does not name.
        """
        keep = self._named_bundles()
        for directory, names in ((self._dir, None), (self._bundles, keep)):
            for name in os.listdir(directory):
                if name.startswith(TMP_PREFIX) or (names is not None and name not in names):
                    with contextlib.suppress(OSError):
                        os.unlink(name, dir_fd=directory)

    def read_bundle(self, sha: str) -> bytes:
        """The stored bytes of a bundle.

        The bytes of the bundle file stored for ``sha`` (at most ``bundle_cap + 1``; the
        caller checks the hash). Raises ``OSError`` or :class:`StateError` (not a regular file).
        """
        name = f"{sha}.bundle"
        return read_file(name, self.bundle_cap, dir_fd=self._bundles, label=os.path.join(self.bundles, name))

    def stored_copy(self, sha: str) -> bytes | None:
        """The stored bytes of a bundle, if intact.

        The bytes stored for ``sha`` if they hash to it, else None (missing, unreadable,
        damaged).
        """
        try:
            data = self.read_bundle(sha)
        except (OSError, StateError):
            return None
        return data if sha256_hex(data) == sha else None

    def write_bundle(self, sha: str, data: bytes) -> None:
        """Store ``data`` as the bundle file of ``sha`` (atomically, mode 0644). Raises ``OSError``."""
        atomic_write(self._bundles, f"{sha}.bundle", data, 0o644)

    def discard_bundle(self, sha: str) -> None:
        """Remove the stored file of a bundle.

        Remove the bundle file of ``sha`` if it can be (a failed install's; :meth:`clean`
        removes what is left).
        """
        with contextlib.suppress(OSError):
            os.unlink(f"{sha}.bundle", dir_fd=self._bundles)


def _is_sha(value: object) -> bool:
    return type(value) is str and len(value) == 64 and all(ch in "0123456789abcdef" for ch in value)


def _valid_body_v1(body: object) -> bool:
    """A format-1 body (before counter-bound state and signer records): installed maps version -> sha256."""
    keys = {"format", "version", "time_floor", "installed", "active", "previous"}
    if type(body) is not dict or set(body) != keys or body["format"] != 1 or type(body["format"]) is not int:
        return False
    if type(body["version"]) is not int or type(body["time_floor"]) is not int or type(body["installed"]) is not dict:
        return False
    return (all(_is_sha(s) for s in body["installed"].values())
            and all(s is None or _is_sha(s) for s in (body["active"], body["previous"]))
            and all(type(k) is str and k.isdigit() for k in body["installed"]))


def _valid_entry(entry: object) -> bool:
    if type(entry) is not dict or set(entry) != {"sha256", "issued_at", "signers"} or not _is_sha(entry["sha256"]):
        return False
    if entry["issued_at"] is not None and type(entry["issued_at"]) is not int:
        return False
    signers = entry["signers"]
    return signers is None or (type(signers) is list and all(_is_sha(s) for s in signers))


def _valid_trust(trust: object) -> bool:
    if trust is None:
        return True
    if type(trust) is not dict or set(trust) != {"keys", "threshold", "document", "history"}:
        return False
    if type(trust["keys"]) is not list or not all(_is_sha(k) for k in trust["keys"]):
        return False
    if type(trust["threshold"]) is not int or type(trust["history"]) is not list:
        return False
    if not all(_is_sha(h) for h in trust["history"]):
        return False
    doc = trust["document"]
    return doc is None or (type(doc) is str and len(doc) % 2 == 0 and all(c in "0123456789abcdef" for c in doc))


def _valid_body(body: object) -> TypeGuard[Body]:
    if type(body) is not dict or set(body) != set(_BODY_KEYS) or body["format"] != _STATE_FORMAT:
        return False
    if type(body["format"]) is not int or type(body["version"]) is not int or type(body["time_floor"]) is not int:
        return False
    if body["counter"] is not None and (type(body["counter"]) is not int or body["counter"] < 0):
        return False
    if type(body["installed"]) is not dict or not all(type(k) is str and k.isdigit() for k in body["installed"]):
        return False
    if not all(_valid_entry(e) for e in body["installed"].values()):
        return False
    if not all(s is None or _is_sha(s) for s in (body["active"], body["previous"])):
        return False
    return _valid_trust(body["trust"])
