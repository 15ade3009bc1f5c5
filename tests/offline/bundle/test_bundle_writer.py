"""The offline bundle writer: canonical payload bytes, signed envelope, round trip via the device."""
from __future__ import annotations

import copy
import hashlib

import msgpack
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from privmap.device import Keyring, load_bundle
from privmap.device.constants import DOMAIN_TAG, PAYLOAD_KEYS
from privmap.device.kinds import table_leakage_bits
from privmap.offline._errors import BuildError
from privmap.offline.bundle._write import check_bundle, encode_payload, sign_bundle

NOW = 1_700_000_000


def _key(label=b"writer"):
    return Ed25519PrivateKey.from_private_bytes(hashlib.sha256(b"privmap-test-key:" + label).digest())


def _payload():
    table = {"weight": [[3, 1], [4]], "index": [[0, 1], [1]], "bits": 2}  # keys out of order
    prior = [[0.3, 0.2], [0.1, 0.4]]
    return {
        "provenance": {"seed": 3, "tool_version": "0.1.0", "data_sha256": "ab" * 32, "solver": "fast"},
        "metrics": {"n": 10, "clusters": 2, "distortion": 0.2, "delta": 0.25, "r": 0.1,
                    "delta_plus_r": 0.35, "perfect_privacy_distortion": 1.0,
                    "leakage_bits": table_leakage_bits(prior, table["index"], table["weight"], 2)},
        "type": "privmap/bundle",
        "schema_version": 2,
        "version": 3,
        "issued_at": NOW - 10,
        "expires": NOW + 1000, "device_class": "generic",
        "mechanism": "quantized",
        "metric": "l2",
        "features": [{"max": 4, "min": 0, "kind": "numeric", "name": "a", "integer": True, "missing": "refuse", "fill": None,
                      "missing_token": ""},
                     {"name": "b", "kind": "numeric", "min": 0, "max": 1, "integer": False, "missing": "refuse", "fill": None,
                      "missing_token": ""}],
        "private": {"classes": ["x", "y"], "name": "p"},
        "inputs": [[0, 0], [4.0, 1]],
        "outputs": [[1, 0.5], [3, 1]],
        "table": table,
        "prior": prior,
    }


def test_encoding_is_canonical_and_deterministic():
    a = encode_payload(_payload())
    shuffled = _payload()
    shuffled = {k: shuffled[k] for k in reversed(list(shuffled))}
    shuffled["metrics"] = dict(reversed(list(shuffled["metrics"].items())))
    assert encode_payload(copy.deepcopy(_payload())) == a == encode_payload(shuffled)
    decoded = msgpack.unpackb(a)
    assert list(decoded) == list(PAYLOAD_KEYS)
    assert list(decoded["table"]) == ["bits", "index", "weight"]
    assert list(decoded["features"][0]) == ["name", "kind", "min", "max", "integer", "missing", "fill", "missing_token"]
    assert list(decoded["metrics"]) == sorted(decoded["metrics"])
    # integer feature cells become ints, other numeric cells float64 (0xcb), prior float64
    assert decoded["inputs"] == [[0, 0.0], [4, 1.0]]
    assert type(decoded["inputs"][1][0]) is int and type(decoded["inputs"][0][1]) is float
    # Canonical: re-encoding the decoded value (float64, shortest ints) gives the same bytes.
    assert msgpack.packb(decoded, use_bin_type=True, use_single_float=False) == a


def test_numpy_values_are_written_as_plain_values():
    np = pytest.importorskip("numpy")
    payload = _payload()
    payload["inputs"] = np.array([[0, 0], [4, 1]], dtype=np.int64)
    payload["prior"] = np.array(payload["prior"])
    payload["table"]["bits"] = np.int64(2)
    payload["metrics"]["n"] = np.int64(10)
    payload["metrics"]["leakage_bits"] = np.float64(payload["metrics"]["leakage_bits"])
    assert encode_payload(payload) == encode_payload(_payload())


def test_signed_bundle_round_trips_and_is_byte_identical():
    key = _key()
    payload_bytes = encode_payload(_payload())
    first = sign_bundle(payload_bytes, key)
    assert sign_bundle(encode_payload(_payload()), _key()) == first  # Ed25519 is deterministic
    fmt, alg, key_id, signature, body = msgpack.unpackb(first)
    raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    assert (fmt, alg, key_id, body) == (1, "ed25519", hashlib.sha256(raw).digest(), payload_bytes)
    key.public_key().verify(signature, DOMAIN_TAG + payload_bytes)
    bundle = load_bundle(first, Keyring([raw]), now=NOW)
    assert bundle.version == 3 and bundle.inputs == ((0, 0.0), (4, 1.0))
    assert check_bundle(first, key.public_key(), now=NOW).sha256 == hashlib.sha256(first).hexdigest()


def test_check_bundle_reports_device_refusals_as_build_errors():
    data = sign_bundle(encode_payload(_payload()), _key())
    with pytest.raises(BuildError, match="ExpiredBundleError"):
        check_bundle(data, _key().public_key(), now=NOW + 5000)
    with pytest.raises(BuildError, match="BundleSignatureError"):
        check_bundle(data, _key(b"other").public_key(), now=NOW)


@pytest.mark.parametrize("mutate,message", [
    (lambda p: p.pop("prior"), "missing"),
    (lambda p: p.__setitem__("epsilon", 1.0), "unknown"),
    (lambda p: p["table"]["weight"].__setitem__(0, [2, 1]), "2\\*\\*2"),
    (lambda p: p["inputs"].__setitem__(0, [0.5, 0]), "whole number"),
    (lambda p: p["inputs"].__setitem__(0, [0, float("nan")]), "finite"),
    (lambda p: p["metrics"].__setitem__("leakage_bits", 0.0), "leakage"),
    (lambda p: p["features"][0].pop("integer"), "missing"),
    (lambda p: p.__setitem__("version", 0), "version"),
    (lambda p: p["provenance"].__setitem__("seed", None), "provenance"),
    (lambda p: p["metrics"].__setitem__("n", True), "number"),
])
def test_invalid_payloads_raise_build_error(mutate, message):
    payload = _payload()
    mutate(payload)
    with pytest.raises(BuildError, match=message):
        encode_payload(payload)


def test_sign_bundle_argument_checks():
    with pytest.raises(BuildError):
        sign_bundle(encode_payload(_payload()), b"\x00" * 32)
    with pytest.raises(BuildError):
        sign_bundle(bytearray(encode_payload(_payload())), _key())
