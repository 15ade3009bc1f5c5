"""Authenticity, rollback, expiry and table validation (THREATS.md section 8: A, D, H).

Every refusal is checked through ``sim.refused``: the named error is raised (a BundleError), no
bundle is returned, and a valid bundle still loads afterwards.
"""
from __future__ import annotations

import hashlib

import msgpack
import pytest
from harness import NOW, key_from_label, raw_public, with_leakage

from privmap.device import Keyring, Limits, load_bundle
from privmap.device.constants import DOMAIN_TAG
from privmap.device.errors import (
    BundleError,
    BundleFormatError,
    BundleSignatureError,
    BundleTooLargeError,
    ExpiredBundleError,
    MetricsError,
    RollbackError,
    TableError,
    WrongTypeError,
)


def _payload_span(bundle: bytes) -> tuple[int, int]:
    """Offsets of the payload bytes inside an envelope."""
    env = msgpack.unpackb(bundle)
    payload = env[4]
    start = bundle.rindex(payload)
    return start, start + len(payload)


def _flip(data: bytes, offset: int, mask: int = 0x01) -> bytes:
    b = bytearray(data)
    b[offset] ^= mask
    return bytes(b)


# -- the must-exist list ---------------------------------------------------------------------

def test_valid_bundle_loads_and_exposes_read_only_fields(sim):
    data = sim.bundle()
    bundle = sim.load(data)
    assert bundle.version == 5 and bundle.bits == 4 and bundle.mechanism == "quantized"
    assert bundle.sha256 == hashlib.sha256(data).hexdigest()
    assert bundle.data == data
    assert bundle.key_id == hashlib.sha256(raw_public(sim.key)).hexdigest()
    with pytest.raises(AttributeError):
        bundle.version = 6
    with pytest.raises(TypeError):
        bundle.metrics["leakage_bits"] = 0.0
    with pytest.raises(TypeError):
        type(bundle)()


def test_flipped_payload_byte_is_refused(sim):
    data = sim.bundle()
    start, end = _payload_span(data)
    for offset in (start, start + 1, (start + end) // 2, end - 1):
        sim.refused(_flip(data, offset), BundleSignatureError)


def test_flipped_signature_byte_is_refused(sim):
    data = sim.bundle()
    signature = msgpack.unpackb(data)[3]
    at = data.index(signature)
    for offset in (at, at + 31, at + 32, at + 63):
        sim.refused(_flip(data, offset, 0x80), BundleSignatureError)


def test_unknown_key_is_refused(sim):
    sim.refused(sim.sign_obj(sim.payload(), sim.untrusted), BundleSignatureError)


def test_truncated_file_is_refused(sim):
    data = sim.bundle()
    for cut in (0, 1, 5, len(data) // 2, len(data) - 1):
        sim.refused(data[:cut], BundleError)


def test_trailing_bytes_are_refused(sim):
    data = sim.bundle()
    for extra in (b"\x00", b"\xc0", data):
        sim.refused(data + extra, BundleFormatError)


def test_trailing_bytes_inside_the_signed_payload_are_refused(sim):
    sim.refused(sim.sign_obj(sim.pack(sim.payload()) + b"\xc0"), BundleFormatError)


def test_oversized_bundle_is_refused_before_parsing(sim):
    data = sim.bundle()
    sim.refused(data, BundleTooLargeError, limits=Limits(max_bundle_bytes=len(data) - 1))
    assert sim.load(data, limits=Limits(max_bundle_bytes=len(data))).version == 5
    sim.refused(b"\x00" * (len(data) + 1), BundleTooLargeError, limits=Limits(max_bundle_bytes=len(data)))


def test_expired_bundle_is_refused(sim):
    data = sim.bundle()
    payload = sim.payload()
    sim.refused(data, ExpiredBundleError, now=payload["expires"])
    sim.refused(data, ExpiredBundleError, now=payload["expires"] + 1)
    assert sim.load(data, now=payload["expires"] - 1).version == 5


def test_version_below_minimum_is_refused(sim):
    data = sim.bundle()
    sim.refused(data, RollbackError, min_version=6)
    assert sim.load(data, min_version=5).version == 5


def test_signed_bundle_with_bad_row_sum_is_refused(sim):
    payload = sim.payload()
    payload["table"]["weight"][1] = [5, 5, 5]  # sums to 15, not 16
    sim.refused(sim.sign_obj(payload), TableError)


# -- A: authenticity ---------------------------------------------------------------------------

def test_A1_bundle_without_signature(sim):
    payload = sim.pack(sim.payload())
    sim.refused(sim.envelope(payload, signature=b""), BundleSignatureError)
    sim.refused(sim.envelope(payload, signature=b"\x00"), BundleSignatureError)
    key_id = hashlib.sha256(raw_public(sim.key)).digest()
    sim.refused(sim.pack([1, "ed25519", key_id, None, payload]), BundleSignatureError)
    sim.refused(sim.pack([1, "ed25519", key_id, payload]), BundleFormatError)  # 4 fields


def test_A2_bit_flips_everywhere_are_refused(sim):
    data = sim.bundle()
    start, end = _payload_span(data)
    header = range(0, start)  # envelope header, key id, signature, payload length
    for offset in list(header) + [start, (start + end) // 2, end - 1]:
        for mask in (0x01, 0x80):
            with pytest.raises(BundleError):
                sim.load(_flip(data, offset, mask))


def test_A3_well_formed_signature_from_unpinned_key(sim):
    # Claims a trusted key id, signature made by an untrusted key.
    payload = sim.pack(sim.payload())
    forged = sim.envelope(payload, sim.untrusted, key_id=hashlib.sha256(raw_public(sim.key)).digest())
    sim.refused(forged, BundleSignatureError)


@pytest.mark.parametrize("signature", [b"\x00" * 63, b"\x00" * 65, b"\x00" * 64, b"\xff" * 64,
                                       "A" * 64, 12345, [1, 2], b"=" * 88])
def test_A4_malformed_signatures(sim, signature):
    payload = sim.pack(sim.payload())
    sim.refused(sim.envelope(payload, signature=signature), BundleSignatureError)


def test_A4_signature_with_s_not_reduced_is_refused(sim):
    # S + L (a malleated, non-canonical signature) must not verify.
    L = 2**252 + 27742317777372353535851937790883648493
    payload = sim.pack(sim.payload())
    good = sim.key.sign(DOMAIN_TAG + payload)
    s = int.from_bytes(good[32:], "little") + L
    if s < 2**256:
        malleated = good[:32] + s.to_bytes(32, "little")
        sim.refused(sim.envelope(payload, signature=malleated), BundleSignatureError)


def test_A5_key_carried_in_the_bundle_is_never_used(sim):
    attacker = key_from_label(b"attacker")
    payload = sim.payload()
    payload["public_key"] = raw_public(attacker)
    # Signed by the attacker with its own key id and its public key alongside: unknown key.
    sim.refused(sim.sign_obj(payload, attacker), BundleSignatureError)
    sim.refused(sim.envelope(sim.pack(sim.payload()), attacker, extra=(raw_public(attacker),)),
                BundleFormatError)
    # Even a trusted signer cannot add fields: the payload schema is closed.
    sim.refused(sim.sign_obj(payload), BundleFormatError)


def test_A6_identity_key_cannot_be_provisioned_so_a_trivial_signature_never_verifies(sim):
    from privmap.device.errors import KeyringError
    identity = b"\x01" + b"\x00" * 31
    with pytest.raises(KeyringError):
        Keyring([identity])
    # The forged bundle (identity key id, R = identity, S = 0) is refused by any real keyring.
    payload = sim.pack(sim.payload())
    trivial = identity + b"\x00" * 32
    forged = sim.envelope(payload, key_id=hashlib.sha256(identity).digest(), signature=trivial)
    sim.refused(forged, BundleSignatureError)


def test_A7_key_id_of_x_with_signature_of_y(sim):
    payload = sim.pack(sim.payload())
    x_id = hashlib.sha256(raw_public(sim.key)).digest()
    sim.refused(sim.envelope(payload, sim.key2, key_id=x_id), BundleSignatureError)


@pytest.mark.parametrize("alg", ["ed448", "Ed25519", "ED25519", "none", "", 1, None, b"ed25519"])
def test_A8_unsupported_algorithm_is_refused_before_crypto(sim, alg, monkeypatch):

    def no_crypto(*args, **kwargs):
        raise AssertionError("signature verification attempted")

    monkeypatch.setattr(Keyring, "verify", no_crypto)
    with pytest.raises(BundleSignatureError):
        sim.load(sim.envelope(sim.pack(sim.payload()), alg=alg))


def test_A9_other_artifact_types_are_refused(sim):
    keyring_update = {"type": "privmap/keyring", "version": 2, "keys": [raw_public(sim.key2).hex()]}
    # Signed with the bundle domain tag: the payload type is wrong.
    sim.refused(sim.sign_obj(keyring_update), WrongTypeError)
    sim.refused(sim.sign_obj(sim.payload(type="privmap/bundle2")), WrongTypeError)
    # Signed under another domain tag (as another artifact type would be): the signature fails.
    sim.refused(sim.sign_obj(sim.payload(), tag=b"privmap-keyring-v1\x00"), BundleSignatureError)
    sim.refused(sim.sign_obj(sim.payload(), tag=b""), BundleSignatureError)


def test_A10_envelope_outside_the_signature_is_closed(sim):
    payload = sim.pack(sim.payload())
    sim.refused(sim.envelope(payload, extra=("untrusted comment: hi",)), BundleFormatError)
    sim.refused(sim.envelope(payload, fmt=2), BundleFormatError)
    sim.refused(sim.envelope(payload, fmt=True), BundleFormatError)
    sim.refused(sim.pack({"format": 1, "payload": payload}), BundleFormatError)


def test_A11_file_is_read_once_and_the_verified_bytes_are_parsed(sim, tmp_path, monkeypatch):
    import privmap.device.load as loader
    from privmap.device import read_bundle_file

    v5 = sim.bundle()
    v6 = sim.bundle(version=6)
    path = tmp_path / "bundle.bin"
    path.write_bytes(v5)
    calls = {"read": 0}
    real_read = loader.read_regular

    def swapping_read(p, cap, **kwargs):
        calls["read"] += 1
        data = real_read(p, cap, **kwargs)
        path.write_bytes(v6)  # the attacker swaps the file right after the read
        return data

    monkeypatch.setattr(loader, "read_regular", swapping_read)
    bundle = read_bundle_file(path, sim.keyring, now=NOW)
    assert calls == {"read": 1}
    assert bundle.version == 5
    assert bundle.data == v5 and bundle.sha256 == hashlib.sha256(v5).hexdigest()


def test_A11_load_bundle_copies_mutable_input(sim):
    data = bytearray(sim.bundle())
    bundle = sim.load(data)
    data[-1] ^= 1
    assert bundle.data != bytes(data) and bundle.version == 5


# -- D: versions and expiry --------------------------------------------------------------------

@pytest.mark.parametrize("version", ["5", 5.0, True, False, -1, 0, 2**63, 2**64 - 1, None, [5]])
def test_D5_bad_version_types_and_ranges(sim, version):
    sim.refused(sim.sign_obj(sim.payload(version=version)), BundleFormatError)


def test_D5_largest_version_is_accepted(sim):
    assert sim.load(sim.bundle(version=2**63 - 1)).version == 2**63 - 1


@pytest.mark.parametrize("field,value", [
    ("issued_at", 1.5), ("issued_at", True), ("issued_at", -1), ("expires", float("inf")),
    ("expires", "tomorrow"), ("expires", NOW - 3600), ("schema_version", 1), ("schema_version", 3), ("schema_version", True),
])
def test_header_field_types(sim, field, value):
    sim.refused(sim.sign_obj(sim.payload(**{field: value})), BundleFormatError)


def test_D6_expiry_against_the_injected_clock(sim):
    data = sim.bundle(expires=NOW)
    sim.refused(data, ExpiredBundleError)  # expires <= now
    assert sim.load(data, now=NOW - 1).version == 5
    sim.refused(sim.bundle(expires=NOW - 1), ExpiredBundleError)
    with pytest.raises(TypeError):
        sim.load(sim.bundle(), now="now")


def test_rollback_is_checked_on_a_verified_payload_only(sim):
    # An unsigned bundle with a low version is a signature error, not a rollback signal.
    sim.refused(sim.sign_obj(sim.payload(version=1), sim.untrusted), BundleSignatureError, min_version=5)


# -- H: table validation -----------------------------------------------------------------------

def _table(sim, **table):
    payload = sim.payload()
    payload["table"].update(table)
    return sim.sign_obj(payload)


@pytest.mark.parametrize("weight", [
    [[12, 4], [5, 5, 6], [15]],        # H1 row sum below 2^B
    [[12, 4], [5, 5, 7], [16]],        # H1 row sum above 2^B
    [[20, -4], [5, 5, 6], [16]],       # H2 negative entry
    [[16, 0], [5, 5, 6], [16]],        # zero weight (listed outputs must be positive)
    [[17, -1], [5, 5, 6], [16]],       # H2 entry greater than 2^B
    [[12.0, 4], [5, 5, 6], [16]],      # H2 not an int
    [[True, 15], [5, 5, 6], [16]],     # H2 bool
    [[12, "4"], [5, 5, 6], [16]],
    [[12, 4], [5, 5, 6]],              # H3 too few rows
    [[12, 4], [5, 5, 6], [16], [16]],  # H3 too many rows
    [[12, 4], [5, 11], [16]],          # index/weight length mismatch
    [[12, 4], [5, 5, 6], []],
    "not a list",
])
def test_H1_H2_H3_bad_weights(sim, weight):
    sim.refused(_table(sim, weight=weight), TableError)


@pytest.mark.parametrize("index", [
    [[0, 4], [1, 2, 3], [3]],    # output index out of range (K_out = 4)
    [[-1, 1], [1, 2, 3], [3]],
    [[1, 0], [1, 2, 3], [3]],    # not increasing
    [[1, 1], [1, 2, 3], [3]],    # duplicate
    [[0, 1.0], [1, 2, 3], [3]],
    [[0, 1], [1, 2, 3]],         # H3 shape
    [[0, 1], [1, 2, 3], 3],
])
def test_H3_bad_index(sim, index):
    sim.refused(_table(sim, index=index), TableError)


@pytest.mark.parametrize("bits", [0, 33, -1, True, 4.0, None])
def test_bad_bits(sim, bits):
    sim.refused(_table(sim, bits=bits), TableError)


def test_bits_above_a_tightened_limit(sim):
    sim.refused(sim.bundle(), TableError, limits=Limits(max_bits=3))


def test_32_bit_table_loads(sim):
    payload = sim.payload()
    payload["table"] = {"bits": 32, "index": [[0, 1], [1, 2, 3], [3]],
                        "weight": [[3 * 2**30, 2**30], [2**31, 2**30, 2**30], [2**32]]}
    with_leakage(payload)
    assert sim.load(sim.sign_obj(payload)).bits == 32


def test_table_with_missing_or_unknown_key(sim):
    payload = sim.payload()
    del payload["table"]["bits"]
    sim.refused(sim.sign_obj(payload), BundleFormatError)
    payload = sim.payload()
    payload["table"]["float_weights"] = [[0.75, 0.25]]
    sim.refused(sim.sign_obj(payload), BundleFormatError)


# -- declared leakage --------------------------------------------------------------------------

def test_declared_leakage_below_the_table_is_refused(sim):
    payload = sim.payload()
    true_leakage = payload["metrics"]["leakage_bits"]
    assert true_leakage > 0.01
    payload["metrics"]["leakage_bits"] = true_leakage * (1 - 1e-6)
    sim.refused(sim.sign_obj(payload), MetricsError)
    payload["metrics"]["leakage_bits"] = 0.0
    sim.refused(sim.sign_obj(payload), MetricsError)
    payload["metrics"]["leakage_bits"] = true_leakage * (1 - 1e-12)  # round-off slack
    assert sim.load(sim.sign_obj(payload)).version == 5
    payload["metrics"]["leakage_bits"] = true_leakage + 0.5  # over-declaring is allowed
    assert sim.load(sim.sign_obj(payload)).version == 5


def test_recomputed_leakage_matches_a_hand_computation(sim):
    import math

    from privmap.device.kinds import recompute_leakage_bits
    payload = sim.payload()
    payload["table"] = {"bits": 1, "index": [[0], [1], [1]], "weight": [[2], [2], [2]]}
    payload["prior"] = [[0.25, 0.25, 0.0], [0.0, 0.25, 0.25]]
    with_leakage(payload)
    bundle = sim.load(sim.sign_obj(payload))
    # A -> C^: p(a, c^) = [[.25, .25], [0, .5]]; I = sum p log p/(p_a p_c^)
    expected = 0.25 * math.log2(0.25 / (0.5 * 0.25)) + 0.25 * math.log2(0.25 / (0.5 * 0.75)) \
        + 0.5 * math.log2(0.5 / (0.5 * 0.75))
    assert recompute_leakage_bits(bundle) == pytest.approx(expected, rel=1e-12)


# -- keyring use -------------------------------------------------------------------------------

def test_only_the_keyring_passed_is_used(sim):
    data = sim.bundle()
    only_key2 = Keyring([raw_public(sim.key2)])
    with pytest.raises(BundleSignatureError):
        load_bundle(data, only_key2, now=NOW)
    assert load_bundle(sim.sign_obj(sim.payload(), sim.key2), only_key2, now=NOW).version == 5
    with pytest.raises(TypeError):
        load_bundle(data, [raw_public(sim.key)], now=NOW)


def test_load_arguments_are_checked(sim):
    data = sim.bundle()
    with pytest.raises(TypeError):
        sim.load(data.decode("latin-1"))
    with pytest.raises(ValueError):
        sim.load(data, min_version=0)
    with pytest.raises(TypeError):
        sim.load(data, limits={"max_bundle_bytes": 10})
    with pytest.raises(ValueError):
        Limits(max_bundle_bytes=2**40)
    with pytest.raises(ValueError):
        Limits(max_bits=True)
