"""solve(): many private classes start from the conic reference where the interior point does not
answer, and the fast solver polishes and certifies its answer; a cold fast solve that gives up is
certified from that answer too. The interior point is set aside here (``no_interior``): its own
start is tested in test_solve_starts_from_the_interior_point_with_many_classes.py."""
import pytest

from privmap.offline._errors import InfeasibleError, SolverError
from privmap.offline.solvers import _solve, fast, reference, solve, solve_cvxpy, solve_fast
from privmap.offline.solvers._solve import CONIC_FIRST_CLASSES, WARM_START_MAX_CLASSES


@pytest.fixture(autouse=True)
def no_interior(monkeypatch):
    """No instance here starts from the interior point: the conic reference is the start left
    for the instances it refuses (forbidden pairs, a tight budget) or fails on."""
    monkeypatch.setattr(_solve, "INTERIOR_FIRST_CLASSES", 10**9)


@pytest.fixture
def instance(random_instance, budget):
    """Four private classes (below CONIC_FIRST_CLASSES), K = 20, and a budget that binds."""
    p_ac, dist = random_instance(3, 20, n_private=4)
    return p_ac, dist, budget(p_ac, dist, 0.3)


@pytest.fixture
def many_classes(random_instance, budget):
    """CONIC_FIRST_CLASSES private classes, K = 20, and a budget that binds."""
    p_ac, dist = random_instance(5, 20, n_private=CONIC_FIRST_CLASSES)
    return p_ac, dist, budget(p_ac, dist, 0.3)


class _Runs(list):
    """The fast solver's runs in order; ``fail`` names the kinds that give up."""

    def __init__(self):
        super().__init__()
        self.fail = set()


@pytest.fixture
def runs(monkeypatch):
    """Records the fast solver's runs ("cold", "warm" or "polish"); those named in ``runs.fail``
    raise as the path does after max_iter steps."""
    record = _Runs()
    run = fast.solve_fast

    def recorded(*args, **kwargs):
        kind = "polish" if kwargs.get("polish") is not None else "warm" if kwargs.get("warm_start") is not None \
            else "cold"
        record.append(kind)
        if kind in record.fail:
            raise SolverError(f"fast solver: {kind} run gave up within 2000 Newton steps")
        return run(*args, **kwargs)

    monkeypatch.setattr(fast, "solve_fast", recorded)
    return record


def test_a_cold_fast_solve_that_gives_up_is_certified_from_the_conic_reference(instance, runs):
    p_ac, dist, delta = instance
    runs.fail.add("cold")
    result = solve(p_ac, dist, delta, tol_bits=1e-5)
    reference = solve_cvxpy(p_ac, dist, delta)
    assert runs == ["cold", "polish"]
    assert result.solver == "fast" and result.gap_bits <= 1e-5
    assert result.info["started_from"] == reference.solver
    assert "cold run gave up" in result.info["cold_failure"]
    assert result.distortion <= delta * (1 + 1e-9)
    assert abs(result.leakage_bits - reference.leakage_bits) <= 1e-5


def test_few_classes_take_the_fast_path_alone(instance, runs):
    result = solve(*instance)
    assert runs == ["cold"] and "started_from" not in result.info


def test_many_classes_start_from_the_conic_reference_and_certify_it(many_classes, runs):
    p_ac, dist, delta = many_classes
    result = solve(p_ac, dist, delta, tol_bits=1e-5)
    reference = solve_cvxpy(p_ac, dist, delta)
    assert runs == ["polish"]
    assert result.info["started_from"] == reference.solver and "cold_failure" not in result.info
    assert result.gap_bits <= 1e-5 and result.distortion <= delta
    assert abs(result.leakage_bits - reference.leakage_bits) <= 1e-5
    cold = solve_fast(p_ac, dist, delta, tol_bits=1e-5)
    assert abs(result.leakage_bits - cold.leakage_bits) <= 1e-5


def test_a_reference_that_fails_on_many_classes_leaves_the_cold_path(many_classes, runs, monkeypatch):
    def fails(*args, **kwargs):
        raise SolverError("cvxpy/Clarabel did not reach an optimum")

    monkeypatch.setattr(reference, "solve_cvxpy", fails)
    result = solve(*many_classes)
    assert runs == ["cold"] and result.gap_bits <= 1e-5
    assert result.info["conic_failure"] == "cvxpy/Clarabel did not reach an optimum"
    runs.fail.add("cold")
    with pytest.raises(SolverError, match="did not reach an optimum; then the cold fast solve: .*cold run gave up"):
        solve(*many_classes)


def test_a_warm_started_solve_that_gives_up_raises(instance, runs):
    # its caller decides: a build runs it again cold (_program._solve_from)
    p_ac, dist, delta = instance
    start = solve(p_ac, dist, delta)
    runs.fail.add("warm")
    with pytest.raises(SolverError, match="warm run gave up"):
        solve(p_ac, dist, delta, warm_start=start)
    assert runs == ["cold", "warm"]


@pytest.mark.parametrize("classes, kind", [(WARM_START_MAX_CLASSES, "warm"), (WARM_START_MAX_CLASSES + 1, "cold")])
def test_a_warm_start_is_set_aside_above_the_classes_it_pays_for(classes, kind, random_instance, budget, runs,
                                                                   monkeypatch):
    # many classes: the warm duals cost more than a cold path (UCI Adult marital-status, 5.6x);
    # the conic start is kept out of the way so only the warm-or-cold choice is seen
    monkeypatch.setattr(_solve, "CONIC_FIRST_PAIRS_PER_CLASS", 0)
    p_ac, dist = random_instance(3, 12, n_private=classes)
    delta = budget(p_ac, dist, 0.3)
    start = solve(p_ac, dist, delta)
    again = solve(p_ac, dist, delta, warm_start=start)
    assert runs == ["cold", kind]
    assert abs(again.leakage_bits - start.leakage_bits) <= start.gap_bits + again.gap_bits


def test_a_many_class_table_above_the_pairs_a_class_takes_the_fast_path_first(many_classes, runs, monkeypatch):
    p_ac, dist, delta = many_classes
    monkeypatch.setattr(_solve, "CONIC_FIRST_PAIRS_PER_CLASS", dist.size // CONIC_FIRST_CLASSES - 1)
    result = solve(p_ac, dist, delta)
    assert runs == ["cold"] and "started_from" not in result.info
    runs.fail.add("cold")
    assert solve(p_ac, dist, delta).info["started_from"] == "cvxpy-clarabel"
    assert runs == ["cold", "cold", "polish"]


def test_a_conic_model_above_the_limit_raises_the_fast_solvers_error(many_classes, runs, monkeypatch):
    p_ac, dist, delta = many_classes
    monkeypatch.setattr(_solve, "CONIC_FIRST_PAIRS_PER_CLASS", dist.size // CONIC_FIRST_CLASSES - 1)
    monkeypatch.setattr(_solve, "CONIC_FALLBACK_MAX", p_ac.size * dist.shape[1] - 1)
    runs.fail.add("cold")
    with pytest.raises(SolverError, match="cold run gave up within 2000 Newton steps$"):
        solve(p_ac, dist, delta)
    assert runs == ["cold"]


def test_both_failures_are_named_when_the_polish_gives_up_too(instance, runs):
    runs.fail.update({"cold", "polish"})
    with pytest.raises(SolverError, match="cold run gave up .*; started from the conic reference's answer: "
                                          "fast solver: polish run gave up"):
        solve(*instance)


@pytest.mark.parametrize("classes", [4, CONIC_FIRST_CLASSES])
def test_an_infeasible_budget_is_not_retried(classes, random_instance, monkeypatch):
    p_ac, dist = random_instance(3, 20, n_private=classes)
    monkeypatch.setattr(_solve, "_polished", lambda *args: pytest.fail("asked for a start to polish"))
    with pytest.raises(InfeasibleError):
        solve(p_ac, dist + 1.0, 0.5)                # every table costs at least 1


def test_a_many_class_start_on_real_data_is_certified_as_the_conic_reference_gave_it(adult_occupations):
    """Equilibrated, Clarabel stalls here and the polish had to follow its path (10 CPU-s); the
    third attempt for a start, without equilibration, gives an answer certified as it is."""
    result = solve(*adult_occupations)
    assert result.info["started_from"] == "cvxpy-clarabel" and result.info["polish"] == "as given"
    assert result.gap_bits <= 1e-5
