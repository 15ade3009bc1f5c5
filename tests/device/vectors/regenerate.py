#!/usr/bin/env python3
"""Regenerate the known-answer bundle vectors in this folder (THREATS.md A12).

    python tests/device/vectors/regenerate.py          # write the vectors and manifest.json
    python tests/device/vectors/regenerate.py --check  # verify the files on disk, change nothing

Every vector is derived deterministically from the TEST keys in this folder (``test_key.pem``,
trusted; ``other_key.pem``, not trusted) and fixed payloads, so regenerating gives byte-identical
files (Ed25519 is deterministic). THESE KEYS ARE FOR TESTS ONLY: they are public, committed to the
repository, and must never sign a real bundle. ``tests/device/test_device_vectors.py`` checks that
each file still loads or fails exactly as ``manifest.json`` records, and that regeneration
reproduces the files byte for byte.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import pathlib
import struct
import sys

import msgpack
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from privmap.device.constants import DOMAIN_TAG
from privmap.device.kinds import table_leakage_bits
from privmap.offline.bundle._write import encode_payload, sign_bundle

HERE = pathlib.Path(__file__).resolve().parent
NOW = 1_700_000_000  # the clock the manifest's expectations are judged at
TRUSTED_KEY_FILE = "test_key.pem"
OTHER_KEY_FILE = "other_key.pem"
PUBLIC_KEY_FILE = "test_key.pub.pem"


def _test_key(filename: str, label: bytes) -> Ed25519PrivateKey:
    """Load a committed test key, creating it (deterministically from ``label``) if missing."""
    path = HERE / filename
    if path.exists():
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
        assert isinstance(key, Ed25519PrivateKey)
        return key
    return Ed25519PrivateKey.from_private_bytes(hashlib.sha256(b"privmap TEST ONLY " + label).digest())


def _pem(key: Ed25519PrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _public_pem(key: Ed25519PrivateKey) -> bytes:
    return key.public_key().public_bytes(serialization.Encoding.PEM,
                                         serialization.PublicFormat.SubjectPublicKeyInfo)


def _with_leakage(payload: dict) -> dict:
    t = payload["table"]
    payload["metrics"]["leakage_bits"] = table_leakage_bits(payload["prior"], t["index"], t["weight"], t["bits"])
    return payload


def quantized_payload(**overrides) -> dict:
    payload = {
        "type": "privmap/bundle", "schema_version": 2, "version": 7,
        "issued_at": NOW - 86400, "expires": NOW + 365 * 86400, "device_class": "generic",
        "mechanism": "quantized", "metric": "l2",
        "features": [
            {"name": "drama", "kind": "numeric", "min": 0, "max": 3, "integer": True, "missing": "mask",
             "fill": None, "missing_token": ""},
            {"name": "news", "kind": "numeric", "min": 0, "max": 3, "integer": True, "missing": "impute",
             "fill": 1, "missing_token": "NA"},
            {"name": "hours", "kind": "numeric", "min": 0.0, "max": 24.0, "integer": False, "missing": "refuse",
             "fill": None, "missing_token": ""},
        ],
        "private": {"name": "gender", "classes": ["female", "male"]},
        "inputs": [[0, 0, 1.5], [1, 3, 4.0], [3, 1, 2.25], [2, 2, 10.0]],
        "outputs": [[0, 1, 2.0], [1, 2, 4.0], [3, 1, 2.0], [2, 2, 8.0], [1, 1, 3.0]],
        "table": {"bits": 8,
                  "index": [[0, 4], [1, 3, 4], [2, 4], [1, 3]],
                  "weight": [[200, 56], [100, 100, 56], [128, 128], [1, 255]]},
        "prior": [[0.2, 0.05, 0.15, 0.1], [0.05, 0.2, 0.1, 0.15]],
        "metrics": {"leakage_bits": 0.0, "distortion": 0.4, "delta": 0.5, "r": 0.75,
                    "delta_plus_r": 1.25, "clusters": 4, "n": 400, "perfect_privacy_distortion": 2.0},
        "provenance": {"tool_version": "privmap-test-vectors", "seed": 0, "data_sha256": "0" * 64,
                       "solver": "hand-written"},
    }
    payload.update(overrides)
    return _with_leakage(payload)


def exact_payload() -> dict:
    payload = quantized_payload(
        version=8, mechanism="exact", metric="erasures",
        features=[{"name": "sex", "kind": "categorical", "values": ["F", "M"]},
                  {"name": "education", "kind": "categorical", "values": ["hs", "college", "phd"]}],
        inputs=[[0, 0], [0, 2], [1, 1]],
        outputs=[[0, 0], [0, None], [None, 2], [None, None], [1, 1]],
        table={"bits": 2, "index": [[0, 1, 3], [2, 3], [3, 4]], "weight": [[2, 1, 1], [3, 1], [1, 3]]},
        prior=[[0.3, 0.1, 0.1], [0.1, 0.2, 0.2]],
    )
    return payload


def _pack(obj) -> bytes:
    return msgpack.packb(obj, use_bin_type=True)


def _envelope(key, payload_bytes: bytes, *, tag=DOMAIN_TAG, alg="ed25519") -> bytes:
    raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return _pack([1, alg, hashlib.sha256(raw).digest(), key.sign(tag + payload_bytes), payload_bytes])


def _flip(data: bytes, offset: int, mask: int = 1) -> bytes:
    b = bytearray(data)
    b[offset] ^= mask
    return bytes(b)


def _duplicate_key_map(payload: dict, key: str, value) -> bytes:
    pairs = list(payload.items()) + [(key, value)]
    body = b"".join(_pack(k) + _pack(v) for k, v in pairs)
    return b"\xde" + struct.pack(">H", len(pairs)) + body


def build_vectors() -> tuple[dict[str, bytes], dict[str, dict]]:
    """All vectors (name -> bytes) and their expectations (name -> manifest entry)."""
    key = _test_key(TRUSTED_KEY_FILE, b"trusted")
    other = _test_key(OTHER_KEY_FILE, b"other")
    good = sign_bundle(encode_payload(quantized_payload()), key)
    good_exact = sign_bundle(encode_payload(exact_payload()), key)
    payload_bytes = encode_payload(quantized_payload())
    payload_at = good.rindex(payload_bytes)
    signature_at = good.index(msgpack.unpackb(good)[3])
    assert good[signature_at - 2:signature_at] == b"\xc4\x40"  # bin8 header of the 64-byte signature

    bad_rows = quantized_payload()
    bad_rows["table"]["weight"][2] = [128, 127]
    leaky = quantized_payload()
    leaky["metrics"]["leakage_bits"] = leaky["metrics"]["leakage_bits"] / 2
    unknown_field = quantized_payload()
    unknown_field["public_key"] = "00" * 32
    keyring_update = {"type": "privmap/keyring", "version": 2, "keys": ["00" * 32]}

    cases = [
        # name, bytes, expected outcome, min_version
        ("good_quantized", good, "ok", 1),
        ("good_exact_erasures", good_exact, "ok", 1),
        ("bad_flipped_payload_byte", _flip(good, payload_at + len(payload_bytes) // 2), "BundleSignatureError", 1),
        ("bad_flipped_signature_byte", _flip(good, signature_at + 10, 0x80), "BundleSignatureError", 1),
        ("bad_unknown_key", sign_bundle(payload_bytes, other), "BundleSignatureError", 1),
        ("bad_truncated", good[:-1], "BundleFormatError", 1),
        ("bad_trailing_bytes", good + b"\x00", "BundleFormatError", 1),
        ("bad_expired", sign_bundle(encode_payload(quantized_payload(expires=NOW)), key), "ExpiredBundleError", 1),
        ("bad_version_below_minimum", good, "RollbackError", 8),
        ("bad_row_sum", _envelope(key, _pack(bad_rows)), "TableError", 1),
        ("bad_declared_leakage", _envelope(key, _pack(leaky)), "MetricsError", 1),
        ("bad_unknown_field", _envelope(key, _pack(unknown_field)), "BundleFormatError", 1),
        ("bad_duplicate_key", _envelope(key, _duplicate_key_map(quantized_payload(), "version", 99)),
         "BundleFormatError", 1),
        ("bad_wrong_type", _envelope(key, _pack(keyring_update)), "WrongTypeError", 1),
        ("bad_domain_tag", _envelope(key, payload_bytes, tag=b"privmap-keyring-v1\x00"), "BundleSignatureError", 1),
        ("bad_algorithm", _envelope(key, payload_bytes, alg="ed448"), "BundleSignatureError", 1),
        ("bad_no_signature", _pack([1, "ed25519", msgpack.unpackb(good)[2], b"", payload_bytes]),
         "BundleSignatureError", 1),
    ]
    files, manifest = {}, {}
    for name, data, expect, min_version in cases:
        files[f"{name}.bin"] = data
        manifest[name] = {"file": f"{name}.bin", "sha256": hashlib.sha256(data).hexdigest(),
                          "expect": expect, "min_version": min_version}
    files[TRUSTED_KEY_FILE] = _pem(key)
    files[OTHER_KEY_FILE] = _pem(other)
    files[PUBLIC_KEY_FILE] = _public_pem(key)
    # What the good bundles release for each input when the B-bit draws enumerate 0 .. 2^B - 1,
    # as runs [output index, repeat count] in draw order.
    for name, payload in (("good_quantized", quantized_payload()), ("good_exact_erasures", exact_payload())):
        t = payload["table"]
        manifest[name]["enumerated_release_runs"] = [
            [[j, w] for j, w in zip(t["index"][c], t["weight"][c])] for c in range(len(payload["inputs"]))
        ]
    document = {
        "about": "privmap bundle known-answer vectors; regenerate with tests/device/vectors/regenerate.py. "
                 "TEST KEYS ONLY.",
        "now": NOW,
        "trusted_public_key": PUBLIC_KEY_FILE,
        "vectors": manifest,
    }
    files["manifest.json"] = (json.dumps(document, indent=2, sort_keys=True) + "\n").encode()
    return files, manifest


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the files on disk; write nothing")
    args = parser.parse_args(argv)
    files, _ = build_vectors()
    if args.check:
        differ = [name for name, data in files.items()
                  if not (HERE / name).exists() or (HERE / name).read_bytes() != data]
        for name in differ:
            print(f"differs: {name}", file=sys.stderr)
        return 1 if differ else 0
    for name, data in files.items():
        (HERE / name).write_bytes(data)
    print(f"wrote {len(files)} files to {HERE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
