"""The device's installed state: a small directory the firmware points at.

:class:`DeviceState` is one class composed of four parts (its base classes), each a module of its
own, each reaching the directory only through the store:

- store and lock (:mod:`._store`): the directory, the secret, ``state.json`` and its MAC, the
  lock, the monotonic counter;
- clock and floors (:mod:`._clock`): ``now_eff``, the version and time floors;
- install and rotation (:mod:`._install`): atomic installs, the trusted keyring and its rotation;
- release (:mod:`._release`): the bundle in use, the status report, permanent releases.

Re-provisioning (:meth:`DeviceState.reprovision`): a counter-bound device whose directory was
lost cannot open a fresh one by itself (the counter says states were committed: a wipe). The
operator's explicit call makes a fresh directory (new secret, floors at 0) bound at the
counter's current value; it is a new device as far as releases go.

Standard library (plus the device runtime) only.
"""
from __future__ import annotations

import os
import time

from ..constants import DEFAULT_LOCK_WAIT, EXPIRY_GRACE, MAX_CLOCK_SKEW
from ..format import Limits
from ..trust import Binding, Keyring, KeyringChain
from ._clock import Floors
from ._counter import MonotonicCounter
from ._install import Installer
from ._release import Releaser
from ._store import BUNDLE_DIR, StateStore

__all__ = ["DeviceState"]


class DeviceState(StateStore, Floors, Installer, Releaser):
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
