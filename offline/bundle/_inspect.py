"""Reading a bundle on the operator's side: verified load, or an unverified look inside.

``read_unverified`` is for ``privmap inspect`` without a trusted key: it applies
the device's size cap, envelope and payload limits and closed-schema checks,
but the signature is not checked, so nothing it returns may be trusted. The
device itself never does this (signature before parse).
"""
from __future__ import annotations

import pathlib

from privmap.device import BundleTooLargeError, Limits
from privmap.device.format._codec import decode_envelope, decode_payload
from privmap.device.trust._envelope import envelope_signatures
from privmap.device.format._schema import REAL_MECHANISMS, parse_body, parse_header


def read_bytes(path, limits: Limits = Limits()) -> bytes:
    """Read at most ``limits.max_bundle_bytes + 1`` bytes of ``path`` once.

    Raises
    ------
    BundleTooLargeError
        The file is larger than the cap.
    OSError
        The file cannot be read.
    """
    with pathlib.Path(path).open("rb") as f:
        data = f.read(limits.max_bundle_bytes + 1)
    if len(data) > limits.max_bundle_bytes:
        raise BundleTooLargeError(f"bundle is larger than {limits.max_bundle_bytes} bytes")
    return data


def listed_signatures(data: bytes, limits: Limits = Limits()) -> tuple[int, list[str]]:
    """The envelope format (1 or 2) and the hex key ids its signatures name, in envelope order,
    WITHOUT checking any signature. Raises :class:`BundleError` for a malformed envelope."""
    fmt, signatures, _ = envelope_signatures(decode_envelope(data, limits))
    return fmt, [s.key_id.hex() for s in signatures]


def read_unverified(data: bytes, limits: Limits = Limits()) -> tuple[dict, str]:
    """Decode and schema-check a bundle's payload WITHOUT checking its signature.

    Reads format-1 (one signature) and format-2 (k of n) envelopes alike.

    Returns
    -------
    (payload, key_id_hex)
        The decoded payload map and the key id the envelope names first (format 2: the first
        listed signature; :func:`listed_signatures` gives them all).

    Raises
    ------
    BundleError
        Any format problem the device would also refuse (except the signature).
    """
    _, signatures, payload_bytes = envelope_signatures(decode_envelope(data, limits))
    payload = decode_payload(payload_bytes, limits)
    version, issued_at, expires = parse_header(payload)
    if payload["mechanism"] in REAL_MECHANISMS:  # nullspace / gaussian
        from privmap.device.mechanisms._real_kinds import load_real_body
        load_real_body(payload, limits, version=version, issued_at=issued_at, expires=expires,
                       sha256="", key_id="", data=b"")
    else:
        parse_body(payload, limits)
    return payload, signatures[0].key_id.hex()
