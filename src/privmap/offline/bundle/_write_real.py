"""Canonical payload bytes of the real-valued kinds (``nullspace``, ``gaussian``).

Same rules as :func:`encode_payload` for table bundles: fixed key order (the device's
``REAL_PAYLOAD_KEYS`` and the kind's parameter keys; ``metrics`` and ``provenance`` sorted),
every number in ``parameters`` a float64 rounded to 12 significant digits like every computed
payload float (``_canonical.canonical_float``; the device's tolerances on the declared figures, the
unit norms and orthogonality of null-space directions and the positive definiteness of the
covariances hold for well-conditioned parameters, and a parameter set that rounding would break is
refused here with :class:`BuildError` rather than written), and the bytes checked with the device runtime's own
loader (including its recomputation of the declared metrics) before they are returned.
"""
from __future__ import annotations

import msgpack

from privmap.device import Limits
from privmap.device.constants import REAL_PAYLOAD_KEYS
from privmap.device.errors import BundleError
from privmap.device.format import decode_payload, parse_header
from privmap.device.kinds import load_real_body
from privmap.device.kinds.gaussian import GAUSSIAN_PARAMETER_KEYS
from privmap.device.kinds.nullspace import NULLSPACE_PARAMETER_KEYS

from .._canonical import _ordered, _plain, _sorted_map, canonical_float, canonical_floats
from .._errors import BuildError

__all__ = ["encode_real_payload"]

_PARAMETER_KEYS = {"nullspace": NULLSPACE_PARAMETER_KEYS, "gaussian": GAUSSIAN_PARAMETER_KEYS}


def _floats(value):
    if isinstance(value, list):
        return [_floats(v) for v in value]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return canonical_float(value)
    return value


def encode_real_payload(payload: dict, limits: Limits = Limits()) -> bytes:
    """Canonical msgpack bytes of a nullspace or gaussian payload dict, validated by the device loader.

    Raises :class:`BuildError` if the device would refuse it.
    """
    payload = _ordered(_plain(payload), REAL_PAYLOAD_KEYS, "payload")
    keys = _PARAMETER_KEYS.get(payload["mechanism"])
    if keys is None:
        raise BuildError(f"unknown real-valued mechanism {payload['mechanism']!r}")
    parameters = _ordered(payload["parameters"], keys, "parameters")
    payload["parameters"] = {k: _floats(v) for k, v in parameters.items()}
    payload["metrics"] = canonical_floats(_sorted_map(payload["metrics"], "metrics"))
    payload["provenance"] = canonical_floats(_sorted_map(payload["provenance"], "provenance"))
    try:
        data = msgpack.packb(payload, use_bin_type=True, use_single_float=False)
    except (TypeError, ValueError, OverflowError) as exc:
        raise BuildError(f"payload cannot be encoded: {exc}") from None
    try:
        obj = decode_payload(data, limits)
        version, issued_at, expires = parse_header(obj)
        load_real_body(obj, limits, version=version, issued_at=issued_at, expires=expires,
                       sha256="", key_id="", data=b"")
    except BundleError as exc:
        raise BuildError(f"payload does not satisfy the bundle format: {exc}") from None
    if len(data) + 256 > limits.max_bundle_bytes:
        raise BuildError(f"payload of {len(data)} bytes exceeds the bundle size limit")
    return data
