"""A versioned, signed keyring and its rotation (THREATS C), after python-tuf's root rotation.

A keyring document is a signed payload::

    {"type": "privmap/keyring", "version": int >= 1, "expires": int, "threshold": int,
     "keys": [raw 32-byte Ed25519 public keys (bin)]}

in a format-2 envelope ``[2, "ed25519", [[key_id, signature], ...], payload]`` signed over
:data:`KEYRING_DOMAIN_TAG` || payload (so no bundle signature ever verifies as a keyring, or back).

:class:`KeyringChain` is the device's root of trust. It starts from a provisioned document
(which must be signed by a threshold of its own keys) and moves only by :meth:`rotate`: the
next document must have version exactly current + 1 (no skipping, C3) and be signed by a
threshold of the **current** keys *and* a threshold of its **own** keys (C1, C2). The same
version again is refused even with other content (C4); a chain offered at once is walked at most
:data:`MAX_ROTATIONS` steps (C5); an intermediate document may have expired, the final one may
not (C6). Keys left out of a rotation are revoked: bundles they signed no longer verify (C7).

A device provisioned with bare keys (PEM files, no document) is :meth:`KeyringChain.pinned`:
version 0, no expiry; its first rotation is a version-1 document signed by a threshold of those
keys and of its own. :class:`DeviceState` keeps the current document in its state directory.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import TypedDict, cast

from ..constants import (
    KEYRING_DOMAIN_TAG,
    KEYRING_TYPE,
    MAX_KEYRING_BYTES,
    MAX_ROTATIONS,
    MAX_SIGNATURES,
    MAX_VERSION,
    MULTISIG_FORMAT_VERSION,
    SIGNATURE_ALGORITHM,
)
from ..errors import BundleError, KeyringError, KeyringExpiredError, KeyringVersionError
from ..format import Limits, decode_envelope, unpack
from ._keyring import Keyring

__all__ = ["KeyringChain"]

_MAX_KEYS = 64
_KEYS = ("type", "version", "expires", "threshold", "keys")
_LIMITS = Limits(max_bundle_bytes=MAX_KEYRING_BYTES, max_string_bytes=64, max_map_entries=8)


class _Body(TypedDict):
    """The validated payload of a keyring document (:data:`_KEYS`)."""

    type: str
    version: int
    expires: int
    threshold: int
    keys: list[bytes]


def _parse(document: bytes) -> tuple[list[tuple[bytes, bytes]], bytes, _Body]:
    """Envelope signatures, payload bytes and the validated payload of a keyring document."""
    if not isinstance(document, (bytes, bytearray)) or len(document) > MAX_KEYRING_BYTES:
        raise KeyringError(f"a keyring document is bytes of at most {MAX_KEYRING_BYTES}")
    try:
        envelope = decode_envelope(bytes(document), _LIMITS)
        if (type(envelope) is not list or len(envelope) != 4 or envelope[0] != MULTISIG_FORMAT_VERSION
                or type(envelope[0]) is not int or envelope[1] != SIGNATURE_ALGORITHM):
            raise KeyringError("keyring envelope must be [2, 'ed25519', signatures, payload]")
        entries, payload = envelope[2], envelope[3]
        if type(entries) is not list or not 1 <= len(entries) <= MAX_SIGNATURES or type(payload) is not bytes:
            raise KeyringError(f"keyring envelope needs 1..{MAX_SIGNATURES} signatures and a bin payload")
        pairs = []
        for entry in entries:
            if (type(entry) is not list or len(entry) != 2 or type(entry[0]) is not bytes or len(entry[0]) != 32
                    or type(entry[1]) is not bytes or len(entry[1]) != 64):
                raise KeyringError("each signature must be [key_id (32 bytes), signature (64 bytes)]")
            pairs.append((entry[0], entry[1]))
        body = unpack(payload, "keyring payload", max_str_len=64, max_bin_len=32,
                       max_array_len=_MAX_KEYS, max_map_len=len(_KEYS))
    except BundleError as exc:
        raise KeyringError(f"malformed keyring document: {exc}") from None
    if type(body) is not dict or body.get("type") != KEYRING_TYPE:
        raise KeyringError(f"not a {KEYRING_TYPE!r} document")
    if set(body) != set(_KEYS):
        raise KeyringError(f"keyring document must have exactly the keys {_KEYS}")
    for name in ("version", "expires", "threshold"):
        if type(body[name]) is not int or not 0 < body[name] <= MAX_VERSION:
            raise KeyringError(f"keyring {name} must be an int in 1..2**63-1")
    keys = body["keys"]
    if type(keys) is not list or not 1 <= len(keys) <= _MAX_KEYS or any(type(k) is not bytes for k in keys):
        raise KeyringError(f"keyring keys must be 1..{_MAX_KEYS} raw keys")
    return pairs, payload, cast(_Body, body)  # every key's type is checked above


def _signed_by(keyring: Keyring, pairs: Iterable[tuple[bytes, bytes]], payload: bytes, what: str) -> None:
    signers = keyring.verified_signers(pairs, KEYRING_DOMAIN_TAG + payload)
    if len(signers) < keyring.threshold:
        raise KeyringError(f"keyring document has {len(signers)} valid signature(s) of the {what} keys, "
                           f"needs {keyring.threshold}")


class KeyringChain:
    """The trusted keyring of a device, as a chain of signed, versioned documents.

    Parameters
    ----------
    root : bytes
        The provisioned keyring document (pinned at manufacture); it must carry a threshold of
        signatures of its own keys. Raises :class:`KeyringError` otherwise.
    """

    __slots__ = ("version", "expires", "keyring", "document")

    #: ``version`` (0 for :meth:`pinned`), ``expires`` (unix seconds, None for pinned),
    #: ``keyring`` (the current :class:`Keyring`), ``document`` (its signed bytes, None for pinned).
    version: int
    expires: int | None
    keyring: Keyring
    document: bytes | None

    def __init__(self, root: bytes) -> None:
        pairs, payload, body = _parse(root)
        keyring = Keyring(body["keys"], threshold=body["threshold"])
        _signed_by(keyring, pairs, payload, "document's own")
        self._set(body, keyring, bytes(root))

    @classmethod
    def pinned(cls, keyring: Keyring) -> KeyringChain:
        """A chain at version 0 whose keyring is ``keyring``, as bare keys.

        No signed document, no expiry: the next rotation is a version-1 document signed by
        ``keyring``'s threshold.
        """
        if not isinstance(keyring, Keyring):
            raise TypeError("keyring must be a privmap.device.Keyring")
        chain = cls.__new__(cls)
        chain.version, chain.expires, chain.keyring, chain.document = 0, None, keyring, None
        return chain

    def _set(self, body: _Body, keyring: Keyring, document: bytes) -> None:
        self.version, self.expires = body["version"], body["expires"]
        self.keyring, self.document = keyring, document

    def rotate(self, document: bytes) -> None:
        """Move to the next keyring document (version + 1, signed under both thresholds).

        Raises :class:`KeyringVersionError` or :class:`KeyringError`; the chain is then unchanged.
        """
        pairs, payload, body = _parse(document)
        if body["version"] != self.version + 1:
            raise KeyringVersionError(
                f"keyring version {body['version']} offered, the next is {self.version + 1}"
                + (" (walk every version in between)" if body["version"] > self.version + 1 else ""))
        new = Keyring(body["keys"], threshold=body["threshold"])
        _signed_by(self.keyring, pairs, payload, "current")
        _signed_by(new, pairs, payload, "new")
        self._set(body, new, bytes(document))

    def rotate_chain(self, documents: Iterable[bytes]) -> int:
        """How many keyring documents were applied.

        Rotate through ``documents`` in order, at most :data:`MAX_ROTATIONS` of them; returns
        how many were applied. The first failure raises (earlier rotations stay applied).
        """
        applied = 0
        for document in list(documents)[:MAX_ROTATIONS]:
            self.rotate(document)
            applied += 1
        return applied

    def current(self, now: float) -> Keyring:
        """The keyring to verify bundles with at ``now``.

        ``now`` is in unix seconds; pass the device's ``now_eff``. Raises
        :class:`KeyringExpiredError` past the document's ``expires``.
        """
        if self.expires is not None and self.expires <= now:
            raise KeyringExpiredError(f"keyring version {self.version} has expired; a rotation is needed")
        return self.keyring
