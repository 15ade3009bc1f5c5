"""Exposure per user: the share of users whose release moves the odds of their own class.

A user's release exposes them by a factor F when an attacker's posterior odds of the user's own
class, p(a | release) / (1 - p(a | release)), are more than F times the prior odds p(a) / (1 - p(a)):
what the release tells about that user, where the leakage in bits is an average over users.
"""
from __future__ import annotations

import numpy as np

__all__ = ["EXPOSURE_FACTORS", "exposed_share"]

#: The factors reported (``exposed_2x``, ``exposed_4x``).
EXPOSURE_FACTORS = (2.0, 4.0)


def exposed_share(posterior, own, prior, factor: float) -> float:
    """The share of users whose posterior odds of their own class exceed ``factor`` times its prior odds.

    Parameters
    ----------
    posterior : array-like, shape (n, n_classes)
        Each user's p(a | release) (rows sum to 1).
    own : array-like of int, shape (n,)
        Each user's class code.
    prior : array-like, shape (n_classes,)
        p(a), the attacker's belief before the release.
    factor : float
        > 0.

    Returns
    -------
    float
        In [0, 1]; 0 for no users. A posterior of 1 counts as exposed (infinite odds) unless the
        prior is 1 too.

    Raises
    ------
    ValueError
        Shapes that do not agree, or ``factor`` <= 0.
    """
    posterior, own, prior = np.asarray(posterior, float), np.asarray(own, dtype=np.int64), np.asarray(prior, float)
    if posterior.ndim != 2 or own.shape != (posterior.shape[0],) or prior.shape != (posterior.shape[1],):
        raise ValueError(f"posteriors {posterior.shape}, classes {own.shape} and prior {prior.shape} do not agree")
    if not factor > 0:
        raise ValueError(f"the exposure factor must be > 0, got {factor}")
    if own.size == 0:
        return 0.0
    p, p0 = posterior[np.arange(own.size), own], prior[own]
    with np.errstate(divide="ignore", invalid="ignore"):
        # odds(p) > F odds(p0)  <=>  p (1 - p0) > F p0 (1 - p), without dividing by 1 - p
        exposed = p * (1.0 - p0) > factor * p0 * (1.0 - p)
    return float(np.mean(exposed))
