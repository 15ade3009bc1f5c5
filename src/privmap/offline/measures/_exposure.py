"""Exposure per user: the share of users whose release raises the odds of their own class.

An attacker who holds a bundle computes the posterior p(a | c^) of every output from its prior and
table. A user of class a who releases c^ is exposed at factor f when that posterior raises the odds
of a more than f-fold: ``[p(a|c^) / (1 - p(a|c^))] / [p(a) / (1 - p(a))] > f``. The share of users
exposed is the expectation over the users and their releases, so a table whose leaky outputs are
rare exposes few users however large its largest per-output shift (``max_output_leakage_bits``).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .._information import joint_output

__all__ = ["EXPOSURE_FACTORS", "exposed_shares", "payload_exposure", "exposure_line"]

#: The odds factors reported: ``holdout_exposed_2x`` and ``holdout_exposed_4x``.
EXPOSURE_FACTORS = (2.0, 4.0)


def exposed_shares(attacker_prior: np.ndarray, q, users: np.ndarray,
                   factors: Sequence[float] = EXPOSURE_FACTORS) -> tuple[float, ...]:
    """Share of ``users`` whose release raises the posterior odds of their own class more than each factor.

    Under the attacker's posterior.

    Parameters
    ----------
    attacker_prior : ndarray, shape (n_classes, K_in)
        The prior the attacker's posterior is computed from (a bundle's ``prior``, or a fold's
        training prior); with ``q`` it gives p(a | c^).
    q : array_like or scipy sparse, shape (K_in, K_out)
        Row-stochastic table.
    users : ndarray, shape (n_classes, K_in)
        The users measured, as their joint distribution of (class, input): the empirical one of
        held-out rows (:func:`privmap.offline.data.joint_prior`), or ``attacker_prior`` itself for
        the in-sample share. Non-negative, summing to 1.
    factors : sequence of float
        Odds factors (> 1).

    Returns
    -------
    tuple of float
        One share in [0, 1] per factor, each the expected fraction of users over their releases.
        A class the attacker's prior gives probability 0 or 1 cannot be exposed (its odds do not
        move); an output that makes a class certain exposes its users of that class at every factor.

    Raises
    ------
    ValueError
        A factor not above 1, or ``users`` and ``attacker_prior`` of different shapes.
    """
    if any(f <= 1 for f in factors):
        raise ValueError("exposure factors must be above 1")
    prior, users = np.asarray(attacker_prior, dtype=float), np.asarray(users, dtype=float)
    if prior.shape != users.shape:
        raise ValueError(f"users {users.shape} and attacker prior {prior.shape} must have one shape")
    joint = joint_output(prior, q)                                  # attacker's p(a, c^)
    p_a = joint.sum(axis=1, keepdims=True) / joint.sum()
    p_out = joint.sum(axis=0, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        posterior = np.where(p_out > 0, joint / p_out, p_a)
        log_odds = (np.log(posterior) - np.log1p(-posterior)) - (np.log(p_a) - np.log1p(-p_a))
    movable = (p_a > 0) & (p_a < 1)
    released = joint_output(users, q)                               # the users' (class, release) shares
    return tuple(float(np.sum(released[np.broadcast_to(movable, log_odds.shape) & (log_odds > np.log(f))]))
                 for f in factors)


def payload_exposure(payload: dict) -> dict:
    """The in-sample exposed shares of a table payload.

    Its prior's users under its own integer table (``in_sample_exposed_2x``,
    ``in_sample_exposed_4x``), None each when the payload carries no table with a prior p(a, c)
    (max-correlation, the real-valued kinds).
    """
    keys = [f"in_sample_exposed_{f:g}x" for f in EXPOSURE_FACTORS]
    if "table" not in payload or "prior" not in payload:
        return dict.fromkeys(keys)
    from ..bundle import payload_table
    prior = np.asarray(payload["prior"], dtype=float)
    prior = prior / prior.sum()
    return dict(zip(keys, exposed_shares(prior, payload_table(payload), prior)))


def exposure_line(figures: dict) -> str | None:
    """One line of the exposed shares in ``figures``, or None when it holds neither.

    The shares are ``holdout_exposed_2x`` / ``_4x`` on new users, ``in_sample_exposed_2x`` /
    ``_4x``; the line is for the build's report and ``privmap inspect``.
    """
    parts = []
    for label, key in (("new users", "holdout_exposed"), ("in-sample", "in_sample_exposed")):
        two, four = figures.get(f"{key}_2x"), figures.get(f"{key}_4x")
        if two is not None and four is not None:
            parts.append(f"{label} {100 * two:.2f} % (4x: {100 * four:.2f} %)")
    if not parts:
        return None
    return "exposure, share whose release raises the odds of their own class > 2x: " + "; ".join(parts)
