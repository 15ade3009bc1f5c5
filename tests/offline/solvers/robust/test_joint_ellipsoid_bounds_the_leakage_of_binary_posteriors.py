"""The joint ellipsoid of binary posteriors and the certified leakage bound it gives:
each step of its proof checked numerically, and the bound against the exact leakage at points of
the set (its coverage by simulation is test_robust_class_bound.py's, for every number of classes)."""
import math

import numpy as np
import pytest
from scipy import optimize, stats

from privmap.offline._information import leakage_bits
from privmap.offline.solvers import certified_leakage_bits, certified_max_output_leakage_bits, confidence_set
from privmap.offline.solvers.robust import _certified
from privmap.offline.solvers.robust._confidence import joint_radius


def _population(rng, k, users):
    """Population posteriors pi_c = p(a_1|c) (K,) and one training sample's counts (2, K)."""
    pi = rng.uniform(0.02, 0.98, k)
    sizes = rng.multinomial(users, rng.dirichlet(np.ones(k) * 2))
    ones = rng.binomial(sizes, pi)
    return pi, np.stack([sizes - ones, ones]).astype(float)


def _binary_prior(cs, pi):
    return cs.prior(np.stack([1 - pi, pi]))


def _table(rng, k, kind):
    return np.eye(k) if kind == "identity" else rng.dirichlet(np.full(k, 0.3), size=k)


def _into_set(cs, pi):
    """``pi`` moved towards the ellipsoid's centre until it lies in the ellipsoid; the per-cluster
    balls (convex, around the same centre here) are respected by clipping first."""
    centre = cs.empirical[1]
    pi = np.clip(pi, np.maximum(centre - cs.radius / 2, 0), np.minimum(centre + cs.radius / 2, 1))
    spent = float(cs.counts @ (pi - centre) ** 2)
    return pi if spent <= cs.joint_radius else centre + (pi - centre) * math.sqrt(cs.joint_radius / spent)


def test_joint_radius_holds_the_sum_of_squared_deviations_in_the_stated_share_of_samples():
    """The tail statement behind r directly, at the sub-Gaussian worst case pi = 1/2 and small n_c."""
    rng = np.random.default_rng(5)
    sizes = np.array([1, 2, 3, 5, 8, 13, 21, 34])
    failure, trials = 0.2, 4000
    r = joint_radius(len(sizes), failure)
    deviations = rng.binomial(sizes, 0.5, size=(trials, len(sizes))) / sizes - 0.5
    held = int(((deviations ** 2) @ sizes <= r).sum())
    assert stats.binomtest(held, trials, 1 - failure, alternative="less").pvalue > 1e-3


def test_joint_radius_shrinks_with_failure_and_grows_with_clusters_and_is_below_the_kl_route():
    assert joint_radius(0, 0.05) == 0.0
    assert joint_radius(16, 0.01) > joint_radius(16, 0.05) > 0
    assert joint_radius(64, 0.05) > joint_radius(16, 0.05)
    kl_route = 0.5 * (256 * math.log(2) + stats.gamma.ppf(0.95, 256))
    assert joint_radius(256, 0.05) < 0.5 * kl_route
    with pytest.raises(ValueError):
        joint_radius(3, 1.5)


def test_sets_split_the_failure_probability_between_balls_and_ellipsoid():
    counts = np.array([[30.0, 10.0, 5.0], [10.0, 30.0, 5.0]])
    cs = confidence_set(counts, 0.9)
    assert cs.joint_radius == pytest.approx(joint_radius(3, 0.05))
    wide = confidence_set(np.vstack([counts, counts]), 0.9)       # |A| = 4: one ellipsoid per class
    assert wide.joint_radius == pytest.approx(joint_radius(3, 0.05 / 4))


@pytest.mark.parametrize("seed", range(3))
def test_jensen_step_output_deviations_cost_no_more_than_the_clusters(seed):
    """sum_j N P(j) (pi_j - pi_hat_j)^2 <= sum_c n_c (pi_c - pi_hat_c)^2, and the per-output
    Cauchy-Schwarz interval holds every output's deviation at the ellipsoid's edge."""
    rng = np.random.default_rng(seed)
    pi, counts = _population(rng, 10, 500)
    cs = confidence_set(counts, 0.9)
    q = _table(rng, 10, "mixed")
    view = _certified.joint_view(cs, q)
    for _ in range(50):
        point = _into_set(cs, cs.empirical[1] + rng.normal(0, 0.3, 10))
        joint = _binary_prior(cs, point) @ q
        mass = joint.sum(axis=0)
        pi_j = joint[1, mass > 0] / mass[mass > 0]
        assert view.n_eff * float(view.mass @ (pi_j - view.centre) ** 2) <= \
            float(cs.counts @ (point - cs.empirical[1]) ** 2) + 1e-9
        assert np.all(view.lo - 1e-12 <= pi_j) and np.all(pi_j <= view.hi + 1e-12)


def test_pinsker_and_the_compensation_identity_hold_numerically():
    """KL >= 2 (x - y)^2 (nats) behind the KL route, and I(A; C^) <= sum_j P(j) D(pi_j || y) for any
    fixed y, which lets the bound hold the marginal at its centre."""
    rng = np.random.default_rng(9)
    x, y = rng.uniform(0, 1, 1000), rng.uniform(0.01, 0.99, 1000)
    assert np.all(_certified.binary_kl_nats(x, y) >= 2 * (x - y) ** 2 - 1e-15)
    for _ in range(30):
        pi, counts = _population(rng, 6, 300)
        cs = confidence_set(counts, 0.9)
        q = _table(rng, 6, "mixed")
        joint = _binary_prior(cs, pi) @ q
        mass = joint.sum(axis=0)
        fixed = float(rng.uniform(0.05, 0.95))
        upper = float(mass @ _certified.binary_kl_nats(joint[1] / mass, fixed)) / math.log(2)
        assert leakage_bits(_binary_prior(cs, pi), q) <= upper + 1e-12


def test_penalised_maximum_is_at_least_a_fine_grid_maximum_and_close_to_it():
    rng = np.random.default_rng(3)
    for _ in range(200):
        lo = rng.uniform(0, 1, 4)
        hi = np.minimum(1, lo + rng.uniform(0, 0.6, 4))
        x0 = lo + (hi - lo) * rng.uniform(0, 1, 4)
        y, k = float(rng.uniform(0.05, 0.95)), math.exp(rng.uniform(-3, 6))
        bound = _certified.penalised_max(x0, lo, hi, y, k)
        for j in range(4):
            grid = np.linspace(lo[j], hi[j], 4001)
            exact = float((_certified.binary_kl_nats(grid, y) - k * (grid - x0[j]) ** 2).max())
            assert exact - 1e-12 <= bound[j] <= exact + 1e-4


@pytest.mark.parametrize("seed", range(4))
def test_certified_bound_is_at_least_the_leakage_an_optimiser_finds_in_the_set(seed):
    """The exact I(A; C^) maximised over the intersected set (SLSQP from several starts, each result
    checked to lie in the set) never exceeds the certified figure, nor does the per-output figure."""
    rng = np.random.default_rng(seed)
    k = 5
    _, counts = _population(rng, k, 150 + 100 * seed)
    cs = confidence_set(counts, 0.9)
    q = _table(rng, k, "identity" if seed % 2 else "mixed")
    centre, n, r = cs.empirical[1], cs.counts.astype(float), cs.joint_radius
    bounds = [(max(0.0, centre[c] - cs.radius[c] / 2), min(1.0, centre[c] + cs.radius[c] / 2)) for c in range(k)]
    ellipsoid = {"type": "ineq", "fun": lambda p: r - float(n @ (p - centre) ** 2)}
    found = 0.0
    for _ in range(12):
        start = _into_set(cs, rng.uniform(0, 1, k))
        res = optimize.minimize(lambda p: -leakage_bits(_binary_prior(cs, np.clip(p, 0, 1)), q), start,
                                bounds=bounds, constraints=[ellipsoid], method="SLSQP")
        point = _into_set(cs, np.clip(res.x, 0, 1))
        found = max(found, leakage_bits(_binary_prior(cs, point), q))
    assert certified_leakage_bits(cs, q) >= found
    eps = certified_max_output_leakage_bits(cs, q)
    for _ in range(100):
        point = _into_set(cs, centre + rng.normal(0, 0.5, k))
        joint = _binary_prior(cs, point) @ q
        p_j, p_a = joint.sum(axis=0), joint.sum(axis=1)
        with np.errstate(divide="ignore"):
            ratio = np.abs(np.log2(joint[:, p_j > 0] / p_j[p_j > 0]) - np.log2(p_a)[:, None])
        assert np.max(ratio) <= eps


def test_joint_bound_is_far_below_the_per_cluster_bound_with_many_clusters():
    """K = 200 clusters of about 100 users: the ellipsoid does not let every cluster move by its
    full radius at once, so the certified figure of the identity release drops well below the
    per-cluster balls' figure."""
    rng = np.random.default_rng(17)
    _, counts = _population(rng, 200, 20_000)
    cs = confidence_set(counts, 0.95)
    q = np.eye(200)
    joint = _certified.joint_bound_bits(cs, q)
    per_cluster = _certified.chi_square_bits(cs, q)
    assert joint < 0.5 * per_cluster
    assert certified_leakage_bits(cs, q) <= joint * (1 + 1e-6)
    assert joint >= leakage_bits(cs.prior(), q)


def test_certified_figure_stays_above_the_leakage_on_a_moved_centre():
    """A centre prior other than the empirical one (a smoothed build) moves the balls' centre; the
    certified figure never falls below the leakage on that centre, even when the centre is
    sharper than the data (the joint bound stands aside when the centre leaves the ellipsoid)."""
    rng = np.random.default_rng(23)
    _, counts = _population(rng, 30, 20_000)
    n_c = counts.sum(axis=0)
    empirical = counts[1] / n_c
    for push in (0.0, 0.3, 1.0):             # the centre's posteriors pushed away from the marginal
        pi = np.clip(empirical + push * (empirical - empirical @ n_c / n_c.sum()), 0.01, 0.99)
        centre = np.stack([1 - pi, pi]) * (n_c / n_c.sum())
        cs = confidence_set(counts, 0.95, centre_prior=centre)
        q = np.eye(30)
        assert certified_leakage_bits(cs, q) >= leakage_bits(centre, q)
