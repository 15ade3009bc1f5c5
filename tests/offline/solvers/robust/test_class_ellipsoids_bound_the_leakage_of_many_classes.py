"""The per-class ellipsoids of a private attribute of more than two classes and the certified
leakage bound they give: coverage by simulation (two classes included), the inner
maximum against a grid, the bound against the exact leakage at points of the set, and its gain
over the per-cluster balls."""
import math

import numpy as np
import pytest
from scipy import stats

from privmap.offline._information import leakage_bits
from privmap.offline.solvers import certified_leakage_bits, certified_max_output_leakage_bits, confidence_set
from privmap.offline.solvers.robust import _certified
from privmap.offline.solvers.robust._confidence import joint_radius


def _population(rng, n_classes, k, users):
    """Population posteriors (|A|, K) and one training sample's counts (|A|, K)."""
    posterior = rng.dirichlet(np.full(n_classes, 2.0), size=k).T
    sizes = rng.multinomial(users, rng.dirichlet(np.full(k, 2.0)))
    counts = np.stack([rng.multinomial(n, posterior[:, c]) for c, n in enumerate(sizes)], axis=1)
    return posterior, counts.astype(float)


def _in_ellipsoids(cs, posterior) -> bool:
    return float(((posterior - cs.empirical) ** 2 @ cs.counts).max()) <= cs.joint_radius


def _into_set(cs, posterior):
    """``posterior`` (|A|, K) moved towards the centre: each column into its ball, then all of them
    together into every class's ellipsoid (the set is convex and holds the centre)."""
    centre = cs.posterior
    far = np.abs(posterior - centre).sum(axis=0)
    scale = np.minimum(1.0, cs.radius / np.maximum(far, 1e-300))
    point = centre + (posterior - centre) * scale[None, :]
    spent = float(((point - centre) ** 2 @ cs.counts).max())
    return point if spent <= cs.joint_radius else centre + (point - centre) * math.sqrt(cs.joint_radius / spent)


def test_sets_of_more_than_two_classes_have_one_ellipsoid_per_class_at_a_share_of_the_failure():
    counts = np.array([[30.0, 10.0, 5.0], [10.0, 30.0, 5.0], [5.0, 5.0, 20.0]])
    cs = confidence_set(counts, 0.9)
    assert cs.joint_radius == pytest.approx(joint_radius(3, 0.05 / 3))
    np.testing.assert_allclose(cs.empirical, counts / counts.sum(axis=0))


@pytest.mark.parametrize("n_classes, k, users, trials", [(2, 4, 60, 300), (2, 12, 400, 300), (3, 6, 150, 120),
                                                       (4, 12, 600, 120)])
def test_ellipsoids_and_certified_bound_cover_the_population_at_least_as_often_as_stated(n_classes, k, users,
                                                                                          trials):
    """Fresh populations, one training sample each: every class's ellipsoid (for two classes the
    one the set keeps) must hold the population's posteriors, and the certified figure of a table
    must be at least the population's own leakage, in at least ``confidence`` of the draws
    (binomial test on the counts)."""
    rng = np.random.default_rng(n_classes * k)
    confidence = 0.5                         # a low level, so that a miscalibrated radius shows
    inside = bounded = 0
    for t in range(trials):
        posterior, counts = _population(rng, n_classes, k, users)
        cs = confidence_set(counts, confidence)
        inside += _in_ellipsoids(cs, posterior)
        q = np.eye(k) if t % 2 else rng.dirichlet(np.full(k, 0.3), size=k)
        bounded += leakage_bits(cs.prior(posterior), q) <= certified_leakage_bits(cs, q)
    for held in (inside, bounded):
        assert stats.binomtest(held, trials, confidence, alternative="less").pvalue > 1e-3


def test_inner_maximum_is_at_least_a_fine_grid_maximum_over_the_box_and_tight_where_concave():
    """Three classes: the dual bound of max over x in a box with sum 1 of sum_a [x_a log(x_a/y_a)
    - k (x_a - c_a)^2] against a grid of the box's slice of the simplex. The bound is never below
    the maximum; where the function is concave on the box (2 k lo > 1) there is no duality gap and
    it is close to it (elsewhere the dual of a non-concave maximum may exceed it)."""
    rng = np.random.default_rng(4)
    for i in range(60):
        centre = rng.dirichlet(np.ones(3) * 3)
        width = rng.uniform(0.02, 0.4, 3) * (centre if i % 2 else 1.0)     # odd draws: lo > 0 ...
        lo, hi = np.clip(centre - width, 0, 1), np.clip(centre + width, 0, 1)
        y, k = rng.dirichlet(np.ones(3) * 3), math.exp(rng.uniform(-3, 8))
        if i % 2:
            k = rng.uniform(1.0, 4.0) / (2 * lo.min())                        # ... and concave on the box
        view = _certified.ClassView(mass=np.ones(1), centre=centre[:, None], lo=lo[:, None], hi=hi[:, None],
                                    marginal=y, lo_a=y, hi_a=y, n_eff=1.0, radius=1.0)
        bound = float(_certified.class_inner_max(view, k)[0])
        a, b = np.meshgrid(np.linspace(lo[0], hi[0], 801), np.linspace(lo[1], hi[1], 801))
        c = 1.0 - a - b
        ok = (c >= lo[2]) & (c <= hi[2])
        x = np.stack([a[ok], b[ok], c[ok]])
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(x > 0, x * np.log(np.where(x > 0, x, 1.0) / y[:, None]), 0.0)
        grid = float((terms - k * (x - centre[:, None]) ** 2).sum(axis=0).max())
        assert grid - 1e-12 <= bound
        if i % 2:
            assert bound <= grid + 1e-3 * max(1.0, abs(grid))


@pytest.mark.parametrize("seed", range(3))
def test_certified_bound_is_at_least_the_leakage_at_points_of_the_set(seed):
    rng = np.random.default_rng(seed)
    k = 8
    _, counts = _population(rng, 3, k, 400 + 300 * seed)
    cs = confidence_set(counts, 0.9)
    q = np.eye(k) if seed % 2 else rng.dirichlet(np.full(k, 0.3), size=k)
    certified, eps = certified_leakage_bits(cs, q), certified_max_output_leakage_bits(cs, q)
    for _ in range(300):
        towards = rng.dirichlet(np.full(3, 0.2), size=k).T           # often near a vertex: telling
        point = _into_set(cs, towards)
        assert leakage_bits(cs.prior(point), q) <= certified
        joint = cs.prior(point) @ q
        p_j, p_a = joint.sum(axis=0), joint.sum(axis=1)
        with np.errstate(divide="ignore"):
            ratio = np.abs(np.log2(joint[:, p_j > 0] / p_j[p_j > 0]) - np.log2(p_a)[:, None])
        assert np.max(ratio) <= eps


def test_class_intervals_narrow_the_per_output_figure_with_many_clusters():
    rng = np.random.default_rng(29)
    _, counts = _population(rng, 3, 60, 60_000)
    cs = confidence_set(counts, 0.95)
    q = rng.dirichlet(np.full(60, 0.3), size=60)
    intervals = _certified.joint_intervals_bits(cs, q)
    assert np.all(np.isfinite(intervals))
    assert certified_max_output_leakage_bits(cs, q) <= float(intervals.max()) * (1 + 1e-6) + 1e-9


def test_class_bound_is_far_below_the_per_cluster_bound_with_many_clusters():
    """K = 200 clusters of about 200 users and 3 classes: the ellipsoids do not let every cluster
    move by its full radius at once, so the certified figure of the identity release drops well
    below the per-cluster balls' figure, and stays above the leakage on the centre."""
    rng = np.random.default_rng(17)
    _, counts = _population(rng, 3, 200, 40_000)
    cs = confidence_set(counts, 0.95)
    q = np.eye(200)
    joint = _certified.joint_bound_bits(cs, q)
    assert joint < 0.5 * _certified.chi_square_bits(cs, q)
    assert certified_leakage_bits(cs, q) <= joint * (1 + 1e-6)
    assert joint >= leakage_bits(cs.prior(), q)
