"""Exposure per user of a bundle on labelled rows.

What ``privmap evaluate`` can report beside the bundle's declared ``holdout_exposed_2x``
(:func:`privmap.offline.measures.exposed_shares`).
"""
from __future__ import annotations

import numpy as np

from .._errors import BuildError
from ..data import joint_prior
from ..measures import EXPOSURE_FACTORS, exposed_shares

__all__ = ["users_exposure"]


def users_exposure(view, public: np.ndarray, codes: np.ndarray) -> dict:
    """The share of the rows' users whose release raises the odds of their own class more than 2x and 4x.

    Under the posterior an attacker holding the bundle computes (its prior and table), beside the
    same share in-sample (the bundle's prior as its users).

    Parameters
    ----------
    view : MappingView
        The bundle's evaluation view (:func:`privmap.offline.mechanisms.view_of`); needs its
        ``prior`` (a seed-000 bundle: quantized or exact).
    public : ndarray, shape (n, d)
        The users' public rows, read with the bundle's features (:func:`._bundle_report.load_for`).
    codes : ndarray of int, shape (n,)
        Their private classes, indexes into the bundle's classes.

    Returns
    -------
    dict
        ``exposed_2x``, ``exposed_4x`` (shares in [0, 1] of the rows the device accepts, expected
        over their releases), ``in_sample_exposed_2x``, ``in_sample_exposed_4x``, and ``users``
        (rows the device accepts and that were measured).

    Raises
    ------
    BuildError
        A bundle without a prior, or no row the device accepts.
    """
    if view.prior is None:
        raise BuildError("exposure needs the bundle's prior p(a, c); this bundle carries none")
    prior = np.asarray(view.prior, dtype=float)
    prior = prior / prior.sum()
    symbols = view.lookup(public)
    matched = symbols >= 0
    if not matched.any():
        raise BuildError("exposure: no row matches an input of the bundle")
    users = joint_prior(np.asarray(codes)[matched], symbols[matched], prior.shape[0], prior.shape[1])
    new = exposed_shares(prior, view.q, users)
    own = exposed_shares(prior, view.q, prior)
    out = {}
    for f, on_rows, in_sample in zip(EXPOSURE_FACTORS, new, own):
        out[f"exposed_{f:g}x"], out[f"in_sample_exposed_{f:g}x"] = on_rows, in_sample
    return {**out, "users": int(matched.sum())}
