"""Unsigned payloads of the real-valued kinds: ``nullspace`` (seed 001) and ``gaussian`` (seed 004).

Both read named numeric columns of a CSV (:func:`privmap.offline.data._numeric.read_numeric_columns`);
the released columns are all the others. The payload layout is in docs/bundle-format.md.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..._errors import BuildError
from ...data._numeric import read_numeric_columns
from ._gaussian import GaussianModel, GreedyResult, greedy_noise
from .._header import HeaderOptions, _tool_version, payload_header
from ._nullspace import NullspaceDirections, fit_linear, nullspace_directions

__all__ = ["HeaderOptions", "RealBuild", "build_nullspace", "build_gaussian", "released_columns"]


@dataclass(frozen=True)
class RealBuild:
    """A built real-valued payload and what produced it.

    Attributes
    ----------
    payload : dict      unsigned payload (encode with ``encode_payload``)
    columns : tuple     released column names
    detail : NullspaceDirections | GreedyResult
    """

    payload: dict
    columns: tuple
    detail: object


def released_columns(path, withheld) -> tuple[str, ...]:
    """All columns of the CSV header except ``withheld`` (file order)."""
    _, header, _ = read_numeric_columns(path, [], min_rows=0)
    return tuple(h for h in header if h not in set(withheld))


def _header(mechanism, columns, header: HeaderOptions) -> dict:
    return {**payload_header(header, mechanism), "features": list(columns)}


def _split(path, first, second):
    for group, what in ((first, "first"), (second, "second")):
        if not group:
            raise BuildError(f"the {what} group of target columns is empty")
    if set(first) & set(second):
        raise BuildError("a column cannot be in both target groups")
    columns = released_columns(path, tuple(first) + tuple(second))
    if not columns:
        raise BuildError("no columns are left to release")
    values, _, sha = read_numeric_columns(path, list(columns) + list(first) + list(second))
    n, a = len(columns), len(first)
    return columns, values[:, :n], values[:, n:n + a], values[:, n + a:], sha


def build_nullspace(path, desired, confidential, epsilon: float,
                    header: HeaderOptions = HeaderOptions()) -> RealBuild:
    """Fit A_d and A_c by least squares (intercepts kept out) on the CSV, solve the restricted
    eigenproblem and return the nullspace payload.

    Parameters
    ----------
    path : CSV path; desired, confidential : sequences of target column names;
    epsilon : float >= 0, the per-sample utility budget ``||A_d^T (x - x~)||^2``.

    Raises :class:`BuildError` (bad columns or data, epsilon < 0, zero predictors).
    """
    if not (math.isfinite(epsilon) and epsilon >= 0):
        raise BuildError("epsilon must be a finite number >= 0")
    columns, x, y_d, y_c, sha = _split(path, desired, confidential)
    a_d, _ = fit_linear(x, y_d)
    a_c, _ = fit_linear(x, y_c)
    directions: NullspaceDirections = nullspace_directions(a_d, a_c)
    payload = _header("nullspace", columns, header)
    payload["parameters"] = {
        "epsilon": float(epsilon), "desired": list(desired), "confidential": list(confidential),
        "directions": directions.v.tolist(),
        "lambda_d": directions.lambda_d.tolist(),
        "a_d": a_d.tolist()}
    payload["metrics"] = {"epsilon": float(epsilon), "n": int(len(x)), "directions": len(directions.v),
                          "gamma_zero_directions": int(np.sum(directions.mu <= 1e-9)),
                          "lambda_c_zero_directions": int(np.sum(directions.mu >= 1 - 1e-9))}
    payload["provenance"] = {"tool_version": _tool_version(), "seed": 0, "data_sha256": sha}
    return RealBuild(payload, columns, directions)


def gaussian_payload(model: GaussianModel, columns, private, utility, result: GreedyResult, *, delta,
                     gamma, fisher, n_rows, data_sha256, header: HeaderOptions = HeaderOptions()) -> dict:
    """The gaussian payload for a solved model (shared by the CSV build and covariance files)."""
    ln2 = math.log(2)
    payload = _header("gaussian", columns, header)
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


def build_gaussian(path, private, utility, delta: float, gamma: float = 0.0, *, fisher: bool = False,
                   dtheta: float = 1.0, stop: float = 1e-3, saturation: float = 1e-6,
                   header: HeaderOptions = HeaderOptions(), progress=None) -> RealBuild:
    """Estimate the covariances (unbiased sample covariance of all rows), run the greedy and
    return the gaussian payload. Raises :class:`BuildError` (bad data, a covariance that is not
    positive definite, bad delta/gamma)."""
    columns, x, x_p, x_u, sha = _split(path, private, utility)
    model = GaussianModel.estimate(x, x_p, x_u)
    result = greedy_noise(model, delta, gamma, fisher=fisher, dtheta=dtheta, stop=stop,
                          saturation=saturation, progress=progress)
    payload = gaussian_payload(model, columns, private, utility, result, delta=delta, gamma=gamma,
                               fisher=fisher, n_rows=len(x), data_sha256=sha, header=header)
    return RealBuild(payload, columns, result)
