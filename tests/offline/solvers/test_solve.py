"""solve(): a cold fast solve that gives up is certified from the conic reference's answer."""
import numpy as np
import pytest
from privmap.offline._errors import InfeasibleError, SolverError
from privmap.offline.solvers import _fast_path, _solve
from privmap.offline.solvers._cvxpy_solver import solve_cvxpy


@pytest.fixture
def instance(random_instance, budget):
    """Four private classes, K = 20, and a budget that binds."""
    p_ac, dist = random_instance(3, 20, n_private=4)
    return p_ac, dist, budget(p_ac, dist, 0.3)


@pytest.fixture
def cold_path_gives_up(monkeypatch):
    """The fast solver's path raises as it does after max_iter steps, when it starts cold; the
    runs it was asked to make are recorded (True: warm-started)."""
    runs = []
    run = _fast_path._DualNewton.run

    def gives_up_cold(self, warm=None):
        runs.append(warm is not None)
        if warm is None:
            raise SolverError("fast solver: no certificate within 2000 Newton steps")
        return run(self, warm)

    monkeypatch.setattr(_fast_path._DualNewton, "run", gives_up_cold)
    return runs


def test_a_cold_fast_solve_that_gives_up_is_certified_from_the_conic_reference(instance, cold_path_gives_up):
    p_ac, dist, delta = instance
    result = _solve.solve(p_ac, dist, delta, tol_bits=1e-5)
    reference = solve_cvxpy(p_ac, dist, delta)
    assert cold_path_gives_up == [False, True]
    assert result.solver == "fast" and result.gap_bits <= 1e-5
    assert result.info["started_from"] == reference.solver
    assert "2000 Newton steps" in result.info["cold_failure"]
    assert result.distortion <= delta * (1 + 1e-9)
    assert abs(result.leakage_bits - reference.leakage_bits) <= 1e-5


def test_a_warm_started_solve_that_gives_up_raises(instance, monkeypatch):
    # its caller decides: a build runs it again cold (_steps._solve_from)
    p_ac, dist, delta = instance
    start = _solve.solve(p_ac, dist, delta)
    monkeypatch.setattr(_fast_path._DualNewton, "run",
                        lambda self, warm=None: (_ for _ in ()).throw(SolverError("gave up")))
    with pytest.raises(SolverError, match="^gave up$"):
        _solve.solve(p_ac, dist, delta, warm_start=start)


def test_a_conic_model_above_the_limit_raises_the_fast_solvers_error(instance, cold_path_gives_up, monkeypatch):
    p_ac, dist, delta = instance
    monkeypatch.setattr(_solve, "CONIC_FALLBACK_MAX", p_ac.size * dist.shape[1] - 1)
    with pytest.raises(SolverError, match="2000 Newton steps$"):
        _solve.solve(p_ac, dist, delta)
    assert cold_path_gives_up == [False]


def test_both_failures_are_named_when_the_start_from_the_reference_gives_up_too(instance, monkeypatch):
    p_ac, dist, delta = instance
    monkeypatch.setattr(_fast_path._DualNewton, "run",
                        lambda self, warm=None: (_ for _ in ()).throw(SolverError(f"gave up {warm is None}")))
    with pytest.raises(SolverError, match="gave up True; started from the conic reference's answer: gave up False"):
        _solve.solve(p_ac, dist, delta)


def test_an_infeasible_budget_is_not_retried(instance, monkeypatch):
    p_ac, dist, _ = instance
    monkeypatch.setattr(_solve, "_from_conic", lambda *args: pytest.fail("retried an infeasible budget"))
    with pytest.raises(InfeasibleError):
        _solve.solve(p_ac, dist + 1.0, 0.5)                # every table costs at least 1
