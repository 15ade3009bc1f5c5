"""Writing bundles: canonical payload encoding and the signed envelope (docs/bundle-format.md).

``encode_payload`` turns a payload dict into canonical msgpack bytes (fixed key order, floats as
float64 rounded to :data:`FLOAT_SIGNIFICANT_DIGITS`, integer cells as ints) and checks them with
the device runtime's own schema, so the builder cannot write a payload the device would refuse.

Float precision. The figures a build computes go through BLAS, LAPACK and HiGHS, whose results
move in the last bits with the CPU and the library versions. Every computed float of a payload
is therefore written rounded to 12 significant digits (:func:`canonical_float`, correctly
rounded by Python's own decimal conversion, the same on every platform): declared metrics,
floats in provenance, the prior and ``p_x``, cells of non-integer numeric features in
``outputs``, their ``fill``, and the parameters of the real-valued kinds. The domain bounds
``min`` / ``max`` of a non-integer feature are rounded outward (down, up), so every cell still
lies inside. The ``inputs`` are not rounded: they are the representatives the device looks rows
up by, and the build's assignment of rows to them (psi, hence the prior and every figure) was
computed with exactly these values. Declared figures then describe the bundle's integer table
to that precision; the device's checks allow for it (``privmap.device.format._leakage``). ``sign_bundle`` wraps payload bytes in
the Ed25519-signed envelope. Ed25519 signatures are deterministic, so the same payload and key
always give byte-identical bundles.
"""
from __future__ import annotations

import math

import msgpack
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)
from privmap.device import (
    DOMAIN_TAG,
    FORMAT_VERSION,
    SIGNATURE_ALGORITHM,
    Bundle,
    BundleError,
    Keyring,
    KeyringError,
    Limits,
    check_declared_metrics,
    key_id_of,
    load_bundle,
)
from privmap.device.format._codec import decode_payload
from privmap.device.format._leakage import PAYLOAD_FLOAT_DIGITS
from privmap.device.format._schema import (
    CATEGORICAL_FEATURE_KEYS,
    NUMERIC_FEATURE_KEYS,
    PRIVATE_KEYS,
    REAL_MECHANISMS,
    TABLE_KEYS,
    parse_body,
    parse_header,
    payload_keys,
)

from .._errors import BuildError

__all__ = ["encode_payload", "sign_bundle", "check_bundle", "canonical_float", "canonical_floats",
           "FLOAT_SIGNIFICANT_DIGITS"]

#: Significant digits every computed payload float is rounded to (module docstring; the device's
#: ``PAYLOAD_FLOAT_DIGITS``, whose tolerances are set for it).
FLOAT_SIGNIFICANT_DIGITS = PAYLOAD_FLOAT_DIGITS


def canonical_float(value, direction: str = "nearest") -> float:
    """``value`` (a finite real number) as a float64 rounded to :data:`FLOAT_SIGNIFICANT_DIGITS`
    significant digits: ``"nearest"`` (ties to even, on the exact binary value), ``"down"`` or
    ``"up"`` (the nearest 12-digit decimal not above / not below ``value``). ``-0.0`` stays
    ``-0.0``; non-finite values are returned unchanged (the schema check refuses them).
    Deterministic: Python's decimal conversion is correctly rounded on every platform.
    Raises ValueError for another ``direction``."""
    if direction not in ("nearest", "down", "up"):
        raise ValueError(f"direction must be 'nearest', 'down' or 'up', not {direction!r}")
    value = float(value)
    if not math.isfinite(value) or value == 0.0:
        return value
    rounded = float(format(value, f".{FLOAT_SIGNIFICANT_DIGITS - 1}e"))
    if direction == "nearest" or rounded == value:
        return rounded
    exponent = math.floor(math.log10(abs(rounded))) - (FLOAT_SIGNIFICANT_DIGITS - 1)
    step = 10.0 ** exponent
    if direction == "down" and rounded > value:
        rounded = float(format(rounded - step, f".{FLOAT_SIGNIFICANT_DIGITS - 1}e"))
    elif direction == "up" and rounded < value:
        rounded = float(format(rounded + step, f".{FLOAT_SIGNIFICANT_DIGITS - 1}e"))
    return rounded


def canonical_floats(value):
    """Every float in ``value`` (nested lists and dicts; ints, bools, strings, None kept) passed
    through :func:`canonical_float`."""
    if isinstance(value, list):
        return [canonical_floats(v) for v in value]
    if isinstance(value, dict):
        return {k: canonical_floats(v) for k, v in value.items()}
    if isinstance(value, float):
        return canonical_float(value)
    return value


def _plain(value):
    """numpy scalars/arrays and tuples to plain Python values (without importing numpy)."""
    module = type(value).__module__
    if module == "numpy" or module.startswith("numpy."):
        if hasattr(value, "tolist"):
            value = value.tolist()
    if isinstance(value, tuple):
        value = list(value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _ordered(mapping, keys, what):
    if not isinstance(mapping, dict):
        raise BuildError(f"{what} must be a dict")
    unknown = sorted(set(mapping) - set(keys), key=str)
    missing = [k for k in keys if k not in mapping]
    if unknown or missing:
        raise BuildError(f"{what}: unknown keys {unknown}, missing keys {missing}")
    return {k: mapping[k] for k in keys}


def _sorted_map(mapping, what):
    if not isinstance(mapping, dict) or not all(isinstance(k, str) for k in mapping):
        raise BuildError(f"{what} must be a dict with string keys")
    return {k: mapping[k] for k in sorted(mapping)}


def _number(value, what):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BuildError(f"{what} must be a number")
    return value


def _cell(value, feature, what, rounded=False):
    if value is None:
        return None
    if feature.get("kind") != "numeric":
        return value
    _number(value, what)
    if feature.get("integer") is True:
        if isinstance(value, float):
            if not value.is_integer():
                raise BuildError(f"{what}: cell of an integer feature is not a whole number")
            value = int(value)
        return value
    value = float(value)
    if not math.isfinite(value):
        raise BuildError(f"{what}: cell is not finite")
    return canonical_float(value) if rounded else value


def _feature(spec: dict) -> dict:
    """A numeric feature's non-integer domain rounded outward and its fill to nearest."""
    if spec.get("kind") != "numeric" or spec.get("integer") is True:
        return spec
    spec = dict(spec)
    for key, direction in (("min", "down"), ("max", "up"), ("fill", "nearest")):
        if isinstance(spec.get(key), float):
            spec[key] = canonical_float(spec[key], direction)
    return spec


def _canonical(payload: dict) -> dict:
    plain = _plain(payload)
    mechanism = plain.get("mechanism") if isinstance(plain, dict) else None
    payload = _ordered(plain, payload_keys(mechanism), "payload")
    features = []
    for i, spec in enumerate(payload["features"] if isinstance(payload["features"], list) else []):
        kind = spec.get("kind") if isinstance(spec, dict) else None
        keys = NUMERIC_FEATURE_KEYS if kind == "numeric" else CATEGORICAL_FEATURE_KEYS
        features.append(_feature(_ordered(spec, keys, f"features[{i}]")))
    if not features:
        raise BuildError("payload needs a non-empty list of features")
    payload["features"] = features
    for name in ("inputs", "outputs"):
        rows = payload[name]
        if not isinstance(rows, list):
            raise BuildError(f"{name} must be a list of rows")
        payload[name] = [
            [_cell(v, f, f"{name}[{i}][{k}]", name == "outputs") for k, (v, f) in enumerate(zip(row, features))]
            if isinstance(row, list) and len(row) == len(features) else row
            for i, row in enumerate(rows)
        ]
    if "private" in payload:
        payload["private"] = _ordered(payload["private"], PRIVATE_KEYS, "private")
    payload["table"] = _ordered(payload["table"], TABLE_KEYS, "table")
    if isinstance(payload.get("p_x"), list):  # max-correlation: the public marginal, float64
        payload["p_x"] = [canonical_float(_number(v, "p_x entry")) for v in payload["p_x"]]
    prior = payload.get("prior")
    if isinstance(prior, list):
        payload["prior"] = [
            [canonical_float(_number(v, "prior entry")) for v in row] if isinstance(row, list) else row
            for row in prior
        ]
    payload["metrics"] = canonical_floats(_sorted_map(payload["metrics"], "metrics"))
    payload["provenance"] = canonical_floats(_sorted_map(payload["provenance"], "provenance"))
    return payload


def encode_payload(payload: dict, *, limits: Limits = Limits()) -> bytes:
    """Canonical msgpack bytes of a payload dict (see docs/bundle-format.md).

    Key order is fixed (top level and nested maps in the specification's order; ``metrics`` and
    ``provenance`` sorted), numeric cells of non-integer features and prior entries are float64,
    computed floats are rounded to :data:`FLOAT_SIGNIFICANT_DIGITS` (module docstring), cells of
    integer features are ints, numpy scalars and arrays become plain values. The bytes
    are then decoded and validated with the device runtime's schema (including the check that
    the declared ``leakage_bits`` is not below the table's), so a payload the device would refuse
    raises :class:`BuildError` here. Deterministic: equal payloads give equal bytes.
    """
    if isinstance(payload, dict) and payload.get("mechanism") in REAL_MECHANISMS:
        from ._write_real import encode_real_payload
        return encode_real_payload(payload, limits)
    canonical = _canonical(payload)
    try:
        data = msgpack.packb(canonical, use_bin_type=True, use_single_float=False, strict_types=False)
    except (TypeError, ValueError, OverflowError) as exc:
        raise BuildError(f"payload cannot be encoded: {exc}") from None
    try:
        obj = decode_payload(data, limits)
        parse_header(obj)
        body = parse_body(obj, limits)
        check_declared_metrics(body)
    except BundleError as exc:
        raise BuildError(f"payload does not satisfy the bundle format: {exc}") from None
    if len(data) + 256 > limits.max_bundle_bytes:
        raise BuildError(f"payload of {len(data)} bytes exceeds the bundle size limit")
    return data


def sign_bundle(payload_bytes: bytes, private_key: Ed25519PrivateKey) -> bytes:
    """The bundle bytes: envelope ``[1, "ed25519", key_id, signature, payload]``, where
    ``signature = Ed25519(private_key, DOMAIN_TAG + payload_bytes)`` and ``key_id`` is the
    sha256 of the raw public key."""
    if not isinstance(private_key, Ed25519PrivateKey):
        raise BuildError("the signing key must be an Ed25519 private key")
    if not isinstance(payload_bytes, bytes):
        raise BuildError("payload_bytes must be bytes (from encode_payload)")
    raw_public = private_key.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    signature = private_key.sign(DOMAIN_TAG + payload_bytes)
    envelope = [FORMAT_VERSION, SIGNATURE_ALGORITHM, key_id_of(raw_public), signature, payload_bytes]
    return msgpack.packb(envelope, use_bin_type=True)


def check_bundle(bundle_bytes: bytes, public_key: Ed25519PublicKey, *, now=None,
                 limits: Limits = Limits()) -> Bundle:
    """Load ``bundle_bytes`` back with the device runtime, trusting only ``public_key``.

    ``now`` is the time (unix seconds) the expiry is judged at; ``None`` reads the system clock,
    as the device does. Raises :class:`BuildError` if the device would refuse the bundle.
    """
    try:
        keyring = Keyring([public_key])
        return load_bundle(bundle_bytes, keyring, now=now, limits=limits)
    except (BundleError, KeyringError) as exc:
        raise BuildError(f"the device runtime refuses this bundle: {type(exc).__name__}: {exc}") from None
