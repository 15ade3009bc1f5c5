"""Payload floats are written to 12 significant digits, and that never breaks a device check."""
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from privmap.device import table_leakage_bits
from privmap.device._leakage import LEAKAGE_RELATIVE_SLACK, PAYLOAD_FLOAT_RELATIVE_ERROR
from privmap.offline.bundle._write import canonical_float

finite = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e300, max_value=1e300)


@given(finite)
def test_rounding_keeps_twelve_digits_and_is_idempotent(value):
    rounded = canonical_float(value)
    assert abs(rounded - value) <= PAYLOAD_FLOAT_RELATIVE_ERROR * abs(value) * (1 + 1e-3)
    assert canonical_float(rounded) == rounded
    assert len(format(rounded, ".11e").split("e")[0].replace("-", "").replace(".", "")) == 12


@given(finite)
def test_outward_rounding_brackets_the_value(value):
    down, up = canonical_float(value, "down"), canonical_float(value, "up")
    assert down <= value <= up
    assert canonical_float(down) == down and canonical_float(up) == up
    assert up - down <= 2.1 * PAYLOAD_FLOAT_RELATIVE_ERROR * 2 * abs(value) + 0.0


def test_unknown_direction_is_refused():
    with pytest.raises(ValueError, match="direction"):
        canonical_float(1.5, "sideways")


@settings(max_examples=50)
@given(st.lists(st.integers(1, 10**6), min_size=8, max_size=8), st.integers(2, 200))
def test_rounding_the_prior_moves_the_leakage_far_less_than_the_devices_slack(counts, w):
    total = sum(counts)
    prior = [[c / total for c in counts[:4]], [c / total for c in counts[4:]]]
    rounded = [[canonical_float(v) for v in row] for row in prior]
    index = [[0, 1], [0, 1], [1, 2], [2]]
    weight = [[w, 256 - w], [256 - w, w], [128, 128], [256]]
    exact = table_leakage_bits(prior, index, weight, 8)
    moved = table_leakage_bits(rounded, index, weight, 8)
    declared = canonical_float(exact)
    slack = max(LEAKAGE_RELATIVE_SLACK * exact, 1e-12)
    assert abs(declared - moved) <= slack / 100 or math.isclose(declared, moved, abs_tol=1e-14)
