"""k-of-n signatures (THREATS B) and keyring rotation (THREATS C), after python-tuf's
root-rotation tests."""
from __future__ import annotations

import msgpack
import pytest
from harness import NOW, key_from_label, raw_public

from privmap.device import DeviceState, Keyring, KeyringChain, load_bundle
from privmap.device.constants import LATEST_ISSUED_AT, MAX_ROTATIONS
from privmap.device.errors import (
    BundleSignatureError,
    FutureBundleError,
    KeyringError,
    KeyringExpiredError,
    KeyringMismatchError,
    KeyringVersionError,
    RollbackError,
)
from privmap.offline.bundle import cosign_bundle, keyring_document
from privmap.offline.bundle._multisig import sign_multi

KEYS = {name: key_from_label(name.encode()) for name in ("a", "b", "c", "d", "e")}
LATER = NOW + 365 * 86400


def doc(names, threshold, version, signers, expires=LATER) -> bytes:
    return keyring_document([KEYS[n].public_key() for n in names], threshold=threshold, version=version,
                            expires=expires, signing_keys=[KEYS[n] for n in signers])


def ring(names, threshold) -> Keyring:
    return Keyring([raw_public(KEYS[n]) for n in names], threshold=threshold)


def multi(sim, signers, **overrides) -> bytes:
    return sign_multi(sim.pack(sim.payload(**overrides)), [KEYS[n] for n in signers])


# -- B: thresholds ------------------------------------------------------------------------------

def test_B1_one_signature_repeated_counts_once(sim):
    envelope = msgpack.unpackb(multi(sim, "a"))
    envelope[2] = envelope[2] * 3
    with pytest.raises(BundleSignatureError, match="1 distinct"):
        load_bundle(msgpack.packb(envelope), ring("abc", 2), now=NOW)


def test_B2_B3_duplicate_keys_count_once_and_bad_thresholds_are_refused():
    assert len(Keyring([raw_public(KEYS["a"])] * 2)) == 1
    for threshold in (0, 4, True, 1.0):
        with pytest.raises(KeyringError):
            ring("abc", threshold)
    with pytest.raises(KeyringError):
        Keyring([raw_public(KEYS["a"])] * 2, threshold=2)


def test_B4_B5_threshold_met_with_an_invalid_and_an_unknown_signature_is_accepted(sim):
    envelope = msgpack.unpackb(multi(sim, "abce"))  # e is not in the keyring (B5)
    envelope[2][0][1] = bytes(64)                   # one signature is garbage (B4)
    bundle = load_bundle(msgpack.packb(envelope), ring("abcd", 2), now=NOW)
    assert bundle.version == 5


def test_threshold_not_met_is_refused_and_met_is_accepted(sim):
    with pytest.raises(BundleSignatureError, match="needs 2"):
        load_bundle(multi(sim, "a"), ring("abc", 2), now=NOW)
    assert load_bundle(multi(sim, "ac"), ring("abc", 2), now=NOW).version == 5


def test_format_1_single_signature_meets_only_a_threshold_of_one(sim):
    assert load_bundle(sim.bundle(), sim.keyring, now=NOW).version == 5
    single = Keyring([raw_public(sim.key), raw_public(sim.key2)], threshold=2)
    with pytest.raises(BundleSignatureError):
        load_bundle(sim.bundle(), single, now=NOW)


def test_cosigning_adds_signatures_one_holder_at_a_time(sim):
    first = cosign_bundle(sim.bundle(), [KEYS["a"]])
    both = cosign_bundle(first, [KEYS["b"]])
    with pytest.raises(BundleSignatureError):
        load_bundle(first, ring("abc", 2), now=NOW)
    assert load_bundle(both, ring("abc", 2), now=NOW).version == 5


def test_signatures_of_one_format_never_verify_as_the_other(sim):
    v1 = msgpack.unpackb(sim.bundle())            # [1, alg, key_id, sig, payload], tag v1
    as_v2 = msgpack.packb([2, v1[1], [[v1[2], v1[3]]], v1[4]])
    with pytest.raises(BundleSignatureError):
        load_bundle(as_v2, sim.keyring, now=NOW)


# -- C: rotation --------------------------------------------------------------------------------

def test_root_must_be_signed_by_a_threshold_of_its_own_keys():
    assert KeyringChain(doc("abc", 2, 1, "ab")).version == 1
    with pytest.raises(KeyringError):
        KeyringChain(doc("abc", 2, 1, "a"))
    with pytest.raises(KeyringError):
        KeyringChain(doc("abc", 1, 1, "d"))


def test_C1_rotation_needs_old_and_new_keys():
    for signers in ("a", "d"):
        chain = KeyringChain(doc("a", 1, 1, "a"))
        with pytest.raises(KeyringError):
            chain.rotate(doc("d", 1, 2, signers))
        assert chain.version == 1
    chain.rotate(doc("d", 1, 2, "ad"))
    assert chain.version == 2 and chain.keyring.key_ids == ring("d", 1).key_ids


def test_C2_threshold_changes_need_both_thresholds():
    chain = KeyringChain(doc("abc", 1, 1, "a"))
    with pytest.raises(KeyringError, match="new"):
        chain.rotate(doc("abc", 2, 2, "a"))        # raised to 2-of-3, one new signature
    chain.rotate(doc("abc", 2, 2, "ab"))
    with pytest.raises(KeyringError, match="current"):
        chain.rotate(doc("abc", 1, 3, "a"))        # lowered, but the old 2 are not met
    chain.rotate(doc("abc", 1, 3, "ab"))
    assert chain.version == 3 and chain.keyring.threshold == 1


def test_C3_versions_cannot_be_skipped():
    chain = KeyringChain(doc("a", 1, 1, "a"))
    v2, v3 = doc("ab", 1, 2, "ab"), doc("b", 1, 3, "ab")
    with pytest.raises(KeyringVersionError):
        chain.rotate(v3)
    chain.rotate(v2)
    chain.rotate(v3)
    assert chain.version == 3


def test_C4_same_version_with_other_content_is_refused():
    chain = KeyringChain(doc("a", 1, 1, "a"))
    with pytest.raises(KeyringVersionError):
        chain.rotate(doc("ab", 1, 1, "ab"))


def test_C5_a_long_chain_stops_at_the_cap():
    chain = KeyringChain(doc("a", 1, 1, "a"))
    documents = [doc("a", 1, v, "a") for v in range(2, MAX_ROTATIONS + 5)]
    assert chain.rotate_chain(documents) == MAX_ROTATIONS
    assert chain.version == 1 + MAX_ROTATIONS


def test_C6_expired_intermediate_is_walked_expired_final_refuses_bundles(sim):
    chain = KeyringChain(doc("a", 1, 1, "a"))
    chain.rotate(doc("a", 1, 2, "a", expires=NOW - 10))   # expired intermediate
    with pytest.raises(KeyringExpiredError):
        chain.current(NOW)
    chain.rotate(doc("ab", 1, 3, "ab"))
    assert chain.current(NOW).key_ids == ring("ab", 1).key_ids


def test_C7_bundles_signed_by_a_revoked_key_are_refused(sim):
    chain = KeyringChain(doc("ab", 1, 1, "a"))
    bundle = multi(sim, "b")
    assert load_bundle(bundle, chain.current(NOW), now=NOW).version == 5
    chain.rotate(doc("a", 1, 2, "a"))                      # b revoked
    with pytest.raises(BundleSignatureError):
        load_bundle(bundle, chain.current(NOW), now=NOW)


def test_C8_fast_forward_recovery_after_a_compromised_key_is_rotated_out(sim, tmp_path):
    chain = KeyringChain(doc("ab", 1, 1, "a"))
    state = DeviceState(tmp_path / "s", chain, clock=lambda: NOW)
    state.install(multi(sim, "b", version=2 ** 62))        # the compromised key b jumps ahead
    with pytest.raises(RollbackError):                     # without rotation: stuck
        state.install(multi(sim, "a", version=1))
    chain.rotate(doc("a", 1, 2, "a"))                      # the operator revokes b
    with pytest.raises(KeyringMismatchError):              # bare new keys are not a signed rotation
        DeviceState(tmp_path / "s", chain.current(NOW), clock=lambda: NOW)
    state = DeviceState(tmp_path / "s", chain, clock=lambda: NOW)   # the signed v2 document is
    assert state.keyring_version == 2                                # applied as a rotation
    assert state.install(multi(sim, "a", version=1)).status == "installed"
    assert state.active().version == 1
    state.install(multi(sim, "a", version=3))
    with pytest.raises(RollbackError):                     # the new epoch has its own floor
        state.install(multi(sim, "a", version=2))


def test_rotation_keeps_the_floors_the_new_keyring_still_vouches_for(sim, tmp_path):
    state = DeviceState(tmp_path / "s", KeyringChain(doc("ab", 1, 1, "a")), clock=lambda: NOW)
    state.install(multi(sim, "a", version=7, issued_at=NOW - 50))
    state.install(multi(sim, "b", version=8, issued_at=NOW - 10))
    assert state.rotate_keyring([doc("a", 1, 2, "a")]) == 1     # b revoked: v8 no longer counts
    assert (state.installed_version, state.time_floor) == (7, NOW - 50)
    with pytest.raises(RollbackError):                          # a's own v7 still holds the floor
        state.install(multi(sim, "a", version=6))
    assert state.active().version == 7                          # v8 (b) fails; the previous copy is used
    assert state.status()["state"] == "fallback"


def test_keyring_and_its_rotations_persist_in_the_state(sim, tmp_path):
    root = doc("a", 1, 1, "a")
    state = DeviceState(tmp_path / "s", KeyringChain(root), clock=lambda: NOW)
    v2, v3 = doc("ab", 1, 2, "a"), doc("b", 1, 3, "ab")
    assert state.rotate_keyring([v2, v3]) == 2
    reopened = DeviceState(tmp_path / "s", clock=lambda: NOW)          # no keyring given: the state's
    assert reopened.keyring_version == 3 and reopened.keyring.key_ids == ring("b", 1).key_ids
    again = DeviceState(tmp_path / "s", KeyringChain(root), clock=lambda: NOW)  # firmware passes its root
    assert again.keyring_version == 3
    assert again.install(multi(sim, "b")).status == "installed"
    with pytest.raises(BundleSignatureError):                          # a is revoked
        again.install(multi(sim, "a", version=6))
    with pytest.raises(KeyringMismatchError):
        DeviceState(tmp_path / "s", ring("a", 1), clock=lambda: NOW)
    with pytest.raises(KeyringVersionError):                          # all or nothing, state unchanged
        again.rotate_keyring([doc("b", 1, 4, "b"), doc("b", 1, 6, "b")])
    assert DeviceState(tmp_path / "s", clock=lambda: NOW).keyring_version == 3


def test_bare_keys_rotate_only_through_a_signed_document(sim, tmp_path):
    state = DeviceState(tmp_path / "s", ring("a", 1), clock=lambda: NOW)
    with pytest.raises(KeyringMismatchError):
        DeviceState(tmp_path / "s", ring("d", 1), clock=lambda: NOW)
    with pytest.raises(KeyringError):                                  # not signed by a
        state.rotate_keyring([doc("d", 1, 1, "d")])
    state.rotate_keyring([doc("d", 1, 1, "ad")])
    assert DeviceState(tmp_path / "s", ring("d", 1), clock=lambda: NOW).keyring_version == 1


def test_C9_rotation_undoes_a_far_future_time_floor_set_while_the_clock_was_unset(sim, tmp_path):
    chain = KeyringChain(doc("ab", 1, 1, "a"))
    clock = {"now": 0}                                            # no clock battery: reads 0
    state = DeviceState(tmp_path / "s", chain, clock=lambda: clock["now"])
    with pytest.raises(FutureBundleError):                        # 2**62: refused whatever the clock says
        state.install(multi(sim, "b", version=6, issued_at=2 ** 62, expires=2 ** 62 + 1))
    far = LATEST_ISSUED_AT                                        # the compromised key b goes to 2100
    state.install(multi(sim, "b", version=6, issued_at=far, expires=far + 86400))
    assert state.time_floor == far
    clock["now"] = NOW                                            # the clock is fixed
    with pytest.raises(KeyringExpiredError):                      # without rotation: the floor says 2100,
        state.install(multi(sim, "a", version=7))                 # past the keyring's and every bundle's expiry
    state.rotate_keyring([doc("a", 1, 2, "a")])                   # b revoked
    assert state.time_floor == 0 and state.installed_version == 0
    assert state.install(multi(sim, "a", version=1)).status == "installed"
    assert state.time_floor == NOW - 3600


def test_rotation_caps_the_time_floor_below_the_new_keyrings_own_expiry(sim, tmp_path):
    state = DeviceState(tmp_path / "s", KeyringChain(doc("a", 1, 1, "a")), clock=lambda: 0)
    far = LATEST_ISSUED_AT - 10
    state.install(multi(sim, "a", version=6, issued_at=far, expires=far + 86400))  # a itself, clock unset
    state.rotate_keyring([doc("a", 1, 2, "a", expires=NOW + 86400)])
    assert state.time_floor < NOW + 86400    # the new document is signed valid until then: not expired at once
    assert state.install(multi(sim, "a", version=7)).status == "installed"


@pytest.mark.parametrize("rotation_clock", [0, NOW], ids=["clock-unset", "clock-set"])
@pytest.mark.parametrize("new_keys", ["ab", "a"], ids=["no-revocation", "b-revoked"])
def test_a_rotation_keeping_the_key_of_a_mis_dated_bundle_lets_a_bundle_issued_now_install(sim, tmp_path, new_keys,
                                                                                             rotation_clock):
    """Key a, kept by the rotation, signed a bundle dated 2100 while the clock read 0: the floor
    went there. The rotation resets that date (beyond the new document's window), keeps a's
    version, and a bundle issued now installs at once, and again after a second rotation."""
    clock = {"now": 0}
    state = DeviceState(tmp_path / "s", KeyringChain(doc("ab", 1, 1, "a")), clock=lambda: clock["now"])
    far = LATEST_ISSUED_AT - 10
    state.install(multi(sim, "a", version=6, issued_at=far, expires=far + 86400))
    clock["now"] = NOW
    with pytest.raises(KeyringExpiredError):                       # before the rotation: frozen
        state.install(multi(sim, "a", version=7))
    clock["now"] = rotation_clock
    state.rotate_keyring([doc(new_keys, 1, 2, "a")])
    assert state.time_floor < LATER                                # the new document is not expired
    clock["now"] = NOW
    assert state.install(multi(sim, "a", version=7)).status == "installed"
    assert state.active().version == 7 and state.status()["state"] == "ok"
    with pytest.raises(RollbackError):                             # a's version 6 still holds the floor
        state.install(multi(sim, "a", version=6, expires=NOW + 2 * 86400))
    state.rotate_keyring([doc(new_keys, 1, 3, "a")])               # a second rotation works too
    assert state.install(multi(sim, "a", version=8)).status == "installed"
    reopened = DeviceState(tmp_path / "s", clock=lambda: NOW)
    assert reopened.active().version == 8 and reopened.keyring_version == 3


def test_a_rotation_keeps_the_dates_of_kept_keys_within_its_window(sim, tmp_path):
    state = DeviceState(tmp_path / "s", KeyringChain(doc("ab", 1, 1, "a")), clock=lambda: NOW)
    state.install(multi(sim, "a", version=6, issued_at=NOW - 50))
    state.rotate_keyring([doc("ab", 1, 2, "a")])
    assert (state.installed_version, state.time_floor) == (6, NOW - 50)


def test_keyring_documents_and_bundles_are_not_interchangeable(sim):
    with pytest.raises(BundleSignatureError):
        load_bundle(doc("a", 1, 1, "a"), ring("a", 1), now=NOW)
    with pytest.raises(KeyringError):
        KeyringChain(multi(sim, "a"))
