"""Parsing hostile bytes (THREATS.md section 8, F1-F13)."""
from __future__ import annotations

import ast
import os
import pathlib
import random
import signal
import struct
import time
import tracemalloc

import msgpack
import pytest
from fuzz_bundles import mutate_bytes
from harness import NOW

import privmap.device as device
from privmap.device import Limits, read_bundle_file
from privmap.device.constants import DOMAIN_TAG, MIN_MSGPACK_VERSION
from privmap.device.errors import BundleError, BundleFormatError, BundleSignatureError, BundleTooLargeError

DEVICE_DIR = pathlib.Path(device.__file__).resolve().parent


def _pack_map_pairs(pairs) -> bytes:
    """A msgpack map16 from (key, value) pairs, duplicates allowed."""
    body = b"".join(msgpack.packb(k) + msgpack.packb(v, use_bin_type=True) for k, v in pairs)
    return b"\xde" + struct.pack(">H", len(pairs)) + body


# -- F1 size caps ------------------------------------------------------------------------------

def test_F1_endless_stream_is_refused_before_a_byte_is_read(sim):
    cap = 1 << 20
    tracemalloc.start()
    try:
        with pytest.raises(BundleError, match="not a regular file"):
            read_bundle_file("/dev/zero", sim.keyring, now=NOW, limits=Limits(max_bundle_bytes=cap))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < cap // 16


def test_F1_a_bundle_path_that_is_a_fifo_is_refused_without_blocking(sim, tmp_path):
    fifo = tmp_path / "bundle.fifo"
    os.mkfifo(fifo)
    signal.alarm(10)  # a blocking open would hang the test: fail it instead
    try:
        with pytest.raises(BundleError, match="not a regular file"):
            read_bundle_file(fifo, sim.keyring, now=NOW)
    finally:
        signal.alarm(0)


def test_F1_oversized_file(sim, tmp_path):
    data = sim.bundle()
    path = tmp_path / "b.bin"
    path.write_bytes(data + b"\x00" * 10)
    with pytest.raises(BundleTooLargeError):
        read_bundle_file(path, sim.keyring, now=NOW, limits=Limits(max_bundle_bytes=len(data) + 9))
    path.write_bytes(data)
    assert read_bundle_file(path, sim.keyring, now=NOW, limits=Limits(max_bundle_bytes=len(data))).version == 5


def test_F1_unreadable_file_is_a_bundle_error(sim, tmp_path):
    with pytest.raises(BundleError):
        read_bundle_file(tmp_path / "missing.bin", sim.keyring, now=NOW)
    with pytest.raises(BundleError):
        read_bundle_file(tmp_path, sim.keyring, now=NOW)


# -- F2 huge length headers --------------------------------------------------------------------

HUGE_HEADERS = [b"\xdd\xff\xff\xff\xff", b"\xdf\xff\xff\xff\xff", b"\xc6\xff\xff\xff\xff",
                b"\xdb\xff\xff\xff\xff", b"\xc9\xff\xff\xff\xff\x05"]


@pytest.mark.parametrize("header", HUGE_HEADERS)
def test_F2_huge_headers_fail_fast(sim, header):
    signed = sim.sign_obj(header)  # the same header as the (signed) payload
    in_envelope = b"\x95\x01\xa7ed25519" + header
    for data in (header, in_envelope, signed):
        tracemalloc.start()
        started = time.perf_counter()
        try:
            with pytest.raises(BundleFormatError):
                sim.load(data)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert time.perf_counter() - started < 0.1
        assert peak < 1 << 20


def test_F2_payload_arrays_above_limits(sim):
    payload = sim.payload()
    with pytest.raises(BundleFormatError):
        sim.load(sim.sign_obj(payload), limits=Limits(max_inputs=2, max_outputs=2, max_features=2,
                                                      max_categories=2, max_classes=2))
    assert sim.load(sim.sign_obj(payload), limits=Limits(max_inputs=3, max_outputs=4)).version == 5
    with pytest.raises(BundleFormatError):
        sim.load(sim.sign_obj(payload), limits=Limits(max_string_bytes=5))


# -- F3 nesting --------------------------------------------------------------------------------

def test_F3_deep_nesting(sim):
    deep = b"\x91" * 5000 + b"\xc0"
    deep_maps = b"\x81\xa1k" * 5000 + b"\xc0"
    for nested in (deep, deep_maps):
        sim.refused(nested, BundleFormatError)                       # as the envelope
        sim.refused(sim.sign_obj(nested), BundleFormatError)         # as the signed payload
        payload = sim.payload()
        payload["provenance"]["note"] = "X"
        packed = sim.pack(payload).replace(b"\xa1X", nested)          # deep inside the payload
        sim.refused(sim.sign_obj(packed), BundleFormatError)


# -- F4, F5 ------------------------------------------------------------------------------------

def test_F4_trailing_bytes(sim):
    data = sim.bundle()
    sim.refused(data + b"\x01", BundleFormatError)
    sim.refused(sim.sign_obj(sim.pack(sim.payload()) + b"\x01"), BundleFormatError)


def test_F5_truncation_at_every_offset(sim):
    data = sim.bundle()
    for cut in range(len(data)):
        with pytest.raises(BundleError):
            sim.load(data[:cut])
    payload = sim.pack(sim.payload())
    for cut in range(0, len(payload), 7):
        with pytest.raises(BundleError):
            sim.load(sim.sign_obj(payload[:cut]))


# -- F6 - F11 ----------------------------------------------------------------------------------

def test_F6_duplicate_map_keys(sim):
    pairs = list(sim.payload().items())
    sim.refused(sim.sign_obj(_pack_map_pairs(pairs + [("version", 999)])), BundleFormatError)
    sim.refused(sim.sign_obj(_pack_map_pairs(pairs + [("version", 5)])), BundleFormatError)
    assert sim.load(sim.sign_obj(_pack_map_pairs(pairs))).version == 5
    # Nested map with a duplicate key.
    payload = sim.payload()
    payload["private"] = "P"
    private = _pack_map_pairs([("name", "party"), ("classes", ["left", "right"]), ("name", "x")])
    sim.refused(sim.sign_obj(sim.pack(payload).replace(b"\xa1P", private)), BundleFormatError)


def test_F7_ext_types(sim):
    for ext in (msgpack.ExtType(5, b"abc"), msgpack.ExtType(0, b""), msgpack.Timestamp(0),
                msgpack.Timestamp(2**40, 5)):
        payload = sim.payload()
        payload["metrics"]["n"] = ext
        sim.refused(sim.sign_obj(payload), BundleFormatError)
        sim.refused(sim.pack([1, "ed25519", ext, b"\x00" * 64, b""]), BundleFormatError)


def test_F8_int_map_keys(sim):
    payload = sim.payload()
    payload["provenance"][1] = "one"
    sim.refused(sim.sign_obj(payload), BundleFormatError)
    payload = sim.payload()
    payload[7] = 7
    sim.refused(sim.sign_obj(payload), BundleFormatError)


@pytest.mark.parametrize("path,value", [
    (("version",), 5.0), (("version",), float("nan")), (("version",), True),
    (("issued_at",), float("inf")), (("features", 0, "min"), float("nan")),
    (("features", 0, "max"), float("inf")), (("features", 0, "integer"), 1),
    (("inputs", 0, 1), float("nan")), (("inputs", 0, 0), 1.0), (("inputs", 0, 0), True),
    (("outputs", 1, 2), float("-inf")), (("prior", 0, 0), float("nan")), (("prior", 0, 0), -0.1),
    (("prior", 0, 0), True), (("metrics", "distortion"), float("nan")), (("metrics", "n"), True),
    (("metrics", "r"), "0.1"), (("provenance", "seed"), 1.5), (("provenance", "seed"), None),
    (("provenance", "seed"), False), (("provenance", "tool_version"), b"bytes"),
    (("private", "name"), b"party"), (("private", "classes"), ["left", "left"]),
    (("mechanism",), b"quantized"), (("metric",), "cosine"), (("type",), b"privmap/bundle"),
])
def test_F9_wrong_types_are_refused(sim, path, value):
    payload = sim.payload()
    target = payload
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(BundleFormatError):
        sim.load(sim.sign_obj(payload))


def test_F9_str_where_bytes_expected(sim):
    payload = sim.pack(sim.payload())
    good = msgpack.unpackb(sim.sign_obj(payload))
    fmt, alg, key_id, signature, body = good
    sim.refused(sim.pack([fmt, alg, key_id.hex(), signature, body]), BundleSignatureError)
    sim.refused(sim.pack([fmt, alg, key_id, signature.hex()[:64], body]), BundleSignatureError)
    sim.refused(sim.pack([fmt, alg, key_id, signature.decode("latin-1"), body]), BundleError)
    # A str payload (msgpack str type) is a format error even when the signature covers its bytes.
    sim.refused(msgpack.packb([fmt, alg, key_id, sim.key.sign(DOMAIN_TAG + body),
                               body.decode("latin-1")], use_bin_type=True), BundleError)


def test_F10_invalid_utf8(sim):
    payload = sim.payload()
    payload["private"]["name"] = "QQ"
    packed = sim.pack(payload)
    assert packed.count(b"\xa2QQ") == 1
    sim.refused(sim.sign_obj(packed.replace(b"\xa2QQ", b"\xa2\xff\xfe")), BundleFormatError)
    sim.refused(sim.sign_obj(packed.replace(b"\xa2QQ", b"\xa2\xed\xa0")), BundleFormatError)  # surrogate
    sim.refused(b"\x95\x01\xa7ed2\xff519", BundleFormatError)


@pytest.mark.parametrize("where", ["top", "feature", "private", "table"])
def test_F11_unknown_fields_are_refused(sim, where):
    payload = sim.payload()
    target = {"top": payload, "feature": payload["features"][0], "private": payload["private"],
              "table": payload["table"]}[where]
    target["epsilon"] = 1
    sim.refused(sim.sign_obj(payload), BundleFormatError)


@pytest.mark.parametrize("field", ["type", "version", "prior", "metrics", "provenance", "features"])
def test_missing_fields_are_refused(sim, field):
    payload = sim.payload()
    del payload[field]
    sim.refused(sim.sign_obj(payload), BundleFormatError)


def test_metrics_and_provenance_are_open_maps_with_required_keys(sim):
    payload = sim.payload()
    payload["metrics"]["extra_figure"] = 1.25
    payload["provenance"]["options"] = "--delta 0.1"
    assert sim.load(sim.sign_obj(payload)).metrics["extra_figure"] == 1.25
    for section, key in [("metrics", "delta"), ("metrics", "leakage_bits"), ("provenance", "seed")]:
        payload = sim.payload()
        del payload[section][key]
        sim.refused(sim.sign_obj(payload), BundleFormatError)


@pytest.mark.parametrize("mutate", [
    lambda p: p["inputs"][0].append(1),                         # row too long
    lambda p: p["outputs"].__setitem__(0, [1, 0.25]),           # row too short
    lambda p: p["inputs"][0].__setitem__(0, 6),                 # above max
    lambda p: p["inputs"][0].__setitem__(2, -1.0),              # below min
    lambda p: p["outputs"][0].__setitem__(0, None),             # nil without erasures
    lambda p: p["inputs"].__setitem__(0, None),
    lambda p: p.__setitem__("inputs", []),
    lambda p: p.__setitem__("outputs", []),
    lambda p: p.__setitem__("features", []),
    lambda p: p["features"][1].__setitem__("min", 2.0),         # min > max
    lambda p: p["features"][2].__setitem__("max", 1e101),       # beyond MAX_ABS_CELL: distances overflow
    lambda p: p["features"][2].__setitem__("min", -1e101),
    lambda p: p["features"][1].__setitem__("kind", "ordinal"),
    lambda p: p["features"][1].__setitem__("name", ""),
    lambda p: p["features"][1].__setitem__("name", "rating"),   # duplicate name
    lambda p: p.__setitem__("prior", p["prior"][:1]),           # |A| rows
    lambda p: p["prior"][0].append(0.0),                        # K_in columns
    lambda p: p["prior"][0].__setitem__(0, 0.5),                # mass != 1
    lambda p: p["private"].__setitem__("classes", []),
    lambda p: p.__setitem__("metric", "erasures"),              # erasures needs exact
    lambda p: p["features"].__setitem__(2, {"name": "g", "kind": "categorical", "values": ["a"]}),
])
def test_body_validation(sim, mutate):
    payload = sim.payload()
    mutate(payload)
    with pytest.raises(BundleFormatError):
        sim.load(sim.sign_obj(payload))


def test_exact_mechanism_payloads(sim):
    from harness import exact_payload
    bundle = sim.load(sim.sign_obj(exact_payload()))
    assert bundle.mechanism == "exact" and bundle.outputs[3] == (None, None)
    payload = exact_payload()
    payload["inputs"][1] = [0, 0]  # duplicate input tuple
    sim.refused(sim.sign_obj(payload), BundleFormatError)
    payload = exact_payload()
    payload["inputs"][0] = [None, 0]  # nil only in outputs
    sim.refused(sim.sign_obj(payload), BundleFormatError)
    payload = exact_payload()
    payload["inputs"][0] = [2, 0]  # category index out of range
    sim.refused(sim.sign_obj(payload), BundleFormatError)
    payload = exact_payload()
    payload["inputs"][0] = ["F", "hs"]  # categories are indexes
    sim.refused(sim.sign_obj(payload), BundleFormatError)


# -- F12 fuzzing -------------------------------------------------------------------------------

def test_F12_random_edits_of_a_signed_bundle(sim):
    rng = random.Random(12)
    original = sim.bundle()
    for _ in range(10_000):
        data = mutate_bytes(rng, original)
        try:
            bundle = sim.load(data)
        except BundleError:
            continue
        # A successful load must be the original signed payload (signatures bind the payload).
        assert msgpack.unpackb(data)[4] == msgpack.unpackb(original)[4]
        assert bundle.version == 5


def test_F12_random_edits_of_the_payload_then_signed(sim):
    from harness import exact_payload
    rng = random.Random(1212)
    originals = [sim.pack(sim.payload()), sim.pack(exact_payload())]
    loaded = 0
    for i in range(3_000):
        payload = mutate_bytes(rng, originals[i % 2])
        try:
            bundle = sim.load(sim.sign_obj(payload))
        except BundleError:
            continue
        loaded += 1
        bundle.sanitize(bundle.input_row(0))  # whatever loaded must also work
    assert loaded < 3_000


# -- F13 ---------------------------------------------------------------------------------------

def test_F13_msgpack_minimum_version_is_asserted_and_no_streaming_unpacker():
    assert tuple(msgpack.version[:3]) >= MIN_MSGPACK_VERSION >= (1, 1, 0)
    codec = (DEVICE_DIR / "format" / "_codec.py").read_text()
    assert "MIN_MSGPACK_VERSION" in codec and "raise ImportError" in codec
    for source in DEVICE_DIR.rglob("*.py"):
        text = source.read_text()
        assert "Unpacker" not in text, source
        tree = ast.parse(text)
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in ("Unpacker", "unpack", "load", "loads"):
                assert not (isinstance(node.value, ast.Name) and node.value.id == "msgpack"), source
