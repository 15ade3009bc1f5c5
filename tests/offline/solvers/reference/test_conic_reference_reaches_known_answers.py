"""The cvxpy/Clarabel reference solves program (19) to its known answers."""

import numpy as np
import pytest
from known_answers import CASES, bsc, bsc_leakage_bits

from privmap.offline._errors import InfeasibleError, SolverError
from privmap.offline._information import expected_distortion, leakage_bits
from privmap.offline.data._distortion import pairwise
from privmap.offline.data._prior import joint_prior
from privmap.offline.data._quantize import quantize
from privmap.offline.solvers import perfect_privacy_distortion, solve_cvxpy, solve_fast
from privmap.offline.solvers.reference import clarabel, conic_model, forbidden_pairs

TOL = 1e-5


@pytest.mark.parametrize("p, D", CASES)
def test_binary_symmetric_known_answer(p, D):
    p_ac, dist = bsc(p)
    res = solve_cvxpy(p_ac, dist, D)
    expected = bsc_leakage_bits(p, D)
    assert res.status == "optimal"
    assert res.leakage_bits == pytest.approx(expected, abs=1e-5)
    assert res.distortion <= D + 1e-7


def test_reported_metrics_are_recomputed_from_the_table():
    p_ac, dist = bsc(0.2)
    res = solve_cvxpy(p_ac, dist, 0.1)
    assert np.allclose(res.table.sum(axis=1), 1.0) and res.table.min() >= 0
    assert res.leakage_bits == leakage_bits(p_ac, res.table)
    assert res.distortion == expected_distortion(p_ac.sum(axis=0), res.table, dist)


def test_budget_below_least_distortion_is_infeasible():
    p_ac = np.array([[0.5, 0.0], [0.0, 0.5]])
    dist = np.array([[1.0, 2.0], [np.inf, 1.0]])
    with pytest.raises(InfeasibleError, match="below the least distortion"):
        solve_cvxpy(p_ac, dist, 0.5)


def test_forbidden_transitions_get_no_mass():
    rng = np.random.default_rng(0)
    p_ac = rng.random((2, 6))
    p_ac /= p_ac.sum()
    dist = rng.random((6, 6)) + 0.1
    np.fill_diagonal(dist, 0.0)
    dist[rng.random((6, 6)) < 0.3] = np.inf
    np.fill_diagonal(dist, 0.0)
    res = solve_cvxpy(p_ac, dist, 0.2)
    assert np.all(res.table[~np.isfinite(dist)] == 0)


def test_scaled_model_solves_128_clusters_of_real_ratings(ratings_csv):
    from privmap.offline.data._dataset import load_dataset
    ds = load_dataset(ratings_csv, private="gender")
    qz = quantize(ds.public, 128, seed=0)
    p_ac = joint_prior(ds.private, qz.labels, len(ds.classes), qz.k)
    dist = pairwise(qz.centers, qz.centers, "l2")
    delta = 0.3 * perfect_privacy_distortion(p_ac, dist)
    res = solve_cvxpy(p_ac, dist, delta)
    assert res.status == "optimal"
    assert 0 < res.leakage_bits < leakage_bits(p_ac, np.eye(qz.k))
    assert res.distortion <= delta * (1 + 1e-6)
    assert res.multiplier > 0


def assert_agrees_with_the_certified_solver(p_ac, dist, delta):
    ref = solve_cvxpy(p_ac, dist, delta)
    fast = solve_fast(p_ac, dist, delta, tol_bits=1e-7)
    assert abs(ref.leakage_bits - fast.leakage_bits) <= TOL
    assert ref.leakage_bits >= fast.lower_bound_bits - 1e-7
    assert ref.distortion <= delta * (1 + 1e-6)


def test_solves_pure_clusters_where_the_direct_model_stopped(bench):
    # The benchmark's hard instance with 96 clusters of 1.5 users on average, every cluster pure:
    # Clarabel on rel_entr(p_ac @ Q, p_a * (p_c @ Q)) stopped with InsufficientProgress at 0.1 x Delta0
    p_ac, dist = bench.hard_instance(96, 1.5, seed=2)
    assert np.all(p_ac.min(axis=0) == 0)
    delta = 0.1 * perfect_privacy_distortion(p_ac, dist)
    assert_agrees_with_the_certified_solver(p_ac, dist, delta)


def test_solves_64_clusters_of_real_ratings_where_the_direct_model_stopped(ratings_csv):
    from privmap.offline.data._dataset import load_dataset
    ds = load_dataset(ratings_csv, private="gender")
    qz = quantize(ds.public, 64, seed=0)
    p_ac = joint_prior(ds.private, qz.labels, len(ds.classes), qz.k)
    dist = pairwise(qz.centers, qz.centers, "l2")
    assert_agrees_with_the_certified_solver(p_ac, dist, 0.6 * perfect_privacy_distortion(p_ac, dist))


def test_a_stop_short_of_optimal_raises_with_clarabel_status_and_residuals(bench):
    p_ac, dist = bench.hard_instance(32)
    with pytest.raises(SolverError, match=r"attempt 0: status MaxTime .*primal residual .*dual residual"):
        solve_cvxpy(p_ac, dist, 0.3 * perfect_privacy_distortion(p_ac, dist), time_limit_s=1e-9)


def _bsc_model():
    """The conic model of the binary symmetric channel at crossover 0.2, budget 0.1: (problem, Q)."""
    p_ac, dist = bsc(0.2)
    problem, Q, _ = conic_model(p_ac, dist, 0.1, forbidden_pairs(p_ac, dist, 0.1))
    return problem, Q


def test_a_stop_other_than_a_numerical_stall_is_not_retried():
    # a first attempt allowed no iterations stops with MaxIterations, not InsufficientProgress:
    # the second settings (which would solve it) are not tried
    with pytest.raises(SolverError, match="attempt 0: status MaxIterations") as err:
        clarabel(_bsc_model()[0], None, attempts=({"max_iter": 0}, {}))
    assert "attempt 1" not in str(err.value)


def test_the_dual_codebook_is_a_distribution_per_output_and_the_posteriors_of_used_outputs(random_instance,
                                                                                          budget):
    p_ac, dist = random_instance(4, 20, n_private=7)
    res = solve_cvxpy(p_ac, dist, budget(p_ac, dist, 0.3))
    p_a = p_ac.sum(axis=1)
    assert res.codebook.shape == (7, 20)
    assert np.allclose(p_a @ np.exp(res.codebook), 1.0, rtol=0, atol=1e-12)     # every output, used or not
    P = p_ac @ res.table
    used = P.sum(axis=0) > 1e-6
    assert used.sum() < used.size, "every output is used: the instance no longer tests unused ones"
    posteriors = np.log(P[:, used] / P[:, used].sum(axis=0)) - np.log(p_a)[:, None]
    assert np.abs(res.codebook[:, used] - posteriors).max() < 1e-3


@pytest.mark.parametrize("iterations, kept", [((1, 3), 1), ((3, 2), 0)])
def test_a_stalled_attempt_is_a_start_only_when_asked_the_one_with_smaller_residuals(iterations, kept):
    # both attempts stop short (MaxIterations counted as a stall here): strict raises, a start
    # for the polish takes the iterate of the attempt with the smaller residuals, never the
    # rescue's (an AlmostSolved short of the tolerance, counted as a stall too)
    attempts = tuple({"max_iter": n} for n in iterations)
    stalls = ("MaxIterations", "AlmostSolved")
    with pytest.raises(SolverError, match="attempt 0: status MaxIterations .*attempt 1: status MaxIterations"):
        clarabel(_bsc_model()[0], None, attempts=attempts, stalls=stalls)
    problem, Q = _bsc_model()
    raw, attempt = clarabel(problem, None, stalled_ok=True, attempts=attempts, stalls=stalls,
                            rescue={"max_iter": 4})       # stalls closer (3.7e-5), yet is never the start
    assert str(raw.status) == "MaxIterations" and attempt == kept and raw.iterations == iterations[kept]
    assert Q.value is not None                             # the start's iterate is loaded


def test_a_start_takes_the_rescue_attempt_where_it_succeeds_after_the_others_stalled():
    attempts, stalls = ({"max_iter": 1}, {"max_iter": 3}), ("MaxIterations",)
    raw, attempt = clarabel(_bsc_model()[0], None, stalled_ok=True, attempts=attempts, stalls=stalls, rescue={})
    assert str(raw.status) == "Solved" and attempt == 2
    with pytest.raises(SolverError, match="attempt 1: status MaxIterations"):   # the reference has no rescue
        clarabel(_bsc_model()[0], None, attempts=attempts, stalls=stalls)


def test_a_stalled_start_is_returned_as_a_table_with_rows_on_the_simplex_and_no_certificate(monkeypatch):
    # what solve_cvxpy makes of a stalled attempt's iterate when asked for a start: a table whose
    # rows sum to 1, an infinite gap (nothing is certified) and the attempt and status it came from
    from privmap.offline.solvers.reference import _conic

    def stalling(problem, time_limit_s, **kwargs):
        kwargs.update(attempts=({"max_iter": 1}, {"max_iter": 3}), stalls=("MaxIterations", "AlmostSolved"))
        if kwargs.get("rescue") is not None:
            kwargs["rescue"] = {"max_iter": 4}        # the rescue stalls too
        return clarabel(problem, time_limit_s, **kwargs)

    monkeypatch.setattr(_conic, "clarabel", stalling)
    p_ac, dist = bsc(0.2)
    with pytest.raises(SolverError, match="attempt 1: status MaxIterations"):
        solve_cvxpy(p_ac, dist, 0.1)
    start = solve_cvxpy(p_ac, dist, 0.1, stalled_ok=True)
    assert start.info["clarabel_status"] == "MaxIterations" and start.info["attempt"] == 1   # smaller residuals
    assert start.gap_bits == np.inf and np.allclose(start.table.sum(axis=1), 1.0)
