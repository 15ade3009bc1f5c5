"""The load workflow: a bundle's bytes, verified and parsed, into a bundle object, or an error.

One path for every kind, in this order: the size cap; the envelope decoded and its signatures
verified against the keyring (:mod:`privmap.device.trust`) before anything of the payload is
decoded; the work caps read from the payload's msgpack headers (:func:`~privmap.device.format.prescan`);
the payload decoded and its header checked (:mod:`privmap.device.format`); version, expiry and
issue date against the caller's floor and clock; the body handed to its kind through the kinds'
registry (:func:`privmap.device.kinds.load_body`), which parses it and recomputes its declared
figures; last, the declared leakage against the device's policy maximum.
"""
from __future__ import annotations

import hashlib
import math
import os
import time
from collections.abc import Mapping

from .constants import MAX_CLOCK_SKEW
from .errors import (
    BundleError,
    BundleFormatError,
    BundleTooLargeError,
    ExpiredBundleError,
    FutureBundleError,
    PolicyError,
    RollbackError,
)
from .files import NotRegularFile, read_regular
from .format import Limits, decode_envelope, decode_payload, parse_header, prescan
from .kinds import Bundle, GaussianBundle, NullspaceBundle, load_body
from .trust import Keyring, verify_envelope

__all__ = ["load_bundle", "read_bundle_file"]

_DEFAULT_LIMITS = Limits()


def _now(now: float | None) -> float:
    if now is None:
        return time.time()
    if type(now) not in (int, float) or not math.isfinite(now):
        raise TypeError("now must be None or a finite number of unix seconds")
    return now


def load_bundle(data: bytes | bytearray | memoryview, keyring: Keyring, *, now: float | None = None, min_version: int = 1,
                limits: Limits = _DEFAULT_LIMITS, max_skew: int | None = MAX_CLOCK_SKEW
                ) -> Bundle | NullspaceBundle | GaussianBundle:
    """Verify and load a bundle from its bytes.

    Parameters
    ----------
    data : bytes-like
        The whole bundle file (envelope). Copied once; everything is parsed from that copy.
    keyring : Keyring
        The pinned trusted keys. The envelope's key id only selects one of them.
    now : int | float | None
        Current time in unix seconds (read once); ``None`` reads the system clock.
    min_version : int
        Smallest acceptable bundle ``version`` (for example the installed bundle's version).
    limits : Limits
        Resource limits.
    max_skew : int | None
        Seconds ``issued_at`` may be ahead of ``now`` (default :data:`MAX_CLOCK_SKEW`); ``None``
        skips that check, for a caller that makes it against a clock it trusts more
        (:class:`~privmap.device.DeviceState` knows when the clock is wrong).

    Checks, in order: size (BundleTooLargeError); envelope msgpack and shape, format version
    (BundleFormatError); algorithm, key ids, signature lengths, Ed25519 signatures by at least
    ``keyring.threshold`` distinct pinned keys over the format's domain tag + payload
    (BundleSignatureError; see :mod:`privmap.device.trust`) -- all before the payload is
    decoded; work caps from the payload's msgpack headers (WorkLimitError); payload msgpack with
    limits, no trailing bytes or duplicate keys, closed schema with exact types
    (BundleFormatError, WrongTypeError); version >= min_version (RollbackError); expires > now
    (ExpiredBundleError); issued_at <= now + max_skew (FutureBundleError); cells, table
    (TableError), prior, metrics and provenance; declared leakage not below the table's
    (MetricsError) and not above ``limits.max_leakage_bits`` (PolicyError). Returns the
    :class:`Bundle` only if all pass.
    Mechanisms ``nullspace`` and ``gaussian`` pass the same envelope, signature and
    header checks, then their own closed body checks, and return a
    :class:`~privmap.device.kinds.NullspaceBundle` or :class:`~privmap.device.kinds.GaussianBundle`.
    """
    if not isinstance(keyring, Keyring):
        raise TypeError("keyring must be a privmap.device.Keyring")
    if not isinstance(limits, Limits):
        raise TypeError("limits must be a privmap.device.Limits")
    if type(min_version) is not int or min_version < 1:
        raise ValueError("min_version must be an int >= 1")
    if max_skew is not None and (type(max_skew) is not int or max_skew < 0):
        raise ValueError("max_skew must be None or an int >= 0 (seconds)")
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError("data must be bytes")
    clock = _now(now)
    if isinstance(data, memoryview):
        if data.nbytes > limits.max_bundle_bytes:
            raise BundleTooLargeError(f"bundle is larger than {limits.max_bundle_bytes} bytes")
    elif len(data) > limits.max_bundle_bytes:
        raise BundleTooLargeError(f"bundle is larger than {limits.max_bundle_bytes} bytes")
    data = bytes(data)  # one immutable copy: what is verified is what is parsed
    if not data:
        raise BundleFormatError("empty bundle")

    envelope = decode_envelope(data, limits)
    payload, signers = verify_envelope(envelope, keyring)

    prescan(payload, limits)  # work caps from the msgpack headers, before anything is built
    obj = decode_payload(payload, limits)
    version, issued_at, expires = parse_header(obj)
    if version < min_version:
        raise RollbackError(f"bundle version {version} is below the minimum {min_version}")
    if expires <= clock:
        raise ExpiredBundleError("bundle has expired")
    if max_skew is not None and issued_at > clock + max_skew:
        raise FutureBundleError(f"bundle issued_at {issued_at} is more than {max_skew} s after the clock "
                                f"({int(clock)}): the clock or the bundle's issue date is wrong")
    bundle = load_body(obj, limits, version=version, issued_at=issued_at, expires=expires,
                       device_class=obj["device_class"], sha256=hashlib.sha256(data).hexdigest(),
                       key_id=signers[0].hex(), data=data)
    _check_policy(bundle.metrics, limits)
    return bundle


def _check_policy(metrics: Mapping[str, float], limits: Limits) -> None:
    """The check of the declared leakage against the device's policy.

    Raise :class:`PolicyError` if the declared leakage (bits) is above the device's policy
    maximum ``limits.max_leakage_bits`` (kinds that declare no leakage pass).
    """
    declared = metrics.get("leakage_bits")
    if declared is not None and declared > limits.max_leakage_bits:
        raise PolicyError(f"declared leakage {declared!r} bits is above this "
                          f"device's policy maximum {limits.max_leakage_bits!r}")


def read_bundle_file(path: str | os.PathLike[str], keyring: Keyring, *, now: float | None = None, min_version: int = 1,
                     limits: Limits = _DEFAULT_LIMITS, max_skew: int | None = MAX_CLOCK_SKEW
                     ) -> Bundle | NullspaceBundle | GaussianBundle:
    """Read a bundle file once (at most ``limits.max_bundle_bytes + 1`` bytes) and load it.

    The bytes read are the bytes verified and parsed (a file swapped afterwards changes nothing).
    The path must name a regular file: it is opened non-blocking and checked before it is read,
    so a FIFO is refused at once and a device (``/dev/zero``) is never read.
    Raises :class:`BundleTooLargeError` for a larger file, :class:`BundleError` if the file
    cannot be read or is not a regular file, and whatever :func:`load_bundle` raises.
    """
    if not isinstance(limits, Limits):
        raise TypeError("limits must be a privmap.device.Limits")
    try:
        data = read_regular(path, limits.max_bundle_bytes)
    except NotRegularFile:
        raise BundleError(f"bundle file {os.fspath(path)!r} is not a regular file") from None
    except OSError as exc:
        raise BundleError(f"cannot read bundle file {os.fspath(path)!r}: {exc.strerror}") from None
    if len(data) > limits.max_bundle_bytes:
        raise BundleTooLargeError(f"bundle file is larger than {limits.max_bundle_bytes} bytes")
    return load_bundle(data, keyring, now=now, min_version=min_version, limits=limits, max_skew=max_skew)
