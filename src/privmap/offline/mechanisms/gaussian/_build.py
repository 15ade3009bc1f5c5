"""The ``gaussian`` mechanism's build (seed 004): real-valued CSV -> covariances -> greedy noise -> payload.

The private and utility columns are withheld; every other column is released with the greedy's
noise (:mod:`._model`). The payload layout is in docs/bundle-format.md.
"""
from __future__ import annotations

import math

from .._header import HeaderOptions, _tool_version
from .._real_columns import real_header, split_targets
from .._result import Result
from ._model import GaussianModel, GreedyResult, greedy_noise
from ._options import GaussianOptions

__all__ = ["build", "gaussian_payload"]


def gaussian_payload(model: GaussianModel, columns, private, utility, result: GreedyResult, *, delta,
                     gamma, fisher, n_rows, data_sha256, header: HeaderOptions = HeaderOptions()) -> dict:
    """The gaussian payload for a solved model (shared by the CSV build and covariance files)."""
    ln2 = math.log(2)
    payload = real_header("gaussian", columns, header)
    payload["parameters"] = {
        "sigma2": result.sigma2.tolist(), "private": list(private), "utility": list(utility),
        "cov_private": model.cov_private.tolist(), "cov_utility": model.cov_utility.tolist(),
        "delta": float(delta), "gamma": float(gamma),
        "utility_measure": "fisher" if fisher else "mutual_information"}
    payload["metrics"] = {
        "leakage_bits": result.private_after / ln2, "leakage_nats": result.private_after,
        "leakage_before_bits": result.private_before / ln2, "utility_loss_nats": result.utility_loss,
        "utility_before_nats": result.utility_before, "delta": float(delta), "gamma": float(gamma),
        "n": int(n_rows), "iterations": result.iterations}
    payload["provenance"] = {"tool_version": _tool_version(), "seed": 0, "data_sha256": data_sha256,
                             "covariance_estimator": "numpy.cov(ddof=1), all rows"}
    return payload


def build(source, options: GaussianOptions, *, progress=None) -> Result:
    """The gaussian bundle's build: covariances, the greedy, the payload.

    Estimate the covariances (unbiased sample covariance of all rows), run the greedy and return
    the gaussian payload.

    Parameters
    ----------
    source : path
        The real-valued CSV.
    options : GaussianOptions
    progress : callable(fraction) or None
        Called as the greedy advances.

    Returns
    -------
    Result
        ``mechanism`` "gaussian", the payload, and the :class:`GreedyResult` as ``detail``.

    Raises
    ------
    BuildError
        Bad data, or a covariance that is not positive definite.
    """
    columns, x, x_p, x_u, sha = split_targets(source, options.private, options.utility)
    model = GaussianModel.estimate(x, x_p, x_u)
    result = greedy_noise(model, options.delta, options.gamma, fisher=options.fisher, dtheta=options.dtheta,
                          stop=options.stop, saturation=options.saturation, progress=progress)
    payload = gaussian_payload(model, columns, options.private, options.utility, result, delta=options.delta,
                               gamma=options.gamma, fisher=options.fisher, n_rows=len(x), data_sha256=sha,
                               header=options)
    return Result("gaussian", payload, result)
