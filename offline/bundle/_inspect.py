"""Reading a bundle on the operator's side: verified load, or an unverified look inside.

``read_unverified`` is for ``privmap inspect`` without a trusted key: it applies
the device's size cap, envelope and payload limits and closed-schema checks,
but the signature is not checked, so nothing it returns may be trusted. The
device itself never does this (signature before parse).
"""
from __future__ import annotations

import pathlib

from privmap.device import BundleTooLargeError, Limits
from privmap.device._codec import decode_envelope, decode_payload
from privmap.device._schema import REAL_MECHANISMS, parse_body, parse_header


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


def read_unverified(data: bytes, limits: Limits = Limits()) -> tuple[dict, str]:
    """Decode and schema-check a bundle's payload WITHOUT checking its signature.

    Returns
    -------
    (payload, key_id_hex)
        The decoded payload map and the key id the envelope names.

    Raises
    ------
    BundleError
        Any format problem the device would also refuse (except the signature).
    """
    from privmap.device import BundleFormatError
    envelope = decode_envelope(data, limits)
    if type(envelope) is not list or len(envelope) != 5 or type(envelope[4]) is not bytes:
        raise BundleFormatError("envelope must be an array [format, alg, key_id, signature, payload]")
    key_id = envelope[2].hex() if type(envelope[2]) is bytes else ""
    payload = decode_payload(envelope[4], limits)
    version, issued_at, expires = parse_header(payload)
    if payload["mechanism"] in REAL_MECHANISMS:  # nullspace / gaussian
        from privmap.device._real_kinds import load_real_body
        load_real_body(payload, limits, version=version, issued_at=issued_at, expires=expires,
                       sha256="", key_id="", data=b"")
    else:
        parse_body(payload, limits)
    return payload, key_id
