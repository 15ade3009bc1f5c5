"""The path following of the fast solver (offline/solvers/_fast_path.py): cold or warm started, it
ends in a certificate, reports its progress up to one, and says so when its Newton steps run out."""
import dataclasses
import math

import numpy as np
import pytest
from privmap.offline._errors import SolverError
from privmap.offline.solvers._fast_solver import solve_fast


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


def test_new_pairs_late_on_the_path_reheat_it_at_most_reheat_max_times_the_pass_tau(monkeypatch,
                                                                                  anisotropic_instance):
    """A pricing pass that finds pairs beating their rows by far more than tau re-centres the path
    higher, but by at most _REHEAT_MAX times the tau of the pass: re-centring as high as the
    margins asked threw the small-tau centring away pass after pass, and a fold of the UCI Adult
    K = 4096 build ran out of Newton steps. On this anisotropic instance (Adult-like geometry)
    the uncapped rule asks for about 19 times; the capped path still certifies cvxpy's optimum."""
    from privmap.offline.solvers import _fast_path as path
    from privmap.offline.solvers._cvxpy_solver import solve_cvxpy
    from privmap.offline.solvers._perfect import perfect_privacy_distortion
    ratios = []
    along = path._DualNewton._along_tangent

    def recorded(self, ev, t_theta, t_mu, new_tau):
        ratios.append(new_tau / ev["tau"])
        return along(self, ev, t_theta, t_mu, new_tau)

    monkeypatch.setattr(path._DualNewton, "_along_tangent", recorded)
    p_ac, dist = anisotropic_instance(2, 600)
    delta = 0.5 * perfect_privacy_distortion(p_ac, dist)
    res = solve_fast(p_ac, dist, delta, tol_bits=1e-6)
    assert any(r > 1.0 for r in ratios), "no pass re-centred the path: the instance no longer tests the cap"
    assert path._REHEAT_MAX == 16.0 and max(ratios) <= 16.0 * (1 + 1e-12)
    assert res.gap_bits <= 1e-6 and res.distortion <= delta
    assert abs(res.leakage_bits - solve_cvxpy(p_ac, dist, delta).leakage_bits) <= 1e-5
