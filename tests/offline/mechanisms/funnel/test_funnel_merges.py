"""The greedy privacy funnel (seed 003): Proposition 1, endpoints, structural cases, tie rule."""
import numpy as np
import pytest

from privmap.offline import BuildError, mutual_information_bits
from privmap.offline.mechanisms.funnel import entropy_bits, greedy_funnel
from privmap.offline.mechanisms.funnel._model import merge_gain_bits


def _random_prior(rng, s, x):
    return rng.dirichlet(np.ones(s * x)).reshape(s, x)


def test_proposition_1_merge_identity_matches_recomputation_on_random_instances():
    rng = np.random.default_rng(15)
    for _ in range(50):
        p = _random_prior(rng, int(rng.integers(2, 5)), int(rng.integers(3, 8)))
        i, j = sorted(rng.choice(p.shape[1], size=2, replace=False))
        merged = np.delete(p, j, axis=1)
        merged[:, i] = p[:, i] + p[:, j]
        recomputed = mutual_information_bits(p) - mutual_information_bits(merged)
        assert merge_gain_bits(p[:, i], p[:, j]) == pytest.approx(recomputed, abs=1e-12)
        # the same identity with X in place of S gives the disclosure drop of a deterministic merge
        px = p.sum(axis=0)
        assert entropy_bits(px) - entropy_bits(merged.sum(axis=0)) == pytest.approx(
            merge_gain_bits(np.diag(px)[:, i], np.diag(px)[:, j]), abs=1e-12)


def test_running_sums_along_the_path_match_recomputation_of_the_final_partition():
    rng = np.random.default_rng(3)
    p = _random_prior(rng, 3, 12)
    for maximise in (False, True):
        result = greedy_funnel(p, 1.0, maximise=maximise)
        assert result.path[-1, 0] == pytest.approx(result.disclosure_bits, abs=1e-9)
        assert result.path[-1, 1] == pytest.approx(result.leakage_bits, abs=1e-9)
        assert result.disclosure_bits >= 1.0 - 1e-12


def test_endpoints_r_equal_to_h_x_keeps_i_s_x_and_r_zero_merges_everything():
    rng = np.random.default_rng(7)
    p = _random_prior(rng, 3, 9)
    h_x = entropy_bits(p.sum(axis=0))
    top = greedy_funnel(p, h_x)
    assert len(top.groups) == 9 and top.leakage_bits == pytest.approx(mutual_information_bits(p), abs=1e-12)
    for r in (0.0, -1.0):
        bottom = greedy_funnel(p, r)
        assert len(bottom.groups) == 1 and bottom.leakage_bits == 0.0 and bottom.disclosure_bits == 0.0
    with pytest.raises(BuildError, match="exceeds H"):
        greedy_funnel(p, h_x + 0.01)


def test_s_equal_to_x_puts_both_algorithms_on_the_diagonal_leakage_equal_to_disclosure():
    # S = X: I(S;Y) = I(X;Y) for every partition, so both curves are the same line (the
    # partitions they stop at may differ: Algorithm 2 takes smaller steps towards R).
    rng = np.random.default_rng(11)
    p = np.diag(rng.dirichlet(np.ones(8)))
    for r in (0.3, 0.9, 1.5):
        for result in (greedy_funnel(p, r), greedy_funnel(p, r, maximise=True)):
            assert result.leakage_bits == pytest.approx(result.disclosure_bits, abs=1e-12)
            assert result.path[:, 1] == pytest.approx(result.path[:, 0], abs=1e-9)


def test_s_independent_of_x_leaks_nothing_at_every_step():
    rng = np.random.default_rng(5)
    p = np.outer(rng.dirichlet(np.ones(3)), rng.dirichlet(np.ones(7)))
    result = greedy_funnel(p, 0.0)
    assert np.all(np.abs(result.path[:, 1]) < 1e-12)


def test_leakage_never_exceeds_min_of_i_s_x_and_disclosure_and_algorithm_1_is_below_algorithm_2():
    rng = np.random.default_rng(9)
    p = _random_prior(rng, 2, 10)
    i_sx = mutual_information_bits(p)
    below = 0
    for r in np.linspace(0, entropy_bits(p.sum(axis=0)), 12):
        low, high = greedy_funnel(p, r), greedy_funnel(p, r, maximise=True)
        for res in (low, high):
            assert res.leakage_bits <= min(i_sx, res.disclosure_bits) + 1e-12
        below += low.leakage_bits <= high.leakage_bits + 1e-12
    assert below == 12


def test_merge_order_is_deterministic_and_ties_go_to_the_lowest_pair_of_group_ids():
    # S independent of X and X uniform: every merge has gain 0 and equal disclosure drop at the
    # first step, so the tie rule alone decides: (0, 1) first, then (2, 3) (the new group 4 has a
    # larger disclosure drop, hence a tie only in gain, broken by ids), and so on.
    p = np.full((2, 4), 1 / 8)
    first = greedy_funnel(p, 0.0)
    assert first.merges[0] == (0, 1)
    assert [greedy_funnel(p, 0.0).merges for _ in range(3)] == [first.merges] * 3
    rng = np.random.default_rng(1)
    q = _random_prior(rng, 3, 10)
    assert greedy_funnel(q, 1.2).merges == greedy_funnel(q.copy(), 1.2).merges


def test_a_bad_prior_is_refused():
    with pytest.raises(BuildError):
        greedy_funnel([[0.5, -0.1]], 0.0)
    with pytest.raises(BuildError):
        greedy_funnel(np.zeros((2, 2)), 0.0)
