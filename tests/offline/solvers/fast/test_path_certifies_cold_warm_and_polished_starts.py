"""The path following of the fast solver (src/privmap/offline/solvers/fast/_path.py): cold or warm started, it
ends in a certificate, reports its progress up to one, and says so when its Newton steps run out."""
import dataclasses
import math

import numpy as np
import pytest

from privmap.offline._errors import SolverError
from privmap.offline.solvers import solve_fast
from privmap.offline.solvers.fast import _newton, _path, _state


def test_a_path_cut_short_of_a_certificate_is_a_clear_error(random_instance, budget):
    """With too few Newton steps the path ends without a certificate: SolverError names the limit
    and the best gap, instead of returning an uncertified table."""
    p_ac, dist = random_instance(3, 20)
    with pytest.raises(SolverError, match=r"no certificate within 2 Newton steps \(best gap"):
        solve_fast(p_ac, dist, budget(p_ac, dist, 0.3), max_iter=2)


def test_progress_is_reported_up_to_one(random_instance, budget):
    seen = []
    p_ac, dist = random_instance(13, 8)
    solve_fast(p_ac, dist, budget(p_ac, dist, 0.2), progress=seen.append)
    assert seen and seen[-1] == 1.0 and all(0.0 <= f <= 1.0 for f in seen)


@pytest.mark.parametrize("seed, n_private", [(0, 2), (1, 3)])
@pytest.mark.parametrize("shift", [0.0, 0.05])
def test_a_warm_started_solve_certifies_the_same_optimum_as_a_cold_one(seed, n_private, shift,
                                                                       random_instance, budget):
    # The warm start comes from the instance before its distortion moved (as in the codebook
    # step); both answers are certified within tol_bits, so their leakages differ by at most that.
    p_ac, dist = random_instance(seed, 60, n_private)
    delta = budget(p_ac, dist, 0.3)
    before = solve_fast(p_ac, dist, delta, tol_bits=1e-6)
    moved = dist * (1 + shift * np.random.default_rng(seed).random(dist.shape))
    cold = solve_fast(p_ac, moved, delta, tol_bits=1e-6)
    warm = solve_fast(p_ac, moved, delta, tol_bits=1e-6, warm_start=before)
    assert warm.gap_bits <= 1e-6 and cold.gap_bits <= 1e-6
    assert abs(warm.leakage_bits - cold.leakage_bits) <= 1e-6
    assert warm.leakage_bits - warm.info["lower_bound_bits"] <= 1e-6
    assert warm.distortion <= delta * (1 + 1e-12)


def test_a_warm_start_from_a_table_without_a_multiplier_is_certified_too(random_instance, budget):
    p_ac, dist = random_instance(2, 50)
    delta = budget(p_ac, dist, 0.4)
    cold = solve_fast(p_ac, dist, delta, tol_bits=1e-6)
    bare = dataclasses.replace(cold, multiplier=math.nan)
    warm = solve_fast(p_ac, dist, delta, tol_bits=1e-6, warm_start=bare)
    assert abs(warm.leakage_bits - cold.leakage_bits) <= 1e-6


def test_a_warm_start_of_another_shape_is_a_clear_error(random_instance, budget):
    p_ac, dist = random_instance(3, 30)
    delta = budget(p_ac, dist, 0.4)
    other = solve_fast(p_ac[:, :20] / p_ac[:, :20].sum(), dist[:20, :20], budget(p_ac, dist, 0.4))
    with pytest.raises(ValueError, match="warm_start table has shape"):
        solve_fast(p_ac, dist, delta, warm_start=other)


def test_new_pairs_late_on_the_path_reheat_it_at_most_reheat_max_times_the_pass_tau(anisotropic_instance):
    """A pricing pass that finds pairs beating their rows by far more than tau re-centres the path
    higher, but by at most _REHEAT_MAX times the tau of the pass: re-centring as high as the
    margins asked threw the small-tau centring away pass after pass, and a fold of the UCI Adult
    K = 4096 build ran out of Newton steps. On this anisotropic instance (Adult-like geometry)
    the uncapped rule asks for about 19 times; the capped path still certifies cvxpy's optimum."""
    from privmap.offline.solvers import perfect_privacy_distortion, solve_cvxpy
    p_ac, dist = anisotropic_instance(2, 600)
    delta = 0.5 * perfect_privacy_distortion(p_ac, dist)
    state = _state.set_up(p_ac, dist, delta, 1e-6, 2000)
    assert _path.start(state) is None
    _path.begin_path(state, _newton.evaluate(state, state.theta, state.mu, state.scale))
    ratios, res = [], None                 # tau after / before each step that priced in new pairs
    while res is None:
        tau, added = state.ev["tau"], state.stats["added_candidates"]
        res = _path.path_step(state)
        if res is None and state.stats["added_candidates"] > added:
            ratios.append(state.ev["tau"] / tau)
    assert any(r > 1.0 for r in ratios), "no pass re-centred the path: the instance no longer tests the cap"
    assert state.settings.reheat_max == 16.0 and max(ratios) <= 16.0 * (1 + 1e-12)
    assert res.gap_bits <= 1e-6 and res.distortion <= delta
    assert abs(res.leakage_bits - solve_cvxpy(p_ac, dist, delta).leakage_bits) <= 1e-5



def _pass_ratios(p_ac, dist, delta, settings):
    """The path of this instance step by step: tau after / before each step that priced in new pairs,
    and the answer."""
    state = _state.set_up(p_ac, dist, delta, 1e-6, 2000, settings=settings)
    assert _path.start(state) is None
    _path.begin_path(state, _newton.evaluate(state, state.theta, state.mu, state.scale))
    ratios, res = [], None
    while res is None:
        tau, added = state.ev["tau"], state.stats["added_candidates"]
        res = _path.path_step(state)
        if res is None and state.stats["added_candidates"] > added:
            ratios.append(state.ev["tau"] / tau)
    return ratios, res


def test_with_more_than_two_classes_new_pairs_do_not_reheat_the_path(random_instance, budget):
    """With more than two classes a pass's new pairs join the candidates at the tau of the pass
    (Settings.reheat_max_classes = 1): re-centring higher cost UCI Adult's occupation folds the
    certificate (2,000 Newton steps). On this five-class instance the binary rule would re-centre
    up to about ten times higher; without it the path certifies cvxpy's optimum in fewer steps."""
    from privmap.offline.solvers import solve_cvxpy
    p_ac, dist = random_instance(3, 80, 5)
    delta = budget(p_ac, dist, 0.2)
    assert _state.Settings().reheat_max_classes == 1.0
    binary_rule, old = _pass_ratios(p_ac, dist, delta, _state.Settings(reheat_max_classes=16.0))
    assert max(binary_rule) > 2.0, "no pass re-centred the path: the instance no longer tests the rule"
    ratios, res = _pass_ratios(p_ac, dist, delta, _state.Settings())
    assert ratios and max(ratios) <= 1.0
    assert res.info["newton_steps"] < old.info["newton_steps"]
    assert res.gap_bits <= 1e-6 and res.distortion <= delta
    assert abs(res.leakage_bits - solve_cvxpy(p_ac, dist, delta).leakage_bits) <= 1e-5

#: A UCI Adult instance (five numeric columns, race private: five classes; half the rows, K = 16):
#: training users per class and cluster, and the clusters' representatives (classical scaling of
#: the build's distances, rounded). One cluster holds 88 % of the users; its path found no ascent
#: at its starting temperature nor at ten times it, and the solver gave up there.
_LOPSIDED_COUNTS = np.array([
    [205, 0, 2, 3, 2, 4, 0, 5, 0, 3, 0, 0, 0, 2, 2, 0],
    [669, 7, 8, 3, 2, 38, 1, 15, 1, 16, 1, 1, 6, 4, 4, 0],
    [2132, 4, 12, 20, 0, 72, 5, 34, 2, 24, 4, 0, 16, 10, 10, 0],
    [183, 1, 0, 1, 0, 7, 0, 1, 0, 3, 0, 0, 3, 1, 0, 0],
    [18078, 97, 233, 191, 47, 1028, 54, 315, 22, 408, 46, 0, 206, 89, 56, 2]])
_LOPSIDED_CENTRES = np.array([
    [-0.0824, -7.5401, -1.0983, -185.68, 18242.0638], [-0.4668, -3.3905, 12.2876, 183.3142, -81755.2556],
    [-2.0933, 1.7977, -2.1189, -131.0286, 3200.1615], [-0.529, -2.1727, -0.7934, -168.0989, 13219.0939],
    [-1.8913, 1.0226, -0.6825, -85.8169, -9018.7547], [0.0, 0.0043, 0.0016, 1719.2972, 18250.1119],
    [-0.6827, 4.8055, 3.2491, -153.7558, 9340.1204], [0.3455, -3.7681, 0.1497, -176.3648, 15453.079],
    [1.3627, 20.1765, 14.9255, -112.7644, -1744.8033], [-0.3085, 0.2298, -1.3447, -159.2239, 10820.1099],
    [-0.5424, 4.7326, 5.8054, -147.5048, 7650.1324], [1.0663, 6.9979, -39.6449, -33.8071, -23066.6668],
    [0.2696, -4.7953, -0.0211, -171.831, 14228.0874], [1.9501, -1.1375, 8.6778, -181.2191, 16762.0714],
    [-0.7779, -5.8561, -2.524, -134.9885, 4272.1549], [2.3802, -11.1064, 3.1311, -60.5277, -15851.7061]])


def test_a_path_without_ascent_at_its_start_backs_off_and_certifies_the_reference_optimum():
    from privmap.offline.data._distortion import pairwise
    from privmap.offline.solvers import perfect_privacy_distortion, solve_cvxpy
    p_ac = _LOPSIDED_COUNTS / _LOPSIDED_COUNTS.sum()
    dist = pairwise(_LOPSIDED_CENTRES, _LOPSIDED_CENTRES, "l2")
    delta = 0.5 * perfect_privacy_distortion(p_ac, dist)
    fast = solve_fast(p_ac, dist, delta)
    assert fast.gap_bits <= 1e-5 and fast.distortion <= delta * (1 + 1e-9)
    assert fast.leakage_bits == pytest.approx(solve_cvxpy(p_ac, dist, delta).leakage_bits, abs=1e-5)


@pytest.mark.parametrize("n_private, systems", [(2, "dense"), (5, "dense"), (2, "iterative")])
def test_a_stalled_path_heats_its_temperature_and_still_certifies_the_reference_optimum(
        n_private, systems, random_instance, budget):
    """Line searches that cut Newton's step below Settings.stalled_step Settings.stalled_run times in
    a row at one tau raise tau by Settings.stall_heat, at most Settings.stall_heats_max times; the
    path still ends in cvxpy's optimum. Here every step counts as cut (stalled_step above 1) and
    one such step is a stall, so the path heats at every centring step until the cap stops it.
    With the iterative Newton solves forced, no stall counts far up the path, where the loose
    block-diagonal CG solves them (above Settings.jacobi_tau times the starting tau)."""
    from privmap.offline.solvers import solve_cvxpy
    p_ac, dist = random_instance(3, 30, n_private)
    delta = budget(p_ac, dist, 0.3)
    settings = _state.Settings(stalled_step=2.0, stalled_run=1, dense_max=0 if systems == "iterative" else 600)
    state = _state.set_up(p_ac, dist, delta, 1e-5, 2000, settings=settings)
    assert _path.start(state) is None
    _path.begin_path(state, _newton.evaluate(state, state.theta, state.mu, state.scale))
    heats, res = [], None                  # (tau before, tau after) of each stall heat
    while res is None:
        tau, before = state.ev["tau"], state.stats["stall_heats"]
        res = _path.path_step(state)
        if state.stats["stall_heats"] > before:
            heats.append((tau, state.ev["tau"]))
    assert all(new == pytest.approx(min(settings.stall_heat * old, state.scale)) for old, new in heats)
    if systems == "dense":
        assert res.info["stall_heats"] == settings.stall_heats_max == len(heats)
    else:   # every centring step is cut, yet none heats while the block-diagonal CG solves loosely
        assert all(old <= settings.jacobi_tau * state.scale * (1 + 1e-12) for old, _ in heats)
        assert res.info["stall_heats"] <= settings.stall_heats_max
    assert res.gap_bits <= 1e-5 and res.distortion <= delta * (1 + 1e-9)
    assert res.leakage_bits == pytest.approx(solve_cvxpy(p_ac, dist, delta).leakage_bits, abs=1e-5)


@pytest.fixture
def seven_classes(random_instance, budget):
    """Seven private classes, K = 20: the conic reference's duals prove its answer within 1e-6 bits."""
    p_ac, dist = random_instance(2, 20, n_private=7)
    return p_ac, dist, budget(p_ac, dist, 0.3)


def test_a_polish_certifies_the_conic_reference_as_given_without_a_newton_step(seven_classes):
    from privmap.offline.solvers import solve_cvxpy
    p_ac, dist, delta = seven_classes
    reference = solve_cvxpy(p_ac, dist, delta)
    polished = solve_fast(p_ac, dist, delta, tol_bits=1e-6, polish=reference)
    assert polished.info["polish"] == "as given" and polished.info["newton_steps"] == 0
    assert polished.gap_bits <= 1e-6 and polished.distortion <= delta
    assert abs(polished.leakage_bits - reference.leakage_bits) <= 1e-6
    assert abs(polished.leakage_bits - solve_fast(p_ac, dist, delta, tol_bits=1e-6).leakage_bits) <= 1e-6


def test_a_polish_of_an_answer_that_is_not_optimal_follows_the_path_to_the_optimum(seven_classes, budget):
    # the optimum at a looser budget leaks less than this budget allows: its duals prove nothing here
    p_ac, dist, delta = seven_classes
    looser = solve_fast(p_ac, dist, budget(p_ac, dist, 0.6), tol_bits=1e-6)
    polished = solve_fast(p_ac, dist, delta, tol_bits=1e-6, polish=looser)
    cold = solve_fast(p_ac, dist, delta, tol_bits=1e-6)
    assert polished.info["polish"] == "path" and polished.info["newton_steps"] > 0
    assert polished.gap_bits <= 1e-6 and polished.distortion <= delta
    assert abs(polished.leakage_bits - cold.leakage_bits) <= 1e-6


def test_a_polish_with_a_warm_start_or_of_another_shape_is_a_clear_error(seven_classes):
    p_ac, dist, delta = seven_classes
    answer = solve_fast(p_ac, dist, delta)
    with pytest.raises(ValueError, match="give warm_start or polish, not both"):
        solve_fast(p_ac, dist, delta, warm_start=answer, polish=answer)
    with pytest.raises(ValueError, match=r"polish table has shape \(20, 20\), expected \(20, 19\)"):
        solve_fast(p_ac, dist[:, :19], delta, polish=answer)


@pytest.mark.parametrize("seed", [0, 4])
def test_the_dual_codebook_certifies_the_reference_where_its_posteriors_alone_do_not(seed, random_instance,
                                                                                   budget):
    from privmap.offline.solvers import solve_cvxpy
    p_ac, dist = random_instance(seed, 20, n_private=7)
    delta = budget(p_ac, dist, 0.3)
    reference = solve_cvxpy(p_ac, dist, delta)
    by_codebook = solve_fast(p_ac, dist, delta, tol_bits=1e-6, polish=reference)
    by_posteriors = solve_fast(p_ac, dist, delta, tol_bits=1e-6, polish=dataclasses.replace(reference, codebook=None))
    assert by_codebook.info["polish"] == "as given" and by_codebook.gap_bits <= 1e-7
    assert by_posteriors.info["polish"] == "path" and by_posteriors.gap_bits <= 1e-6
