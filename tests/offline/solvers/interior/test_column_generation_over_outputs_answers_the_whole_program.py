"""solve_interior(start_outputs=): the interior point on a few outputs, the others priced by their
best codebooks, answers the whole program: the polish proves it over every pair, as leaky as the
point on every output; the pricing's codebooks are feasible and as good as the conic reference's."""
import cvxpy as cp
import numpy as np
import pytest

from privmap.offline._errors import SolverError
from privmap.offline.solvers import perfect_privacy_table, solve, solve_fast, solve_interior
from privmap.offline.solvers.interior import _columns, _program, _solve


def _perfect_outputs(p_ac, dist):
    """The outputs the perfect-privacy table uses, as a build offers them."""
    return np.flatnonzero(p_ac.sum(axis=0) @ perfect_privacy_table(p_ac, dist)[0] > 0)


@pytest.fixture
def workclass(adult_workclass, monkeypatch):
    """UCI Adult's work classes at K = 96, with the rounds allowed at that size, and the outputs of
    its perfect-privacy table."""
    monkeypatch.setattr(_solve, "MIN_OUTPUTS", 0)
    p_ac, dist, delta = adult_workclass
    return p_ac, dist, delta, _perfect_outputs(p_ac, dist)


def test_below_the_size_where_rounds_pay_the_point_runs_on_every_output(adult_workclass):
    p_ac, dist, delta = adult_workclass
    assert dist.shape[1] < _columns.MIN_OUTPUTS
    start = solve_interior(p_ac, dist, delta, start_outputs=_perfect_outputs(p_ac, dist))
    assert "columns" not in start.info


def test_the_answer_from_a_few_outputs_is_proved_over_every_pair(workclass):
    p_ac, dist, delta, offered = workclass
    start = solve_interior(p_ac, dist, delta, start_outputs=offered)
    columns = start.info["columns"]
    assert not columns["whole"] and columns["outputs"] < dist.shape[1] / 2
    used = np.flatnonzero(start.table.any(axis=0))
    assert used.size <= columns["outputs"]                      # the table lives on the kept outputs
    polished = solve_fast(p_ac, dist, delta, polish=start)
    assert polished.info["polish"] == "as given" and polished.gap_bits <= 1e-5
    everywhere = solve_fast(p_ac, dist, delta, polish=solve_interior(p_ac, dist, delta))
    assert polished.leakage_bits == pytest.approx(everywhere.leakage_bits, abs=1e-5)


def test_solve_passes_the_offered_outputs_to_the_interior_start(workclass):
    p_ac, dist, delta, offered = workclass
    result = solve(p_ac, dist, delta, start_outputs=offered)
    assert result.info["started_from"] == "interior-primal-dual" and not result.info["columns"]["whole"]
    assert result.gap_bits <= 1e-5


def test_the_rounds_report_their_progress_in_order(workclass):
    p_ac, dist, delta, offered = workclass
    seen = []
    start = solve_interior(p_ac, dist, delta, start_outputs=offered, progress=seen.append)
    assert start.info["columns"]["rounds"] >= 2                  # more than one round reported
    assert len(seen) >= 2 and seen == sorted(seen) and 0 <= seen[0] and seen[-1] <= 1


def test_no_output_offered_starts_from_the_cheapest_and_is_proved(workclass):
    p_ac, dist, delta, _ = workclass
    start = solve_interior(p_ac, dist, delta, start_outputs=np.array([], dtype=int))
    assert start.info["columns"]["rounds"] >= 1
    assert solve_fast(p_ac, dist, delta, polish=start).gap_bits <= 1e-5


def test_offered_outputs_too_costly_for_the_budget_are_widened_within_reach(workclass):
    p_ac, dist, delta, _ = workclass
    inst = _program.instance(p_ac, dist, delta)
    far = int(np.argmax(p_ac.sum(axis=0) @ dist))                # the output dearest to every row
    kept = _columns.restricted_outputs(inst, np.array([far]))
    assert far in kept
    assert float(inst.pc @ inst.Dr[:, kept].min(axis=1)) <= inst.least + 0.5 * (delta - inst.least) + 1e-12


def test_where_the_rounds_run_out_the_point_runs_on_every_output(workclass, monkeypatch):
    p_ac, dist, delta, offered = workclass
    monkeypatch.setattr(_solve, "LOSS", -1.0)                   # no loss is ever small enough
    start = solve_interior(p_ac, dist, delta, start_outputs=offered)
    assert start.info["columns"]["whole"] and start.info["columns"]["outputs"] == dist.shape[1]
    assert start.info["columns"]["rounds"] >= 1 and "failure" not in start.info["columns"]
    assert solve_fast(p_ac, dist, delta, polish=start).gap_bits <= 1e-5


def test_a_restricted_program_neither_point_solves_hands_over_to_every_output(workclass, monkeypatch):
    p_ac, dist, delta, offered = workclass
    real = _solve.point

    def failing_when_restricted(inst, tol, progress):
        if inst.D.shape[1] < dist.shape[1]:
            raise SolverError("interior point: both points failed for the test")
        return real(inst, tol, progress)

    monkeypatch.setattr(_solve, "point", failing_when_restricted)
    start = solve_interior(p_ac, dist, delta, start_outputs=offered)
    assert start.info["columns"]["whole"]
    assert start.info["columns"]["failure"] == "interior point: both points failed for the test"
    assert solve_fast(p_ac, dist, delta, polish=start).gap_bits <= 1e-5


@pytest.mark.parametrize("bad", [np.array([[0, 1]]), np.array([0.5]), np.array([-1]), np.array([10_000])])
def test_offered_outputs_that_index_nothing_are_refused_at_any_size(adult_workclass, bad):
    p_ac, dist, delta = adult_workclass
    assert dist.shape[1] < _columns.MIN_OUTPUTS
    with pytest.raises(ValueError, match="start_outputs"):
        solve_interior(p_ac, dist, delta, start_outputs=bad)


def test_pricing_brackets_each_outputs_best_codebook_value_and_decides_its_sign(random_instance, budget):
    """Against the conic reference's value t* of each output's concave program: the codebook's
    value t <= t* <= the upper bound, and either t >= 0 (certified) or the upper bound < 0."""
    p_ac, dist = random_instance(7, 18, n_private=6)
    inst = _program.instance(p_ac, dist, budget(p_ac, dist, 0.3))
    rng = np.random.default_rng(0)
    E = rng.normal(0.0, 0.3, size=(inst.pc.size, 8)) + 0.5 * dist[:, :8] - np.linspace(-0.3, 0.4, 8)
    t, upper, codebooks = _columns.price(inst, E)
    p_a = np.exp(inst.log_p_a)
    assert np.allclose(p_a @ np.exp(codebooks), 1.0)
    assert np.allclose(t, (inst.alpha.T @ codebooks + E).min(axis=0))
    best = []
    for j in range(E.shape[1]):
        ell, top = cp.Variable(p_a.size), cp.Variable()
        cp.Problem(cp.Maximize(top), [inst.alpha.T @ ell + E[:, j] >= top,
                                      cp.log_sum_exp(ell + inst.log_p_a) <= 0]).solve(solver=cp.CLARABEL)
        best.append(float(top.value))
        assert t[j] - 1e-6 <= best[-1] <= upper[j] + 1e-6
        assert t[j] >= 0 or upper[j] < 0
    assert min(best) < 0 < max(best)                                # both kinds of output were priced


def test_the_bound_loss_is_what_the_left_out_outputs_undercut(random_instance, budget):
    p_ac, dist = random_instance(8, 10, n_private=6)
    inst = _program.instance(p_ac, dist, budget(p_ac, dist, 0.3))
    V = np.zeros((inst.pc.size, 3))
    assert _columns.bound_loss(inst, V) == 0.0 and _columns.bound_loss(inst, V[:, :0]) == 0.0
    V[2, 1], V[2, 2], V[4, 0] = -0.5, -0.2, -0.1
    assert _columns.bound_loss(inst, V) == pytest.approx(0.5 * inst.pc[2] + 0.1 * inst.pc[4], rel=1e-12)
