"""The example bundles in tables/ verify with tables/public.pem and rebuild from the bundled data.

What a rebuild promises (tables/README.md):

- within the *machine class* the bundles were built on -- the exact versions of constraints.txt
  and the OpenBLAS kernel recorded in tables/machine.json -- the rebuilt payload is byte-identical
  to the signed one (``test_..._byte_for_byte``; skipped, with the differences named, elsewhere);
- on any machine and with any versions pip picks, the decoded payloads agree field by field
  (``test_..._field_by_field``): every integer, string and array shape exactly (the integer
  table, the schema, the inputs and outputs, the header), and every float to the precision the
  device itself allows between a declared figure and its recomputation (relative
  ``LEAKAGE_RELATIVE_SLACK`` or absolute ``LEAKAGE_ABSOLUTE_SLACK``): payload floats are written
  to 12 significant digits, and figures that are differences of nearly equal numbers (solver
  gaps, the leakage change from compressing the table) move in their last digits with the BLAS
  kernel.
"""
import importlib.metadata
import importlib.util
import json
import math
import pathlib
import re

import msgpack
import pytest

from privmap.device import Keyring, read_bundle_file
from privmap.device.constants import LEAKAGE_ABSOLUTE_SLACK, LEAKAGE_RELATIVE_SLACK
from privmap.offline import Dataset, ExactOptions, QuantizedOptions
from privmap.offline.bundle import encode_payload
from privmap.offline.mechanisms import exact, quantized

ROOT = pathlib.Path(__file__).resolve().parent.parent
TABLES = ROOT / "tables"
_spec = importlib.util.spec_from_file_location("regenerate_tables", TABLES / "regenerate.py")
regenerate = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(regenerate)


def _options(cli: list) -> dict:
    """The ``privmap build`` options in tables/regenerate.py as keywords (``--delta-fraction`` ->
    ``delta_fraction``)."""
    pairs = dict(zip(cli[::2], cli[1::2]))
    numbers = {"--clusters": int, "--seed": int, "--delta-fraction": float, "--delta": float}
    return {k[2:].replace("-", "_"): numbers.get(k, str)(v) for k, v in pairs.items()}


def _rebuild(data: str, cli: list):
    """The payload ``privmap build DATA CLI`` signs, built through the mechanisms' ``build``."""
    options = _options(cli)
    private, mechanism = options.pop("private"), options.pop("mechanism", "quantized")
    header = {"issued_at": regenerate.ISSUED_AT, "valid_days": regenerate.VALID_DAYS}
    dataset = Dataset.from_csv(ROOT / data, private=private, categorical=mechanism == "exact")
    if mechanism == "exact":
        assert options.pop("metric", ExactOptions.metric) == ExactOptions.metric
        return exact.build(dataset, ExactOptions(**options, **header)).payload
    return quantized.build(dataset, QuantizedOptions(**options, **header)).payload


@pytest.fixture(scope="module", params=sorted(regenerate.EXAMPLES))
def example(request):
    """(name, signed payload bytes, rebuilt payload bytes) of one example bundle."""
    name = request.param
    data, cli = regenerate.EXAMPLES[name]
    signed = regenerate.signed_payload(TABLES / name)
    return name, signed, encode_payload(_rebuild(data, cli))


def pinned_versions() -> dict:
    """{distribution name (normalised): version} from constraints.txt."""
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, version = line.split("==")
            pins[re.sub(r"[-_.]+", "-", name).lower()] = version
    return pins


def machine_class_differences() -> list:
    """What differs from the machine class the bundles were built on (empty: the same)."""
    differences = []
    for name, version in pinned_versions().items():
        try:
            installed = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue  # an extra not installed here does not take part in a build
        if installed != version:
            differences.append(f"{name} {installed} (pinned {version})")
    recorded = json.loads((TABLES / "machine.json").read_text())["blas_architectures"]
    if regenerate.blas_architectures() != recorded:
        differences.append(f"OpenBLAS kernel {regenerate.blas_architectures()} (built on {recorded})")
    return differences


def assert_same_payload(signed, rebuilt, path="payload"):
    """Integers, strings, shapes exactly; floats within the device's agreement tolerance."""
    if isinstance(signed, float) or isinstance(rebuilt, float):
        assert isinstance(signed, float) and isinstance(rebuilt, float), f"{path}: {signed!r} vs {rebuilt!r}"
        tolerance = max(LEAKAGE_RELATIVE_SLACK * max(abs(signed), abs(rebuilt)), LEAKAGE_ABSOLUTE_SLACK)
        assert math.isfinite(rebuilt) and abs(signed - rebuilt) <= tolerance, f"{path}: {signed!r} vs {rebuilt!r}"
    elif isinstance(signed, dict):
        assert isinstance(rebuilt, dict) and list(signed) == list(rebuilt), f"{path}: keys differ"
        for key in signed:
            assert_same_payload(signed[key], rebuilt[key], f"{path}.{key}")
    elif isinstance(signed, list):
        assert isinstance(rebuilt, list) and len(signed) == len(rebuilt), f"{path}: lengths differ"
        for i, (a, b) in enumerate(zip(signed, rebuilt)):
            assert_same_payload(a, b, f"{path}[{i}]")
    else:
        assert type(signed) is type(rebuilt) and signed == rebuilt, f"{path}: {signed!r} vs {rebuilt!r}"


def test_example_bundle_rebuilds_field_by_field(example):
    name, signed, rebuilt = example
    assert_same_payload(msgpack.unpackb(signed), msgpack.unpackb(rebuilt))


def test_example_bundle_rebuilds_byte_for_byte_within_its_machine_class(example):
    differences = machine_class_differences()
    if differences:
        pytest.skip("not the machine class the example bundles were built on: " + "; ".join(differences))
    name, signed, rebuilt = example
    assert rebuilt == signed


def test_field_comparison_refuses_a_changed_integer_or_figure():
    payload = {"table": {"weight": [[3, 5]]}, "metrics": {"leakage_bits": 0.25}}
    assert_same_payload(payload, {"table": {"weight": [[3, 5]]}, "metrics": {"leakage_bits": 0.25 + 1e-12}})
    with pytest.raises(AssertionError, match="weight"):
        assert_same_payload(payload, {"table": {"weight": [[4, 4]]}, "metrics": {"leakage_bits": 0.25}})
    with pytest.raises(AssertionError, match="leakage_bits"):
        assert_same_payload(payload, {"table": {"weight": [[3, 5]]}, "metrics": {"leakage_bits": 0.2500001}})


def test_example_bundles_are_signed_by_the_published_key():
    keyring = Keyring.from_pem_files(TABLES / "public.pem")
    for name in regenerate.EXAMPLES:
        read_bundle_file(TABLES / name, keyring, now=regenerate.ISSUED_AT + 1)
