"""The confidence set of priors behind the robust guarantee (issue 27): one L1 ball per cluster.

What the set is
---------------
For a cluster c seen ``n_c`` times in the training data, with empirical class posterior
p_hat(.|c), the set holds every prior p(a, c) = p_hat(c) p(a|c) whose posteriors satisfy

    || p(.|c) - p_hat(.|c) ||_1 <= eps_c   for every cluster c,

    eps_c = sqrt( (2 / n_c) * ( ln(2^|A| - 2) + ln(K' / (1 - confidence)) ) ),

with K' the number of clusters seen at least once (eps_c = 2, the whole simplex, for a cluster
never seen). This is Weissman, Ordentlich, Seroussi, Verdu and Weinberger's L1 deviation
inequality (2003), P(||p_hat - p||_1 >= eps) <= (2^m - 2) exp(-n eps^2 / 2) for the empirical
distribution of n i.i.d. draws on m letters, applied to each cluster with failure probability
(1 - confidence) / K' and a union bound over the clusters. A smoothed training prior (additive
smoothing) is centred on its own posteriors; each radius then grows by the L1 distance between
the smoothed and the empirical posterior, so the ball still contains the empirical ball.

What it assumes
---------------
New users are drawn i.i.d. from the same population as the training users, and the clusters
(the k-means centres) are fixed before the labels are looked at. Given the cluster counts, the
labels inside cluster c are then n_c i.i.d. draws from the population's p(a|c), so the bound
holds conditionally on the counts and hence unconditionally: with probability at least
``confidence`` over the training sample, the population's posteriors lie in the set.

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

__all__ = ["ConfidenceSet", "confidence_set", "l1_radius", "min_entropy_point", "max_entropy_point",
           "DEFAULT_CONFIDENCE"]

#: Confidence at which ``inspect`` reports the robust bound of a bundle built without ``--robust``.
DEFAULT_CONFIDENCE = 0.95


def l1_radius(n: int, n_classes: int, failure: float) -> float:
    """Weissman et al.'s L1 radius: ||p_hat - p||_1 < eps with probability >= 1 - ``failure``
    for the empirical distribution of ``n`` i.i.d. draws on ``n_classes`` letters.

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
    """

    p_c: np.ndarray
    posterior: np.ndarray
    radius: np.ndarray
    counts: np.ndarray
    confidence: float

    def prior(self, posterior: np.ndarray | None = None) -> np.ndarray:
        """The joint p(a, c) = p(c) p(a|c) of ``posterior`` (default: the centre), shape (|A|, K)."""
        return (self.posterior if posterior is None else posterior) * self.p_c[None, :]

    def distances(self, posterior: np.ndarray) -> np.ndarray:
        """L1 distance of each column of ``posterior`` (shape (|A|, K)) from its ball's centre."""
        return np.abs(np.asarray(posterior, dtype=float) - self.posterior).sum(axis=0)

    def outside(self, posterior: np.ndarray, counted: np.ndarray | None = None) -> np.ndarray:
        """Indexes of the clusters whose column of ``posterior`` lies outside its ball
        (only those with ``counted > 0`` when given)."""
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
        Probability that the whole set (every cluster at once) covers the population's posteriors.
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
    failure = (1.0 - confidence) / seen
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
    return ConfidenceSet(p_c=p_c, posterior=centre, radius=radius, counts=n_c.astype(np.int64),
                         confidence=float(confidence))


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
