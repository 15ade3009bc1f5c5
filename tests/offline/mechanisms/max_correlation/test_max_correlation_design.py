"""Max-correlation design (seed 002): DSBS known answer, Witsenhausen round trip, the S* bound."""
import numpy as np
import pytest

from privmap.offline import BuildError, mutual_information_bits
from privmap.offline.mechanisms.max_correlation._design import (
    design_max_correlation,
    joint_from_q,
    rho_m_squared,
    s_star_lower_bound,
    s_star_upper_bound,
    witsenhausen_q,
)

HAMMING2 = 1 - np.eye(2)


@pytest.mark.parametrize("D", [0.05, 0.1, 0.2, 0.3])
def test_dsbs_with_hamming_budget_d_gives_rho_m_squared_one_minus_2d_squared(D):
    result = design_max_correlation([0.5, 0.5], HAMMING2, D)
    assert result.rho_m_squared == pytest.approx((1 - 2 * D) ** 2, abs=1e-9)
    assert result.w == pytest.approx(np.array([[1 - D, D], [D, 1 - D]]), abs=1e-6)
    assert result.distortion <= D + 1e-12


def test_witsenhausen_round_trip_is_exact_and_top_singular_value_is_one():
    rng = np.random.default_rng(2)
    for _ in range(20):
        n, m = rng.integers(2, 7, size=2)
        p = rng.dirichlet(np.ones(n * m)).reshape(n, m)
        q = witsenhausen_q(p)
        assert np.linalg.svd(q, compute_uv=False)[0] == pytest.approx(1.0, abs=1e-12)
        assert joint_from_q(q, p.sum(axis=1)) == pytest.approx(p, abs=1e-15)


def test_bsc_known_value_rho_of_a_binary_symmetric_channel():
    for D in (0.1, 0.25):
        assert rho_m_squared([0.5, 0.5], [[1 - D, D], [D, 1 - D]]) == pytest.approx((1 - 2 * D) ** 2, abs=1e-12)


def test_designed_mapping_satisfies_i_s_y_le_s_star_upper_times_i_s_x_on_random_pairs():
    rng = np.random.default_rng(4)
    n = 5
    p_x = rng.dirichlet(np.ones(n))
    d = 1 - np.eye(n)
    w = design_max_correlation(p_x, d, 0.25, starts=2, max_iter=80).w
    upper = s_star_upper_bound(p_x, w)
    rho2 = rho_m_squared(p_x, w)
    assert rho2 <= upper + 1e-12
    assert s_star_lower_bound(p_x, w, starts=2) <= upper + 1e-9
    worst = 0.0
    for _ in range(300):
        k = int(rng.integers(2, 5))
        s_given_x = rng.dirichlet(np.ones(k) * rng.choice([0.1, 1.0, 10.0]), size=n)  # (n, k)
        p_sx = (p_x[:, None] * s_given_x).T  # (k, n)
        i_sx = mutual_information_bits(p_sx)
        i_sy = mutual_information_bits(p_sx @ w)
        assert i_sy <= upper * i_sx + 1e-12
        worst = max(worst, i_sy / i_sx)
    assert worst > 0  # the check is not vacuous: the release does leak


def test_upper_bound_on_s_star_is_never_below_a_searched_ratio():
    rng = np.random.default_rng(8)
    for _ in range(5):
        p_x = rng.dirichlet(np.ones(4))
        w = rng.dirichlet(np.ones(4), size=4)
        assert s_star_lower_bound(p_x, w, starts=2) <= s_star_upper_bound(p_x, w) + 1e-9


def test_larger_alphabets_use_frank_wolfe_and_stay_within_budget():
    rng = np.random.default_rng(6)
    n = 13  # n^2 > SLSQP_MAX_VARIABLES
    p_x = rng.dirichlet(np.ones(n))
    d = rng.integers(1, 3, size=(n, n)).astype(float)
    np.fill_diagonal(d, 0)
    result = design_max_correlation(p_x, d, 0.4, starts=2, max_iter=60)
    assert result.distortion <= 0.4 + 1e-9
    assert result.rho_m_squared < rho_m_squared(p_x, np.eye(n)) - 0.05  # it did move from Y = X


def test_bad_inputs_are_refused():
    with pytest.raises(BuildError):
        design_max_correlation([0.5, 0.5], HAMMING2, -1)
    with pytest.raises(BuildError):
        design_max_correlation([1.0, 0.0], HAMMING2, 0.1)
