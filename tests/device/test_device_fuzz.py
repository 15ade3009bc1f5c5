"""A brief run of the fuzz target (tests/device/fuzz_bundles.py; the full run is documented there)."""
from __future__ import annotations

from fuzz_bundles import run


def test_fuzzed_bundles_are_refused_with_typed_errors_or_load_and_release():
    totals = run(inputs=2000, seed=20261123, max_seconds=2.0)
    assert totals["failures"] == []
    structure = totals["by_family"]["structure"]
    assert sum(v for k, v in structure.items() if k not in ("BundleSignatureError", "not encodable")) > 300
    assert any(k in structure for k in ("TableError", "MetricsError"))  # the schema's depths are reached
    model = totals["by_family"]["model"]
    assert model.get("loaded", 0) > 100 and model.get("BundleFormatError", 0) > 100  # both sides of its bounds
