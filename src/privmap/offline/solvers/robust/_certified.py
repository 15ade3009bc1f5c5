"""The robust program: a mapping whose worst-case leakage over a confidence set of priors is certified, and small.

The per-cluster bound
---------------------
Over the per-cluster balls of :mod:`._confidence` (L1 balls of radius eps_c around p_hat(a|c),
p(c) fixed), a mapping q gives outputs with fixed masses P(j) = sum_c p(c) q(c, j) and
posteriors p(.|j) = sum_c w(c|j) p(.|c), w(c|j) = p(c) q(c, j) / P(j), so for every prior in the balls

    || p(.|j) - p_hat(.|j) ||_1 <= e_j = sum_c w(c|j) eps_c,
    || p(a)   - p_hat(a)   ||_1 <= e_A = sum_c p(c) eps_c.

Since I(A; C^) = H(A) - sum_j P(j) H(A | C^ = j),

    max over the balls of I(A; C^) <= U(q) = Hmax(p_hat(a), e_A) - sum_j P(j) Hmin(p_hat(.|j), e_j),

where Hmax / Hmin are the largest / least entropy in an L1 ball on the simplex, both computed
exactly (:func:`._confidence.max_entropy_point`, :func:`._confidence.min_entropy_point`). U is a
true upper bound (it lets H(A) and each H(A|j) take their own worst case, so it may exceed the
exact maximum, never fall below it). :func:`certified_leakage_bits` evaluates it on any table,
in particular on the shipped integer table; a small relative margin covers float round-off.

The joint bound (|A| = 2)
-------------------------
The set of :mod:`._confidence` also holds the population's binary posteriors pi_c = p(a_1|c) in
the ellipsoid sum_c n_c (pi_c - pi_hat_c)^2 <= r around the empirical ones (a different
centre from the balls' when the prior was smoothed). With p(c) fixed and a table q, output j's
posterior is pi_j = sum_c w(c|j) pi_c, and:

1. Outputs (Jensen). delta_j = pi_j - pi_hat_j = sum_c w(c|j) d_c (d_c = pi_c - pi_hat_c), so
   delta_j^2 <= sum_c w(c|j) d_c^2 and sum_j P(j) delta_j^2 <= sum_c p(c) d_c^2
   <= (1 / N_eff) sum_c n_c d_c^2, with N_eff = min over seen c of n_c / p(c) (N for an
   unsmoothed prior; a cluster of positive p(c) never seen leaves the bound at ``inf``, and so
   does a smoothed centre outside the ellipsoid, so that the figure stays at least the leakage
   on the prior the build declares). Hence
   sum_j N_eff P(j) delta_j^2 <= r. Per output, Cauchy-Schwarz gives |delta_j| <=
   sqrt(r sum_c w(c|j)^2 / n_c) (at most sqrt(r / (N P(j)))); intersected with the balls'
   interval (the set is the intersection) this is an interval [lo_j, hi_j] for pi_j.
2. The marginal (compensation identity). For every fixed y in (0, 1),
   sum_j P(j) D(pi_j || y) = I(A; C^) + D(pi || y) >= I(A; C^) (nats, binary KL D), so the bound
   holds the marginal at the centre's pi_hat and no shift of it has to be priced.
3. Lagrange. For every mu >= 0, on the set
   I <= sum_j P(j) D(pi_hat_j + delta_j || y) - mu (sum_j N_eff P(j) delta_j^2 - r)
     <= mu r + sum_j P(j) max over x in [lo_j, hi_j] of [D(x || y) - mu N_eff (x - pi_hat_j)^2],
   each inner maximum one-dimensional and computed to round-off (:func:`penalised_max`: the
   function is convex, concave, convex in x; a bisection brackets its one interior maximum and
   the tangent bounds it). mu = 0 is each output's own worst case over its interval. The least
   value over a 1-D search of mu is the figure (every mu is valid, so the search needs no
   accuracy for soundness), converted to bits.

The joint bound, |A| > 2
------------------------
With one ellipsoid per class (:mod:`._confidence`), steps 1 and 2 hold class by class:
sum_j N_eff P(j) delta_ja^2 <= r for every a, delta_ja = p(a|j) - p_hat(a|j), each in an interval
[lo_ja, hi_ja] (Cauchy-Schwarz and the balls), and I(A; C^) <= sum_j P(j) D(p(.|j) || y) for the
marginal y on the empirical posteriors. One multiplier mu >= 0 for all the classes' constraints
(any choice is valid) gives

    I <= mu |A| r + sum_j P(j) max over x in the box_j with sum_a x_a = 1 of
         sum_a [x_a log(x_a / y_a) - mu N_eff (x_a - p_hat(a|j))^2],

and the inner maximum is bounded by its Lagrangian dual in the sum constraint,
min over lam of lam + sum_a max over t in [lo_ja, hi_ja] of (the a-th term - lam t): every
one-dimensional maximum exact (convex then concave in t; the concave side's stationary point by
Lambert's W, :func:`_term_max`), lam bisected on its subgradient, mu searched in 1-D. Every lam
and mu is valid, so neither search needs accuracy for soundness.

Since both parts of the set hold at once with probability at least the confidence
(:mod:`._confidence`, the failure split in two), :func:`certified_leakage_bits` returns the least
of the entropy, chi-square and joint bounds: each is valid on the intersection. With many
clusters the joint bound is far below the others (the balls let every cluster deviate at its full
radius at once; the ellipsoid does not); with few clusters of many users they are close.

The per-output bound
--------------------
Each coordinate of a point in an L1 ball of radius e moves by at most e/2, so over the balls
p(a|j) lies in [x_ja - e_j/2, x_ja + e_j/2] and p(a) in [p_hat(a) - e_A/2, p_hat(a) + e_A/2]
(clipped to [0, 1]); :func:`certified_max_output_leakage_bits` is the largest |log2 p(a|j) -
log2 p(a)| those intervals allow over the outputs of positive mass (``inf`` when an interval
reaches 0), each interval intersected with the joint bound's (step 1; for p(a), Cauchy-Schwarz
on sum_c p(c) (p(a|c) - p_hat(a|c)) over the ellipsoids).

The program
-----------
Minimising the certified figure (:func:`certified_leakage_bits`, the least of the bounds above)
over q subject to E d <= Delta is not convex (Hmin of a ball is not concave in its centre once
the ball reaches the simplex's boundary), so :func:`solve_robust` searches: it solves program
(19) with the project's solver on a few tilted priors, all with the training p(c) (so every
table meets the same budget), and keeps the table of least certified figure:

- the training prior itself (the average-case optimum: the robust table is never worse by it),
  at the budget and at a few tighter budgets (the figure is not monotone in the budget: a table solved
  for less distortion can certify less, and it meets the budget too);
- sharpened priors: each cluster's posterior moved by t * eps_c / 2 towards the class its
  posterior favours most relative to p(a) (t = 0.5, 1), which makes thinly observed clusters
  look as telling as the set allows, so the solver hides them more;
- adversarial rounds: for the best table so far, each cluster's posterior moved by eps_c / 2
  towards the leading class of the output it feeds most (the direction that lowers that
  output's H(A|j), the worst case U prices), solved again;
- the perfect-privacy table when it meets the budget, and every table with room left in the
  budget mixed with the constant release of least distortion up to the budget;
- even mixtures of the best few tables (the joint bound rewards a table that spreads each
  cluster over several outputs; a mixture meets the budget and leaks no more on the centre).

So the result is the least certified bound among those tables, not a proven optimum of
min_q max_S I; tests compare it with a cvxpy solve of the exact robust program on small
instances where that program is convex.
"""
from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..._errors import InfeasibleError
from ..._information import expected_distortion, leakage_bits
from .._result import SolveResult
from ..perfect import perfect_privacy_table
from ._confidence import ConfidenceSet, max_entropy_point, min_entropy_point

__all__ = ["certified_leakage_bits", "certified_max_output_leakage_bits", "solve_robust", "RobustResult",
           "output_balls"]

_LN2 = math.log(2.0)
#: Relative margin added to a certified figure for float round-off (sums of K terms of order 1).
_MARGIN = 1e-9
#: Newton steps of :func:`_term_max`'s root (monotone from the right, quadratic once close; near a
#: double root the error halves each step, but there g is flat, so its value errs to second order).
_NEWTON_STEPS = 30
#: Bisection steps of the sum constraint's multiplier in :func:`class_inner_max` over [-80, 80]
#: (any multiplier gives a valid bound; 40 steps leave it within 2e-10).
_DUAL_STEPS = 40


def _entropy_bits(x: np.ndarray) -> float:
    x = x[x > 0]
    return float(-np.sum(x * np.log2(x)))


def output_balls(cs: ConfidenceSet, q) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Output masses, centre posteriors and radii of the outputs of table ``q`` over the set ``cs``.

    Output masses P(j) (K_out,), centre posteriors p_hat(.|j) (|A|, K_out) and radii e_j
    (K_out,); ``q`` has shape (K, K_out), rows on the simplex. Outputs of zero mass get a uniform
    centre and radius 0.
    """
    q = np.asarray(q, dtype=float)
    mass = cs.p_c @ q
    live = mass > 0
    safe = np.where(live, mass, 1.0)
    joint = cs.prior() @ q                                     # (|A|, K_out)
    centre = np.where(live, joint / safe, 1.0 / joint.shape[0])
    radius = np.where(live, np.minimum(2.0, ((cs.p_c * cs.radius) @ q) / safe), 0.0)
    return mass, centre, radius


def _deviations(cs: ConfidenceSet, q):
    """Per output j of positive mass: P(j), the centre's deviation v_j, its L1 radius f_j, and p(a)'s floor.

    P(j), the centre's v_j = p_hat(.|j) - p_hat(a) (|A|, J), the L1 radius f_j of v_j's moves over
    the set, and the floor of p(a) over the set (|A|,).
    """
    q = np.asarray(q, dtype=float)
    mass, centre, _ = output_balls(cs, q)
    live = mass > 0
    p_a = cs.prior().sum(axis=1)
    w = cs.p_c[:, None] * q[:, live] / mass[live][None, :]           # w(c|j), (K, J)
    f = np.minimum(2.0, (np.abs(w - cs.p_c[:, None]) * cs.radius[:, None]).sum(axis=0))
    e_a = min(2.0, float(cs.p_c @ cs.radius))
    return mass[live], centre[:, live] - p_a[:, None], f, np.clip(p_a - e_a / 2, 0, 1)


@dataclass(frozen=True)
class _JointView:
    """What the joint ellipsoid (|A| = 2) says about the outputs of one table.

    See the module docstring, "The joint bound". Arrays are over the J outputs of positive mass;
    pi means p(a_1 | .).

    mass (J,): P(j); centre (J,): pi_hat_j, the output's posterior on the empirical posteriors;
    lo, hi (J,): the interval of pi_j over the intersected set; marginal: pi_hat; lo_a, hi_a: the
    interval of pi; n_eff: N_eff with p(c) <= n_c / N_eff, so that over the ellipsoid
    sum_j N_eff P(j) (pi_j - pi_hat_j)^2 <= radius.
    """

    mass: np.ndarray
    centre: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    marginal: float
    lo_a: float
    hi_a: float
    n_eff: float
    radius: float


def joint_view(cs: ConfidenceSet, q) -> _JointView | None:
    """The joint ellipsoid's view of table ``q`` (shape (K, K_out)) for |A| = 2.

    Class a_1's row of :func:`_class_view`, or None where that is None or |A| > 2.
    """
    view = _class_view(cs, q)
    if view is None or cs.posterior.shape[0] != 2:
        return None
    return _JointView(mass=view.mass, centre=view.centre[1], lo=view.lo[1], hi=view.hi[1],
                      marginal=float(view.marginal[1]), lo_a=float(view.lo_a[1]), hi_a=float(view.hi_a[1]),
                      n_eff=view.n_eff, radius=view.radius)


def binary_kl_nats(x, y: float):
    """D(x || y) between Bernoulli(x) and Bernoulli(y), nats, elementwise over x (y in (0, 1))."""
    x = np.asarray(x, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(x > 0, x * np.log(np.where(x > 0, x, 1.0) / y), 0.0)
        b = np.where(x < 1, (1 - x) * np.log(np.where(x < 1, 1 - x, 1.0) / (1 - y)), 0.0)
    return a + b


def penalised_max(x0: np.ndarray, lo: np.ndarray, hi: np.ndarray, y: float, k: float) -> np.ndarray:
    """Per output, an upper bound on max over x in [lo, hi] of h(x) = D(x || y) - k (x - x0)^2 (nats).

    Exact up to round-off; all arrays of shape (J,), y in (0, 1), k >= 0.

    h'' = 1 / (x (1 - x)) - 2k, so h is convex outside [z1, z2] (the roots of x (1 - x) = 1 / (2k),
    empty when k <= 2) and concave inside: its maximum over [lo, hi] is at lo, at hi or at the one
    root of h' in the concave part. That root is bracketed by bisection, [a, b] with h'(a) >= 0 >=
    h'(b), and h on [a, b] is at most h(a) + h'(a) (b - a) (the tangent of a concave function).
    """
    logit_y = math.log(y / (1 - y))

    def h(x, x0):
        return binary_kl_nats(x, y) - k * (x - x0) ** 2

    def slope(x, x0):
        return np.log(x / (1 - x)) - logit_y - 2 * k * (x - x0)

    best = np.maximum(h(lo, x0), h(hi, x0))
    if k <= 2.0:
        return best
    half = 0.5 * math.sqrt(1.0 - 2.0 / k)
    a, b = np.maximum(lo, 0.5 - half), np.minimum(hi, 0.5 + half)
    idx = np.flatnonzero(a < b)
    a, b, x0 = a[idx], b[idx], x0[idx]
    keep = (slope(a, x0) > 0) & (slope(b, x0) < 0)           # a root of h' inside; else lo or hi wins
    idx, a, b, x0 = idx[keep], a[keep], b[keep], x0[keep]
    for _ in range(60):
        mid = 0.5 * (a + b)
        up = slope(mid, x0) >= 0
        a, b = np.where(up, mid, a), np.where(up, b, mid)
    best[idx] = np.maximum(best[idx], h(a, x0) + np.maximum(slope(a, x0), 0.0) * (b - a))
    return best


@dataclass(frozen=True)
class ClassView:
    """What the ellipsoids say about the outputs of one table, class by class.

    See the module docstring, "The joint bound"; for |A| = 2 both rows come from a_1's one
    ellipsoid. Arrays over the J outputs of positive mass.

    mass (J,): P(j); centre (|A|, J): p_hat(.|j) on the empirical posteriors; lo, hi (|A|, J): the
    interval of each p(a|j) over the intersected set; marginal (|A|,): p_hat(a) on the empirical
    posteriors; lo_a, hi_a (|A|,): the interval of each p(a); n_eff: N_eff with p(c) <= n_c / N_eff,
    so that over each class's ellipsoid sum_j N_eff P(j) (p(a|j) - p_hat(a|j))^2 <= radius.
    """

    mass: np.ndarray
    centre: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    marginal: np.ndarray
    lo_a: np.ndarray
    hi_a: np.ndarray
    n_eff: float
    radius: float


def _class_view(cs: ConfidenceSet, q) -> ClassView | None:
    """The ellipsoids' view of table ``q`` (shape (K, K_out)), or None where they say nothing of it.

    None when the set has no ellipsoid, a cluster of positive p(c) was never seen (the ellipsoids
    say nothing about it) or the balls' centre (a smoothed prior) lies outside an ellipsoid (the
    figure must stay at least the leakage on the prior the build declares).
    """
    if not math.isfinite(cs.joint_radius) or cs.empirical is None:
        return None
    n_c = np.asarray(cs.counts, dtype=float)
    seen = n_c > 0
    r = float(cs.joint_radius)
    if np.any((cs.p_c > 0) & ~seen) or float(((cs.posterior - cs.empirical) ** 2 @ n_c).max()) > r:
        return None
    q = np.asarray(q, dtype=float)
    mass, centre, radius = output_balls(cs, q)
    live = mass > 0
    w = cs.p_c[:, None] * q[:, live] / mass[live][None, :]                  # w(c|j), columns sum to 1
    inv_n = np.where(seen, 1.0 / np.where(seen, n_c, 1.0), 0.0)
    x_hat = cs.empirical @ w                                                 # (|A|, J)
    rho = np.sqrt(r * ((w ** 2) * inv_n[:, None]).sum(axis=0))               # Cauchy-Schwarz, per output
    old = radius[live] / 2.0                                                  # the balls' intervals
    lo = np.maximum.reduce([x_hat - rho, centre[:, live] - old, np.zeros_like(x_hat)])
    hi = np.minimum.reduce([x_hat + rho, centre[:, live] + old, np.ones_like(x_hat)])
    marginal = cs.empirical @ cs.p_c
    rho_a = math.sqrt(r * float((cs.p_c ** 2) @ inv_n))
    old_a, old_marginal = min(2.0, float(cs.p_c @ cs.radius)) / 2.0, cs.prior().sum(axis=1)
    lo_a = np.maximum.reduce([marginal - rho_a, old_marginal - old_a, np.zeros_like(marginal)])
    hi_a = np.minimum.reduce([marginal + rho_a, old_marginal + old_a, np.ones_like(marginal)])
    n_eff = float(np.min(n_c[seen] / np.maximum(cs.p_c[seen], 1e-300)))
    return ClassView(mass=mass[live], centre=x_hat, lo=lo, hi=hi, marginal=marginal, lo_a=lo_a, hi_a=hi_a,
                      n_eff=n_eff, radius=r)


def _term_max(lo, hi, centre, log_y, k: float, lam) -> tuple[np.ndarray, np.ndarray]:
    """Per class and output, max over t in [lo, hi] of g(t) = t log(t / y) - k (t - centre)^2 - lam t, and a maximiser.

    Arrays (|A|, J); ``lam`` (J,); g in nats.

    g'' = 1 / t - 2k: convex below 1 / (2k), concave above, so the maximum is at lo, at hi, or at
    the root of g'(t) = log t - log y + 1 - lam - 2k (t - centre) on the concave side. With
    v = 2k t that root solves v - log v = -u, u = log(2k) + log y - 1 + lam - 2k centre, on v >= 1
    (t = -W_{-1}(-e^u) / (2k), Lambert's W, here in logarithms: e^u underflows for large k); there
    is none when u > -1, and then g' < 0 on the concave side. Newton's method from the right of
    the root (the function is convex in v) converges monotonically.
    """
    def g(t):
        with np.errstate(divide="ignore", invalid="ignore"):
            entropy = np.where(t > 0, t * (np.log(np.where(t > 0, t, 1.0)) - log_y), 0.0)
        return entropy - k * (t - centre) ** 2 - lam * t

    best, arg = g(lo), lo.copy()
    at_hi = g(hi)
    arg, best = np.where(at_hi > best, hi, arg), np.maximum(best, at_hi)
    if k > 0:
        u = math.log(2.0 * k) + log_y - 1.0 + lam - 2.0 * k * centre
        real = u <= -1.0
        target = np.where(real, -u, 1.0)                       # v - log v = target >= 1
        v = 2.0 * target + 2.0
        for _ in range(_NEWTON_STEPS):
            v = v - (v - np.log(v) - target) / (1.0 - 1.0 / v)
        root = np.where(real, v / (2.0 * k), -1.0)
        inside = real & (root > lo) & (root < hi)
        t = np.where(inside, root, lo)
        at_root = np.where(inside, g(t), -np.inf)
        arg, best = np.where(at_root > best, t, arg), np.maximum(best, at_root)
    return best, arg


def class_inner_max(view: ClassView, k: float) -> np.ndarray:
    """Per output, an upper bound (J,) on max over p(.|j) in its box with sum 1 of a penalised divergence.

    The divergence is sum_a [p_a log(p_a / y_a) - k (p_a - centre_a)^2] (nats). The bound is the
    Lagrangian dual of the sum constraint, min over lam of lam + sum_a max_t (g_a(t) - lam t)
    (:func:`_term_max`), every lam valid; lam is bisected on the sign of its subgradient
    1 - sum_a t_a(lam).
    """
    log_y = np.log(view.marginal)[:, None]
    lo_l, hi_l = np.full(view.mass.size, -80.0), np.full(view.mass.size, 80.0)
    for _ in range(_DUAL_STEPS):
        mid = 0.5 * (lo_l + hi_l)
        _, arg = _term_max(view.lo, view.hi, view.centre, log_y, k, mid[None, :])
        heavy = arg.sum(axis=0) > 1.0                                # lam too small
        lo_l, hi_l = np.where(heavy, mid, lo_l), np.where(heavy, hi_l, mid)
    values = [lam + _term_max(view.lo, view.hi, view.centre, log_y, k, lam[None, :])[0].sum(axis=0)
              for lam in (lo_l, hi_l)]
    return np.minimum(*values)


def _class_bound_bits(cs: ConfidenceSet, q) -> float:
    """:func:`joint_bound_bits` for |A| > 2 (module docstring, "The joint bound, |A| > 2"), bits."""
    view = _class_view(cs, q)
    if view is None or np.any(view.marginal <= 0):
        return math.inf
    n_classes = view.centre.shape[0]

    def dual(t: float) -> float:                           # valid for every mu = e^t / N_eff >= 0
        k = math.exp(t)
        return k * n_classes * view.radius / view.n_eff + float(view.mass @ class_inner_max(view, k))

    from scipy import optimize
    t = optimize.minimize_scalar(dual, bounds=(-12.0, 25.0), method="bounded", options={"xatol": 1e-3}).x
    caps = float(view.mass @ class_inner_max(view, 0.0))                          # mu = 0
    return min(dual(float(t)), caps) / _LN2


def joint_bound_bits(cs: ConfidenceSet, q) -> float:
    """An upper bound on max over the intersected set of I(A; C^) for table ``q`` from the joint ellipsoids, bits.

    See the module docstring, "The joint bound"; ``inf`` without an ellipsoid.
    """
    if cs.posterior.shape[0] > 2:
        return _class_bound_bits(cs, q)
    view = joint_view(cs, q)
    if view is None or not 0.0 < view.marginal < 1.0:
        return math.inf
    y, r = view.marginal, view.radius

    def dual(t: float) -> float:                           # valid for every mu = e^t / N_eff >= 0
        k = math.exp(t)
        return k * r / view.n_eff + float(view.mass @ penalised_max(view.centre, view.lo, view.hi, y, k))

    from scipy import optimize
    t = optimize.minimize_scalar(dual, bounds=(-12.0, 25.0), method="bounded", options={"xatol": 1e-6}).x
    caps = float(view.mass @ penalised_max(view.centre, view.lo, view.hi, y, 0.0))     # mu = 0
    return min(dual(float(t)), caps) / _LN2


def certified_leakage_bits(cs: ConfidenceSet, q) -> float:
    """An upper bound on max over the set of I(A; C^) for table ``q`` (module docstring), bits.

    The least of the entropy bound U(q), the chi-square bound and the joint bound.

    ``q`` has shape (K, K_out) with rows on the simplex (an integer table divided by 2^B).
    The result is at least the leakage on the set's centre and at most log2 |A| (plus margin).
    """
    mass, centre, radius = output_balls(cs, q)
    p_a = cs.prior().sum(axis=1)
    e_a = min(2.0, float(cs.p_c @ cs.radius))
    h_a = _entropy_bits(max_entropy_point(p_a, e_a))
    h_given = math.fsum(float(m) * _entropy_bits(min_entropy_point(centre[:, j], float(radius[j])))
                        for j, m in enumerate(mass) if m > 0)
    value = min(max(h_a - h_given, 0.0), chi_square_bits(cs, q), math.log2(len(p_a)), joint_bound_bits(cs, q))
    return value + _MARGIN * max(h_a, 1.0)


def chi_square_bits(cs: ConfidenceSet, q) -> float:
    """sum_j P(j) max over the set of log2(1 + chi^2(p(.|j) || p(a))).

    An upper bound on the set's worst I(A; C^) (KL <= log(1 + chi^2)).

    Over the set p(.|j) - p(a) = v_j + delta_j with delta_j = sum_c (w(c|j) - p(c)) (p(.|c) -
    p_hat(.|c)), so ||delta_j||_1 <= f_j and delta_j sums to 0: at most f_j / 2 up and f_j / 2
    down. chi^2 = sum_a (v_ja + delta_ja)^2 / p(a) <= sum_a v_ja^2 / lo_a plus the two largest
    gains ((|v_ja| + f_j/2)^2 - v_ja^2) / lo_a. A constant release scores 0 (f_j = 0, v_j = 0).
    """
    mass, v, f, lo = _deviations(cs, q)

    def per_class(numerator):                 # numerator / lo, 0 where nothing moves, inf at lo = 0
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(numerator > 0, numerator / lo[:, None], 0.0)

    base = per_class(v ** 2).sum(axis=0)
    gain = per_class((np.abs(v) + f[None, :] / 2) ** 2 - v ** 2)
    top2 = np.sort(gain, axis=0)[-2:].sum(axis=0)
    return float(mass @ np.log2(1.0 + base + top2))


def certified_max_output_leakage_bits(cs: ConfidenceSet, q) -> float:
    """An upper bound on the set's worst per-output leakage of table ``q`` (shape (K, K_out)), in bits.

    The max over the set of max over outputs j of positive mass and classes a of
    |log2 p(a|j) - log2 p(a)|; ``inf`` when the set lets some p(a|j) or p(a) reach 0.

    Per (j, a) the lesser of two bounds: the intervals of p(a|j) and p(a) separately (module
    docstring), and p(a|j) / p(a) = 1 + (v_ja + delta_ja) / p(a) with |delta_ja| <= f_j / 2
    (:func:`chi_square_bits`).
    """
    mass, centre, radius = output_balls(cs, q)
    live = mass > 0
    x, e = centre[:, live], radius[live][None, :]
    p_a = cs.prior().sum(axis=1)[:, None]
    e_a = min(2.0, float(cs.p_c @ cs.radius))
    lo_j, hi_j = np.clip(x - e / 2, 0, 1), np.clip(x + e / 2, 0, 1)
    lo_a, hi_a = np.clip(p_a - e_a / 2, 0, 1), np.clip(p_a + e_a / 2, 0, 1)
    with np.errstate(divide="ignore"):
        separate = np.where((lo_j > 0) & (lo_a > 0),
                            np.maximum(np.log2(hi_j / np.maximum(lo_a, 1e-300)),
                                       np.log2(hi_a / np.maximum(lo_j, 1e-300))), np.inf)
        _, v, f, lo = _deviations(cs, q)
        ratio = (np.abs(v) + f[None, :] / 2) / np.maximum(lo[:, None], 1e-300)
        coupled = np.where((lo[:, None] > 0) & (ratio < 1),
                           np.maximum(np.log2(1 + ratio), -np.log2(np.maximum(1 - ratio, 1e-300))), np.inf)
        joint = joint_intervals_bits(cs, q)
    worst = float(np.minimum.reduce([separate, coupled, joint]).max())
    return max(worst, 0.0) * (1 + _MARGIN) + _MARGIN if math.isfinite(worst) else math.inf


def joint_intervals_bits(cs: ConfidenceSet, q) -> np.ndarray:
    """Per (class, output of positive mass): max |log2 p(a|j) - log2 p(a)| over the intervals of :func:`_class_view`.

    Shape (|A|, J); all ``inf`` without an ellipsoid.
    """
    view = _class_view(cs, q)
    if view is None:
        mass, _, _ = output_balls(cs, q)
        return np.full((cs.posterior.shape[0], int((mass > 0).sum())), np.inf)
    lo_j, hi_j, lo_a, hi_a = view.lo, view.hi, view.lo_a[:, None], view.hi_a[:, None]
    with np.errstate(divide="ignore"):
        return np.where((lo_j > 0) & (lo_a > 0),
                        np.maximum(np.log2(hi_j / np.maximum(lo_a, 1e-300)), np.log2(hi_a / np.maximum(lo_j, 1e-300))),
                        np.inf)


@dataclass(frozen=True)
class RobustResult:
    """What :func:`solve_robust` found.

    ``solved`` is the chosen table's :class:`SolveResult` (its ``leakage_bits`` and ``distortion``
    on the training prior), ``certified_bits`` its bound U over the set, ``candidates`` one dict
    per table tried (``name``, ``certified_bits``, ``leakage_bits``, ``distortion``).
    """

    solved: SolveResult
    certified_bits: float
    candidates: list = field(default_factory=list)


def _toward(cs: ConfidenceSet, direction: np.ndarray, scale: float) -> np.ndarray:
    """Posteriors moved by scale * eps_c / 2 onto class ``direction[c]``, taken from the others in proportion.

    Staying on the simplex and inside each ball.
    """
    post = cs.posterior.copy()
    k = post.shape[1]
    cols = np.arange(k)
    room = 1.0 - post[direction, cols]
    t = np.minimum(scale * cs.radius / 2.0, room)
    others = post.copy()
    others[direction, cols] = 0.0
    share = np.where(room > 0, t / np.where(room > 0, room, 1.0), 0.0)
    post = post - others * share[None, :]
    post[direction, cols] += t
    return post


def solve_robust(cs: ConfidenceSet, distortion, delta: float, *,
                 solve: Callable[[np.ndarray, float], SolveResult], start: SolveResult | None = None,
                 sharpen=(0.5, 1.0), rounds: int = 2, tighter=(0.9, 0.75, 0.5), mixtures: int = 3) -> RobustResult:
    """Search for a table of least certified worst-case leakage at the budget (module docstring).

    Parameters
    ----------
    cs : ConfidenceSet
    distortion : array_like, shape (K, K_out)
        d(c, c_hat), as for program (19).
    delta : float
        Budget on E d(C, C_hat) under the set's fixed p(c).
    solve : callable(p_ac, budget) -> SolveResult, keyword-only
        Program (19) on a prior of shape (|A|, K) at a budget (the build's own solver).
    start : SolveResult, optional, keyword-only
        The average-case table on the centre, when already solved (else it is solved here).
    sharpen : sequence of float, keyword-only
        Scales t of the sharpened priors tried.
    rounds : int, keyword-only
        Adversarial rounds.
    tighter : sequence of float, keyword-only
        Fractions of ``delta`` at which the average-case table is also tried (the certified bound
        is not monotone in the budget; a budget below the least reachable distortion is skipped).
    mixtures : int, keyword-only
        The even mixtures of every pair among this many best tables are tried last (a mixture meets
        the budget, leaks no more on the centre than the worse of the two, and spreads each cluster
        over more outputs, which narrows the outputs' intervals over the joint ellipsoid).

    Returns
    -------
    RobustResult

    Raises
    ------
    Whatever ``solve`` raises (InfeasibleError, SolverError).
    """
    D = np.asarray(distortion, dtype=float)
    centre = cs.prior()
    candidates = []
    below = []                                   # (name, result) of tables with room left in the budget
    tried = []                                   # (certified bits, name, result) of every table
    best: tuple[SolveResult, float] | None = None       # the table of least certified bound, and that bound

    def consider(name: str, result: SolveResult) -> None:
        nonlocal best
        result = dataclasses.replace(result, leakage_bits=leakage_bits(centre, result.table),
                                     distortion=expected_distortion(cs.p_c, result.table, D),
                                     gap_bits=result.gap_bits if name == "average-case" else math.inf,
                                     message=f"{name} table of the robust search")
        bound = certified_leakage_bits(cs, result.table)
        candidates.append({"name": name, "certified_bits": bound, "leakage_bits": result.leakage_bits,
                           "distortion": result.distortion})
        tried.append((bound, name, result))
        if result.distortion < delta * (1 - 1e-9):
            below.append((name, result))
        if best is None or bound < best[1] - 1e-12:
            best = (result, bound)

    average = start if start is not None else solve(centre, delta)
    consider("average-case", average)
    assert best is not None                      # the first table considered is the best so far
    perfect, d_perfect = perfect_privacy_table(centre, D)
    if d_perfect < delta:
        consider("perfect-privacy", dataclasses.replace(average, table=perfect))
    for t in tighter:
        try:
            consider(f"average-case-at-{t:g}-delta", solve(centre, t * delta))
        except InfeasibleError:
            continue
    constant = np.zeros_like(D)
    constant[:, int(np.argmin(cs.p_c @ D))] = 1.0
    d_constant = expected_distortion(cs.p_c, constant, D)
    for name, result in list(below) if d_constant > delta else []:
        share = (delta - result.distortion) / (d_constant - result.distortion)
        consider(f"{name}+constant", dataclasses.replace(result, table=(1 - share) * result.table + share * constant))
    p_a = centre.sum(axis=1)
    lift = cs.posterior / np.where(p_a > 0, p_a, 1.0)[:, None]
    favoured = np.argmax(lift, axis=0)
    for t in sharpen:
        consider(f"sharpened-{t:g}", solve(cs.prior(_toward(cs, favoured, t)), delta))
    for r in range(rounds):
        q = np.asarray(best[0].table)
        _, out_centre, _ = output_balls(cs, q)
        feeds = np.argmax(q, axis=1)
        leading = np.argmax(out_centre[:, feeds], axis=0)
        consider(f"adversarial-{r + 1}", solve(cs.prior(_toward(cs, leading, 1.0)), delta))
    leaders = sorted(tried, key=lambda item: item[0])[:mixtures]
    for (_, name_a, a), (_, name_b, b) in itertools.combinations(leaders, 2):
        consider(f"mix-{name_a}-{name_b}", dataclasses.replace(a, table=0.5 * (a.table + b.table)))
    solved, bound = best
    return RobustResult(solved=solved, certified_bits=bound, candidates=candidates)


def counts_from_prior(prior, n: int) -> np.ndarray | None:
    """The training counts (|A|, K) behind an unsmoothed empirical prior of ``n`` users, or None.

    None when ``prior * n`` is not a table of whole numbers summing to ``n`` (a smoothed prior, or
    no ``n``).
    """
    prior = np.asarray(prior, dtype=float)
    if n is None or n < 1:
        return None
    scaled = prior * n
    counts = np.round(scaled)
    if np.max(np.abs(scaled - counts)) > 1e-6 * max(1.0, n) ** 0.5 or counts.sum() != n:
        return None
    return counts


def robust_figures_of_table(prior, q, n: int, confidence: float) -> dict | None:
    """The robust figures of table ``q`` (shape (K, K_out)) over the confidence set of the empirical ``prior``.

    ``robust_leakage_bits``, ``robust_confidence`` and, when finite,
    ``robust_max_output_leakage_bits``; ``prior`` has shape (|A|, K), of ``n`` users. None when the
    prior is not an unsmoothed empirical one (:func:`counts_from_prior`).
    """
    from ._confidence import confidence_set
    counts = counts_from_prior(prior, n)
    if counts is None:
        return None
    cs = confidence_set(counts, confidence, centre_prior=np.asarray(prior, dtype=float))
    figures = {"robust_leakage_bits": certified_leakage_bits(cs, q), "robust_confidence": float(confidence)}
    epsilon = certified_max_output_leakage_bits(cs, q)
    if math.isfinite(epsilon):
        figures["robust_max_output_leakage_bits"] = epsilon
    return figures
