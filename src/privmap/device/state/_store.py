"""Store and lock: the state directory's files, its lock, the MAC and the monotonic counter.

Layout (the directory is created with mode 0700; it, ``bundles/`` and the secret are refused
unless owned by the effective user and closed to group and others, and a symlink in their place
is refused as one)::

    DIR/device.secret           32 bytes from the OS CSPRNG, mode 0600 (refused if open to
                                group or others); drives the releases
    DIR/state.json              the state, authenticated with HMAC-SHA256 under the secret
    DIR/bundles/<sha256>.bundle exact bytes of the active bundle and of the previous one

``state.json`` holds the version floor, the time floor (the latest ``issued_at`` verified), what
was installed under each version (sha256, ``issued_at`` and the key ids that signed it, the last
:data:`MAX_HISTORY`), the active and previous bundle, the **trusted keyring** (bare keys or the
current signed keyring document, with the sha256 of the documents it was rotated from) and the
value of the firmware's monotonic counter it commits to (:mod:`._counter`).

Processes: every read-modify-write (an open that must write, an install, a rotation) holds an
exclusive ``flock`` on the directory and re-reads ``state.json`` under it, so concurrent installs
serialise and none writes a state built from a stale copy; readers (an open that needs no write,
offering the bundle already installed, :meth:`DeviceState.active`, :meth:`~DeviceState.status`)
hold a shared lock while they read the state and the bundle files, so they run side by side,
are never held up by another reader, and never see a bundle file removed under them. No lock is
waited for longer than ``lock_wait`` seconds: then :class:`StateLockedError` names the holder's
pid (where the platform tells it) and nothing is done, so a stopped or never-ending holder
cannot freeze the device. Cleaning (``.tmp-*`` files, bundle files the state does not name)
runs only under the exclusive lock, when nobody else can be mid-write (an open that needs no
write cleans only if that lock is free at once). The
device secret is created once, whole, by ``link`` of a fsynced temp file (fails if the name
exists). The firmware must give each device its own directory on a local POSIX file system
(``flock``, atomic ``rename`` and ``link``, ``fsync`` of directories; not NFS or FAT) and let
only the privmap service write it.

:class:`StateStore` is the part of :class:`~privmap.device.DeviceState` that reads and writes
them; the other parts reach the state only through it (``_locked``, ``_load``, ``_commit``).
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import stat

from ..errors import StateError, StateLockedError, StateReplayError
from ..files import (
    TMP_PREFIX,
    LockTimeout,
    LockUnavailable,
    NotRegularFile,
    atomic_write,
    check_private,
    create_exclusive,
    locked,
    read_regular,
)
from ..randomness import SECRET_BYTES
from ..trust import Keyring, KeyringChain

__all__ = ["StateStore", "STATE_NAME", "SECRET_NAME", "BUNDLE_DIR"]

STATE_NAME = "state.json"
SECRET_NAME = "device.secret"
BUNDLE_DIR = "bundles"
_STATE_FORMAT = 2
_MAX_STATE_BYTES = 1 << 20
_MAC_TAG = b"privmap-device-state-v1\x00"
_BODY_KEYS = ("format", "version", "time_floor", "installed", "active", "previous", "counter", "trust")


def _canonical(body: dict) -> bytes:
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode("ascii")


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read_regular(path: str, cap: int, *, private: bool = False) -> bytes:
    """:func:`read_regular` with a FIFO, device or directory refused as :class:`StateError`."""
    try:
        return read_regular(path, cap, private=private)
    except NotRegularFile as exc:
        raise StateError(str(exc)) from None


def _chain_of(keyring) -> KeyringChain:
    return KeyringChain.pinned(keyring) if isinstance(keyring, Keyring) else keyring


def _raw_keys(keyring: Keyring) -> list[str]:
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
    return sorted(k.public_bytes(Encoding.Raw, PublicFormat.Raw).hex() for k in keyring._keys.values())


def _trust_body(chain: KeyringChain, history: list) -> dict:
    return {"keys": _raw_keys(chain.keyring), "threshold": chain.keyring.threshold,
            "document": None if chain.document is None else chain.document.hex(), "history": list(history)}


def _upgrade(body: dict) -> dict:
    """A format-1 body (privmap before issue 25) as format 2: no signer records, no counter,
    no keyring (the keyring given at open is pinned)."""
    installed = {v: {"sha256": s, "issued_at": None, "signers": None} for v, s in body["installed"].items()}
    return {**body, "format": _STATE_FORMAT, "installed": installed, "counter": None, "trust": None}


class StateStore:
    """The state directory's files and lock (module docstring): a part of ``DeviceState``.

    Holds ``path``, ``lock_wait``, ``counter``, ``_bundles``, ``_secret`` and ``_state`` (the
    body last read or written); opening a directory that holds another keyring hands it to the
    install part (``_holds``, ``_reconcile_keyring``).
    """

    # -- locking and files ------------------------------------------------------------------------

    class _os_errors:
        """Context manager: ``OSError`` -> :class:`StateError` naming ``what`` and the cause."""

        def __init__(self, what: str):
            self.what = what

        def __enter__(self):
            return self

        def __exit__(self, kind, exc, tb):
            if exc is not None and isinstance(exc, OSError):
                if isinstance(exc, LockTimeout):
                    raise StateLockedError(f"{exc.strerror}; nothing was done (end or resume that process, "
                                           "or wait longer)", exc.holders) from None
                if isinstance(exc, LockUnavailable):
                    raise StateError(str(exc)) from None
                raise StateError(f"{self.what}: {exc.strerror or exc}") from None
            return False

    def _locked(self, *, exclusive: bool, wait: float | None = None):
        return locked(self.path, exclusive=exclusive, wait=self.lock_wait if wait is None else wait)

    def _prepare_directories(self) -> None:
        """Create the directory and ``bundles/`` (mode 0700) if missing, then refuse either if
        it is a symlink, not a directory, not the effective user's or open to group or others."""
        for directory in (self.path, self._bundles):
            try:
                info = os.lstat(directory)
            except FileNotFoundError:
                try:
                    os.makedirs(directory, mode=0o700)
                except FileExistsError:  # made by a process racing this one: checked below
                    pass
                info = os.lstat(directory)
            if stat.S_ISLNK(info.st_mode):
                raise StateError(f"{directory!r} is a symlink (to {os.path.realpath(directory)!r}); give the "
                                 "state directory itself: a link can be moved to another directory under "
                                 "the device")
            if not stat.S_ISDIR(info.st_mode):
                raise StateError(f"{directory!r} is not a directory")
            try:
                check_private(directory, info, "700")
            except PermissionError as exc:
                raise StateError(f"state directory {exc}") from None

    def _read_secret(self, secret_path: str) -> bytes:
        try:
            secret = _read_regular(secret_path, SECRET_BYTES, private=True)
        except PermissionError as exc:
            raise StateError(f"device secret {exc}") from None
        if len(secret) != SECRET_BYTES:
            raise StateError(f"{secret_path!r} is not a {SECRET_BYTES}-byte device secret")
        return secret

    def _open(self, given) -> None:
        self._prepare_directories()
        if not self._reprovision and self._open_reading(given):
            self._clean_if_free()
            return
        state_path = os.path.join(self.path, STATE_NAME)
        secret_path = os.path.join(self.path, SECRET_NAME)
        with self._locked(exclusive=True):
            has_state = os.path.lexists(state_path)
            has_bundles = any(not n.startswith(TMP_PREFIX) for n in os.listdir(self._bundles))
            if not has_state and has_bundles:
                raise StateError(f"{state_path!r} is missing but bundles are installed; refusing "
                                 "(the version and time floor cannot be trusted)")
            if self._reprovision and (has_state or has_bundles or os.path.lexists(secret_path)):
                raise StateError(f"{self.path!r} is not empty: re-provisioning makes a fresh state directory; "
                                 "move the old one aside first")
            if not os.path.lexists(secret_path):
                if has_state:
                    raise StateError(f"{secret_path!r} is missing; refusing (releases would change)")
                self._check_not_wiped()
                create_exclusive(self.path, SECRET_NAME, os.urandom(SECRET_BYTES))
            self._secret = self._read_secret(secret_path)
            if not has_state:
                self._check_not_wiped()
                if given is None:
                    raise StateError(f"{self.path!r} holds no state yet: give the keyring to trust")
                body = {"format": _STATE_FORMAT, "version": 0, "time_floor": 0, "installed": {},
                        "active": None, "previous": None, "counter": None,
                        "trust": _trust_body(_chain_of(given), [])}
                self._commit(body)
            else:
                self._reconcile_keyring(self._load(writer=True), given)
                if self.counter is not None and self._state["counter"] is None:
                    self._commit(self._state)  # bind a state written before the counter was given
            self._clean()

    def _open_reading(self, given) -> bool:
        """Open without writing anything, under a shared lock, when nothing needs writing: the
        state and secret exist, the state is format 2, bound to the counter as it must be (no
        commit to complete), and ``given`` is the keyring it holds (or one it was rotated
        from). Returns False when a write is needed (the exclusive path then does it all)."""
        state_path = os.path.join(self.path, STATE_NAME)
        secret_path = os.path.join(self.path, SECRET_NAME)
        with self._locked(exclusive=False):
            if not (os.path.lexists(state_path) and os.path.lexists(secret_path)):
                return False
            self._secret = self._read_secret(secret_path)
            body, upgraded = self._read_body()
            if upgraded or body["trust"] is None:
                return False
            if self.counter is not None and body["counter"] in (None, self._counter_value() + 1):
                return False  # to bind, or to complete a commit cut short: both write
            self._check_counter(body, writer=False)
            if given is not None and not self._holds(body, given):
                return False  # a rotation to apply, or a mismatch the exclusive path reports
            self._state = body
            return True

    def _leftovers(self) -> bool:
        """Whether the directories hold temp files or bundle files the state does not name."""
        keep = {f"{s}.bundle" for s in (self._state["active"], self._state["previous"]) if s}
        return (any(n.startswith(TMP_PREFIX) for n in os.listdir(self.path))
                or any(n not in keep for n in os.listdir(self._bundles)))

    def _clean_if_free(self) -> None:
        """Clean leftovers after an open that wrote nothing, only if the exclusive lock is free
        at once (a reader never waits to clean; the next writer cleans anyway)."""
        if not self._leftovers():
            return
        try:
            with self._locked(exclusive=True, wait=0):
                self._load(writer=False)
                self._clean()
        except LockTimeout:
            pass

    def _check_not_wiped(self) -> None:
        if self._reprovision:
            return  # the operator's explicit re-provisioning: bound at the counter's current value
        if self.counter is not None and self._counter_value() > 0:
            raise StateReplayError(
                f"{self.path!r} holds no state but the device counter is at {self._counter_value()}: "
                "the state directory was wiped or replaced; refusing (a new secret would change every "
                "release and the floors would restart at 0)")

    def _counter_value(self) -> int:
        try:
            value = self.counter.read()
        except Exception as exc:
            raise StateError(f"cannot read the device's monotonic counter: {exc}") from None
        if type(value) is not int or value < 0:
            raise StateError("the monotonic counter must read as an int >= 0")
        return value

    def _mac(self, body: bytes) -> str:
        return hmac.new(self._secret, _MAC_TAG + body, hashlib.sha256).hexdigest()

    def _load(self, *, writer: bool) -> dict:
        """Read, authenticate and check ``state.json`` (the caller holds the lock), bind it to the
        counter; a writer completes a commit cut short before its counter increment. Sets and
        returns the state."""
        body, _ = self._read_body()
        self._check_counter(body, writer)
        if body["trust"] is None and not writer:
            raise StateError(f"state file in {self.path!r} holds no keyring; open it with one")
        self._state = body
        return body

    def _read_body(self) -> tuple[dict, bool]:
        """The authenticated, checked body of ``state.json`` (a format-1 body upgraded in
        memory) and whether it was format 1. Raises :class:`StateError`."""
        raw = _read_regular(os.path.join(self.path, STATE_NAME), _MAX_STATE_BYTES)
        try:
            if len(raw) > _MAX_STATE_BYTES:
                raise ValueError("state file too large")
            outer = json.loads(raw.decode("ascii"))
            body, mac = outer["body"], outer["mac"]
            ok = (type(outer) is dict and set(outer) == {"body", "mac"} and type(mac) is str
                  and hmac.compare_digest(mac, self._mac(_canonical(body))))
        except (ValueError, KeyError, TypeError, UnicodeDecodeError):
            ok = False
        upgraded = ok and _valid_body_v1(body)
        if upgraded:
            body = _upgrade(body)
        if not ok or not _valid_body(body):
            raise StateError(f"state file in {self.path!r} is corrupt or fails its MAC; refusing")
        return body, upgraded

    def _check_counter(self, body: dict, writer: bool) -> None:
        committed = body["counter"]
        if self.counter is None:
            if committed is not None:
                raise StateReplayError(f"state in {self.path!r} is bound to a monotonic counter; open it "
                                       "with that counter (counter=...)")
            return
        value = self._counter_value()
        if committed is None:
            if value != 0:
                raise StateReplayError(
                    f"state in {self.path!r} is not bound to the device counter, which is at {value}: "
                    "an older state file was put back; refusing")
            return  # a writer binds it now (DeviceState opening), a reader accepts it
        if committed == value + 1:
            if writer:  # the previous commit renamed the state but did not reach the increment
                self._increment(value)
            return
        if committed < value:
            raise StateReplayError(
                f"state in {self.path!r} commits to counter {committed} but the device counter is at "
                f"{value}: an older state file was put back; refusing")
        if committed > value:
            raise StateReplayError(
                f"state in {self.path!r} commits to counter {committed}, ahead of the device counter "
                f"({value}): the counter was reset or the state belongs to another device; refusing")

    def _increment(self, value: int) -> None:
        try:
            new = self.counter.increment()
        except Exception as exc:
            raise StateError(f"cannot increment the device's monotonic counter: {exc}") from None
        if new != value + 1:
            raise StateError(f"the monotonic counter went from {value} to {new!r} in one increment")

    def _commit(self, body: dict) -> None:
        """Write ``body`` as the new state (caller holds the exclusive lock): the single commit
        point, then the counter increment."""
        value = None
        if self.counter is not None:
            value = self._counter_value()
            body = {**body, "counter": value + 1}
        data = _canonical(body)
        atomic_write(self.path, STATE_NAME, _canonical({"body": body, "mac": self._mac(data)}))
        self._state = body
        if value is not None:
            self._increment(value)

    def _clean(self) -> None:
        """Remove temp files and bundle files the state does not name. Called only under the
        exclusive lock: every writer holds it, so no temp file is anyone's work in progress and
        no reader is reading a file the current state does not name."""
        keep = {f"{s}.bundle" for s in (self._state["active"], self._state["previous"]) if s}
        for directory, names in ((self.path, None), (self._bundles, keep)):
            for name in os.listdir(directory):
                if name.startswith(TMP_PREFIX) or (names is not None and name not in names):
                    try:
                        os.unlink(os.path.join(directory, name))
                    except OSError:
                        pass

    def _stored_copy(self, sha: str) -> bytes | None:
        """The bytes stored for ``sha`` if they hash to it, else None (missing, unreadable,
        damaged)."""
        try:
            data = _read_regular(os.path.join(self._bundles, f"{sha}.bundle"), self.limits.max_bundle_bytes)
        except (OSError, StateError):
            return None
        return data if _sha(data) == sha else None


def _is_sha(value) -> bool:
    return type(value) is str and len(value) == 64 and all(ch in "0123456789abcdef" for ch in value)


def _valid_body_v1(body) -> bool:
    """A format-1 body (before issue 25): installed maps version -> sha256."""
    keys = {"format", "version", "time_floor", "installed", "active", "previous"}
    if type(body) is not dict or set(body) != keys or body["format"] != 1 or type(body["format"]) is not int:
        return False
    if type(body["version"]) is not int or type(body["time_floor"]) is not int or type(body["installed"]) is not dict:
        return False
    return (all(_is_sha(s) for s in body["installed"].values())
            and all(s is None or _is_sha(s) for s in (body["active"], body["previous"]))
            and all(type(k) is str and k.isdigit() for k in body["installed"]))


def _valid_entry(entry) -> bool:
    if type(entry) is not dict or set(entry) != {"sha256", "issued_at", "signers"} or not _is_sha(entry["sha256"]):
        return False
    if entry["issued_at"] is not None and type(entry["issued_at"]) is not int:
        return False
    signers = entry["signers"]
    return signers is None or (type(signers) is list and all(_is_sha(s) for s in signers))


def _valid_trust(trust) -> bool:
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


def _valid_body(body) -> bool:
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
