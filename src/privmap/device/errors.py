"""Every error the device runtime raises on purpose, in one shallow tree by who is at fault.

Whenever one is raised nothing is released: no bundle is returned by the loader, no cell by a
release, nothing is installed. Messages never contain the user's raw cells (they name the feature
and the rule broken only), and errors raised while parsing a row are raised ``from None`` so that
no chained exception carries a raw value either.

The tree (after python-tuf's ``tuf/api/exceptions.py``)::

    PrivmapDeviceError
    +-- BundleError               the bundle (its builder, signer or whoever sent it)
    |   +-- BundleTooLargeError, BundleFormatError (WrongTypeError, WorkLimitError),
    |   |   BundleSignatureError, ExpiredBundleError, FutureBundleError, RollbackError,
    |   |   EquivocationError, TableError, MetricsError (PolicyError)
    |   +-- WrongTargetError, WrongDomainError      built for another device or configuration
    +-- KeyringError              the keys provisioned or the keyring documents offered
    |   +-- KeyringVersionError, KeyringExpiredError, KeyringMismatchError
    +-- InputError                the user's row (TheoremCheckError)
    +-- RandomnessError           the platform's randomness source
    +-- StateError                the device's state directory (StateLockedError, StateReplayError)
    +-- NoValidBundleError        nothing usable is installed
    +-- ReleaseRefusedError       a release the device declines (a full memo)
"""
from __future__ import annotations

from collections.abc import Iterable

__all__ = [
    "PrivmapDeviceError",
    "BundleError",
    "BundleTooLargeError",
    "BundleFormatError",
    "WrongTypeError",
    "WorkLimitError",
    "BundleSignatureError",
    "ExpiredBundleError",
    "FutureBundleError",
    "RollbackError",
    "EquivocationError",
    "TableError",
    "MetricsError",
    "PolicyError",
    "WrongTargetError",
    "WrongDomainError",
    "KeyringError",
    "KeyringVersionError",
    "KeyringExpiredError",
    "KeyringMismatchError",
    "InputError",
    "TheoremCheckError",
    "RandomnessError",
    "StateError",
    "StateLockedError",
    "StateReplayError",
    "NoValidBundleError",
    "ReleaseRefusedError",
]


class PrivmapDeviceError(Exception):
    """Base class of every error the device runtime raises on purpose."""


# -- the bundle ----------------------------------------------------------------------------------


class BundleError(PrivmapDeviceError):
    """A bundle was refused. Subclasses say why; the bundle is not loaded."""


class BundleTooLargeError(BundleError):
    """The bundle is larger than ``Limits.max_bundle_bytes`` (checked before any parsing)."""


class BundleFormatError(BundleError):
    """A malformed bundle.

    Bytes that are not a well-formed bundle: msgpack errors, limits, trailing bytes,
    duplicate or unknown keys, wrong types, unsupported format or schema version.
    """


class WrongTypeError(BundleFormatError):
    """A correctly signed artifact whose payload ``type`` is not ``"privmap/bundle"``."""


class WorkLimitError(BundleFormatError):
    """More work declared than the limits allow.

    The payload declares more work (cells, non-zeros, |A| x non-zeros) than the limits allow;
    raised from the array headers, before any array is materialised.
    """


class BundleSignatureError(BundleError):
    """Missing, malformed or invalid signature; unsupported algorithm; key id not pinned."""


class ExpiredBundleError(BundleError):
    """The bundle's ``expires`` is at or before the current time."""


class FutureBundleError(BundleError):
    """The bundle's ``issued_at`` is later than the device clock plus the allowed skew."""


class RollbackError(BundleError):
    """The bundle's ``version`` is below the minimum version the caller accepts."""


class EquivocationError(BundleError):
    """A bundle with the version of one already installed but different bytes (THREATS D3)."""


class TableError(BundleError):
    """The sampling table is malformed: shape, index range, order, weights, row sums."""


class MetricsError(BundleError):
    """The declared metrics contradict the bundle (declared leakage below the table's)."""


class PolicyError(MetricsError):
    """The declared leakage is above the device's policy maximum (THREATS H5)."""


class WrongTargetError(BundleError):
    """A verified bundle built for another device class than this device's (THREATS E1)."""


class WrongDomainError(BundleError):
    """A verified bundle for another domain than the device's.

    The domain is the private attribute and the feature schema (catalogue, rating scale,
    category lists) the device is configured with.
    """


# -- the keys -------------------------------------------------------------------------------------


class KeyringError(PrivmapDeviceError):
    """A trusted key could not be provisioned (bad encoding, small or mixed order, private key)."""


class KeyringVersionError(KeyringError):
    """A keyring document whose version is not exactly the current one plus 1."""


class KeyringExpiredError(KeyringError):
    """The current keyring document has expired: no bundle is accepted until a rotation."""


class KeyringMismatchError(KeyringError):
    """A keyring other than the one the state directory trusts.

    The keyring given to ``DeviceState`` is not the one its state directory trusts, and it
    did not arrive as a signed rotation of it (use ``DeviceState.rotate_keyring``).
    """


# -- the user's row -------------------------------------------------------------------------------


class InputError(PrivmapDeviceError):
    """An unusable row of the user's.

    The user's row is unusable: wrong length, type, non-finite, out of domain, or (exact
    mechanism) not one of the bundle's input tuples.
    """


class TheoremCheckError(InputError):
    """A cleaned row that fails the Theorem 1 check.

    The cleaned row failed the Theorem 1 check ``||A_d^T (x - x~)||^2 = epsilon``
    (null-space bundles); nothing is released.
    """


# -- the platform and the device ------------------------------------------------------------------


class RandomnessError(PrivmapDeviceError):
    """The randomness source failed (raised, would block, or returned an invalid value)."""


class StateError(PrivmapDeviceError):
    """An unusable state directory.

    The device state directory is unusable: corrupt or missing state file or secret, wrong
    permissions, or it cannot be written. Nothing is released and nothing is installed.
    """


class StateLockedError(StateError):
    """The state directory's lock, held by another process too long.

    Another process holds the state directory's lock and it did not come free within the
    wait (``DeviceState(lock_wait=...)``); nothing was done. ``holders`` lists the pids holding
    it where the platform tells them (else it is empty).
    """

    def __init__(self, message: str, holders: Iterable[int] = ()) -> None:
        super().__init__(message)
        self.holders = list(holders)


class StateReplayError(StateError):
    """An old state put back, or a counter missing.

    The state file is older than the device's monotonic counter (an old ``state.json`` was
    put back), or a counter-bound state was opened without its counter, or the directory was
    wiped while the counter says states were committed.
    """


class NoValidBundleError(PrivmapDeviceError):
    """No installed bundle that can be used.

    No installed bundle can be used (none installed, both copies fail re-verification, or
    the active one is past ``expires`` plus the grace period): nothing is released.
    """


class ReleaseRefusedError(PrivmapDeviceError):
    """The device refuses to release (the per-bundle memo of released records is full)."""
