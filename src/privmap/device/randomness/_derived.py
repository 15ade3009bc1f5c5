"""Derived (memoised) randomness: one permanent release per (bundle, input cluster).

A fresh draw on every call lets an observer who asks the same user many times average the
releases back to the raw cluster (THREATS I10). RAPPOR's answer is permanent randomized
response: the device draws once per input and answers with the same draw forever. Storing every
draw would grow without bound, so the draw is *derived* instead, from a device secret that never
leaves the state directory:

    block_i = HMAC-SHA256(secret, RELEASE_TAG || bundle_sha256 || c || i)     i = 0, 1, 2, ...

and the stream ``block_0 || block_1 || ...`` is read front to back by ``randbits(k)``. To anyone
without the secret the stream is indistinguishable from uniform bits (HMAC-SHA256 as a PRF), so
the exact integer sampler and its probabilities are unchanged; to the device it is the same on
every call, so repeated releases of one input are identical and leak nothing beyond the first.

:class:`DerivedBits` has the same ``randbits(k)`` interface as the other bit sources in
``_sampler.py``; any release path (the table sampler, a noise mechanism) can draw from it.
"""
from __future__ import annotations

import hashlib
import hmac

__all__ = ["DerivedBits", "SECRET_BYTES", "RELEASE_TAG", "RECORD_TAG", "release_bits", "record_bits"]

#: Length of a device secret, bytes.
SECRET_BYTES = 32
#: Domain-separation tag of the release derivation (change it and every release changes).
RELEASE_TAG = b"privmap-release-v1\x00"
#: Domain-separation tag of per-record derivations (release paths with no input clusters).
RECORD_TAG = b"privmap-record-v1\x00"
#: Longest stream one context may yield, bytes (2**32 HMAC blocks; far beyond any release).
_MAX_BLOCKS = 1 << 32


class DerivedBits:
    """Deterministic bit source ``HMAC-SHA256(secret, context || counter)`` in counter mode.

    Parameters
    ----------
    secret : bytes
        The device secret, exactly :data:`SECRET_BYTES` bytes from the OS CSPRNG.
    context : bytes
        What the stream is for (see :func:`release_bits`); a different context gives an
        independent stream.

    ``randbits(k)`` returns the next ``k`` bits of the stream as an int in ``0 .. 2**k - 1``
    (whole bytes are consumed: ``ceil(k / 8)`` per call, high bits first). Two objects built
    from the same secret and context return the same sequence of values. Raises ``ValueError``
    for a bad secret, context or ``k``.
    """

    __slots__ = ("_mac", "_context", "_buffer", "_counter")

    def __init__(self, secret: bytes, context: bytes) -> None:
        if type(secret) is not bytes or len(secret) != SECRET_BYTES:
            raise ValueError(f"the device secret must be {SECRET_BYTES} bytes")
        if type(context) is not bytes:
            raise ValueError("context must be bytes")
        self._mac = hmac.new(secret, digestmod=hashlib.sha256)
        self._context = context
        self._buffer = b""
        self._counter = 0

    def _block(self) -> bytes:
        if self._counter >= _MAX_BLOCKS:
            raise ValueError("derived stream exhausted")
        mac = self._mac.copy()
        mac.update(self._context + self._counter.to_bytes(4, "big"))
        self._counter += 1
        return mac.digest()

    def randbits(self, k: int) -> int:
        """The next ``k`` bits (k >= 1) of the derived stream, as an int."""
        if type(k) is not int or k < 1:
            raise ValueError("k must be a positive int")
        nbytes = (k + 7) // 8
        while len(self._buffer) < nbytes:
            self._buffer += self._block()
        data, self._buffer = self._buffer[:nbytes], self._buffer[nbytes:]
        return int.from_bytes(data, "big") >> (8 * nbytes - k)

    def __repr__(self) -> str:  # never shows the secret
        return "DerivedBits(<secret>, <context>)"


def release_bits(secret: bytes, bundle_sha256: str, c: int) -> DerivedBits:
    """The bit source of the permanent release of input cluster ``c`` under one bundle.

    Parameters
    ----------
    secret : bytes
        The device secret (:data:`SECRET_BYTES` bytes).
    bundle_sha256 : str
        Hex sha256 of the whole bundle file (``Bundle.sha256``): a new bundle gives new draws.
    c : int
        Input index, ``0 <= c < 2**64``.
    """
    if type(bundle_sha256) is not str or len(bundle_sha256) != 64:
        raise ValueError("bundle_sha256 must be 64 hex characters")
    if type(c) is not int or not 0 <= c < (1 << 64):
        raise ValueError("c must be an int in 0 .. 2**64 - 1")
    return DerivedBits(secret, RELEASE_TAG + bytes.fromhex(bundle_sha256) + c.to_bytes(8, "big"))


def record_bits(secret: bytes, bundle_sha256: str, record: bytes) -> DerivedBits:
    """The bit source of the permanent release of one record under one bundle.

    For release paths that have no input clusters (the Gaussian-noise kind draws its noise from
    it).

    ``record`` is the canonical bytes of the parsed row (``GaussianBundle.record(row)``); the
    context is ``RECORD_TAG || bundle_sha256 || record``, so the same record gets the same noise
    from the same device and bundle, and a different bundle gets independent noise.
    """
    if type(bundle_sha256) is not str or len(bundle_sha256) != 64:
        raise ValueError("bundle_sha256 must be 64 hex characters")
    if type(record) is not bytes:
        raise ValueError("record must be bytes")
    return DerivedBits(secret, RECORD_TAG + bytes.fromhex(bundle_sha256) + record)
