"""The confidence set of priors and the certified worst-case leakage over it."""
import math

import numpy as np
import pytest

from privmap.offline._information import expected_distortion, leakage_bits
from privmap.offline.solvers import (
    certified_leakage_bits,
    certified_max_output_leakage_bits,
    confidence_set,
    counts_from_prior,
    l1_radius,
    solve,
    solve_robust,
)
from privmap.offline.solvers.robust._confidence import max_entropy_point, min_entropy_point


def _entropy(x):
    x = x[x > 0]
    return float(-np.sum(x * np.log2(x)))


def _random_in_ball(rng, centre, radius, draws):
    """Points of the simplex within L1 ``radius`` of ``centre``: mixtures of the centre with random
    simplex points, pushed out to the ball's boundary where possible."""
    m = len(centre)
    out = []
    for _ in range(draws):
        y = rng.dirichlet(np.full(m, 0.3))
        d = np.abs(y - centre).sum()
        t = 1.0 if d <= radius else radius / d
        out.append(centre + t * (y - centre))
    return out


@pytest.mark.parametrize("m", [2, 3, 5])
def test_entropy_extremes_of_an_l1_ball_bound_every_point_of_it(m):
    rng = np.random.default_rng(m)
    for _ in range(30):
        x = rng.dirichlet(np.ones(m))
        e = float(rng.uniform(0, 1.2))
        lo, hi = min_entropy_point(x, e), max_entropy_point(x, e)
        for point in (lo, hi):
            assert point.min() >= -1e-15 and abs(point.sum() - 1) < 1e-12
            assert np.abs(point - x).sum() <= e + 1e-12
        values = [_entropy(y) for y in _random_in_ball(rng, x, e, 300)]
        assert min(values) >= _entropy(lo) - 1e-12
        assert max(values) <= _entropy(hi) + 1e-12


def _instance(rng, n_classes=2, k=6, k_out=6, users=120):
    posterior = rng.dirichlet(np.ones(n_classes) * 2, size=k).T          # (|A|, K)
    sizes = rng.multinomial(users, rng.dirichlet(np.ones(k) * 3))
    counts = np.stack([rng.multinomial(s, posterior[:, c]) for c, s in enumerate(sizes)], axis=1)
    centres = rng.uniform(0, 1, size=(k, 2))
    outs = rng.uniform(0, 1, size=(k_out, 2))
    D = ((centres[:, None, :] - outs[None, :, :]) ** 2).sum(axis=2)
    return counts.astype(float), D


def _into_ellipsoid(cs, post):
    """Posteriors ``post`` (|A|, K) of the balls moved towards the centre until they lie in the set's
    joint ellipsoid too (binary sets; the set is the intersection); unchanged without one."""
    if not math.isfinite(cs.joint_radius):
        return post
    spent = float(cs.counts @ (post[1] - cs.empirical[1]) ** 2)
    return post if spent <= cs.joint_radius else cs.posterior + (post - cs.posterior) * math.sqrt(cs.joint_radius / spent)


def _worst_found(cs, q, rng, draws=400):
    """The largest I(A; C^) of ``q`` over sampled priors of the set: random points of each ball and
    the adversarial corners (every posterior pushed to its ball's edge towards one class), each
    moved into the joint ellipsoid where the set has one."""
    best = 0.0
    k = cs.posterior.shape[1]
    n_classes = cs.posterior.shape[0]
    for i in range(draws):
        if i % 2:
            post = np.stack([_random_in_ball(rng, cs.posterior[:, c], cs.radius[c], 1)[0] for c in range(k)], axis=1)
        else:
            post = cs.posterior.copy()
            for c in range(k):
                a = rng.integers(n_classes)
                target = np.zeros(n_classes)
                target[a] = 1.0
                d = np.abs(target - post[:, c]).sum()
                t = 1.0 if d <= cs.radius[c] else cs.radius[c] / d
                post[:, c] = post[:, c] + t * (target - post[:, c])
        best = max(best, leakage_bits(cs.prior(_into_ellipsoid(cs, post)), q))
    return best


@pytest.mark.parametrize("seed", range(4))
def test_certified_bound_is_at_least_the_worst_case_a_search_over_the_set_finds(seed):
    rng = np.random.default_rng(seed)
    counts, D = _instance(rng, n_classes=2 + seed % 2)
    cs = confidence_set(counts, 0.9)
    p_ac = cs.prior()
    delta = 0.5 * float(p_ac.sum(axis=0) @ D.mean(axis=1))
    q = solve(p_ac, D, max(delta, float(p_ac.sum(axis=0) @ D.min(axis=1))), solver="fast").table
    bound = certified_leakage_bits(cs, q)
    assert bound >= leakage_bits(p_ac, q)
    assert bound >= _worst_found(cs, q, rng)
    eps = certified_max_output_leakage_bits(cs, q)
    for _ in range(100):                     # the per-output bound, on sampled priors of the set
        post = np.stack([_random_in_ball(rng, cs.posterior[:, c], cs.radius[c], 1)[0]
                         for c in range(cs.posterior.shape[1])], axis=1)
        joint = cs.prior(_into_ellipsoid(cs, post)) @ q
        p_j, p_a = joint.sum(axis=0), joint.sum(axis=1)
        live = p_j > 0
        with np.errstate(divide="ignore"):
            ratio = np.abs(np.log2(joint[:, live] / p_j[live]) - np.log2(p_a)[:, None])
        assert np.nanmax(np.where(np.isfinite(ratio), ratio, np.inf)) <= eps


def test_constant_release_is_certified_to_leak_nothing():
    rng = np.random.default_rng(7)
    counts, D = _instance(rng)
    cs = confidence_set(counts, 0.95)
    q = np.zeros_like(D)
    q[:, 2] = 1.0
    assert certified_leakage_bits(cs, q) < 1e-8


@pytest.mark.parametrize("n_c", [[40, 40, 40], [5, 200, 1000]])
def test_confidence_set_covers_the_true_posteriors_at_least_as_often_as_stated(n_c):
    """Simulation: draw counts from known posteriors, build the set, count how often it holds them."""
    rng = np.random.default_rng(sum(n_c))
    truth = np.array([[0.2, 0.5, 0.9], [0.8, 0.5, 0.1]])
    confidence, trials, held = 0.8, 400, 0
    for _ in range(trials):
        counts = np.stack([rng.multinomial(n, truth[:, c]) for c, n in enumerate(n_c)], axis=1)
        cs = confidence_set(counts, confidence)
        held += len(cs.outside(truth, counted=counts.sum(axis=0))) == 0
    assert held / trials >= confidence


def test_l1_radius_shrinks_with_users_and_grows_with_confidence():
    assert l1_radius(0, 2, 0.05) == 2.0
    assert l1_radius(100, 2, 0.05) > l1_radius(400, 2, 0.05) > 0
    assert l1_radius(100, 2, 0.01) > l1_radius(100, 2, 0.05)
    with pytest.raises(ValueError):
        l1_radius(10, 1, 0.05)


def test_counts_are_recovered_only_from_an_unsmoothed_prior():
    counts = np.array([[3.0, 0.0, 5.0], [1.0, 7.0, 4.0]])
    assert np.array_equal(counts_from_prior(counts / 20, 20), counts)
    assert counts_from_prior((counts + 0.5) / 23, 20) is None


def test_robust_search_never_certifies_worse_than_the_average_case_table_and_meets_the_budget():
    rng = np.random.default_rng(3)
    counts, D = _instance(rng, k=8, k_out=8, users=200)
    cs = confidence_set(counts, 0.95)
    p_c = cs.p_c
    delta = 0.4 * float(p_c @ D.mean(axis=1))
    res = solve_robust(cs, D, delta, solve=lambda prior, b: solve(prior, D, b))
    average = res.candidates[0]
    assert average["name"] == "average-case"
    assert res.certified_bits <= average["certified_bits"] + 1e-12
    assert expected_distortion(p_c, res.solved.table, D) <= delta * (1 + 1e-6)
    assert res.certified_bits == pytest.approx(certified_leakage_bits(cs, res.solved.table))


def test_robust_optimum_matches_cvxpy_when_the_set_shrinks_to_the_estimate():
    """With (nearly) unlimited users the set is the estimate itself, the robust program is program
    (19), and the robust search's certified figure is cvxpy's optimum."""
    pytest.importorskip("cvxpy")
    rng = np.random.default_rng(11)
    counts, D = _instance(rng, k=5, k_out=5, users=200)
    counts = counts * 10 ** 9
    cs = confidence_set(counts, 0.95)
    delta = 0.4 * float(cs.p_c @ D.mean(axis=1))
    reference = solve(cs.prior(), D, delta, solver="cvxpy")
    res = solve_robust(cs, D, delta, solve=lambda prior, b: solve(prior, D, b))
    assert res.certified_bits == pytest.approx(reference.leakage_bits, abs=2e-4)


def test_robust_figure_lies_between_cvxpy_optimum_and_the_certified_figure_of_cvxpy_table():
    """With a real set: the worst case over the set of any table is at least program (19)'s optimum
    on the estimate (cvxpy), and the robust search does no worse than certifying cvxpy's table."""
    pytest.importorskip("cvxpy")
    rng = np.random.default_rng(12)
    counts, D = _instance(rng, k=5, k_out=5, users=400)
    cs = confidence_set(counts, 0.95)
    delta = 0.4 * float(cs.p_c @ D.mean(axis=1))
    reference = solve(cs.prior(), D, delta, solver="cvxpy")
    res = solve_robust(cs, D, delta, solve=lambda prior, b: solve(prior, D, b))
    assert reference.leakage_bits - 1e-5 <= res.certified_bits
    assert res.certified_bits <= certified_leakage_bits(cs, reference.table) + 1e-4
    assert math.isfinite(res.certified_bits)
