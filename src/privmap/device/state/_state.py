"""The device's installed state: a small directory the firmware points at.

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

Installing writes the new bundle file (temp file, fsync, rename, fsync directory), then replaces
``state.json`` the same way; that rename is the one commit point, so any failure before it leaves
the active bundle and the state byte-identical.

Time: ``now_eff = max(clock, time_floor, PLAUSIBLE_CLOCK)``, read once per operation, so a clock
reset to 1970 cannot revive an expired bundle and the floor never decreases (except through a
signed keyring rotation, below). A bundle issued more than ``max_skew`` seconds after the clock
is refused (:class:`FutureBundleError`) unless the clock is known to be wrong (behind the floor,
or before :data:`PLAUSIBLE_CLOCK`), and a bundle issued after :data:`LATEST_ISSUED_AT` is refused
whatever the clock says. An active bundle past ``expires`` still releases for ``grace`` seconds
(status ``"stale"``), then nothing is released (:class:`NoValidBundleError`).

Rotation (:meth:`DeviceState.rotate_keyring`, THREATS C8, C9): after a signed keyring rotation
the floors are recomputed from what the new keyring still vouches for: the version floor is the
highest installed version whose recorded signers meet the new keyring's threshold, the time floor
the latest ``issued_at`` among those. A kept key vouches for a date only within the new
document's window: an ``issued_at`` at or after the document's own signed ``expires``, or (when
the clock at the rotation is plausible) later than that clock plus ``max_skew``, a date no
install would accept now, is reset to 0 in the record and counts for nothing. A compromised key
revoked by the rotation therefore takes back what it pushed forward (a version of 2**62, an
``issued_at`` in 2099), a kept key that signed a mis-dated bundle loses the date (its version
stays), and in both cases a bundle issued now installs right after the rotation: the new
document is never expired by the floor it leaves.

Re-provisioning (:meth:`DeviceState.reprovision`): a counter-bound device whose directory was
lost cannot open a fresh one by itself (the counter says states were committed: a wipe). The
operator's explicit call makes a fresh directory (new secret, floors at 0) bound at the
counter's current value; it is a new device as far as releases go.

Releases: :meth:`DeviceState.release_index` draws the output for input cluster c from
:func:`release_bits` (HMAC of the secret, the bundle's sha256 and c), so asking again returns
the same release (RAPPOR-style permanent randomized response; see ``_derived.py``).

Standard library (plus the device runtime) only.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import stat
import time
from typing import NamedTuple

from ..constants import (
    DEFAULT_LOCK_WAIT,
    EXPIRY_GRACE,
    LATEST_ISSUED_AT,
    MAX_CLOCK_SKEW,
    MAX_ROTATIONS,
    PLAUSIBLE_CLOCK,
)
from ..errors import (
    BundleError,
    BundleTooLargeError,
    EquivocationError,
    FutureBundleError,
    KeyringError,
    KeyringMismatchError,
    NoValidBundleError,
    StateError,
    StateLockedError,
    StateReplayError,
)
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
from ..format import Limits, decode_envelope
from ..kinds import Bundle, GaussianBundle, NullspaceBundle
from ..load import load_bundle
from ..randomness import SECRET_BYTES, DerivedBits, draw_bits, record_bits, release_bits, sample_row
from ..trust import Binding, Keyring, KeyringChain, check_binding, verify_envelope
from ._counter import MonotonicCounter

__all__ = ["DeviceState", "InstallResult", "MAX_HISTORY"]

#: Installed versions whose sha256 the state remembers (older ones are below the floor anyway).
MAX_HISTORY = 256

STATE_NAME = "state.json"
SECRET_NAME = "device.secret"
BUNDLE_DIR = "bundles"
_STATE_FORMAT = 2
_MAX_STATE_BYTES = 1 << 20
_MAC_TAG = b"privmap-device-state-v1\x00"
_BODY_KEYS = ("format", "version", "time_floor", "installed", "active", "previous", "counter", "trust")


class InstallResult(NamedTuple):
    """What :meth:`DeviceState.install` did: ``status`` is ``"installed"``, ``"no_update"``
    (the same bytes were already active and stored intact, THREATS D2; nothing was written) or
    ``"repaired"`` (the same bytes were already active but their stored copy was missing or
    damaged; it was written back, THREATS G10)."""

    status: str
    version: int
    sha256: str


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


def _same_keys(a: Keyring, b: Keyring) -> bool:
    return a.key_ids == b.key_ids and a.threshold == b.threshold


def _describe(keyring: Keyring) -> str:
    ids = ", ".join(k.hex()[:16] for k in sorted(keyring.key_ids))
    return f"{keyring.threshold} of [{ids}]"


def _vouched(entry: dict, keyring: Keyring) -> bool:
    """Whether the keys that signed an installed bundle (recorded at install) still meet
    ``keyring``'s threshold. An entry from a format-1 state has no record and counts as
    vouched, so its floors are kept."""
    if entry["signers"] is None:
        return True
    ids = {k.hex() for k in keyring.key_ids}
    return len(ids.intersection(entry["signers"])) >= keyring.threshold


def _upgrade(body: dict) -> dict:
    """A format-1 body (privmap before issue 25) as format 2: no signer records, no counter,
    no keyring (the keyring given at open is pinned)."""
    installed = {v: {"sha256": s, "issued_at": None, "signers": None} for v, s in body["installed"].items()}
    return {**body, "format": _STATE_FORMAT, "installed": installed, "counter": None, "trust": None}


class DeviceState:
    """A device's state directory, opened (and created if absent) under one trusted keyring.

    Parameters
    ----------
    path : str | os.PathLike
        The state directory; created with mode 0700 if missing (parents included).
    keyring : Keyring | KeyringChain | None
        The keys to trust. A new directory pins it (bare keys from PEM files, or a signed
        keyring document); an existing directory keeps the keyring it holds and only checks
        this one against it: the same keys and threshold, the same document or one it was
        rotated from, or the next version (applied as a signed rotation). Anything else
        raises :class:`KeyringMismatchError`. ``None`` opens an existing directory with the
        keyring it holds.
    limits : Limits
        Resource limits passed to the loader.
    clock : callable () -> float
        Unix seconds; ``time.time`` by default (tests pass a fake clock).
    max_skew, grace : int
        Seconds; see :data:`MAX_CLOCK_SKEW` and :data:`EXPIRY_GRACE`.
    binding : Binding | None
        The device's private attribute and feature schema; a bundle for another is refused
        at install and at use (``WrongDomainError``).
    counter : MonotonicCounter | None
        The firmware's hardware monotonic counter; every state written commits to its next
        value, and an older ``state.json`` put back is refused (:class:`StateReplayError`).
        Without one, replay of an old ``state.json`` is not detected (docs/threats-coverage.md).
    lock_wait : float
        Seconds (>= 0, finite) any one operation waits for the directory's lock before
        :class:`StateLockedError`; :data:`DEFAULT_LOCK_WAIT` (5 s) by default, 0 tries once.

    Raises
    ------
    StateError
        The directory (or ``bundles/``) is a symlink, not a directory, not owned by the
        effective user or open to group or others; the secret is not owned by the effective
        user or open to group or others (each message ends with the ``chown`` or ``chmod``
        that fixes it); the state file or secret is missing while bundles are installed,
        corrupt, fails its MAC, or cannot be created; the platform has no ``flock``.
    StateLockedError
        Another process held the directory's lock for all of ``lock_wait``.
    StateReplayError
        The state is older than the counter, bound to a counter that was not given, or missing
        while the counter says states were committed.
    KeyringMismatchError, KeyringError
        ``keyring`` is not the directory's, or a rotation to it fails its signatures.
    """

    def __init__(self, path, keyring: Keyring | KeyringChain | None = None, *, limits: Limits = Limits(),
                 clock=time.time, max_skew: int = MAX_CLOCK_SKEW, grace: int = EXPIRY_GRACE,
                 binding: Binding | None = None, counter: MonotonicCounter | None = None,
                 lock_wait: float = DEFAULT_LOCK_WAIT, _reprovision: bool = False) -> None:
        if keyring is not None and not isinstance(keyring, (Keyring, KeyringChain)):
            raise TypeError("keyring must be a privmap.device.Keyring or KeyringChain")
        if not isinstance(limits, Limits):
            raise TypeError("limits must be a privmap.device.Limits")
        if counter is not None and not isinstance(counter, MonotonicCounter):
            raise TypeError("counter must have read() and increment() (privmap.device.MonotonicCounter)")
        for name, value in (("max_skew", max_skew), ("grace", grace)):
            if type(value) is not int or value < 0:
                raise ValueError(f"{name} must be an int >= 0 (seconds)")
        if type(lock_wait) not in (int, float) or not 0 <= lock_wait < float("inf"):
            raise ValueError("lock_wait must be a finite number of seconds >= 0")
        self.path = os.fspath(path)
        self.lock_wait = float(lock_wait)
        self._reprovision = _reprovision
        self.limits, self._clock, self.counter = limits, clock, counter
        self.max_skew, self.grace, self.binding = max_skew, grace, binding
        self.last_error: str | None = None
        self._bundles = os.path.join(self.path, BUNDLE_DIR)
        self._chain_cache: tuple[bytes, KeyringChain] | None = None
        with self._os_errors(f"state directory {self.path!r}"):
            self._open(keyring)
        self._reprovision = False

    @classmethod
    def reprovision(cls, path, keyring: Keyring | KeyringChain, *, counter: MonotonicCounter,
                    **options) -> "DeviceState":
        """Make a fresh state directory at ``path`` bound at ``counter``'s current value: the
        operator's way back for a counter-bound device whose directory was lost or damaged.

        A plain open refuses a fresh directory while the counter is above 0 (the directory was
        wiped, :class:`StateReplayError`), and must keep doing so: the service never calls this
        by itself. The new directory has a new secret (every input is released with new draws,
        as on another device: count it as one), floors at 0 and ``keyring`` pinned; offer the
        current bundle next. Every state written from then on commits to the counter as before,
        so the old directory put back is refused.

        Parameters
        ----------
        path : str | os.PathLike
            Absent or an empty directory (move the damaged one aside first).
        keyring : Keyring | KeyringChain
            The keys to trust, as for a new directory.
        counter : MonotonicCounter
            The device's counter, read once and incremented once here.
        **options
            The other keyword arguments of :class:`DeviceState` (clock, limits, lock_wait, ...).

        Raises
        ------
        StateError
            ``path`` holds a state, a secret or bundles; or any refusal of an open.
        TypeError
            ``keyring`` or ``counter`` is missing or of the wrong type.
        """
        if keyring is None or counter is None:
            raise TypeError("re-provisioning needs the keyring to pin and the device's counter")
        return cls(path, keyring, counter=counter, _reprovision=True, **options)

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

    # -- the keyring ------------------------------------------------------------------------------

    def _chain(self, body: dict | None = None) -> KeyringChain:
        """The trusted keyring chain the state holds (rebuilt only when it changed)."""
        trust = (body or self._state)["trust"]
        key = _canonical(trust)
        if self._chain_cache is None or self._chain_cache[0] != key:
            if trust["document"] is not None:
                chain = KeyringChain(bytes.fromhex(trust["document"]))
            else:
                chain = KeyringChain.pinned(Keyring([bytes.fromhex(k) for k in trust["keys"]],
                                                    threshold=trust["threshold"]))
            self._chain_cache = (key, chain)
        return self._chain_cache[1]

    @property
    def keyring(self) -> Keyring:
        """The keyring bundles are verified with (the state's, as of the last operation)."""
        return self._chain().keyring

    @property
    def keyring_version(self) -> int:
        """Version of the trusted keyring document (0 for bare keys never rotated)."""
        return self._chain().version

    def _reconcile_keyring(self, body: dict, given) -> None:
        if body["trust"] is None:  # a format-1 state: pin the keyring given now
            if given is None:
                raise StateError(f"state file in {self.path!r} holds no keyring; open it with one")
            self._commit({**body, "trust": _trust_body(_chain_of(given), [])})
            return
        if given is None or self._holds(body, given):
            return
        held = self._chain(body)
        offered = _chain_of(given)
        if offered.document is not None and offered.version == held.version + 1:
            self._rotate_locked(body, [offered.document], self._read_clock(None))
            return
        raise KeyringMismatchError(
            f"the state directory {self.path!r} trusts keyring version {held.version} "
            f"({_describe(held.keyring)}); the keyring given ({_describe(offered.keyring)}"
            f"{'' if offered.document is None else f', version {offered.version}'}) is not it and "
            "is not a signed rotation of it; a new key must arrive as a signed keyring document "
            "(privmap state rotate / DeviceState.rotate_keyring)")

    def _holds(self, body: dict, given) -> bool:
        """Whether ``given`` is the keyring ``body`` trusts: the same bare keys and threshold,
        or the same signed document or one it was rotated from."""
        held = self._chain(body)
        offered = _chain_of(given)
        if offered.document is None:  # bare keys: they must be the keys the state holds
            return _same_keys(offered.keyring, held.keyring)
        digest = _sha(offered.document)
        return (held.document is not None and digest == _sha(held.document)) or digest in body["trust"]["history"]

    def rotate_keyring(self, documents, *, now=None) -> int:
        """Move the trusted keyring through the signed keyring ``documents`` (bytes, each the
        next version; at most :data:`MAX_ROTATIONS` are walked) and recompute the floors from
        what the new keyring still vouches for (module docstring; THREATS C8, C9).

        All or nothing: if any document fails (:class:`KeyringVersionError`,
        :class:`KeyringError`) the state is unchanged. Returns how many were applied. ``now``
        (unix seconds; default: the clock) is the rotation's clock: when plausible, dates of
        kept keys beyond it plus ``max_skew`` are reset (module docstring). Raises
        :class:`StateError` if the directory cannot be written.
        """
        documents = [documents] if isinstance(documents, (bytes, bytearray)) else list(documents)
        if not documents:
            return 0
        clock = self._read_clock(now)
        try:
            with self._os_errors("cannot write the state directory"), self._locked(exclusive=True):
                body = self._load(writer=True)
                applied = self._rotate_locked(body, documents, clock)
                self._clean()
        except (KeyringError, StateError) as exc:
            self.last_error = f"{type(exc).__name__}: {exc}"
            raise
        self.last_error = None
        return applied

    def _rotate_locked(self, body: dict, documents: list, clock: float) -> int:
        held = self._chain(body)
        chain = KeyringChain.pinned(held.keyring) if held.document is None else KeyringChain(held.document)
        history = list(body["trust"]["history"])
        for document in documents[:MAX_ROTATIONS]:
            before = chain.document
            chain.rotate(bytes(document))
            if before is not None:
                history.append(_sha(before))
        keyring = chain.keyring
        horizon = float("inf")  # the latest date the new keyring vouches for now
        if chain.expires is not None:
            horizon = chain.expires - 1
        if clock >= PLAUSIBLE_CLOCK:
            horizon = min(horizon, clock + self.max_skew)
        installed, floor = {}, 0
        for version, entry in body["installed"].items():
            if not _vouched(entry, keyring):
                continue
            date = body["time_floor"] if entry["issued_at"] is None else entry["issued_at"]
            if date > horizon:  # a kept key's date beyond the new window: reset, its version stays
                entry, date = {**entry, "issued_at": 0}, 0
            installed[version] = entry
            floor = max(floor, date)
        self._commit({**body, "version": max(map(int, installed), default=0), "time_floor": floor,
                      "installed": installed, "trust": _trust_body(chain, history)})
        return min(len(documents), MAX_ROTATIONS)

    # -- what the state says ----------------------------------------------------------------------

    @property
    def installed_version(self) -> int:
        """The version floor: version of the active bundle, or after a keyring rotation the
        highest version the new keyring vouches for (0 if none); as of the last operation."""
        return self._state["version"]

    @property
    def time_floor(self) -> int:
        """Latest ``issued_at`` of any verified bundle, unix seconds (never decreases except
        through a signed keyring rotation)."""
        return self._state["time_floor"]

    @property
    def active_sha256(self) -> str | None:
        return self._state["active"]

    def now_eff(self, clock: float) -> float:
        """``max(clock, time_floor, PLAUSIBLE_CLOCK)``: a clock reset to 0 on a fresh device
        still refuses bundles that expired before 2020-09-13."""
        return max(clock, self._state["time_floor"], PLAUSIBLE_CLOCK)

    def _clock_plausible(self, clock: float) -> bool:
        """False for a clock that is known wrong: behind the floor or before PLAUSIBLE_CLOCK."""
        return clock >= max(self._state["time_floor"], PLAUSIBLE_CLOCK)

    def _read_clock(self, now) -> float:
        value = self._clock() if now is None else now
        if type(value) not in (int, float) or value != value or value in (float("inf"), float("-inf")):
            raise TypeError("the clock must give a finite number of unix seconds")
        return value

    # -- installing -------------------------------------------------------------------------------

    def install(self, data, *, now=None) -> InstallResult:
        """Verify ``data`` (a whole bundle file) and make it the active bundle, atomically.

        The bundle already active with its stored copy intact is answered under a shared lock
        (``"no_update"``: no write, never held up by a reader); anything else runs under the
        exclusive lock on a fresh read of the state. The clock is read once. Checks, in order: same bytes as the active bundle -> ``"no_update"`` (nothing written),
        or ``"repaired"`` if the stored copy was missing or damaged (it is written back, G10);
        the trusted keyring has not expired (``KeyringExpiredError``); everything
        :func:`load_bundle` checks, at ``now_eff`` with ``min_version`` = the version floor
        (``RollbackError``, ``ExpiredBundleError``, ...); ``issued_at`` after
        :data:`LATEST_ISSUED_AT`, or beyond the clock plus ``max_skew`` when the clock is
        plausible (:class:`FutureBundleError`); a version installed before with other bytes
        (:class:`EquivocationError`). On any error nothing on disk changes and the error is
        also kept in ``last_error`` for :meth:`status`. Raises :class:`StateError` if the
        directory cannot be written (the state is then still the old one), and
        :class:`StateLockedError` if another process holds the lock for all of ``lock_wait``.
        """
        try:
            with self._os_errors("cannot write the state directory"):
                result = self._install(data, now)
        except (BundleError, KeyringError, StateError) as exc:
            self.last_error = f"{type(exc).__name__}: {exc}"
            raise
        self.last_error = None
        return result

    def _install(self, data, now) -> InstallResult:
        clock = self._read_clock(now)
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError("data must be bytes")
        data = bytes(data)
        sha = _sha(data)
        name = f"{sha}.bundle"
        with self._locked(exclusive=False):  # the bundle already installed, intact: no write, no wait
            state = self._load(writer=False)
            if sha == state["active"] and self._stored_copy(sha) == data:
                return InstallResult("no_update", state["version"], sha)
        with self._locked(exclusive=True):
            state = self._load(writer=True)
            if sha == state["active"]:
                if self._stored_copy(sha) == data:
                    return InstallResult("no_update", state["version"], sha)
                atomic_write(self._bundles, name, data, 0o644)  # self-repair: the verified bytes
                return InstallResult("repaired", state["version"], sha)
            now_eff = self.now_eff(clock)
            keyring = self._chain(state).current(now_eff)
            bundle = load_bundle(data, keyring, now=now_eff, min_version=max(1, state["version"]),
                                 limits=self.limits, max_skew=None)
            check_binding(bundle, self.binding)
            if bundle.issued_at > LATEST_ISSUED_AT:
                raise FutureBundleError(f"bundle issued_at {bundle.issued_at} is after {LATEST_ISSUED_AT} "
                                        "(2100-01-01), the latest a device accepts whatever its clock says")
            if self._clock_plausible(clock) and bundle.issued_at > clock + self.max_skew:
                raise FutureBundleError(
                    f"bundle issued_at {bundle.issued_at} is more than {self.max_skew} s after the clock")
            installed = dict(state["installed"])
            known = installed.get(str(bundle.version))
            if known is not None and known["sha256"] != sha:
                raise EquivocationError(
                    f"version {bundle.version} was installed with sha256 {known['sha256'][:16]}..., "
                    f"this bundle has {sha[:16]}...")
            signers = verify_envelope(decode_envelope(data, self.limits), keyring)[1]
            installed[str(bundle.version)] = {"sha256": sha, "issued_at": bundle.issued_at,
                                              "signers": [s.hex() for s in signers]}
            for old in sorted(installed, key=int)[:-MAX_HISTORY]:
                del installed[old]
            new = {**state, "version": bundle.version, "time_floor": max(state["time_floor"], bundle.issued_at),
                   "installed": installed, "active": sha, "previous": state["active"]}
            try:
                atomic_write(self._bundles, name, data, 0o644)
                self._commit(new)
            except OSError:
                self._state = state
                if sha not in (state["active"], state["previous"]):
                    try:
                        os.unlink(os.path.join(self._bundles, name))
                    except OSError:
                        pass
                raise
            self._clean()
        return InstallResult("installed", bundle.version, sha)

    def _stored_copy(self, sha: str) -> bytes | None:
        """The bytes stored for ``sha`` if they hash to it, else None (missing, unreadable,
        damaged)."""
        try:
            data = _read_regular(os.path.join(self._bundles, f"{sha}.bundle"), self.limits.max_bundle_bytes)
        except (OSError, StateError):
            return None
        return data if _sha(data) == sha else None

    def install_file(self, path, *, now=None) -> InstallResult:
        """:meth:`install` the bundle file at ``path`` (read once, at most
        ``limits.max_bundle_bytes + 1`` bytes; a FIFO or device is refused, not read)."""
        cap = self.limits.max_bundle_bytes
        try:
            data = _read_regular(os.fspath(path), cap)
        except StateError as exc:
            raise BundleError(str(exc)) from None
        except OSError as exc:
            raise BundleError(f"cannot read bundle file {os.fspath(path)!r}: {exc.strerror}") from None
        if len(data) > cap:
            raise BundleTooLargeError(f"bundle file is larger than {cap} bytes")
        return self.install(data, now=now)

    # -- using ----------------------------------------------------------------------------------

    def active(self, *, now=None) -> Bundle:
        """The bundle to release with: the active one re-verified from disk, or the previous
        known-good copy if the active file fails (THREATS G3).

        The state and both files are read under a shared lock (concurrent readers go side by
        side; an install waits), then each copy must hash to the sha256 the state recorded and
        pass :func:`load_bundle` again with the state's keyring (at ``now_eff - grace``, so an
        expired bundle is still used within the grace period). Raises
        :class:`NoValidBundleError` if none is installed or neither copy passes, and
        :class:`StateError` (or :class:`StateReplayError`) if the state cannot be read
        (:class:`StateLockedError` if a writer holds the lock for all of ``lock_wait``).
        """
        clock = self._read_clock(now)
        with self._os_errors("cannot read the state directory"), self._locked(exclusive=False):
            state = self._load(writer=False)
            copies = []
            for role in ("active", "previous"):
                sha = state[role]
                if sha is None:
                    continue
                try:
                    copies.append((role, sha, _read_regular(os.path.join(self._bundles, f"{sha}.bundle"),
                                                            self.limits.max_bundle_bytes)))
                except (OSError, StateError) as exc:  # a too-long file fails the hash check below
                    copies.append((role, sha, f"unreadable ({getattr(exc, 'strerror', None) or exc})"))
        if state["active"] is None:
            raise NoValidBundleError("no bundle is installed in this state directory")
        keyring, problems = self._chain(state).keyring, []
        for role, sha, data in copies:
            if isinstance(data, str):
                problems.append(f"{role}: {data}")
                continue
            if _sha(data) != sha:
                problems.append(f"{role}: bytes on disk do not match the recorded sha256")
                continue
            try:
                bundle = load_bundle(data, keyring, now=self.now_eff(clock) - self.grace, limits=self.limits,
                                     max_skew=None)
                check_binding(bundle, self.binding)
                return bundle
            except BundleError as exc:
                problems.append(f"{role}: {type(exc).__name__}: {exc}")
        message = "no usable bundle (" + "; ".join(problems) + "); nothing is released"
        self.last_error = f"NoValidBundleError: {message}"
        raise NoValidBundleError(message)

    def status(self, *, now=None) -> dict:
        """A report for the operator: ``state`` is ``"ok"``, ``"stale"`` (past ``expires``,
        still releasing within the grace period), ``"fallback"`` (the previous copy is in use),
        ``"no_bundle"`` (nothing is released), plus version, sha256, time floor, keyring
        version, the counter value the state commits to, and the last error seen (its class
        name names the attack or fault, THREATS G7)."""
        clock = self._read_clock(now)
        report = {"clock": clock}
        try:
            bundle = self.active(now=clock)
        except NoValidBundleError:
            report["state"] = "no_bundle"
        else:
            if bundle.sha256 != self.active_sha256:
                report["state"] = "fallback"
            elif bundle.expires <= self.now_eff(clock):
                report["state"] = "stale"
            else:
                report["state"] = "ok"
            report["in_use_sha256"], report["in_use_version"] = bundle.sha256, bundle.version
        report.update({"version": self.installed_version, "time_floor": self.time_floor,
                       "active_sha256": self.active_sha256, "clock_plausible": self._clock_plausible(clock),
                       "keyring_version": self.keyring_version, "counter": self._state["counter"],
                       "last_error": self.last_error})
        return report

    def release_source(self, bundle: Bundle, c: int) -> DerivedBits:
        """The permanent bit source of input ``c`` (0 <= c < 2**64) under ``bundle``: a
        ``randbits(k)`` source for any release path of this device (the table sampler here; a
        noise mechanism keyed by its own input index, e.g. the first 8 bytes of a hash of the
        canonical row, as an int)."""
        if not isinstance(bundle, Bundle):
            raise TypeError("bundle must be a privmap.device.Bundle")
        return release_bits(self._secret, bundle.sha256, c)

    def release_index(self, bundle: Bundle, row) -> int:
        """Output index released for ``row`` under ``bundle``: the permanent draw of its input
        cluster (same row, same bundle, same device -> same index). Raises InputError."""
        if not isinstance(bundle, Bundle):
            raise TypeError("bundle must be a privmap.device.Bundle")
        c = bundle.lookup(row)
        r = draw_bits(self.release_source(bundle, c), bundle.bits)
        return sample_row(bundle.index[c], bundle.weight[c], r)

    def sanitize(self, bundle, row) -> list:
        """Released cells for ``row``, permanent for this device: a table bundle releases the
        representative of :meth:`release_index`; a Gaussian-noise bundle draws its noise from
        :func:`record_bits` of the parsed row; a null-space bundle is deterministic already.
        The raw row never leaves. Raises InputError and what the bundle's release raises."""
        if isinstance(bundle, GaussianBundle):
            return bundle.sanitize(row, rng=record_bits(self._secret, bundle.sha256, bundle.record(row)))
        if isinstance(bundle, NullspaceBundle):
            return bundle.sanitize(row)
        return bundle.representative(self.release_index(bundle, row))


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
