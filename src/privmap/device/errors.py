"""Typed errors of the device runtime: one base class, subclasses by what went wrong.

Every error the runtime raises on purpose is a :class:`PrivmapDeviceError`. Whenever one is
raised, nothing is released: no bundle is returned by the loader and no cell by ``sanitize``.

Messages never contain the user's raw cells (they name the feature and the rule broken only),
and errors raised while parsing a row are raised ``from None`` so that no chained exception
carries a raw value either.
"""
from __future__ import annotations

__all__ = [
    "PrivmapDeviceError",
    "BundleError",
    "BundleTooLargeError",
    "BundleFormatError",
    "WrongTypeError",
    "BundleSignatureError",
    "ExpiredBundleError",
    "RollbackError",
    "TableError",
    "MetricsError",
    "KeyringError",
    "InputError",
    "RandomnessError",
    "EquivocationError",
    "FutureBundleError",
    "WorkLimitError",
    "PolicyError",
    "StateError",
    "StateLockedError",
    "NoValidBundleError",
]


class PrivmapDeviceError(Exception):
    """Base class of every error the device runtime raises on purpose."""


class BundleError(PrivmapDeviceError):
    """A bundle was refused. Subclasses say why; the bundle is not loaded."""


class BundleTooLargeError(BundleError):
    """The bundle is larger than ``Limits.max_bundle_bytes`` (checked before any parsing)."""


class BundleFormatError(BundleError):
    """Bytes that are not a well-formed bundle: msgpack errors, limits, trailing bytes,
    duplicate or unknown keys, wrong types, unsupported format or schema version."""


class WrongTypeError(BundleFormatError):
    """A correctly signed artifact whose payload ``type`` is not ``"privmap/bundle"``."""


class BundleSignatureError(BundleError):
    """Missing, malformed or invalid signature; unsupported algorithm; key id not pinned."""


class ExpiredBundleError(BundleError):
    """The bundle's ``expires`` is at or before the current time."""


class RollbackError(BundleError):
    """The bundle's ``version`` is below the minimum version the caller accepts."""


class TableError(BundleError):
    """The sampling table is malformed: shape, index range, order, weights, row sums."""


class MetricsError(BundleError):
    """The declared metrics contradict the bundle (declared leakage below the table's)."""


class KeyringError(PrivmapDeviceError):
    """A trusted key could not be provisioned (bad encoding, small or mixed order, private key)."""


class InputError(PrivmapDeviceError):
    """The user's row is unusable: wrong length, type, non-finite, out of domain, or (exact
    mechanism) not one of the bundle's input tuples."""


class RandomnessError(PrivmapDeviceError):
    """The randomness source failed (raised, would block, or returned an invalid value)."""


# -- installed state (device/state/_state.py) and work caps ----------------------------------------


class EquivocationError(BundleError):
    """A bundle with the version of one already installed but different bytes (THREATS D3)."""


class FutureBundleError(BundleError):
    """The bundle's ``issued_at`` is later than the device clock plus the allowed skew."""


class WorkLimitError(BundleFormatError):
    """The payload declares more work (cells, non-zeros, |A| x non-zeros) than the limits allow;
    raised from the array headers, before any array is materialised."""


class PolicyError(MetricsError):
    """The declared leakage is above the device's policy maximum (THREATS H5)."""


class StateError(PrivmapDeviceError):
    """The device state directory is unusable: corrupt or missing state file or secret, wrong
    permissions, or it cannot be written. Nothing is released and nothing is installed."""


class StateLockedError(StateError):
    """Another process holds the state directory's lock and it did not come free within the
    wait (``DeviceState(lock_wait=...)``); nothing was done. ``holders`` lists the pids holding
    it where the platform tells them (else it is empty)."""

    def __init__(self, message: str, holders=()):
        super().__init__(message)
        self.holders = list(holders)


class NoValidBundleError(PrivmapDeviceError):
    """No installed bundle can be used (none installed, both copies fail re-verification, or
    the active one is past ``expires`` plus the grace period): nothing is released."""
