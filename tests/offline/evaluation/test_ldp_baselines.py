"""Local differential privacy baselines and their per-output leakage about the private class."""
import itertools
import math

import numpy as np
import pytest

from privmap.offline.evaluation import (
    _baselines,
    channel_release,
    ldp_epsilon_bound_bits,
    oue_channel,
    per_output_leakage,
    rr_channel,
)


@pytest.mark.parametrize("make", [rr_channel, oue_channel])
@pytest.mark.parametrize("levels, eps", [(2, 0.5), (4, 1.0), (5, 3.0)])
def test_channels_are_stochastic_and_eps_ldp(make, levels, eps):
    M = make(levels, eps)
    assert np.allclose(M.sum(axis=1), 1.0) and M.min() > 0
    assert M.max(axis=0).max() / M.min(axis=0).min() <= math.exp(eps) * (1 + 1e-12)


def test_rr_keeps_a_value_with_probability_e_eps_over_e_eps_plus_k_minus_1():
    assert rr_channel(4, 1.0)[2, 2] == pytest.approx(math.e / (math.e + 3))


def test_decoded_oue_matches_a_simulation_of_the_bits():
    rng = np.random.default_rng(0)
    levels, eps, n = 4, 1.0, 200_000
    q = 1 / (math.exp(eps) + 1)
    bits = rng.random((n, levels)) < q
    bits[:, 0] = rng.random(n) < 0.5                          # the true value is 0
    ones = bits.sum(axis=1)
    # P(decode to 0 | these bits): 1/#ones when bit 0 is set, 1/levels when no bit is set
    kept = np.where(bits[:, 0], 1.0 / np.maximum(ones, 1), np.where(ones == 0, 1.0 / levels, 0.0))
    assert kept.mean() == pytest.approx(oue_channel(levels, eps)[0, 0], abs=3e-3)


def test_channel_release_draws_each_cell_through_its_channel():
    rng = np.random.default_rng(1)
    M = rr_channel(3, 0.7)
    codes = np.zeros((60_000, 2), dtype=np.int64)
    codes[:, 1] = 2
    out = channel_release(codes, [M, M], rng)
    assert np.allclose(np.bincount(out[:, 0], minlength=3) / 60_000, M[0], atol=6e-3)
    assert np.allclose(np.bincount(out[:, 1], minlength=3) / 60_000, M[2], atol=6e-3)


def small_rows(seed=0, n=300):
    rng = np.random.default_rng(seed)
    private = rng.integers(0, 2, n)
    codes = np.column_stack([(rng.random(n) < 0.3 + 0.4 * private).astype(int) + (rng.random(n) < 0.5),
                             rng.integers(0, 3, n)])
    return codes, private


def by_hand(codes, private, channels):
    """max over every output y and class a of |log2 p(a|y) / p(a)|, by explicit sums."""
    n = len(private)
    worst = 0.0
    for y in itertools.product(*[range(M.shape[0]) for M in channels]):
        joint = np.zeros(2)
        for x, a in zip(codes, private):
            joint[a] += np.prod([M[x[k], y[k]] for k, M in enumerate(channels)]) / n
        p_a = np.bincount(private, minlength=2) / n
        worst = max(worst, float(np.max(np.abs(np.log2(joint / joint.sum() / p_a)))))
    return worst


def test_per_output_leakage_is_exact_on_a_small_output_space_and_below_the_ldp_bound():
    codes, private = small_rows()
    channels = [rr_channel(3, 1.0), rr_channel(3, 0.5)]
    found = per_output_leakage(codes, private, 2, channels)
    assert found["exact"] and found["outputs_checked"] == 9
    assert found["epsilon_bits"] == pytest.approx(by_hand(codes, private, channels), abs=1e-12)
    p_a = np.bincount(private) / len(private)
    assert 0 < found["epsilon_bits"] <= ldp_epsilon_bound_bits(1.5, p_a)
    assert ldp_epsilon_bound_bits(1.5, p_a) < 1.5 / math.log(2)


def test_past_the_enumeration_limit_the_figure_is_a_lower_bound_from_candidates_and_ascent(monkeypatch):
    codes, private = small_rows(seed=2)
    channels = [rr_channel(3, 2.0), rr_channel(3, 2.0)]
    exact = per_output_leakage(codes, private, 2, channels)["epsilon_bits"]
    monkeypatch.setattr(_baselines, "EXACT_OUTPUTS_MAX", 4)
    alone = per_output_leakage(codes, private, 2, channels, candidates=np.array([[0, 0]]), climb=0)
    found = per_output_leakage(codes, private, 2, channels, candidates=np.array([[0, 0]]))
    assert not found["exact"] and not alone["exact"]
    assert alone["epsilon_bits"] <= found["epsilon_bits"] <= exact + 1e-12
    assert found["epsilon_bits"] > alone["epsilon_bits"]               # the ascent improved on its start
