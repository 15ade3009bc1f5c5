"""The gaussian evaluation view: a built bundle attacked on labelled rows (``privmap evaluate``).

Beside the leakage its Gaussian model declares.
"""
from __future__ import annotations

import numpy as np

from .._real_attacks import attack_withheld

__all__ = ["evaluate_release"]


def evaluate_release(payload: dict, data, target: str, *, seed: int = 0, test_fraction: float = 0.3) -> dict:
    """Attack a gaussian bundle's releases on the labelled CSV ``data``.

    The releases are the rows with fresh noise of its variances: :func:`attack_withheld` of
    ``target``, a private or utility column, and the declared ``leakage_bits`` (and before) for
    comparison.
    """
    params = payload["parameters"]
    sd = np.sqrt(np.array(params["sigma2"]))
    out = attack_withheld(payload, data, target, params["private"] + params["utility"],
                          lambda x, rng: x + rng.normal(size=x.shape) * sd, seed=seed, test_fraction=test_fraction)
    out["declared_leakage_bits"] = payload["metrics"]["leakage_bits"]
    out["declared_leakage_before_bits"] = payload["metrics"]["leakage_before_bits"]
    return out
