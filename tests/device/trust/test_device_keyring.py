"""Provisioning trusted keys (THREATS.md A6, B2)."""
from __future__ import annotations

import hashlib

import msgpack
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from harness import NOW, key_from_label, raw_public

from privmap.device import Keyring, load_bundle
from privmap.device.constants import MULTISIG_DOMAIN_TAG
from privmap.device.errors import BundleSignatureError, KeyringError
from privmap.device.trust import key_id_of
from privmap.device.trust._edwards import add_points, decode_point, is_identity, multiply

# The 8 small-order points of edwards25519, canonical encodings (the torsion subgroup E[8]).
SMALL_ORDER_CANONICAL = [
    "0100000000000000000000000000000000000000000000000000000000000000",  # identity, order 1
    "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",  # (0, -1), order 2
    "0000000000000000000000000000000000000000000000000000000000000000",  # order 4
    "0000000000000000000000000000000000000000000000000000000000000080",  # order 4
    "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",  # order 8
    "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85",  # order 8
    "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",  # order 8
    "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa",  # order 8
]
# Non-canonical encodings of small-order points: y >= p (y = p ~ 0, y = p + 1 ~ 1), or x = 0 with
# the sign bit set.
SMALL_ORDER_NON_CANONICAL = [
    "0100000000000000000000000000000000000000000000000000000000000080",  # identity, sign bit
    "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",  # (0, -1), sign bit
    "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",  # y = p
    "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",  # y = p, sign bit
    "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",  # y = p + 1
    "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",  # y = p + 1, sign bit
]


def _encode(point) -> bytes:
    p = 2**255 - 19
    x, y, z, _ = point
    zi = pow(z, p - 2, p)
    x, y = x * zi % p, y * zi % p
    return (y | ((x & 1) << 255)).to_bytes(32, "little")


def test_the_eight_canonical_small_order_points_are_exactly_the_torsion_subgroup():
    # Independent check of the list: each decodes and [8]P is the identity; they are distinct.
    points = []
    for encoding in SMALL_ORDER_CANONICAL:
        point = decode_point(bytes.fromhex(encoding))
        assert not isinstance(point, str)
        assert is_identity(multiply(8, point))
        assert _encode(point) == bytes.fromhex(encoding)
        points.append(point)
    assert len(set(SMALL_ORDER_CANONICAL)) == 8


@pytest.mark.parametrize("encoding", SMALL_ORDER_CANONICAL + SMALL_ORDER_NON_CANONICAL)
def test_small_order_keys_are_refused(encoding):
    raw = bytes.fromhex(encoding)
    with pytest.raises(KeyringError):
        Keyring([raw])
    good = raw_public(key_from_label(b"trusted-1"))
    with pytest.raises(KeyringError):
        Keyring([good, raw])  # one bad key spoils the whole keyring


def test_mixed_order_key_is_refused():
    good = raw_public(key_from_label(b"trusted-1"))
    point = decode_point(good)
    torsion = decode_point(bytes.fromhex(SMALL_ORDER_CANONICAL[4]))
    mixed = _encode(add_points(point, torsion))
    assert mixed != good
    with pytest.raises(KeyringError, match="mixed-order"):
        Keyring([mixed])


@pytest.mark.parametrize("raw", [b"", b"\x01" * 31, b"\x01" * 33,
                                 bytes.fromhex("02" + "00" * 31)])  # y = 2 is not on the curve
def test_malformed_keys_are_refused(raw):
    with pytest.raises(KeyringError):
        Keyring([raw])


def test_non_canonical_y_of_a_real_key_is_refused():
    # y >= p encodings exist only for y < 19; all such points are either off-curve or small order,
    # so every y in p..p+18 must be refused.
    p = 2**255 - 19
    for y in range(p, 2**255):
        for sign in (0, 1):
            with pytest.raises(KeyringError):
                Keyring([(y | sign << 255).to_bytes(32, "little")])


def test_duplicates_are_counted_once_and_ids_are_sha256():
    key = key_from_label(b"trusted-1")
    raw = raw_public(key)
    keyring = Keyring([raw, key.public_key(), bytearray(raw)])
    assert len(keyring) == 1
    assert keyring.key_ids == {hashlib.sha256(raw).digest()} == {key_id_of(raw)}
    assert hashlib.sha256(raw).digest() in keyring


def test_empty_and_wrong_inputs():
    with pytest.raises(KeyringError):
        Keyring([])
    with pytest.raises(TypeError):
        Keyring(raw_public(key_from_label(b"trusted-1")))
    with pytest.raises(KeyringError):
        Keyring(["00" * 32])
    keyring = Keyring([raw_public(key_from_label(b"trusted-1"))])
    with pytest.raises(AttributeError):
        keyring._keys = {}


def test_pem_provisioning(tmp_path, sim):
    key = key_from_label(b"trusted-1")
    pem = key.public_key().public_bytes(serialization.Encoding.PEM,
                                        serialization.PublicFormat.SubjectPublicKeyInfo)
    path = tmp_path / "operator.pub.pem"
    path.write_bytes(pem)
    keyring = Keyring.from_pem_files(path, str(path))
    assert len(keyring) == 1
    assert Keyring.from_pem(pem.decode()).key_ids == keyring.key_ids
    assert load_bundle(sim.bundle(), keyring, now=NOW).version == 5

    private_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption())
    with pytest.raises(KeyringError, match="private"):
        Keyring.from_pem(private_pem)
    ec_pem = ec.generate_private_key(ec.SECP256R1()).public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    with pytest.raises(KeyringError, match="Ed25519"):
        Keyring.from_pem(ec_pem)
    with pytest.raises(KeyringError):
        Keyring.from_pem(b"-----BEGIN PUBLIC KEY-----\ngarbage\n-----END PUBLIC KEY-----\n")
    with pytest.raises(KeyringError):
        Keyring.from_pem_files(tmp_path / "missing.pem")
    big = tmp_path / "big.pem"
    big.write_bytes(b"A" * 70000)
    with pytest.raises(KeyringError):
        Keyring.from_pem_files(big)


# -- a format-1 signature carried into a format-2 envelope (privmap cosign of a format-1 bundle) --

def _carried(sim, extra_entries, marker=1) -> bytes:
    """Format-2 envelope holding sim.key's format-1 signature as [key_id, sig, marker] plus extras."""
    v1 = msgpack.unpackb(sim.bundle())  # [1, alg, key_id, sig over DOMAIN_TAG || payload, payload]
    entries = [[v1[2], v1[3], marker]] + [entry(v1[4]) for entry in extra_entries]
    return msgpack.packb([2, v1[1], entries, v1[4]], use_bin_type=True)


def _v2_entry(key):
    return lambda payload: [key_id_of(raw_public(key)), key.sign(MULTISIG_DOMAIN_TAG + payload)]


def test_a_carried_format_1_signature_counts_toward_the_threshold(sim):
    both = Keyring([raw_public(sim.key), raw_public(sim.key2)], threshold=2)
    data = _carried(sim, [_v2_entry(sim.key2)])
    assert load_bundle(data, both, now=NOW).version == 5
    assert load_bundle(data, Keyring([raw_public(sim.key)]), now=NOW).version == 5
    with pytest.raises(BundleSignatureError, match="1 distinct"):  # alone it is one signature
        load_bundle(_carried(sim, []), both, now=NOW)


def test_a_carried_signature_is_checked_under_the_format_1_tag_only(sim):
    v2_sig_marked_as_v1 = msgpack.unpackb(_carried(sim, [_v2_entry(sim.key2)]))
    v2_sig_marked_as_v1[2][1].append(1)  # key2 signed the format-2 tag: as a carried entry it fails
    with pytest.raises(BundleSignatureError, match="needs 2"):
        load_bundle(msgpack.packb(v2_sig_marked_as_v1), Keyring([raw_public(sim.key), raw_public(sim.key2)],
                                                               threshold=2), now=NOW)


@pytest.mark.parametrize("marker", [2, 0, True, "1", 1.0, None])
def test_a_third_entry_element_other_than_the_int_1_is_refused(sim, marker):
    with pytest.raises(BundleSignatureError, match="third element"):
        load_bundle(_carried(sim, [], marker=marker), sim.keyring, now=NOW)


def test_the_same_key_carried_and_signing_again_counts_once(sim):
    data = _carried(sim, [_v2_entry(sim.key)])
    with pytest.raises(BundleSignatureError, match="1 distinct"):
        load_bundle(data, Keyring([raw_public(sim.key), raw_public(sim.key2)], threshold=2), now=NOW)
