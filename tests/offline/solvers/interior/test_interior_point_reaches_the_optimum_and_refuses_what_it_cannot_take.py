"""solve_interior: a strictly feasible table near the optimum whose own duals certify it, from the
primal-dual point or, where that fails, the log barrier; and a typed refusal of the instances
neither takes."""
import math

import numpy as np
import pytest

from privmap.offline._errors import InfeasibleError, SolverError
from privmap.offline._information import expected_distortion, leakage_bits
from privmap.offline.solvers import solve_cvxpy, solve_fast, solve_interior
from privmap.offline.solvers.interior import _barrier, _primal_dual, _program


@pytest.mark.parametrize("seed, classes, K, frac", [(0, 3, 24, 0.3), (1, 7, 30, 0.2), (2, 12, 20, 0.5)])
def test_the_answer_is_feasible_near_the_optimum_and_the_polish_certifies_it(
        seed, classes, K, frac, random_instance, budget):
    p_ac, dist = random_instance(seed, K, n_private=classes)
    delta = budget(p_ac, dist, frac)
    start = solve_interior(p_ac, dist, delta)
    assert np.allclose(start.table.sum(axis=1), 1.0) and start.table.min() >= 0
    assert start.distortion == pytest.approx(expected_distortion(p_ac.sum(axis=0), start.table, dist), rel=1e-12)
    assert start.distortion <= delta * (1 + 1e-6)                # up to the path's round-off
    assert start.leakage_bits == pytest.approx(leakage_bits(p_ac, start.table), rel=1e-9)
    optimum = solve_cvxpy(p_ac, dist, delta).leakage_bits
    assert start.leakage_bits == pytest.approx(optimum, abs=2e-5)
    polished = solve_fast(p_ac, dist, delta, polish=start)
    assert polished.gap_bits <= 1e-5 and polished.leakage_bits == pytest.approx(optimum, abs=1e-5)


def test_a_row_without_mass_is_sent_to_its_cheapest_output(random_instance, budget):
    p_ac, dist = random_instance(3, 16, n_private=6)
    p_ac[:, 5] = 0.0
    p_ac /= p_ac.sum()
    start = solve_interior(p_ac, dist, budget(p_ac, dist, 0.3))
    assert start.table[5, np.argmin(dist[5])] == 1.0 and start.table[5].sum() == 1.0


def test_a_forbidden_pair_is_refused(random_instance, budget):
    p_ac, dist = random_instance(4, 12, n_private=6)
    delta = budget(p_ac, dist, 0.3)
    dist[2, 7] = np.inf
    with pytest.raises(SolverError, match="forbidden pair"):
        solve_interior(p_ac, dist, delta)


def test_a_budget_at_the_least_distortion_is_refused(random_instance):
    p_ac, dist = random_instance(4, 12, n_private=6)
    least = float(p_ac.sum(axis=0) @ dist.min(axis=1))
    with pytest.raises(SolverError, match="least distortion"):
        solve_interior(p_ac, dist, least)


def test_a_budget_below_the_least_distortion_is_infeasible(random_instance):
    p_ac, dist = random_instance(4, 12, n_private=6)
    with pytest.raises(InfeasibleError):
        solve_interior(p_ac, dist + 1.0, 0.5)


def test_an_instance_above_the_size_limit_is_refused(random_instance, budget, monkeypatch):
    p_ac, dist = random_instance(4, 12, n_private=6)
    monkeypatch.setattr(_program, "MAX_ENTRIES", 6 * 12 * 12 - 1)
    with pytest.raises(SolverError, match="entries"):
        solve_interior(p_ac, dist, budget(p_ac, dist, 0.3))


def test_where_the_primal_dual_point_stops_short_the_barrier_answers(random_instance, budget, monkeypatch):
    p_ac, dist = random_instance(4, 12, n_private=6)
    delta = budget(p_ac, dist, 0.3)
    monkeypatch.setattr(_primal_dual, "_MAX_STEPS", 3)
    start = solve_interior(p_ac, dist, delta)
    assert start.solver == "interior-barrier" and "no certificate within 3 steps" in start.info["primal_dual"]
    assert solve_fast(p_ac, dist, delta, polish=start).gap_bits <= 1e-5


def test_when_both_points_stop_short_it_raises_instead_of_answering(random_instance, budget, monkeypatch):
    p_ac, dist = random_instance(4, 12, n_private=6)
    monkeypatch.setattr(_primal_dual, "_MAX_STEPS", 3)
    monkeypatch.setattr(_barrier, "_MAX_STEPS", 3)
    with pytest.raises(SolverError, match="within 3 Newton steps"):
        solve_interior(p_ac, dist, budget(p_ac, dist, 0.3))


def test_the_primal_dual_point_answers_a_real_program_in_under_half_the_barriers_steps(adult_workclass):
    """UCI Adult, K = 96, the 9 work classes private: the primal-dual point's own gap reaches the
    tolerance, and one pricing pass at its duals proves its table."""
    start = solve_interior(*adult_workclass)
    assert start.solver == "interior-primal-dual" and start.info["path_gap_bits"] <= 1e-5
    assert solve_fast(*adult_workclass, polish=start).info["polish"] == "as given"
    barrier = _barrier.barrier(_program.instance(*adult_workclass), 1e-5 * math.log(2), None)
    assert 2 * start.info["newton_steps"] <= barrier.info["newton_steps"]


def test_its_duals_certify_a_real_many_class_answer_as_given(adult_occupations):
    """UCI Adult, K = 64, 15 occupations private: one pricing pass at the interior point's own
    codebook and multiplier proves its table (where Clarabel's equilibrated attempts stall; here
    the barrier's, as the primal-dual point's own bound stops near 2.5e-5 bits)."""
    start = solve_interior(*adult_occupations)
    polished = solve_fast(*adult_occupations, polish=start)
    assert polished.info["polish"] == "as given" and polished.gap_bits <= 1e-5



@pytest.mark.parametrize("support_nats", [0.0, 1e-3])
def test_the_barriers_answer_never_leaks_more_than_its_dense_centred_point(support_nats, random_instance, budget,
                                                                          monkeypatch):
    """The restricted table is kept only where it leaks no more than the dense point whose duals
    certify it; with no slack in the duals' choice (0 nats) pairs the optimum needs are left out."""
    p_ac, dist = random_instance(2, 20, n_private=12)
    delta = budget(p_ac, dist, 0.5)
    inst = _program.instance(p_ac, dist, delta)
    monkeypatch.setattr(_barrier, "_on_support", lambda inst, point, t, steps, tol: (point, t, steps))
    dense = _barrier.barrier(inst, 1e-5 * math.log(2), None)
    monkeypatch.undo()
    monkeypatch.setattr(_program, "_SUPPORT_NATS", support_nats)
    start = _barrier.barrier(inst, 1e-5 * math.log(2), None)
    assert start.leakage_bits <= dense.leakage_bits
    assert solve_fast(p_ac, dist, delta, polish=start).gap_bits <= 1e-5


def test_the_primal_dual_answer_keeps_the_support_within_the_tolerance(adult_workclass, monkeypatch):
    """The restricted table has fewer pairs than the dense kept iterate and is within the tolerance
    of its bound; without slack in the duals' choice (0 nats) it is not, and the dense table is
    answered."""
    inst = _program.instance(*adult_workclass)
    tol = 1e-5 * math.log(2)
    monkeypatch.setattr(_primal_dual, "_on_support", lambda inst, point, bound, tol: point.q)
    dense, _ = _primal_dual.primal_dual(inst, tol, None)
    monkeypatch.undo()
    start, _ = _primal_dual.primal_dual(inst, tol, None)
    assert dense is not None and start is not None
    bound = dense.leakage_bits - dense.info["path_gap_bits"]
    assert np.count_nonzero(start.table) < np.count_nonzero(dense.table) / 2
    assert start.leakage_bits - bound <= 1e-5 and start.distortion <= adult_workclass[2] * (1 + 1e-9)
    assert solve_fast(*adult_workclass, polish=start).info["polish"] == "as given"
    monkeypatch.setattr(_program, "_SUPPORT_NATS", 0.0)
    tight, _ = _primal_dual.primal_dual(inst, tol, None)
    assert tight is not None and np.count_nonzero(tight.table) == np.count_nonzero(dense.table)


def test_a_gap_within_the_tolerance_that_stops_falling_ends_the_path(adult_workclass, monkeypatch):
    """With no gap small enough to stop at, the path ends _PATIENCE steps after its least gap once
    that is within the tolerance, instead of running to its step limit."""
    monkeypatch.setattr(_primal_dual, "_STOP", 0.0)
    start, message = _primal_dual.primal_dual(_program.instance(*adult_workclass), 1e-5 * math.log(2), None)
    assert start is not None and start.info["path_gap_bits"] <= 1e-5
    assert message.endswith("gap within tolerance, no lower for 5 steps")
    assert start.info["newton_steps"] < _primal_dual._MAX_STEPS
