"""The ``nullspace`` mechanism's build (seed 001): real-valued CSV -> linear predictors -> directions -> payload.

The desired and confidential target columns are withheld; every other column is released, cleaned
along the directions of :mod:`._model` on the device. The payload layout is in docs/bundle-format.md.
"""
from __future__ import annotations

import numpy as np

from .._header import _tool_version
from .._real_columns import real_header, split_targets
from .._result import Result
from ._model import fit_linear, nullspace_directions
from ._options import NullspaceOptions

__all__ = ["build"]


def build(source, options: NullspaceOptions) -> Result:
    """The nullspace bundle's build: least squares, the eigenproblem, the payload.

    Fit A_d and A_c by least squares (intercepts kept out) on the CSV, solve the restricted
    eigenproblem and return the nullspace payload.

    Parameters
    ----------
    source : path
        The real-valued CSV.
    options : NullspaceOptions

    Returns
    -------
    Result
        ``mechanism`` "nullspace", the payload, and the :class:`NullspaceDirections` as ``detail``.

    Raises
    ------
    BuildError
        Bad columns or data, or zero predictors.
    """
    columns, x, y_d, y_c, sha = split_targets(source, options.desired, options.confidential)
    a_d, _ = fit_linear(x, y_d)
    a_c, _ = fit_linear(x, y_c)
    directions = nullspace_directions(a_d, a_c)
    epsilon = float(options.epsilon)
    payload = real_header("nullspace", columns, options)
    payload["parameters"] = {
        "epsilon": epsilon, "desired": list(options.desired), "confidential": list(options.confidential),
        "directions": directions.v.tolist(),
        "lambda_d": directions.lambda_d.tolist(),
        "a_d": a_d.tolist()}
    payload["metrics"] = {"epsilon": epsilon, "n": int(len(x)), "directions": len(directions.v),
                          "gamma_zero_directions": int(np.sum(directions.mu <= 1e-9)),
                          "lambda_c_zero_directions": int(np.sum(directions.mu >= 1 - 1e-9))}
    payload["provenance"] = {"tool_version": _tool_version(), "seed": 0, "data_sha256": sha}
    return Result("nullspace", payload, directions)
