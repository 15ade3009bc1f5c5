"""The envelope check: which trusted keys signed the payload (before the payload is decoded).

Format 1 (one signature)::

    [1, "ed25519", key_id (bin 32), signature (bin 64), payload (bin)]   signed: DOMAIN_TAG || payload

Format 2 (k of n signatures, THREATS B)::

    [2, "ed25519", [entry, ...] (1..MAX_SIGNATURES), payload]
    entry = [key_id, signature]        signed: MULTISIG_DOMAIN_TAG || payload
          | [key_id, signature, 1]     signed: DOMAIN_TAG || payload (a format-1 signature,
                                       carried over when a format-1 bundle is cosigned)

The keyring's threshold counts **distinct** trusted keys with a valid signature: unknown key ids
and invalid signatures are ignored (B4, B5), a key listed twice counts once (B1), whichever tag
each of its entries is under. A format-1 envelope satisfies a threshold of 1 only.

Why a format-1 signature may count inside format 2: both tags are bundle tags over the same
payload bytes with the same meaning (format 2 changed only the envelope), so a key's format-1
signature is that key's approval of exactly this bundle. It has to be carried over for
``privmap cosign`` to keep the builder's signature (only its holder could sign again). A bare
``[key_id, signature]`` entry is always under the format-2 tag, so a format-1 signature moved
into one does not verify; keyring documents use their own tag and never verify as bundles.
"""
from __future__ import annotations

from typing import NamedTuple

from ..constants import (
    DOMAIN_TAG,
    FORMAT_VERSION,
    MAX_SIGNATURES,
    MULTISIG_DOMAIN_TAG,
    MULTISIG_FORMAT_VERSION,
    SIGNATURE_ALGORITHM,
)
from ..errors import BundleFormatError, BundleSignatureError
from ._keyring import Keyring

__all__ = ["verify_envelope", "envelope_signatures", "Signature", "CARRIED_FORMAT_1"]

_ENVELOPE_FIELDS = {FORMAT_VERSION: 5, MULTISIG_FORMAT_VERSION: 4}
#: Third element of a format-2 entry whose signature is under the format-1 tag.
CARRIED_FORMAT_1 = FORMAT_VERSION
_TAGS = {FORMAT_VERSION: DOMAIN_TAG, MULTISIG_FORMAT_VERSION: MULTISIG_DOMAIN_TAG}


class Signature(NamedTuple):
    """One listed signature.

    One listed signature: ``key_id`` (32 bytes), ``signature`` (64 bytes) and the envelope
    ``format`` whose domain tag it is over (1: ``DOMAIN_TAG``, 2: ``MULTISIG_DOMAIN_TAG``).
    """

    key_id: bytes
    signature: bytes
    format: int

    @property
    def tag(self) -> bytes:
        """The domain tag signed before the payload."""
        return _TAGS[self.format]

    def entry(self) -> list:
        """The signature as a format-2 envelope entry.

        This signature as a format-2 envelope entry (``[key_id, signature]`` or
        ``[key_id, signature, 1]``).
        """
        pair = [self.key_id, self.signature]
        return pair if self.format == MULTISIG_FORMAT_VERSION else pair + [CARRIED_FORMAT_1]


def _signature(key_id: object, signature: object, fmt: int) -> Signature:
    if type(key_id) is not bytes or len(key_id) != 32:
        raise BundleSignatureError("key id must be 32 bytes")
    if type(signature) is not bytes or len(signature) != 64:
        raise BundleSignatureError("missing or malformed signature (must be 64 bytes)")
    return Signature(key_id, signature, fmt)


def _entry(entry: object) -> Signature:
    if type(entry) is not list or len(entry) not in (2, 3):
        raise BundleSignatureError("each signature must be [key_id, signature] or [key_id, signature, 1]")
    if len(entry) == 3 and (type(entry[2]) is not int or entry[2] != CARRIED_FORMAT_1):
        raise BundleSignatureError(f"a signature's third element must be the int {CARRIED_FORMAT_1} "
                                   "(a format-1 signature carried over)")
    return _signature(entry[0], entry[1], FORMAT_VERSION if len(entry) == 3 else MULTISIG_FORMAT_VERSION)


def envelope_signatures(envelope: object) -> tuple[int, list[Signature], bytes]:
    """Shape check of a decoded envelope, no cryptography: ``(format, signatures, payload)``.

    ``signatures`` are in envelope order (a format-1 envelope lists one). Raises
    :class:`BundleFormatError` for a malformed envelope, unknown format or a payload that is not
    bytes, and :class:`BundleSignatureError` for an unsupported algorithm or malformed signatures.
    Nothing returned is verified: use :func:`verify_envelope` for that.
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
        signatures = [_signature(envelope[2], envelope[3], FORMAT_VERSION)]
    else:
        entries = envelope[2]
        if type(entries) is not list or not 1 <= len(entries) <= MAX_SIGNATURES:
            raise BundleSignatureError(f"format 2 needs 1..{MAX_SIGNATURES} signatures")
        signatures = [_entry(entry) for entry in entries]
    if type(payload) is not bytes:
        raise BundleFormatError("payload must be bytes")
    return fmt, signatures, payload


def verify_envelope(envelope: object, keyring: Keyring) -> tuple[bytes, list[bytes]]:
    """Check a decoded envelope against ``keyring``; return ``(payload, signer key ids)``.

    Raises :class:`BundleFormatError` for a malformed envelope or unknown format and
    :class:`BundleSignatureError` for an unsupported algorithm (before any crypto work),
    malformed signatures, or fewer than ``keyring.threshold`` distinct trusted signers. The
    signer ids are sorted, the first is the bundle's ``key_id``.
    """
    fmt, signatures, payload = envelope_signatures(envelope)
    if fmt == FORMAT_VERSION and signatures[0].key_id not in keyring:
        raise BundleSignatureError("bundle is signed by a key that is not trusted")
    found: set[bytes] = set()
    for version, tag in _TAGS.items():
        found |= keyring.verified_signers([(s.key_id, s.signature) for s in signatures if s.format == version],
                                          tag + payload)
    signers = sorted(found)
    if not signers:
        raise BundleSignatureError("signature does not verify")
    if len(signers) < keyring.threshold:
        raise BundleSignatureError(
            f"{len(signers)} distinct trusted signature(s), the keyring needs {keyring.threshold}")
    return payload, signers
