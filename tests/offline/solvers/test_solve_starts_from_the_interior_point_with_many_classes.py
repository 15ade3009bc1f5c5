"""solve(): from INTERIOR_FIRST_CLASSES private classes a cold solve starts from the interior
point, whose answer the fast solver polishes and certifies; where it refuses or fails, the solve
goes on as before and says why."""
import numpy as np
import pytest

from privmap.offline._errors import SolverError
from privmap.offline.solvers import interior, solve, solve_cvxpy, starts_from_interior
from privmap.offline.solvers._solve import INTERIOR_FIRST_CLASSES


@pytest.fixture
def many_classes(random_instance, budget):
    """INTERIOR_FIRST_CLASSES private classes, K = 24, and a budget that binds."""
    p_ac, dist = random_instance(6, 24, n_private=INTERIOR_FIRST_CLASSES)
    return p_ac, dist, budget(p_ac, dist, 0.3)


def test_many_classes_start_from_the_interior_point_and_are_certified(many_classes):
    result = solve(*many_classes)
    assert result.info["started_from"] in ("interior-primal-dual", "interior-barrier")
    assert "interior_failure" not in result.info
    assert result.gap_bits <= 1e-5
    assert result.leakage_bits == pytest.approx(solve_cvxpy(*many_classes).leakage_bits, abs=1e-5)


def test_fewer_classes_start_on_the_fast_path(random_instance, budget):
    p_ac, dist = random_instance(6, 24, n_private=INTERIOR_FIRST_CLASSES - 1)
    delta = budget(p_ac, dist, 0.3)
    assert not starts_from_interior(p_ac, dist, delta)
    assert "started_from" not in solve(p_ac, dist, delta).info


def test_forbidden_pairs_and_a_tight_budget_are_not_offered_to_it(many_classes):
    p_ac, dist, delta = many_classes
    forbidden = dist.copy()
    forbidden[0, 1] = np.inf
    assert not starts_from_interior(p_ac, forbidden, delta)
    assert not starts_from_interior(p_ac, dist, float(p_ac.sum(axis=0) @ dist.min(axis=1)))
    assert "interior_failure" not in solve(p_ac, forbidden, delta).info


def test_a_failed_interior_point_is_named_and_the_solve_goes_on(many_classes, monkeypatch):
    def fails(*args, **kwargs):
        raise SolverError("interior point: broke down for the test")

    monkeypatch.setattr(interior, "solve_interior", fails)
    result = solve(*many_classes)
    assert result.info["interior_failure"] == "interior point: broke down for the test"
    assert not result.info.get("started_from", "").startswith("interior") and result.gap_bits <= 1e-5


def test_the_interior_start_reports_its_progress_in_order(many_classes):
    seen = []
    solve(*many_classes, progress=seen.append)
    assert len(seen) >= 2 and seen == sorted(seen) and 0 <= seen[0] and seen[-1] <= 1
