"""One release per input (THREATS I10): asking a device again returns the same release, so an
averaging attack over many calls learns no more than one release gives."""
from __future__ import annotations

import hashlib
import math
import random

import pytest
from harness import NOW, with_leakage

from privmap.device import DeviceState, SystemRandomBits
from privmap.device.randomness import DerivedBits, release_bits, sample_row

CALLS = 1000
USERS = 400


def correlated_payload(sim) -> dict:
    """Two inputs that reveal the class 90% of the time, hidden by a nearly uniform table."""
    return with_leakage(sim.payload(
        features=[{"name": "x", "kind": "numeric", "min": 0, "max": 1, "integer": True,
                   "missing": "refuse", "fill": None, "missing_token": ""}],
        inputs=[[0], [1]], outputs=[[0], [1]],
        table={"bits": 4, "index": [[0, 1], [0, 1]], "weight": [[9, 7], [7, 9]]},
        prior=[[0.45, 0.05], [0.05, 0.45]]))


def test_derived_bits_are_a_function_of_secret_and_context():
    secret = bytes(range(32))
    a, b = DerivedBits(secret, b"ctx"), DerivedBits(secret, b"ctx")
    seq = [a.randbits(k) for k in (1, 7, 8, 13, 32, 256, 300)]
    assert seq == [b.randbits(k) for k in (1, 7, 8, 13, 32, 256, 300)]
    assert all(0 <= v < (1 << k) for v, k in zip(seq, (1, 7, 8, 13, 32, 256, 300)))
    assert [DerivedBits(secret, b"ctx2").randbits(32) for _ in range(1)] != seq[4:5]
    assert DerivedBits(bytes(32), b"ctx").randbits(64) != DerivedBits(secret, b"ctx").randbits(64)
    with pytest.raises(ValueError):
        DerivedBits(b"short", b"ctx")
    with pytest.raises(ValueError):
        release_bits(secret, "00" * 32, -1)


def test_derived_release_follows_the_table_exactly_across_devices(sim):
    """Over many device secrets, the permanent draw of one cluster is distributed as its table row
    (chi-square on counts)."""
    stats = pytest.importorskip("scipy.stats")
    bundle = sim.load(sim.bundle())
    c, n = 1, 2000
    counts = {j: 0 for j in bundle.index[c]}
    for device in range(n):
        secret = hashlib.sha256(device.to_bytes(4, "big")).digest()
        r = release_bits(secret, bundle.sha256, c).randbits(bundle.bits)
        counts[sample_row(bundle.index[c], bundle.weight[c], r)] += 1
    expected = [n * w / (1 << bundle.bits) for w in bundle.weight[c]]
    assert stats.chisquare([counts[j] for j in bundle.index[c]], expected).pvalue > 1e-6


def test_repeated_calls_through_the_state_release_the_same_row(sim, tmp_path):
    state = DeviceState(tmp_path / "s", sim.keyring, clock=lambda: NOW)
    state.install(sim.sign_obj(correlated_payload(sim)))
    bundle = state.active()
    for row in ([0], [1]):
        first = state.release_index(bundle, row)
        assert all(state.release_index(bundle, row) == first for _ in range(CALLS))
    reopened = DeviceState(tmp_path / "s", sim.keyring, clock=lambda: NOW)  # survives a reboot
    assert reopened.release_index(reopened.active(), [1]) == state.release_index(bundle, [1])


def _map_guess(prior, index, weight, releases) -> int:
    """The attacker's maximum a posteriori class, treating the releases as independent draws."""
    counts = {j: releases.count(j) for j in set(releases)}
    scores = []
    for row in prior:
        total = 0.0
        for c, mass in enumerate(row):
            q = dict(zip(index[c], weight[c]))
            if all(q.get(j, 0) for j in counts):
                total += mass * math.exp(sum(n * math.log(q[j] / 16) for j, n in counts.items()))
        scores.append(total)
    return max(range(len(scores)), key=scores.__getitem__)


def test_averaging_attack_over_1000_calls_gains_nothing_beyond_one_release(sim):
    payload = correlated_payload(sim)
    bundle = sim.load(sim.sign_obj(payload))
    prior, index, weight = bundle.prior, bundle.index, bundle.weight
    # Best possible accuracy from ONE release: sum over outputs of max_a p(a, c_hat).
    one_release = sum(max(sum(p[c] * dict(zip(index[c], weight[c])).get(j, 0) / 16 for c in range(2))
                          for p in prior) for j in range(2))
    raw = sum(max(p[c] for p in prior) for c in range(2))  # knowing the cluster itself
    rng = random.Random(13)
    fresh_bits = SystemRandomBits()  # what every call without state draws
    fresh_hits = permanent_hits = 0
    for user in range(USERS):
        a, c = rng.choices([(0, 0), (0, 1), (1, 0), (1, 1)], weights=[0.45, 0.05, 0.05, 0.45])[0]
        fresh = [sample_row(index[c], weight[c], fresh_bits.randbits(4)) for _ in range(CALLS)]
        secret = hashlib.sha256(b"device %d" % user).digest()
        draw = sample_row(index[c], weight[c], release_bits(secret, bundle.sha256, c).randbits(4))
        permanent = [draw] * CALLS  # what 1000 calls return (test above)
        fresh_hits += _map_guess(prior, index, weight, fresh) == a
        permanent_hits += _map_guess(prior, index, weight, permanent) == a
    sigma = math.sqrt(0.25 / USERS)
    assert one_release == pytest.approx(0.55) and raw == pytest.approx(0.9)
    assert fresh_hits / USERS > raw - 4 * sigma          # fresh draws: the raw cluster leaks
    assert permanent_hits / USERS < one_release + 4 * sigma  # permanent: no better than one release


def test_release_source_is_the_stream_the_state_samples_from(sim, tmp_path):
    state = DeviceState(tmp_path / "s", sim.keyring, clock=lambda: NOW)
    state.install(sim.bundle())
    bundle = state.active()
    c = bundle.lookup([3, 0.5, 12.0])
    r = state.release_source(bundle, c).randbits(bundle.bits)
    assert state.release_index(bundle, [3, 0.5, 12.0]) == sample_row(bundle.index[c], bundle.weight[c], r)
    other = DeviceState(tmp_path / "t", sim.keyring, clock=lambda: NOW)  # another device, another secret
    assert [state.release_source(bundle, k).randbits(64) for k in range(3)] != \
        [other.release_source(bundle, k).randbits(64) for k in range(3)]
