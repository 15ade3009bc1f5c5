"""Test harness for the device runtime, imported by the tests and by conftest: a BundleSimulator
(keys, sign-then-mutate and
mutate-then-sign), a fake clock (``Sim.NOW``) and an enumerating bit source."""
from __future__ import annotations

import hashlib
import random

import msgpack
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from privmap.device import Keyring, load_bundle
from privmap.device.constants import DOMAIN_TAG
from privmap.device.errors import BundleError
from privmap.device.kinds import table_leakage_bits

NOW = 1_700_000_000  # the fake clock: every test loads "at" this instant unless it says otherwise


def key_from_label(label: bytes) -> Ed25519PrivateKey:
    """A deterministic test key (never used outside tests)."""
    return Ed25519PrivateKey.from_private_bytes(hashlib.sha256(b"privmap-test-key:" + label).digest())


def raw_public(key: Ed25519PrivateKey) -> bytes:
    return key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


class EnumeratingBits:
    """Fake bit source: successive calls return 0, 1, ..., 2**B - 1, 0, 1, ... (B fixed)."""

    def __init__(self):
        self.next = 0
        self.calls = 0

    def randbits(self, k):
        value = self.next % (1 << k)
        self.next += 1
        self.calls += 1
        return value


class FixedBits:
    def __init__(self, value):
        self.value = value
        self.calls = 0

    def randbits(self, k):
        self.calls += 1
        return self.value


class MemoryCounter:
    """An in-memory monotonic counter, as firmware would back one with a TPM NV counter."""

    def __init__(self):
        self.value = 0

    def read(self) -> int:
        return self.value

    def increment(self) -> int:
        self.value += 1
        return self.value


def base_payload() -> dict:
    """A small valid quantized payload: d=3 numeric (one integer), K_in=3, K_out=4, B=4, l2."""
    payload = {
        "type": "privmap/bundle",
        "schema_version": 2,
        "version": 5,
        "issued_at": NOW - 3600,
        "expires": NOW + 86400, "device_class": "generic",
        "mechanism": "quantized",
        "metric": "l2",
        "features": [
            {"name": "rating", "kind": "numeric", "min": 1, "max": 5, "integer": True, "missing": "refuse", "fill": None,
             "missing_token": ""},
            {"name": "score", "kind": "numeric", "min": 0.0, "max": 1.0, "integer": False, "missing": "refuse", "fill": None,
             "missing_token": ""},
            {"name": "hours", "kind": "numeric", "min": 0, "max": 24, "integer": False, "missing": "refuse", "fill": None,
             "missing_token": ""},
        ],
        "private": {"name": "party", "classes": ["left", "right"]},
        "inputs": [[1, 0.0, 0.0], [3, 0.5, 12.0], [5, 1.0, 24.0]],
        "outputs": [[1, 0.25, 2.0], [2, 0.5, 8.0], [4, 0.75, 16.0], [5, 1.0, 24.0]],
        "table": {
            "bits": 4,
            "index": [[0, 1], [1, 2, 3], [3]],
            "weight": [[12, 4], [5, 5, 6], [16]],
        },
        "prior": [[0.25, 0.15, 0.1], [0.05, 0.15, 0.3]],
        "metrics": {
            "leakage_bits": 0.0,
            "distortion": 0.1,
            "delta": 0.1,
            "r": 0.05,
            "delta_plus_r": 0.15,
            "clusters": 3,
            "n": 1000,
            "perfect_privacy_distortion": 1.5,
        },
        "provenance": {"tool_version": "privmap-test", "seed": 7, "data_sha256": "00" * 32,
                       "solver": "hand"},
    }
    return with_leakage(payload)


RANK = 2
COLUMNS = [f"item{j}" for j in range(7)]


def recommender_payload() -> dict:
    """A K = 3 recommender payload over 7 rating columns 1..5 with a rank-2 model."""
    rng = random.Random(4)     # item factors: fixed point at scale 2**12, within +-0.5
    scale_bits = 12
    items = [[rng.randint(-2000, 2000) for _ in range(RANK + 1)] for _ in COLUMNS]
    payload = base_payload()
    payload.update({
        "mechanism": "recommender",
        "metric": "l2",
        "features": [{"name": f"factor_{i}", "kind": "numeric", "min": -3.0, "max": 3.0, "integer": False,
                      "missing": "mask", "fill": None, "missing_token": ""} for i in range(RANK + 1)],
        "inputs": [[-1.0, 0.5, 0.0], [0.0, 0.0, 0.0], [1.0, -0.5, 0.2]],
        "outputs": [[-0.8, 0.4, 0.0], [0.1, 0.0, 0.1], [0.9, -0.4, 0.2], [0.0, 0.0, 0.0]],
        "model": {"columns": COLUMNS, "min": 1, "max": 5, "integer": True, "missing_token": "",
                  "mean": 3.5, "reg": 2.0, "scale_bits": scale_bits, "items": items,
                  "whiten": [[1.0, 0.2, -0.1], [0.0, 0.8, 0.3], [0.0, 0.0, 0.6]], "decimals": 2},
    })
    return with_leakage(payload)


def wide_recommender_payload(columns: int, rank: int, *, outputs: int = 4) -> dict:
    """:func:`recommender_payload` widened to ``columns`` rating columns, a rank-``rank`` model
    (random item entries within +-0.5, an identity whitening) and ``outputs`` outputs spread over
    the factor space (the first four those of the small payload, padded with zeros)."""
    rng = random.Random(columns * 1000 + rank)
    k1 = rank + 1
    payload = recommender_payload()
    small = payload["outputs"]
    payload["features"] = [dict(payload["features"][0], name=f"factor_{i}") for i in range(k1)]
    payload["inputs"] = [row + [0.0] * (k1 - len(row)) for row in payload["inputs"]]
    payload["outputs"] = [(small[j] + [0.0] * (k1 - 3)) if j < len(small) else
                          [round(rng.uniform(-3, 3), 3) for _ in range(k1)] for j in range(outputs)]
    payload["model"].update(columns=[f"item{j}" for j in range(columns)],
                            items=[[rng.randint(-2000, 2000) for _ in range(k1)] for _ in range(columns)],
                            whiten=[[1.0 if i == j else 0.0 for j in range(k1)] for i in range(k1)])
    return with_leakage(payload)


def ranking_payload() -> dict:
    """A K_in = 3 ranking payload over the 7 rating columns 1..5 with a rank-3 score space."""
    rng = random.Random(7)
    payload = base_payload()
    payload.update({
        "mechanism": "ranking",
        "metric": "l2",
        "features": [{"name": f"score_{i}", "kind": "numeric", "min": -1.0, "max": 1.0, "integer": False,
                      "missing": "mask", "fill": None, "missing_token": ""} for i in range(3)],
        "inputs": [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]],
        "outputs": [[0.9, 0.1, 0.0], [0.1, 0.8, 0.1], [0.0, 0.2, 0.9], [0.5, 0.5, 0.5]],
        "model": {"columns": COLUMNS, "min": 1, "max": 5, "integer": True, "missing_token": "",
                  "embed": [[rng.randint(-3000, 3000) for _ in range(3)] for _ in COLUMNS],
                  "basis": [[rng.randint(-4000, 4000) for _ in range(3)] for _ in COLUMNS],
                  "basis_bits": 12, "decimals": 3},
    })
    return with_leakage(payload)


def exact_payload() -> dict:
    """A small valid exact-mechanism payload with erasures: d=2 categorical, K_in=4, K_out=6."""
    payload = base_payload()
    payload.update({
        "mechanism": "exact",
        "metric": "erasures",
        "features": [
            {"name": "sex", "kind": "categorical", "values": ["F", "M"]},
            {"name": "education", "kind": "categorical", "values": ["hs", "college", "phd"]},
        ],
        "inputs": [[0, 0], [0, 1], [1, 0], [1, 2]],
        "outputs": [[0, 0], [None, 1], [1, None], [None, None], [1, 2], [0, None]],
        "table": {
            "bits": 3,
            "index": [[0, 3, 5], [1, 3], [2, 3], [3, 4]],
            "weight": [[4, 2, 2], [6, 2], [7, 1], [3, 5]],
        },
        "prior": [[0.2, 0.1, 0.1, 0.1], [0.1, 0.2, 0.1, 0.1]],
    })
    return with_leakage(payload)


def with_leakage(payload: dict) -> dict:
    """Set metrics.leakage_bits to what the payload's table gives on its prior."""
    t = payload["table"]
    payload["metrics"]["leakage_bits"] = table_leakage_bits(payload["prior"], t["index"], t["weight"], t["bits"])
    return payload


class Sim:
    """In-memory bundle simulator: trusted keys, an untrusted key, packing and signing."""

    NOW = NOW

    def __init__(self):
        self.key = key_from_label(b"trusted-1")
        self.key2 = key_from_label(b"trusted-2")
        self.untrusted = key_from_label(b"untrusted")
        self.keyring = Keyring([raw_public(self.key), raw_public(self.key2)])

    @staticmethod
    def payload(**overrides) -> dict:
        p = base_payload()
        for name, value in overrides.items():
            p[name] = value
        return p

    @staticmethod
    def pack(obj) -> bytes:
        return msgpack.packb(obj, use_bin_type=True)

    def envelope(self, payload_bytes: bytes, key=None, *, tag=DOMAIN_TAG, fmt=1, alg="ed25519",
                 key_id=None, signature=None, extra=()) -> bytes:
        key = key or self.key
        if key_id is None:
            key_id = hashlib.sha256(raw_public(key)).digest()
        if signature is None:
            signature = key.sign(tag + payload_bytes)
        return self.pack([fmt, alg, key_id, signature, payload_bytes, *extra])

    def sign_obj(self, obj, key=None, **kw) -> bytes:
        """Mutate-then-sign: pack any object (valid or not) and sign it with a trusted key."""
        return self.envelope(obj if isinstance(obj, bytes) else self.pack(obj), key, **kw)

    def bundle(self, **overrides) -> bytes:
        return self.sign_obj(self.payload(**overrides))

    def load(self, data, **kw):
        kw.setdefault("now", NOW)
        return load_bundle(data, self.keyring, **kw)

    def refused(self, data, error, **kw):
        """Assert ``data`` is refused with ``error`` and that a valid bundle still loads after."""
        with pytest.raises(error) as info:
            self.load(data, **kw)
        assert isinstance(info.value, BundleError) or not issubclass(error, BundleError)
        assert self.load(self.bundle()).version == 5
        return info.value
