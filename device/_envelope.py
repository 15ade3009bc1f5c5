"""The envelope check: which trusted keys signed the payload (before the payload is decoded).

Format 1 (one signature)::

    [1, "ed25519", key_id (bin 32), signature (bin 64), payload (bin)]   signed: DOMAIN_TAG || payload

Format 2 (k of n signatures, THREATS B)::

    [2, "ed25519", [[key_id, signature], ...] (1..MAX_SIGNATURES), payload]
                                                   signed: MULTISIG_DOMAIN_TAG || payload

The keyring's threshold counts **distinct** trusted keys with a valid signature: unknown key ids
and invalid signatures are ignored (B4, B5), a key listed twice counts once (B1). A format-1
envelope satisfies a threshold of 1 only.
"""
from __future__ import annotations

from ._errors import BundleFormatError, BundleSignatureError
from ._keyring import Keyring
from ._limits import (
    DOMAIN_TAG,
    FORMAT_VERSION,
    MAX_SIGNATURES,
    MULTISIG_DOMAIN_TAG,
    MULTISIG_FORMAT_VERSION,
    SIGNATURE_ALGORITHM,
)

__all__ = ["verify_envelope"]

_ENVELOPE_FIELDS = {FORMAT_VERSION: 5, MULTISIG_FORMAT_VERSION: 4}


def _signature_pair(key_id, signature) -> tuple[bytes, bytes]:
    if type(key_id) is not bytes or len(key_id) != 32:
        raise BundleSignatureError("key id must be 32 bytes")
    if type(signature) is not bytes or len(signature) != 64:
        raise BundleSignatureError("missing or malformed signature (must be 64 bytes)")
    return key_id, signature


def verify_envelope(envelope, keyring: Keyring) -> tuple[bytes, list[bytes]]:
    """Check a decoded envelope against ``keyring``; return ``(payload, signer key ids)``.

    Raises :class:`BundleFormatError` for a malformed envelope or unknown format and
    :class:`BundleSignatureError` for an unsupported algorithm (before any crypto work),
    malformed signatures, or fewer than ``keyring.threshold`` distinct trusted signers. The
    signer ids are sorted, the first is the bundle's ``key_id``.
    """
    if type(envelope) is not list or not envelope:
        raise BundleFormatError("envelope must be an array [format, alg, ...]")
    fmt = envelope[0]
    if type(fmt) is not int or fmt not in _ENVELOPE_FIELDS:
        raise BundleFormatError(
            f"unsupported envelope format (this runtime reads {FORMAT_VERSION} and {MULTISIG_FORMAT_VERSION})")
    if len(envelope) != _ENVELOPE_FIELDS[fmt]:
        raise BundleFormatError(f"envelope format {fmt} must be an array of {_ENVELOPE_FIELDS[fmt]}")
    alg, payload = envelope[1], envelope[-1]
    if type(alg) is not str or alg != SIGNATURE_ALGORITHM:
        raise BundleSignatureError(f"unsupported signature algorithm (only {SIGNATURE_ALGORITHM!r})")
    if fmt == FORMAT_VERSION:
        pairs = [_signature_pair(envelope[2], envelope[3])]
        if pairs[0][0] not in keyring:
            raise BundleSignatureError("bundle is signed by a key that is not trusted")
        tag = DOMAIN_TAG
    else:
        entries = envelope[2]
        if type(entries) is not list or not 1 <= len(entries) <= MAX_SIGNATURES:
            raise BundleSignatureError(f"format 2 needs 1..{MAX_SIGNATURES} signatures")
        pairs = []
        for entry in entries:
            if type(entry) is not list or len(entry) != 2:
                raise BundleSignatureError("each signature must be [key_id, signature]")
            pairs.append(_signature_pair(*entry))
        tag = MULTISIG_DOMAIN_TAG
    if type(payload) is not bytes:
        raise BundleFormatError("payload must be bytes")
    signers = sorted(keyring.verified_signers(pairs, tag + payload))
    if not signers:
        raise BundleSignatureError("signature does not verify")
    if len(signers) < keyring.threshold:
        raise BundleSignatureError(
            f"{len(signers)} distinct trusted signature(s), the keyring needs {keyring.threshold}")
    return payload, signers
