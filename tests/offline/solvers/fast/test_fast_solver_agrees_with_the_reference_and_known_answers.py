"""The fast solver of program (19), end to end: it agrees with the cvxpy/Clarabel reference and with
known answers, proves its gap, and handles the edge cases of an instance (rows without mass,
forbidden pairs, budgets at the least distortion or above the perfect-privacy one).

Each phase has its own tests beside this file: test_newton_step_derivatives_match_finite_differences.py,
test_path_certifies_cold_warm_and_polished_starts.py, test_lower_bound_is_below_every_feasible_leakage.py,
test_pricing_matches_brute_force.py."""

import numpy as np
import pytest
from known_answers import CASES, bsc, bsc_leakage_bits

from privmap.offline._errors import InfeasibleError
from privmap.offline.solvers import solve_cvxpy, solve_fast
from privmap.offline.solvers.fast import _path, _state

TOL = 1e-5


@pytest.mark.parametrize("p, D", CASES)
def test_binary_symmetric_channel_matches_known_answer(p, D):
    p_ac, dist = bsc(p)
    res = solve_fast(p_ac, dist, D)
    expected = bsc_leakage_bits(p, D)
    assert res.status == "optimal" and res.solver == "fast"
    assert abs(res.leakage_bits - expected) <= TOL
    assert res.lower_bound_bits <= expected + 1e-12
    assert res.distortion <= D


@pytest.mark.parametrize("seed, K, n_private, frac", [
    (0, 5, 2, 0.05), (1, 8, 2, 0.2), (2, 12, 3, 0.1), (3, 20, 2, 0.3), (4, 16, 2, 0.6), (5, 10, 4, 0.15),
])
def test_fast_and_cvxpy_agree_and_certificate_is_a_lower_bound_of_cvxpy_optimum(seed, K, n_private,
                                                                                frac, random_instance,
                                                                                budget):
    p_ac, dist = random_instance(seed, K, n_private)
    delta = budget(p_ac, dist, frac)
    fast = solve_fast(p_ac, dist, delta, tol_bits=TOL)
    ref = solve_cvxpy(p_ac, dist, delta)
    assert abs(fast.leakage_bits - ref.leakage_bits) <= TOL
    assert 0.0 <= fast.gap_bits <= TOL
    # the certificate never claims more than the true optimum (cvxpy's value is >= optimum)
    assert fast.lower_bound_bits <= ref.leakage_bits + 1e-7
    assert fast.distortion <= delta


@pytest.mark.parametrize("seed, frac", [(10, 0.1), (11, 0.3)])
def test_erasure_instance_with_forbidden_entries_agrees_with_cvxpy(seed, frac, random_instance):
    p_ac, dist = random_instance(seed, 8, erasure=True)
    delta = frac * 0.5
    fast = solve_fast(p_ac, dist, delta)
    ref = solve_cvxpy(p_ac, dist, delta)
    assert abs(fast.leakage_bits - ref.leakage_bits) <= TOL
    assert fast.lower_bound_bits <= ref.leakage_bits + 1e-7
    assert np.all(fast.table[~np.isfinite(dist)] == 0.0)
    assert fast.table.shape == dist.shape


def test_rows_without_mass_get_a_valid_row_on_their_cheapest_output(random_instance, budget):
    p_ac, dist = random_instance(8, 6)
    p_ac[:, 2] = 0.0
    p_ac /= p_ac.sum()
    res = solve_fast(p_ac, dist, budget(p_ac, dist, 0.2))
    assert res.table[2].sum() == pytest.approx(1.0)
    assert res.table[2, np.argmin(dist[2])] == 1.0


def test_budget_below_least_distortion_is_a_clear_error():
    p_ac = np.array([[0.5, 0.0], [0.0, 0.5]])
    dist = np.array([[1.0, 2.0], [np.inf, 1.0]])
    with pytest.raises(InfeasibleError, match="below the least distortion"):
        solve_fast(p_ac, dist, 0.5)


def test_budget_at_least_distortion_keeps_every_row_on_its_cheapest_outputs(random_instance):
    p_ac, dist = random_instance(9, 6)
    dist = dist + 0.1
    least = float(p_ac.sum(axis=0) @ dist.min(axis=1))
    res = solve_fast(p_ac, dist, least)
    assert res.distortion <= least * (1 + 1e-9)
    assert res.gap_bits <= TOL


def test_large_budget_reaches_perfect_privacy(random_instance):
    p_ac, dist = random_instance(12, 8)
    res = solve_fast(p_ac, dist, 10.0 * float(dist.max()))
    assert res.leakage_bits <= TOL and res.gap_bits <= TOL


def test_rows_with_pure_posteriors_agree_with_cvxpy(random_instance, budget):
    # clusters holding one class only give outputs with nearly pure posteriors, which look
    # unboundedly attractive to every other row until they are fed by both classes
    p_ac, dist = random_instance(14, 16)
    p_ac[0, :5] = 0.0
    p_ac[1, 5:9] = 0.0
    p_ac /= p_ac.sum()
    delta = budget(p_ac, dist, 0.2)
    fast = solve_fast(p_ac, dist, delta)
    ref = solve_cvxpy(p_ac, dist, delta)
    assert abs(fast.leakage_bits - ref.leakage_bits) <= TOL
    assert fast.lower_bound_bits <= ref.leakage_bits + 1e-7


def test_budget_with_a_slack_smoothed_multiplier_is_certified():
    # twelve inputs of one class, one of the other, erasure outputs: at large smoothing the
    # multiplier sits at its bound 0, which the path must step past
    p_ac = np.array([[12 / 13, 0.0], [0.0, 1 / 13]])
    inf = np.inf
    dist = np.array([[0.0, inf, 1.0, inf, 1.0, inf, 2.0], [inf, 0.0, inf, 1.0, inf, 1.0, 2.0]])
    fast = solve_fast(p_ac, dist, 1.5)
    ref = solve_cvxpy(p_ac, dist, 1.5)
    assert abs(fast.leakage_bits - ref.leakage_bits) <= TOL
    assert fast.gap_bits <= TOL and fast.distortion <= 1.5


@pytest.mark.parametrize("seed, users", [(0, 180), (1, 300)])
def test_anisotropic_instance_with_rows_spread_over_many_outputs_agrees_on_every_newton_path(
        seed, users, anisotropic_instance):
    """On a very anisotropic geometry at half the perfect-privacy distortion the optimal rows
    spread over several outputs (the real Adult build's instance: about 23 per row); the
    conjugate-gradient path with the sparsified LU preconditioner from the start must certify
    the same optimum as dense Cholesky, and both agree with cvxpy."""
    from privmap.offline.solvers import perfect_privacy_distortion

    p_ac, dist = anisotropic_instance(seed, users)
    delta = 0.5 * perfect_privacy_distortion(p_ac, dist)
    dense = solve_fast(p_ac, dist, delta, tol_bits=TOL)
    iterative = _path.run(_state.set_up(p_ac, dist, delta, TOL, 2000,
                                        settings=_state.Settings(dense_max=0, jacobi_tau=1.0)))
    ref = solve_cvxpy(p_ac, dist, delta)
    assert dense.info["nonzeros_per_row"] > 3
    for res in (dense, iterative):
        assert 0.0 <= res.gap_bits <= TOL and res.distortion <= delta
        assert abs(res.leakage_bits - ref.leakage_bits) <= TOL
    assert abs(iterative.leakage_bits - dense.leakage_bits) <= TOL
    assert iterative.lower_bound_bits <= dense.leakage_bits + 1e-12
