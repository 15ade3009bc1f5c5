"""The device's installed state: a small directory the firmware points at.

:class:`DeviceState` composes four parts, each an object of its own in a module of its own,
each given the parts it uses when it is made, each reaching the directory only through the store:

- store and lock (:class:`~._store.Store`): the directory, the secret, ``state.json`` and its
  MAC, the lock, the monotonic counter;
- clock and floors (:class:`~._clock.Clock`): the clock, ``now_eff`` from the time floor;
- install and rotation (:class:`~._install.Installer`): atomic installs, the trusted keyring and
  its rotation;
- release (:class:`~._release.Releaser`): the bundle in use, permanent releases.

:class:`DeviceState` itself checks its arguments, reads the clock once per operation, keeps
the last error seen and writes the status report.

Re-provisioning (:meth:`DeviceState.reprovision`): a counter-bound device whose directory was
lost cannot open a fresh one by itself (the counter says states were committed: a wipe). The
operator's explicit call makes a fresh directory (new secret, floors at 0) bound at the
counter's current value; it is a new device as far as releases go.

Standard library (plus the device runtime) only.
"""
from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ..constants import DEFAULT_LOCK_WAIT, EXPIRY_GRACE, MAX_CLOCK_SKEW
from ..errors import BundleError, BundleTooLargeError, KeyringError, NoValidBundleError, StateError
from ..files import TMP_PREFIX, fsync_dir
from ..format import Limits
from ..kinds import Bundle, GaussianBundle, NullspaceBundle
from ..randomness import DerivedBits
from ..trust import Binding, Keyring, KeyringChain
from ._clock import Clock
from ._counter import MonotonicCounter
from ._install import Installer, InstallResult
from ._release import Releaser
from ._store import Store, clear_unprovisioned, os_errors, read_file

__all__ = ["DeviceState"]

_DEFAULT_LIMITS = Limits()


class DeviceState:
    """A device's state directory, opened (and created if absent) under one trusted keyring.

    The directory is checked, then held open: every access goes through its descriptor, so
    renaming the path or swapping another directory in after the open changes nothing (the
    device keeps working in the directory it checked). :meth:`close` (or ``with``) lets go.

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

    def __init__(self, path: str | os.PathLike[str], keyring: Keyring | KeyringChain | None = None, *,
                 limits: Limits = _DEFAULT_LIMITS, clock: Callable[[], float] = time.time, max_skew: int = MAX_CLOCK_SKEW,
                 grace: int = EXPIRY_GRACE, binding: Binding | None = None, counter: MonotonicCounter | None = None,
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
        self.limits, self.counter = limits, counter
        self.max_skew, self.grace, self.binding = max_skew, grace, binding
        self.last_error: str | None = None
        self._store = Store(self.path, lock_wait=self.lock_wait, counter=counter, bundle_cap=limits.max_bundle_bytes)
        self._clock = Clock(self._store, clock)
        self._installer = Installer(self._store, self._clock, limits=limits, binding=binding, max_skew=max_skew)
        self._releaser = Releaser(self._store, self._clock, self._installer, limits=limits, binding=binding,
                                  grace=grace)
        try:
            with os_errors(f"state directory {self.path!r}"):
                self._store.open(keyring, self._installer, reprovision=_reprovision)
        except BaseException:
            self._store.close()
            raise

    def close(self) -> None:
        """Let go of the state directory: close the descriptors it is held by.

        The directory is opened once and every access goes through them, so a path renamed or
        swapped meanwhile changes nothing. Idempotent; an operation after it raises
        :class:`StateError`. Also done when the object is collected, and by
        ``with DeviceState(...) as state:``.
        """
        self._store.close()

    def __enter__(self) -> DeviceState:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @classmethod
    def reprovision(cls, path: str | os.PathLike[str], keyring: Keyring | KeyringChain, *,
                    counter: MonotonicCounter, **options: Any) -> DeviceState:
        """A fresh state directory bound at a counter's current value.

        Make a fresh state directory at ``path`` bound at ``counter``'s current value: the
        operator's way back for a counter-bound device whose directory was lost or damaged.

        A plain open refuses a fresh directory while the counter is above 0 (the directory was
        wiped, :class:`StateReplayError`), and must keep doing so: the service never calls this
        by itself. The new directory has a new secret (every input is released with new draws,
        as on another device: count it as one), floors at 0 and ``keyring`` pinned; offer the
        current bundle next. Every state written from then on commits to the counter as before,
        so the old directory put back is refused.

        Atomic: the directory is made whole under a temporary name beside ``path`` (secret,
        state, counter increment) and renamed over it in one step, so a process killed on the
        way leaves ``path`` as it was (absent or empty; a ``.tmp-reprovision-*`` sibling may be
        left, never read) and the call can simply be repeated.

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
        target = os.path.abspath(os.fspath(path))
        with os_errors(f"state directory {target!r}"):
            clear_unprovisioned(target)
            # made whole beside it, then renamed over the absent or empty directory in one step:
            # a process killed before the rename leaves the path as it was (and a temp sibling)
            staging = os.path.join(os.path.dirname(target), f"{TMP_PREFIX}reprovision-{os.path.basename(target)}."
                                                            f"{os.getpid()}.{os.urandom(8).hex()}")
            try:
                cls(staging, keyring, counter=counter, _reprovision=True, **options).close()
                os.rename(staging, target)
            except BaseException:
                shutil.rmtree(staging, ignore_errors=True)
                raise
            fsync_dir(os.path.dirname(target))
        return cls(target, keyring, counter=counter, **options)

    # -- clock and floors -------------------------------------------------------------------------

    @property
    def installed_version(self) -> int:
        """The version floor.

        The version floor: version of the active bundle, or after a keyring rotation the
        highest version the new keyring vouches for (0 if none); as of the last operation.
        """
        return self._store.body["version"]

    @property
    def time_floor(self) -> int:
        """The time floor: the latest ``issued_at`` of any verified bundle.

        Latest ``issued_at`` of any verified bundle, unix seconds (never decreases except
        through a signed keyring rotation).
        """
        return self._store.body["time_floor"]

    @property
    def active_sha256(self) -> str | None:
        """The sha256 of the active bundle.

        The sha256 (hex) of the active bundle, ``None`` if none is installed; as of the last
        operation.
        """
        return self._store.body["active"]

    def now_eff(self, clock: float) -> float:
        """The effective clock: never below the floors.

        ``max(clock, time_floor, PLAUSIBLE_CLOCK)``: a clock reset to 0 on a fresh device
        still refuses bundles that expired before 2020-09-13.
        """
        return self._clock.now_eff(clock)

    # -- the keyring ------------------------------------------------------------------------------

    @property
    def keyring(self) -> Keyring:
        """The keyring bundles are verified with (the state's, as of the last operation)."""
        return self._installer.chain(self._store.body).keyring

    @property
    def keyring_version(self) -> int:
        """Version of the trusted keyring document (0 for bare keys never rotated)."""
        return self._installer.chain(self._store.body).version

    def rotate_keyring(self, documents: bytes | bytearray | Iterable[bytes], *, now: float | None = None) -> int:
        """How many signed keyring documents moved the trusted keyring.

        Move the trusted keyring through the signed keyring ``documents`` (bytes, each the
        next version; at most :data:`MAX_ROTATIONS` are walked) and recompute the floors from
        what the new keyring still vouches for (:mod:`._install`; THREATS C8, C9).

        All or nothing: if any document fails (:class:`KeyringVersionError`,
        :class:`KeyringError`) the state is unchanged. Returns how many were applied. ``now``
        (unix seconds; default: the clock) is the rotation's clock: when plausible, dates of
        kept keys beyond it plus ``max_skew`` are reset (:mod:`._install`). Raises
        :class:`StateError` if the directory cannot be written.
        """
        chain = [bytes(documents)] if isinstance(documents, (bytes, bytearray)) else list(documents)
        if not chain:
            return 0
        clock = self._clock.read(now)
        try:
            with os_errors("cannot write the state directory"):
                applied = self._installer.rotate(chain, clock)
        except (KeyringError, StateError) as exc:
            self.last_error = f"{type(exc).__name__}: {exc}"
            raise
        self.last_error = None
        return applied

    # -- installing -------------------------------------------------------------------------------

    def install(self, data: bytes | bytearray | memoryview, *, now: float | None = None) -> InstallResult:
        """Verify ``data`` (a whole bundle file) and make it the active bundle, atomically.

        The bundle already active with its stored copy intact is answered under a shared lock
        (``"no_update"``: no write, never held up by a reader); anything else runs under the
        exclusive lock on a fresh read of the state. The clock is read once. Checks, in order:
        same bytes as the active bundle -> ``"no_update"`` (nothing written), or ``"repaired"``
        if the stored copy was missing or damaged (it is written back, G10); the trusted keyring
        has not expired (``KeyringExpiredError``); everything
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
            with os_errors("cannot write the state directory"):
                result = self._installer.install(data, self._clock.read(now))
        except (BundleError, KeyringError, StateError) as exc:
            self.last_error = f"{type(exc).__name__}: {exc}"
            raise
        self.last_error = None
        return result

    def install_file(self, path: str | os.PathLike[str], *, now: float | None = None) -> InstallResult:
        """The result of installing a bundle file.

        :meth:`install` the bundle file at ``path`` (read once, at most
        ``limits.max_bundle_bytes + 1`` bytes; a FIFO or device is refused, not read).
        """
        cap = self.limits.max_bundle_bytes
        try:
            data = read_file(os.fspath(path), cap)
        except StateError as exc:
            raise BundleError(str(exc)) from None
        except OSError as exc:
            raise BundleError(f"cannot read bundle file {os.fspath(path)!r}: {exc.strerror}") from None
        if len(data) > cap:
            raise BundleTooLargeError(f"bundle file is larger than {cap} bytes")
        return self.install(data, now=now)

    # -- using ------------------------------------------------------------------------------------

    def active(self, *, now: float | None = None) -> Bundle | GaussianBundle | NullspaceBundle:
        """The bundle to release with.

        The active one re-verified from disk, or the previous known-good copy if the active
        file fails (THREATS G3).

        The state and both files are read under a shared lock (concurrent readers go side by
        side; an install waits), then each copy must hash to the sha256 the state recorded and
        pass :func:`load_bundle` again with the state's keyring (at ``now_eff - grace``, so an
        expired bundle is still used within the grace period). Raises
        :class:`NoValidBundleError` if none is installed or neither copy passes, and
        :class:`StateError` (or :class:`StateReplayError`) if the state cannot be read
        (:class:`StateLockedError` if a writer holds the lock for all of ``lock_wait``).
        """
        clock = self._clock.read(now)
        try:
            with os_errors("cannot read the state directory"):
                return self._releaser.active(clock)
        except NoValidBundleError as exc:
            if self.active_sha256 is not None:  # installed, but no copy passes: a fault to report
                self.last_error = f"NoValidBundleError: {exc}"
            raise

    def status(self, *, now: float | None = None) -> dict:
        """A report of the device's state for the operator.

        A report for the operator: ``state`` is ``"ok"``, ``"stale"`` (past ``expires``,
        still releasing within the grace period), ``"fallback"`` (the previous copy is in use),
        ``"no_bundle"`` (nothing is released), plus version, sha256, time floor, keyring
        version, the counter value the state commits to, and the last error seen (its class
        name names the attack or fault, THREATS G7).
        """
        clock = self._clock.read(now)
        report: dict[str, object] = {"clock": clock}
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
                       "active_sha256": self.active_sha256, "clock_plausible": self._clock.plausible(clock),
                       "keyring_version": self.keyring_version, "counter": self._store.body["counter"],
                       "last_error": self.last_error})
        return report

    def release_source(self, bundle: Bundle, c: int) -> DerivedBits:
        """The permanent bit source of input ``c`` under ``bundle``.

        ``c`` is in 0 <= c < 2**64. A ``randbits(k)`` source for any release path of this
        device (the table sampler here; a noise mechanism keyed by its own input index, e.g. the
        first 8 bytes of a hash of the canonical row, as an int).
        """
        return self._releaser.release_source(bundle, c)

    def release_index(self, bundle: Bundle, row: Sequence[object]) -> int:
        """Output index released for a row, permanent for this device.

        The permanent draw of ``row``'s input cluster under ``bundle`` (same row, same bundle,
        same device -> same index). Raises InputError.
        """
        return self._releaser.release_index(bundle, row)

    def sanitize(self, bundle: Bundle | GaussianBundle | NullspaceBundle, row: Sequence[object]) -> list:
        """Released cells for a row, permanent for this device.

        Released cells for ``row``, permanent for this device: a table bundle releases the
        representative of :meth:`release_index`; a Gaussian-noise bundle draws its noise from
        :func:`record_bits` of the parsed row; a null-space bundle is deterministic already.
        The raw row never leaves. Raises InputError and what the bundle's release raises.
        """
        return self._releaser.sanitize(bundle, row)
