"""Mixed-precision refinement: both interior points form their Schur complement from float32
products while refinement against the exact float64 products settles each direction, and reach
the answers of the float64 path; a direction that does not settle is taken again in float64, as is
every later step."""
import math

import numpy as np
import pytest

from privmap.offline.solvers import _row_schur
from privmap.offline.solvers.interior import _primal_dual, _program
from privmap.offline.solvers.perfect import _interior
from privmap.offline.solvers.perfect._linear_program import _coefficients, _reduced, _row_minima


def test_the_float32_products_give_the_complement_to_float32_precision_symmetric_in_float64():
    rng = np.random.default_rng(0)
    U, weights = rng.random((300, 4)), rng.random((300, 7)) + 0.1
    half = rng.standard_normal((7, 4, 4))
    T = half + half.transpose(0, 2, 1)
    exact, single = _row_schur.row_schur(U, weights, T), _row_schur.row_schur(U, weights, T, single=True)
    assert single.dtype == np.float64 and np.array_equal(single, single.T)
    assert 0 < np.abs(single - exact).max() <= 1e-5 * np.abs(exact).max()


def _steps_taken(module, monkeypatch):
    """Spy on ``module._mehrotra_step``: the ``single`` flag of every step that returned."""
    step, taken = module._mehrotra_step, []

    def spy(*args, single):
        answer = step(*args, single=single)
        taken.append(single)
        return answer

    monkeypatch.setattr(module, "_mehrotra_step", spy)
    return taken


def _delta0_point(p_ac, dist):
    p_c, delta_a = _coefficients(p_ac)
    return _interior.interior_point(p_c, delta_a, dist, rel_tol=1e-9, bound=lambda v: float(
        _row_minima(dist, _reduced(p_c, delta_a, dist, v))[0].sum()))


def test_the_perfect_privacy_point_takes_float32_steps_and_certifies_delta0_as_in_float64(
        random_instance, monkeypatch):
    p_ac, dist = random_instance(3, 96, n_private=9)
    taken = _steps_taken(_interior, monkeypatch)
    mixed = _delta0_point(p_ac, dist)
    assert mixed.certified and taken[0] and not taken[-1]    # float32 first, float64 at the end
    assert taken == sorted(taken, reverse=True)               # never back to float32
    monkeypatch.setattr(_row_schur, "SINGLE_CORRECTION", -1.0)  # no float32 direction settles
    taken.clear()
    double = _delta0_point(p_ac, dist)
    assert double.certified and not any(taken)
    assert mixed.upper == pytest.approx(double.upper, rel=1e-9) and mixed.lower == pytest.approx(double.lower, rel=1e-9)
    assert abs(mixed.steps - double.steps) <= 2


def test_a_float32_direction_that_does_not_settle_is_taken_again_in_float64_and_every_step_after(
        random_instance, monkeypatch):
    p_ac, dist = random_instance(4, 64, n_private=7)
    step, schur, singles = _interior._mehrotra_step, _row_schur.row_schur, []
    monkeypatch.setattr(_interior, "_mehrotra_step", lambda *args, single: step(*args, single=False))
    double = _delta0_point(p_ac, dist)

    def spy(*args, single=False):
        singles.append(single)
        return schur(*args, single=single)

    monkeypatch.setattr(_interior, "_mehrotra_step", step)
    monkeypatch.setattr(_interior, "row_schur", spy)
    monkeypatch.setattr(_row_schur, "SINGLE_CORRECTION", -1.0)      # no float32 direction settles
    falls = _delta0_point(p_ac, dist)
    assert singles[:2] == [True, False] and not any(singles[2:])
    assert np.array_equal(falls.table, double.table) and falls.lower == double.lower


def test_the_program_19_point_takes_float32_steps_and_answers_as_in_float64(adult_workclass, monkeypatch):
    """UCI Adult, K = 96, the 9 work classes private."""
    inst = _program.instance(*adult_workclass)
    tol = 1e-5 * math.log(2)
    taken = _steps_taken(_primal_dual, monkeypatch)
    mixed, _ = _primal_dual.primal_dual(inst, tol, None)
    assert mixed is not None and taken[0] and taken == sorted(taken, reverse=True)
    monkeypatch.setattr(_row_schur, "SINGLE_CORRECTION", -1.0)
    taken.clear()
    double, _ = _primal_dual.primal_dual(inst, tol, None)
    assert double is not None and not any(taken)
    assert mixed.leakage_bits == pytest.approx(double.leakage_bits, abs=1e-7)
    assert mixed.info["path_gap_bits"] <= 1e-5 and double.info["path_gap_bits"] <= 1e-5


@pytest.mark.parametrize("module", [_interior, _primal_dual])
def test_a_float32_complement_no_shift_makes_positive_definite_is_formed_again_in_float64(
        module, adult_workclass, monkeypatch):
    """Float32's round-off can cost the complement its definiteness: that step is taken again in
    float64, not ended as a breakdown."""
    factorise, calls = module.shifted_cholesky, []

    def fails_once(schur, shifts, *, single=False):
        calls.append(1)
        if len(calls) == 1:                     # a complement no shift makes positive definite
            return factorise(-np.eye(schur.shape[0]), shifts, single=single)
        return factorise(schur, shifts, single=single)

    monkeypatch.setattr(module, "shifted_cholesky", fails_once)
    taken = _steps_taken(module, monkeypatch)
    if module is _interior:
        p_ac, dist, _ = adult_workclass
        assert _delta0_point(p_ac, dist).certified
    else:
        answer, _ = _primal_dual.primal_dual(_program.instance(*adult_workclass), 1e-5 * math.log(2), None)
        assert answer is not None and answer.info["path_gap_bits"] <= 1e-5
    assert taken and not any(taken)             # the first step was taken again in float64, and every later one


def test_a_float32_complement_no_shift_helps_falls_to_float64_and_a_float64_one_breaks_down():
    negative = -np.eye(3)
    with pytest.raises(_row_schur.SingleFalls):
        _row_schur.shifted_cholesky(negative, (1e-12, 1e-8), single=True)
    with pytest.raises(_row_schur.SchurBreakdown):
        _row_schur.shifted_cholesky(negative, (1e-12, 1e-8))


@pytest.mark.parametrize("correction, falls", [(1e-10, False), (1e-8, True), (np.nan, True)])
def test_a_direction_settles_when_its_last_correction_is_within_the_threshold(correction, falls):
    direction = np.array([[2.0, -1.0], [0.5, 0.0]])
    correction = np.full_like(direction, correction)
    if falls:
        with pytest.raises(_row_schur.SingleFalls):
            _row_schur.require_settled(correction, direction)
    else:
        _row_schur.require_settled(correction, direction)
