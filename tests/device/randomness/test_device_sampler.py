"""Randomness and exact sampling (THREATS.md section 8, H/I: I1-I4, I6-I8)."""
from __future__ import annotations

import os
import random
from collections import Counter

import pytest
from harness import EnumeratingBits, FixedBits, with_leakage

from privmap.device import SystemRandomBits
from privmap.device.errors import RandomnessError
from privmap.device.randomness import InsecureTestBits, sample_row


def _bundle_with_table(sim, bits, index, weight, outputs=None):
    payload = sim.payload()
    if outputs is not None:
        payload["outputs"] = outputs
    payload["table"] = {"bits": bits, "index": index, "weight": weight}
    with_leakage(payload)
    return sim.load(sim.sign_obj(payload))


def _random_table(rng, k_in, k_out, bits):
    index, weight = [], []
    for _ in range(k_in):
        support = sorted(rng.sample(range(k_out), rng.randint(1, min(k_out, 1 << bits))))
        cuts = sorted(rng.sample(range(1, 1 << bits), len(support) - 1))
        parts = [b - a for a, b in zip([0] + cuts, cuts + [1 << bits])]
        index.append(support)
        weight.append(parts)
    return index, weight


# -- I3 / I4: exactness by enumeration ---------------------------------------------------------

def test_I3_enumeration_reproduces_every_row_exactly(sim):
    bundle = sim.load(sim.bundle())
    for c, row in enumerate(bundle.input_cells):
        source = EnumeratingBits()
        counts = Counter(bundle.release_index(list(row), rng=InsecureTestBits(source, test_mode=True))
                         for _ in range(1 << bundle.bits))
        assert source.calls == 1 << bundle.bits
        assert dict(counts) == dict(zip(bundle.index[c], bundle.weight[c]))
        # I4: outputs outside the row's support are never released.
        assert set(counts) == set(bundle.index[c])


def test_I3_enumeration_on_random_tables(sim):
    rng = random.Random(3)
    outputs = [[1 + (j % 5), j / 11, float(j)] for j in range(12)]
    for bits in (1, 2, 5, 8):
        index, weight = _random_table(rng, 3, 12, bits)
        bundle = _bundle_with_table(sim, bits, index, weight, outputs)
        for c, row in enumerate(bundle.input_cells):
            source = InsecureTestBits(EnumeratingBits(), test_mode=True)
            counts = Counter(bundle.release_index(list(row), rng=source) for _ in range(1 << bits))
            assert dict(counts) == dict(zip(index[c], weight[c]))


def test_sampler_boundaries():
    index, weight = (2, 5, 7), (3, 1, 4)
    expected = [2, 2, 2, 5, 7, 7, 7, 7]
    assert [sample_row(index, weight, r) for r in range(8)] == expected


def test_sampler_with_32_bits(sim):
    top = 2**32
    bundle = _bundle_with_table(sim, 32, [[0, 1], [1, 2, 3], [3]],
                                [[top - 1, 1], [1, top - 2, 1], [top]])
    row = list(bundle.input_cells[0])
    pick = lambda r: bundle.release_index(row, rng=InsecureTestBits(FixedBits(r), test_mode=True))  # noqa: E731
    assert pick(0) == 0 and pick(top - 2) == 0 and pick(top - 1) == 1
    row = list(bundle.input_cells[1])
    assert pick(0) == 1 and pick(1) == 2 and pick(top - 2) == 2 and pick(top - 1) == 3


# -- I6: the real CSPRNG, chi-square on counts ----------------------------------------------

def test_I6_chi_square_with_the_os_csprng(sim):
    stats = pytest.importorskip("scipy.stats")
    bundle = _bundle_with_table(sim, 8, [[0, 1, 2, 3], [1, 2, 3], [0, 3]],
                                [[100, 50, 6, 100], [1, 127, 128], [200, 56]])
    n = 100_000
    for c, row in enumerate(bundle.input_cells):
        draws = n if c == 0 else 20_000
        counts = Counter(bundle.release_index(list(row)) for _ in range(draws))
        assert set(counts) <= set(bundle.index[c])
        observed = [counts.get(j, 0) for j in bundle.index[c]]
        expected = [draws * w / 256 for w in bundle.weight[c]]
        result = stats.chisquare(observed, expected)
        assert result.pvalue > 1e-6, (c, observed, expected)


def test_system_random_bits_is_uniform_over_small_ranges():
    source = SystemRandomBits()
    for k in (1, 3, 8, 9, 32, 33, 64):
        values = [source.randbits(k) for _ in range(200)]
        assert all(0 <= v < 2**k for v in values)
    assert len({source.randbits(128) for _ in range(10)}) == 10
    with pytest.raises(ValueError):
        source.randbits(0)


# -- I1: random and numpy.random are not used ----------------------------------------------

def test_I1_sanitize_works_with_random_and_numpy_random_disabled(sim, monkeypatch):
    def boom(*args, **kwargs):
        raise AssertionError("non-cryptographic randomness used")

    for name in ("random", "randrange", "randint", "getrandbits", "choice", "choices", "Random",
                 "SystemRandom", "shuffle", "sample", "uniform"):
        monkeypatch.setattr(random, name, boom)
    np = pytest.importorskip("numpy")
    for name in ("default_rng", "random", "randint", "choice", "Generator", "RandomState", "seed"):
        monkeypatch.setattr(np.random, name, boom)
    bundle = sim.load(sim.bundle())
    for row in bundle.input_cells:
        assert bundle.sanitize(list(row)) in [bundle.representative(j) for j in range(4)]


# -- I2: only the CSPRNG interface in production ---------------------------------------------

def test_I2_seeded_generators_are_refused(sim):
    bundle = sim.load(sim.bundle())
    row = list(bundle.input_cells[0])
    np = pytest.importorskip("numpy")
    for rng in (random.Random(0), random.SystemRandom(), np.random.default_rng(0),
                np.random.RandomState(0), EnumeratingBits(), os.urandom, "secrets"):
        with pytest.raises(TypeError):
            bundle.sanitize(row, rng=rng)
        with pytest.raises(TypeError):
            bundle.release_index(row, rng=rng)
    with pytest.raises(TypeError):
        InsecureTestBits(random.Random(0))
    with pytest.raises(TypeError):
        InsecureTestBits(random.Random(0), test_mode=1)
    with pytest.raises(TypeError):
        InsecureTestBits(object(), test_mode=True)
    assert bundle.release_index(row, rng=SystemRandomBits()) in bundle.index[0]
    assert bundle.release_index(row, rng=InsecureTestBits(EnumeratingBits(), test_mode=True)) == bundle.index[0][0]


# -- I7: no shared or time-based state ---------------------------------------------------------

def test_I7_two_sources_and_a_forked_child_draw_different_streams():
    a, b = SystemRandomBits(), SystemRandomBits()
    assert a.randbits(128) != b.randbits(128)
    if not hasattr(os, "fork"):
        pytest.skip("no fork on this platform")
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        try:
            os.close(read_end)
            os.write(write_end, SystemRandomBits().randbits(128).to_bytes(16, "big"))
        finally:
            os._exit(0)
    os.close(write_end)
    parent_value = SystemRandomBits().randbits(128).to_bytes(16, "big")
    child_value = os.read(read_end, 16)
    os.close(read_end)
    os.waitpid(pid, 0)
    assert len(child_value) == 16 and child_value != parent_value


# -- I8: a failing source releases nothing -------------------------------------------------

class _Raising:
    def __init__(self, exc):
        self.exc = exc

    def randbits(self, k):
        raise self.exc


@pytest.mark.parametrize("source", [
    _Raising(OSError("no entropy")), _Raising(BlockingIOError("would block")),
    _Raising(RuntimeError("broken")), FixedBits(16), FixedBits(-1), FixedBits(True),
    FixedBits(1.0), FixedBits(None),
])
def test_I8_failing_randomness_raises_and_releases_nothing(sim, source):
    bundle = sim.load(sim.bundle())
    released = []
    with pytest.raises(RandomnessError):
        released.append(bundle.sanitize([3, 0.5, 12.0], rng=InsecureTestBits(source, test_mode=True)))
    assert released == []


def test_I8_unseeded_kernel_pool_raises_instead_of_falling_back(sim, monkeypatch):
    calls = []

    def early_boot(n, flags):
        calls.append(flags)
        raise BlockingIOError(11, "Resource temporarily unavailable")

    def urandom(n):
        raise AssertionError("fell back to os.urandom")

    monkeypatch.setattr(os, "getrandom", early_boot, raising=False)
    monkeypatch.setattr(os, "urandom", urandom)
    bundle = sim.load(sim.bundle())
    with pytest.raises(RandomnessError):
        bundle.sanitize([3, 0.5, 12.0])
    assert calls and calls[0] == getattr(os, "GRND_NONBLOCK", 0)


def test_randomness_is_drawn_after_the_row_is_validated(sim):
    from privmap.device.errors import InputError
    bundle = sim.load(sim.bundle())
    source = FixedBits(0)
    with pytest.raises(InputError):
        bundle.sanitize([9, 0.5, 12.0], rng=InsecureTestBits(source, test_mode=True))
    assert source.calls == 0
