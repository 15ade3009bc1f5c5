"""The confidence set of priors behind the robust guarantee.

One L1 ball per cluster, intersected with joint ellipsoids over all clusters (one for a binary
private attribute, one per class otherwise).

What the set is
---------------
For a cluster c seen ``n_c`` times in the training data, with empirical class posterior
p_hat(.|c), the set holds every prior p(a, c) = p(c) p(a|c), p(c) fixed at the training
frequencies, whose posteriors satisfy

(1) per-cluster balls: || p(.|c) - p_hat(.|c) ||_1 <= eps_c   for every cluster c,

    eps_c = sqrt( (2 / n_c) * ( ln(2^|A| - 2) + ln(K' / delta_1) ) ),

with K' the number of clusters seen at least once (eps_c = 2, the whole simplex, for a cluster
never seen). This is Weissman, Ordentlich, Seroussi, Verdu and Weinberger's L1 deviation
inequality (2003), P(||p_hat - p||_1 >= eps) <= (2^m - 2) exp(-n eps^2 / 2) for the empirical
distribution of n i.i.d. draws on m letters, applied to each cluster with failure probability
delta_1 / K' and a union bound over the clusters. A smoothed training prior (additive smoothing)
is centred on its own posteriors; each radius then grows by the L1 distance between the
smoothed and the empirical posterior, so the ball still contains the empirical ball.

(2) joint ellipsoids: with pi_c = p(a|c) and pi_hat_c its empirical value, for every class a

    sum_c n_c (pi_c - pi_hat_c)^2 <= r.

For |A| = 2 the ellipsoid of a_1 is the whole statement (a_0's deviations are its negatives); for
|A| > 2 there is one per class, each at failure probability delta_2 / |A| (a union bound): the
proof below reads only that the labels' indicator of class a is a Bernoulli(pi_c) draw.

Proof sketch. Condition on the clusters of the training users (the counts n_c). The labels in
cluster c are then n_c i.i.d. Bernoulli(pi_c) draws, independent across clusters.
Z_c = pi_hat_c - pi_c is the mean of n_c independent centred variables, each in an interval of
length 1, so by Hoeffding's lemma
E exp(s Z_c) <= exp(s^2 sigma_c^2 / 2) with sigma_c^2 = 1 / (4 n_c). For such a sub-Gaussian
variable and lam < 1 / (2 sigma_c^2), E exp(lam Z_c^2) <= (1 - 2 lam sigma_c^2)^(-1/2)
(write exp(lam Z^2) = E_g exp(sqrt(2 lam) g Z) with g ~ N(0, 1) independent, take E_Z first).
So Y_c = n_c Z_c^2 has E exp(lam Y_c) <= (1 - lam / 2)^(-1/2) for 0 < lam < 2, whatever
pi_c. The Y_c are independent, so E exp(lam sum_c Y_c) <= (1 - lam / 2)^(-K'/2) and by Markov's
inequality P(sum_c Y_c >= r) <= exp(-lam r) (1 - lam / 2)^(-K'/2) for every lam in (0, 2).
:func:`joint_radius` takes r = min over lam of (ln(1 / delta_2) - (K'/2) ln(1 - lam/2)) / lam
(any lam gives a valid r, so the 1-D minimisation needs no accuracy for soundness).

A second route was checked and is kept only because the lesser of two valid radii (both
functions of the counts alone) is valid: Chernoff's P(n_c KL(pi_hat_c || pi_c) >= t) <= 2 e^-t
makes n_c KL_c stochastically dominated by ln 2 + Exp(1), so sum_c n_c KL_c is dominated by
K' ln 2 + Gamma(K', 1) and is at most R = K' ln 2 + Gamma.ppf(1 - delta_2, K') with probability
>= 1 - delta_2; Pinsker (KL >= 2 (x - y)^2, nats) turns that into sum_c Y_c <= R / 2. It is
about three times wider than r (the dominating variable has mean ln 2 + 1 per cluster where the
sub-Gaussian one has 1/4; the true one has about pi_c (1 - pi_c) <= 1/4), so r is what is used
in practice.

The confidence is split: delta_1 = delta_2 = (1 - confidence) / 2. By the union bound, with
probability at least ``confidence`` over the training sample, the population's posteriors lie in
the balls *and* the ellipsoids; every certified figure computed on the intersection (or the least of figures
computed on either part) holds at that confidence.

What it assumes
---------------
New users are drawn i.i.d. from the same population as the training users, and the clusters
(the k-means centres) are fixed before the labels are looked at. Given the cluster counts, the
labels inside cluster c are then n_c i.i.d. draws from the population's p(a|c), independent
across clusters, so the bounds hold conditionally on the counts and hence unconditionally.

What it does not cover
----------------------
- The cluster frequencies p(c) are held at the training frequencies: a population whose mix of
  clusters drifts (more users of one taste profile) is outside the set even if every posterior
  is inside. ``privmap evaluate`` reports that drift separately (an L1 test on p(c) at the same
  confidence) but the certified figure does not include it.
- A population drawn from a different distribution (another country, another year): the set is
  a statement about sampling noise, not about shift.
- The finite-sample noise of a *measured* leakage on a small new sample (that is an estimate of
  the population's leakage, with its own bias; ``evaluate`` corrects it and gives an interval).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["ConfidenceSet", "confidence_set", "l1_radius", "joint_radius", "min_entropy_point",
           "max_entropy_point", "DEFAULT_CONFIDENCE"]

#: Confidence at which ``inspect`` reports the robust bound of a bundle built without ``--robust``.
DEFAULT_CONFIDENCE = 0.95


def l1_radius(n: int, n_classes: int, failure: float) -> float:
    """Weissman et al.'s L1 radius: ||p_hat - p||_1 < eps with probability >= 1 - ``failure``.

    For the empirical distribution of ``n`` i.i.d. draws on ``n_classes`` letters.

    Returns eps in [0, 2] (2, the whole simplex, when n == 0 or the bound says nothing).
    Raises ValueError for n < 0, n_classes < 2 or failure outside (0, 1).
    """
    if n < 0 or n_classes < 2 or not 0.0 < failure < 1.0:
        raise ValueError(f"need n >= 0, n_classes >= 2 and failure in (0, 1); got {n}, {n_classes}, {failure}")
    if n == 0:
        return 2.0
    letters = n_classes * math.log(2.0) + math.log1p(-2.0 ** (1 - n_classes))   # ln(2^m - 2), no overflow
    eps = math.sqrt(2.0 / n * (letters + math.log(1.0 / failure)))
    return min(eps, 2.0)


def joint_radius(clusters_seen: int, failure: float) -> float:
    """The radius r of the joint ellipsoid (module docstring, part (2)).

    P(sum_c n_c (pi_hat_c - pi_c)^2 >= r) <= ``failure`` for ``clusters_seen`` clusters of binary
    labels, whatever their sizes and posteriors (the sizes fixed, the labels drawn).

    The lesser of the sub-Gaussian Chernoff radius (minimised over its free parameter; every
    value of it is valid) and half the Gamma-dominated KL radius (Pinsker). Returns 0.0 when no
    cluster is seen. Raises ValueError for clusters_seen < 0 or failure outside (0, 1).
    """
    if clusters_seen < 0 or not 0.0 < failure < 1.0:
        raise ValueError(f"need clusters_seen >= 0 and failure in (0, 1); got {clusters_seen}, {failure}")
    if clusters_seen == 0:
        return 0.0
    from scipy import optimize, special
    k, log_inv = float(clusters_seen), math.log(1.0 / failure)

    def chernoff(lam: float) -> float:
        return (log_inv - 0.5 * k * math.log1p(-lam / 2.0)) / lam

    lam = optimize.minimize_scalar(chernoff, bounds=(1e-9, 2.0 - 1e-9), method="bounded",
                                   options={"xatol": 1e-10}).x
    # Gamma(k, 1)'s quantile, the very function scipy.stats.gamma.ppf calls, without importing stats (0.3 s)
    kl_route = 0.5 * (k * math.log(2.0) + float(special.gammaincinv(k, 1.0 - failure)))
    return min(chernoff(float(lam)), kl_route)


@dataclass(frozen=True)
class ConfidenceSet:
    """Per-cluster L1 balls around the training posteriors (module docstring).

    Attributes
    ----------
    p_c : ndarray, shape (K,)
        Cluster frequencies, held fixed (sum to 1).
    posterior : ndarray, shape (|A|, K)
        Centre p_hat(a|c) of each ball (columns sum to 1; a uniform column for p_c = 0).
    radius : ndarray, shape (K,)
        L1 radius eps_c of each ball, in [0, 2].
    counts : ndarray of int, shape (K,)
        Training users per cluster n_c.
    confidence : float
        Probability (over the training sample) that the population's posteriors all lie in the set.
    empirical : ndarray, shape (|A|, K), or None
        The empirical posteriors p_hat(a|c), centre of the joint ellipsoids (uniform columns for
        unseen clusters); None when the set has no ellipsoid.
    joint_radius : float
        r of the joint ellipsoids sum_c n_c (p(a|c) - p_hat(a|c))^2 <= r, for a = a_1 when
        |A| = 2 and for every class otherwise (module docstring, part (2)); ``inf``: no ellipsoid.
    """

    p_c: np.ndarray
    posterior: np.ndarray
    radius: np.ndarray
    counts: np.ndarray
    confidence: float
    empirical: np.ndarray | None = None
    joint_radius: float = math.inf

    def prior(self, posterior: np.ndarray | None = None) -> np.ndarray:
        """The joint p(a, c) = p(c) p(a|c) of ``posterior`` (default: the centre), shape (|A|, K)."""
        return (self.posterior if posterior is None else posterior) * self.p_c[None, :]

    def distances(self, posterior: np.ndarray) -> np.ndarray:
        """L1 distance of each column of ``posterior`` (shape (|A|, K)) from its ball's centre."""
        return np.abs(np.asarray(posterior, dtype=float) - self.posterior).sum(axis=0)

    def outside(self, posterior: np.ndarray, counted: np.ndarray | None = None) -> np.ndarray:
        """Indexes of the clusters whose column of ``posterior`` lies outside its ball.

        Only those with ``counted > 0`` when given.
        """
        far = self.distances(posterior) > self.radius * (1 + 1e-12)
        if counted is not None:
            far &= np.asarray(counted) > 0
        return np.flatnonzero(far)


def confidence_set(counts, confidence: float, *, centre_prior=None) -> ConfidenceSet:
    """The confidence set of a training sample.

    Parameters
    ----------
    counts : array_like of int, shape (|A|, K)
        Training users per class and cluster.
    confidence : float in (0, 1)
        Probability that the whole set (every ball and every ellipsoid at once) covers the
        population's posteriors; split in two between balls and ellipsoids.
    centre_prior : array_like, shape (|A|, K), optional, keyword-only
        The (smoothed) prior the build solved on: the balls are centred on its posteriors and
        its cluster frequencies are the fixed p(c); each radius grows by the distance from the
        empirical posterior (module docstring). Default: the empirical prior of ``counts``.

    Raises
    ------
    ValueError
        Negative or non-integer counts, no users, fewer than 2 classes, a confidence outside
        (0, 1), or a ``centre_prior`` of another shape.
    """
    counts = np.asarray(counts, dtype=float)
    if counts.ndim != 2 or counts.shape[0] < 2 or np.any(counts < 0) or np.any(counts != np.round(counts)):
        raise ValueError("counts must be non-negative integers of shape (n_classes >= 2, K)")
    if counts.sum() <= 0:
        raise ValueError("counts has no users")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    n_classes, k = counts.shape
    n_c = counts.sum(axis=0)
    seen = int((n_c > 0).sum())
    split = (1.0 - confidence) / 2.0                                      # balls / ellipsoids (docstring)
    failure = split / seen
    radius = np.array([l1_radius(int(n), n_classes, failure) for n in n_c])
    uniform = np.full(n_classes, 1.0 / n_classes)
    empirical = np.where(n_c > 0, counts / np.maximum(n_c, 1), uniform[:, None])
    if centre_prior is None:
        p_c, centre = n_c / n_c.sum(), empirical
    else:
        prior = np.asarray(centre_prior, dtype=float)
        if prior.shape != counts.shape:
            raise ValueError(f"centre_prior has shape {prior.shape}, counts {counts.shape}")
        p_c = prior.sum(axis=0)
        centre = np.where(p_c > 0, prior / np.where(p_c > 0, p_c, 1.0), uniform[:, None])
        radius = np.minimum(2.0, radius + np.where(n_c > 0, np.abs(centre - empirical).sum(axis=0), 0.0))
    ellipsoids = 1 if n_classes == 2 else n_classes       # a_1's says all for |A| = 2 (docstring)
    return ConfidenceSet(p_c=p_c, posterior=centre, radius=radius, counts=n_c.astype(np.int64),
                         confidence=float(confidence), empirical=empirical,
                         joint_radius=joint_radius(seen, split / ellipsoids))


def min_entropy_point(x: np.ndarray, e: float) -> np.ndarray:
    """The least-entropy distribution within L1 distance ``e`` of ``x`` (shape (m,), on the simplex).

    Moves min(e/2, 1 - max x) onto the largest coordinate, taken from the smallest ones first.
    That point majorizes every point of the ball, so by Schur-concavity it minimises entropy
    (Ho and Yeung, "The interplay between entropy and variational distance", 2010).
    """
    x = np.asarray(x, dtype=float)
    y = x.copy()
    top = int(np.argmax(x))
    t = min(e / 2.0, 1.0 - x[top])
    y[top] += t
    for a in np.argsort(x, kind="stable"):
        if a == top or t <= 0:
            continue
        take = min(t, y[a])
        y[a] -= take
        t -= take
    return y


def _level(x: np.ndarray, t: float, down: bool) -> float:
    """The level L with sum(max(x - L, 0)) = t (down) or sum(max(L - x, 0)) = t (up)."""
    s = np.sort(x)[::-1] if down else np.sort(x)
    cum = np.cumsum(s)
    for i in range(len(s)):
        level = (cum[i] - t) / (i + 1) if down else (cum[i] + t) / (i + 1)
        nxt = s[i + 1] if i + 1 < len(s) else (-np.inf if down else np.inf)
        if (down and level >= nxt) or (not down and level <= nxt):
            return float(level)
    return float(level)


def max_entropy_point(x: np.ndarray, e: float) -> np.ndarray:
    """The greatest-entropy distribution within L1 distance ``e`` of ``x`` (shape (m,), on the simplex).

    Water-filling from both ends: e/2 taken off the largest coordinates (levelled down) and
    given to the smallest (levelled up), or the uniform distribution when it lies in the ball.
    That point is majorized by every point of the ball (Ho and Yeung 2010), hence the maximum.
    """
    x = np.asarray(x, dtype=float)
    m = len(x)
    to_uniform = np.abs(x - 1.0 / m).sum()
    if e >= to_uniform:
        return np.full(m, 1.0 / m)
    t = e / 2.0
    high, low = _level(x, t, down=True), _level(x, t, down=False)
    return np.clip(x, low, high)
