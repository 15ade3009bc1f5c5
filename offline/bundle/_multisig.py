"""k-of-n signing: format-2 bundle envelopes and signed keyring documents (see
``privmap.device._envelope`` and ``privmap.device._rotation`` for what the device checks)."""
from __future__ import annotations

from typing import Sequence

import msgpack
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)
from privmap.device import (
    KEYRING_DOMAIN_TAG,
    KEYRING_TYPE,
    MAX_SIGNATURES,
    MULTISIG_DOMAIN_TAG,
    MULTISIG_FORMAT_VERSION,
    SIGNATURE_ALGORITHM,
    BundleError,
    key_id_of,
)
from privmap.device._codec import decode_envelope
from privmap.device._limits import Limits

from .._errors import BuildError

__all__ = ["sign_multi", "cosign_bundle", "keyring_document"]


def _raw(public_key: Ed25519PublicKey) -> bytes:
    return public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def _pairs(private_keys: Sequence[Ed25519PrivateKey], message: bytes) -> list[list[bytes]]:
    if not private_keys or not all(isinstance(k, Ed25519PrivateKey) for k in private_keys):
        raise BuildError("signing needs one or more Ed25519 private keys")
    return [[key_id_of(_raw(k.public_key())), k.sign(message)] for k in private_keys]


def _envelope(pairs: list, payload: bytes) -> bytes:
    by_id = {}
    for key_id, signature in pairs:  # one signature per key (a repeated key adds nothing)
        by_id.setdefault(key_id, signature)
    if len(by_id) > MAX_SIGNATURES:
        raise BuildError(f"at most {MAX_SIGNATURES} signatures fit an envelope")
    entries = [[k, by_id[k]] for k in sorted(by_id)]
    return msgpack.packb([MULTISIG_FORMAT_VERSION, SIGNATURE_ALGORITHM, entries, payload], use_bin_type=True)


def sign_multi(payload_bytes: bytes, private_keys: Sequence[Ed25519PrivateKey], *,
               tag: bytes = MULTISIG_DOMAIN_TAG) -> bytes:
    """Format-2 envelope of ``payload_bytes`` signed by each of ``private_keys`` (sorted by key id).

    ``tag`` is the domain tag signed before the payload (bundles: ``MULTISIG_DOMAIN_TAG``).
    """
    if not isinstance(payload_bytes, bytes):
        raise BuildError("payload_bytes must be bytes")
    return _envelope(_pairs(private_keys, tag + payload_bytes), payload_bytes)


def cosign_bundle(bundle_bytes: bytes, private_keys: Sequence[Ed25519PrivateKey]) -> bytes:
    """Add signatures by ``private_keys`` to a bundle: a format-2 envelope of the same payload
    with the bundle's existing format-2 signatures kept (a format-1 signature is dropped: it is
    under the format-1 domain tag; sign again with that key). Raises :class:`BuildError`."""
    try:
        envelope = decode_envelope(bytes(bundle_bytes), Limits())
    except BundleError as exc:
        raise BuildError(f"not a bundle: {exc}") from None
    if type(envelope) is not list or len(envelope) not in (4, 5) or type(envelope[-1]) is not bytes:
        raise BuildError("not a bundle envelope")
    payload = envelope[-1]
    kept = envelope[2] if envelope[0] == MULTISIG_FORMAT_VERSION and type(envelope[2]) is list else []
    return _envelope([list(p) for p in kept] + _pairs(private_keys, MULTISIG_DOMAIN_TAG + payload), payload)


def keyring_document(public_keys: Sequence[Ed25519PublicKey], *, threshold: int, version: int,
                     expires: int, signing_keys: Sequence[Ed25519PrivateKey]) -> bytes:
    """A signed keyring document (``privmap/keyring``) naming ``public_keys`` with ``threshold``.

    For version 1, sign with a threshold of its own keys; for a rotation, with a threshold of the
    current keys and a threshold of the new ones (the device checks both).
    """
    payload = msgpack.packb({"type": KEYRING_TYPE, "version": version, "expires": expires,
                             "threshold": threshold, "keys": [_raw(k) for k in public_keys]},
                            use_bin_type=True)
    return _envelope(_pairs(signing_keys, KEYRING_DOMAIN_TAG + payload), payload)
