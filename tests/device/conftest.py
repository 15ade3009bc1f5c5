"""Fixtures for the device tests, built on :mod:`harness`."""
from __future__ import annotations

import copy

import pytest
from harness import EnumeratingBits, Sim, base_payload

from privmap.device.randomness import InsecureTestBits


@pytest.fixture(scope="session")
def sim() -> Sim:
    return Sim()


@pytest.fixture
def enum_bits():
    return InsecureTestBits(EnumeratingBits(), test_mode=True)


@pytest.fixture
def payload_factory():
    return lambda: copy.deepcopy(base_payload())
