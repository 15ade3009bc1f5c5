"""k-of-n signing: format-2 bundle envelopes and signed keyring documents.

See ``privmap.device.trust`` for what the device checks.
"""
from __future__ import annotations

from collections.abc import Sequence

import msgpack
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)

from privmap.device import Limits
from privmap.device.constants import (
    KEYRING_DOMAIN_TAG,
    KEYRING_TYPE,
    MAX_SIGNATURES,
    MULTISIG_DOMAIN_TAG,
    MULTISIG_FORMAT_VERSION,
    SIGNATURE_ALGORITHM,
)
from privmap.device.errors import BundleError
from privmap.device.format import decode_envelope
from privmap.device.trust import envelope_signatures, key_id_of

from .._errors import BuildError

__all__ = ["sign_multi", "cosign_bundle", "keyring_document"]


def _raw(public_key: Ed25519PublicKey) -> bytes:
    return public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def _pairs(private_keys: Sequence[Ed25519PrivateKey], message: bytes) -> list[list[bytes]]:
    if not private_keys or not all(isinstance(k, Ed25519PrivateKey) for k in private_keys):
        raise BuildError("signing needs one or more Ed25519 private keys")
    return [[key_id_of(_raw(k.public_key())), k.sign(message)] for k in private_keys]


def _envelope(entries: list, payload: bytes) -> bytes:
    """Format-2 envelope of ``payload`` with one entry per key id, sorted by key id.

    The first listed entry of a key id wins. An entry is ``[key_id, signature]`` or
    ``[key_id, signature, 1]`` (format-1 tag).
    """
    by_id: dict[bytes, list] = {}
    for entry in entries:  # one signature per key (a repeated key adds nothing)
        by_id.setdefault(entry[0], list(entry))
    if len(by_id) > MAX_SIGNATURES:
        raise BuildError(f"at most {MAX_SIGNATURES} signatures fit an envelope")
    return msgpack.packb([MULTISIG_FORMAT_VERSION, SIGNATURE_ALGORITHM, [by_id[k] for k in sorted(by_id)],
                          payload], use_bin_type=True)


def sign_multi(payload_bytes: bytes, private_keys: Sequence[Ed25519PrivateKey], *,
               tag: bytes = MULTISIG_DOMAIN_TAG) -> bytes:
    """Format-2 envelope of ``payload_bytes`` signed by each of ``private_keys`` (sorted by key id).

    ``tag`` is the domain tag signed before the payload (bundles: ``MULTISIG_DOMAIN_TAG``).
    """
    if not isinstance(payload_bytes, bytes):
        raise BuildError("payload_bytes must be bytes")
    return _envelope(_pairs(private_keys, tag + payload_bytes), payload_bytes)


def cosign_bundle(bundle_bytes: bytes, private_keys: Sequence[Ed25519PrivateKey]) -> bytes:
    """Add signatures by ``private_keys`` to a bundle: a format-2 envelope of the same payload.

    Every signature already there is kept, whatever the input's format: a format-2 bundle's
    entries as they are, a format-1 bundle's single signature as the entry
    ``[key_id, signature, 1]`` (it stays under the format-1 domain tag, which the device accepts
    inside format 2; see ``privmap.device.trust``). A key that signs again replaces its old
    entry. Kept signatures are not verified here (no public key is at hand): a device ignores
    invalid ones. Raises :class:`BuildError` for bytes that are not a bundle envelope, no signing
    key, or more than ``MAX_SIGNATURES`` distinct signers.
    """
    try:
        _, kept, payload = envelope_signatures(decode_envelope(bytes(bundle_bytes), Limits()))
    except BundleError as exc:
        raise BuildError(f"not a bundle: {exc}") from None
    new = _pairs(private_keys, MULTISIG_DOMAIN_TAG + payload)
    return _envelope(new + [s.entry() for s in kept], payload)


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
