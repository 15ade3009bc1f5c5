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
to that precision; the device's checks allow for it (``privmap.device.constants``). ``sign_bundle`` wraps payload bytes in
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

from privmap.device import Bundle, Keyring, Limits, load_bundle
from privmap.device.constants import DOMAIN_TAG, FORMAT_VERSION, SIGNATURE_ALGORITHM
from privmap.device.errors import BundleError, KeyringError
from privmap.device.format import (
    CATEGORICAL_FEATURE_KEYS,
    NUMERIC_FEATURE_KEYS,
    PRIVATE_KEYS,
    TABLE_KEYS,
    decode_payload,
    parse_header,
    payload_keys,
)
from privmap.device.kinds import (
    GaussianBundle,
    NullspaceBundle,
    TableKind,
    check_declared_metrics,
    kind_of,
    parse_table_body,
)
from privmap.device.trust import key_id_of

from .._canonical import FLOAT_SIGNIFICANT_DIGITS, _ordered, _plain, _sorted_map, canonical_float, canonical_floats
from .._errors import BuildError

__all__ = ["encode_payload", "sign_bundle", "check_bundle", "canonical_float", "canonical_floats",
           "FLOAT_SIGNIFICANT_DIGITS"]

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
    kind = kind_of(payload.get("mechanism"))
    model_keys = kind.model_keys if isinstance(kind, TableKind) else ()
    if isinstance(payload.get("model"), dict) and model_keys:  # a recommender's or a ranking bundle's
        model = _ordered(payload["model"], model_keys, "model")
        for key in ("mean", "reg"):          # the recommender's floats, as the build used them (a ranking
            if key in model:                 # model holds whole numbers only)
                model[key] = canonical_float(_number(model[key], f"model.{key}"))
        if isinstance(model.get("whiten"), list):
            model["whiten"] = [[canonical_float(_number(v, "model.whiten entry")) for v in row]
                               for row in model["whiten"]]
        payload["model"] = model
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
    kind = kind_of(payload.get("mechanism")) if isinstance(payload, dict) else None
    if kind is not None and not kind.table:
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
        body = parse_table_body(obj, limits)
        check_declared_metrics(body)
    except BundleError as exc:
        raise BuildError(f"payload does not satisfy the bundle format: {exc}") from None
    if len(data) + 256 > limits.max_bundle_bytes:
        raise BuildError(f"payload of {len(data)} bytes exceeds the bundle size limit")
    return data


def sign_bundle(payload_bytes: bytes, private_key: Ed25519PrivateKey) -> bytes:
    """The bundle bytes: envelope ``[1, "ed25519", key_id, signature, payload]``.

    ``signature = Ed25519(private_key, DOMAIN_TAG + payload_bytes)`` and ``key_id`` is the
    sha256 of the raw public key.
    """
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
                 limits: Limits = Limits()) -> Bundle | GaussianBundle | NullspaceBundle:
    """Load ``bundle_bytes`` back with the device runtime, trusting only ``public_key``.

    ``now`` is the time (unix seconds) the expiry is judged at; ``None`` reads the system clock,
    as the device does. Raises :class:`BuildError` if the device would refuse the bundle.
    """
    try:
        keyring = Keyring([public_key])
        return load_bundle(bundle_bytes, keyring, now=now, limits=limits)
    except (BundleError, KeyringError) as exc:
        raise BuildError(f"the device runtime refuses this bundle: {type(exc).__name__}: {exc}") from None
