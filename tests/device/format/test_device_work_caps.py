"""Work caps checked before work (THREATS F1, F2, H5) and the small typed-error gaps."""
from __future__ import annotations

import fractions
import os
import signal

import pytest
from harness import raw_public

from privmap.device import Keyring, Limits
from privmap.device.errors import BundleFormatError, InputError, KeyringError, PolicyError, WorkLimitError
from privmap.device.format import prescan


def count_items(obj) -> int:
    """Reference count: every array item and map entry, recursively, on the decoded object."""
    if isinstance(obj, list):
        return len(obj) + sum(count_items(v) for v in obj)
    if isinstance(obj, dict):
        return len(obj) + sum(count_items(v) for v in obj.values())
    return 0


def test_prescan_counts_exactly_what_the_decoder_builds(sim):
    payload = sim.payload()
    data = sim.pack(payload)
    items = count_items(payload)
    nonzeros = sum(len(r) for r in payload["table"]["index"])
    work = len(payload["private"]["classes"]) * nonzeros
    prescan(data, Limits(max_items=items, max_nonzeros=nonzeros, max_leakage_work=work))
    for too_tight in (dict(max_items=items - 1), dict(max_nonzeros=nonzeros - 1),
                      dict(max_leakage_work=work - 1)):
        with pytest.raises(WorkLimitError):
            prescan(data, Limits(**too_tight))


@pytest.mark.parametrize("limit", ["max_items", "max_nonzeros", "max_leakage_work"])
def test_a_signed_bundle_over_a_work_cap_is_refused_before_decoding(sim, limit):
    sim.refused(sim.bundle(), WorkLimitError, limits=Limits(**{limit: 5}))  # nnz is 6


def test_prescan_refuses_headers_claiming_more_items_than_bytes(sim):
    for data in (b"\xdc\xff\xff", b"\x81\xa1a\xdd\x00\x00\x10\x00\x01"):
        with pytest.raises(BundleFormatError):
            prescan(data, Limits())


def test_declared_leakage_above_the_device_policy_is_refused(sim):  # H5
    bundle = sim.load(sim.bundle())
    declared = bundle.metrics["leakage_bits"]
    sim.refused(sim.bundle(), PolicyError, limits=Limits(max_leakage_bits=declared / 2))
    assert sim.load(sim.bundle(), limits=Limits(max_leakage_bits=declared)).version == 5


def test_max_map_entries_below_32_is_enforced_on_metrics_and_provenance(sim):
    sim.refused(sim.bundle(), BundleFormatError, limits=Limits(max_map_entries=5))
    assert sim.load(sim.bundle(), limits=Limits(max_map_entries=9)).version == 5


def test_overflowing_fraction_cell_is_an_input_error(sim):
    bundle = sim.load(sim.bundle())
    with pytest.raises(InputError):
        bundle.sanitize([3, fractions.Fraction(10 ** 400), 1.0])


def test_non_ascii_str_pem_is_a_keyring_error():
    with pytest.raises(KeyringError, match="ASCII"):
        Keyring.from_pem("-----BEGIN PUBLIC KEY-----\nü\n-----END PUBLIC KEY-----\n")


def _pem(key) -> bytes:
    from cryptography.hazmat.primitives import serialization
    return key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


def test_pem_with_two_blocks_is_refused_not_half_provisioned(sim):
    with pytest.raises(KeyringError, match="exactly one"):
        Keyring.from_pem(_pem(sim.key) + _pem(sim.key2))
    assert len(Keyring.from_pem(_pem(sim.key), _pem(sim.key2))) == 2
    assert Keyring.from_pem(_pem(sim.key)).key_ids == Keyring([raw_public(sim.key)]).key_ids


def test_key_file_that_is_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "key.pem"
    os.mkfifo(fifo)
    signal.alarm(10)  # a blocking open would hang the test: fail it instead
    try:
        with pytest.raises(KeyringError, match="regular file"):
            Keyring.from_pem_files(fifo)
    finally:
        signal.alarm(0)
