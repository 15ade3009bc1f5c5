"""Known-answer vectors (THREATS.md A12): stored bundles load or fail exactly as recorded, and
regenerating them reproduces the stored files byte for byte."""
from __future__ import annotations

import hashlib
import importlib.util
import json
import pathlib

import pytest

import privmap.device.errors as errors
from privmap.device import Keyring, PrivmapDeviceError, read_bundle_file
from privmap.device.errors import InputError
from privmap.device.randomness import InsecureTestBits

VECTORS = pathlib.Path(__file__).resolve().parent / "vectors"
MANIFEST = json.loads((VECTORS / "manifest.json").read_text())


class _Enumerate:
    def __init__(self):
        self.next = 0

    def randbits(self, k):
        value = self.next % (1 << k)
        self.next += 1
        return value


def _keyring():
    return Keyring.from_pem_files(VECTORS / MANIFEST["trusted_public_key"])


@pytest.mark.parametrize("name", sorted(MANIFEST["vectors"]))
def test_vector_outcome_is_exactly_as_recorded(name):
    entry = MANIFEST["vectors"][name]
    path = VECTORS / entry["file"]
    assert hashlib.sha256(path.read_bytes()).hexdigest() == entry["sha256"]
    try:
        bundle = read_bundle_file(path, _keyring(), now=MANIFEST["now"], min_version=entry["min_version"])
    except PrivmapDeviceError as exc:
        assert type(exc).__name__ == entry["expect"], exc
        assert type(exc) is getattr(errors, entry["expect"])
        return
    assert entry["expect"] == "ok"
    assert bundle.sha256 == entry["sha256"]
    for c, runs in enumerate(entry["enumerated_release_runs"]):
        expected = [j for j, count in runs for _ in range(count)]
        rng = InsecureTestBits(_Enumerate(), test_mode=True)
        row = bundle.input_row(c)
        assert [bundle.release_index(row, rng=rng) for _ in range(1 << bundle.bits)] == expected


def test_regenerating_reproduces_every_file_byte_for_byte():
    pytest.importorskip("numpy")  # the script uses the offline writer
    spec = importlib.util.spec_from_file_location("privmap_regenerate_vectors", VECTORS / "regenerate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    files, manifest = module.build_vectors()
    assert manifest == MANIFEST["vectors"]
    for name, data in files.items():
        assert (VECTORS / name).read_bytes() == data, name
    assert {p.name for p in VECTORS.iterdir() if p.suffix in (".bin", ".pem", ".json")} == set(files)


@pytest.mark.parametrize("row, expected", [
    # inputs [0, 0, 1.5], [1, 3, 4.0], [3, 1, 2.25], [2, 2, 10.0]; drama masked, news imputed to 1
    (["", "NA", "2"], 2),      # sums over news, hours: 1.25 | 8.0 | 0.0625 | 65.0
    ([None, "", "4"], 2),      # 7.25 | 4.0 | 3.0625 | 37.0
    (["", "3", "4"], 1),       # 15.25 | 0.0 | 7.0625 | 37.0
])
def test_good_vector_looks_up_missing_cells_by_the_documented_rules(row, expected):
    entry = MANIFEST["vectors"]["good_quantized"]
    bundle = read_bundle_file(VECTORS / entry["file"], _keyring(), now=MANIFEST["now"])
    assert bundle.lookup(row) == expected
    with pytest.raises(InputError):  # hours: missing answers refused
        bundle.lookup(row[:2] + [""])
