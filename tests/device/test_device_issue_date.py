"""A bundle dated in the future is refused on the stateless path too (THREATS D7): ``load_bundle``
allows ``issued_at`` up to ``MAX_CLOCK_SKEW`` seconds after its clock."""
from __future__ import annotations

import pytest
from harness import NOW

from privmap.device import read_bundle_file
from privmap.device.constants import MAX_CLOCK_SKEW
from privmap.device.errors import FutureBundleError


def test_a_bundle_issued_beyond_the_skew_is_refused_and_one_within_it_loads(sim):
    assert sim.load(sim.bundle(issued_at=NOW + MAX_CLOCK_SKEW, expires=NOW + 10 * MAX_CLOCK_SKEW)).version == 5
    error = sim.refused(sim.bundle(issued_at=NOW + MAX_CLOCK_SKEW + 1, expires=NOW + 10 * MAX_CLOCK_SKEW),
                        FutureBundleError)
    assert str(MAX_CLOCK_SKEW) in str(error)


def test_the_skew_follows_the_injected_clock_and_can_be_left_to_the_caller(sim):
    days_ahead = sim.bundle(issued_at=NOW + 5 * MAX_CLOCK_SKEW, expires=NOW + 10 * MAX_CLOCK_SKEW)
    assert sim.load(days_ahead, now=NOW + 5 * MAX_CLOCK_SKEW).version == 5
    assert sim.load(days_ahead, max_skew=None).version == 5   # DeviceState checks it against its own clock
    assert sim.load(days_ahead, max_skew=6 * MAX_CLOCK_SKEW).version == 5
    with pytest.raises(ValueError):
        sim.load(days_ahead, max_skew=-1)


def test_read_bundle_file_refuses_it_by_default(sim, tmp_path):
    path = tmp_path / "future.bundle"
    path.write_bytes(sim.bundle(issued_at=NOW + 3 * MAX_CLOCK_SKEW, expires=NOW + 10 * MAX_CLOCK_SKEW))
    with pytest.raises(FutureBundleError):
        read_bundle_file(path, sim.keyring, now=NOW)
