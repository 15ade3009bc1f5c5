"""The ``nullspace`` bundle kind: deterministic null-space cleaning (seed 001, Algorithm 1).

Release of a row x (n floats), in pure Python with sums left to right in float64:

1. ``a_i = v_i . x`` for the k stored directions (rows of ``directions``, sorted by gamma);
2. ``delta_i = lambda_d[i] * a_i**2``; walk i = 0, 1, ... keeping the prefix sum ``spent``:
   while ``spent + delta_i < epsilon`` remove direction i fully (``alpha_i = 1``); at the first
   i where it is not, ``alpha_i = sqrt((epsilon - spent) / delta_i)`` (the one square root) and
   stop; if every direction fits, all are removed and the target is ``sum delta_i`` instead;
3. ``removed = sum_i alpha_i a_i v_i`` and ``x~ = x - removed``;
4. Theorem 1 check: ``e = ||A_d^T removed||^2`` must equal the target (epsilon, or the total
   when everything was removed) within ``THEOREM1_RELATIVE * target + 2 sqrt(target) E + E^2``,
   ``E = THEOREM1_ROUNDING * (sum |A_d|) * (sum_i |alpha_i a_i|)`` (a bound on float round-off
   in ``A_d^T removed``). Otherwise :class:`TheoremCheckError` and nothing is released.

Loading checks, besides the schema: unit-norm directions, ``lambda_d[i] = ||A_d^T v_i||^2`` and
``B_d``-orthogonal directions (``|v_i^T A_d A_d^T v_j| <= LOAD_TOLERANCE * ||A_d||_F^2``).
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from ..errors import BundleFormatError, MetricsError, TheoremCheckError
from ..format import Limits, closed_map
from ..randomness import DerivedBits, InsecureTestBits, SystemRandomBits
from ._real import (
    MAX_REAL_DIM,
    RealBundle,
    Vector,
    dot,
    matrix,
    names,
    number,
    parse_real_row,
    vector,
)

__all__ = ["MECHANISM", "NullspaceBundle", "parse_nullspace", "clean_row", "make", "release",
           "NULLSPACE_PARAMETER_KEYS", "NULLSPACE_METRICS", "THEOREM1_RELATIVE", "THEOREM1_ROUNDING"]

MECHANISM = "nullspace"
#: Closed key set of ``parameters`` (canonical order).
NULLSPACE_PARAMETER_KEYS = ("epsilon", "desired", "confidential", "directions", "lambda_d", "a_d")
#: Metrics every nullspace bundle declares.
NULLSPACE_METRICS = ("epsilon", "n")
#: Relative tolerance of the per-release Theorem 1 check.
THEOREM1_RELATIVE = 1e-9
#: Round-off allowance (relative to the magnitude bound) of the Theorem 1 check.
THEOREM1_ROUNDING = 1e-12
#: Tolerance of the load-time checks of the directions.
LOAD_TOLERANCE = 1e-9


def parse_nullspace(params: object, n: int, limits: Limits, features: Sequence[str] = ()) -> dict[str, Any]:
    """The validated ``parameters`` of a nullspace bundle.

    Validate ``parameters`` of a nullspace bundle with ``n`` released columns (named
    ``features``, which the target names must not repeat); returns a dict of tuples.

    Raises BundleFormatError (shape, types) or MetricsError (directions inconsistent with A_d).
    """
    params = closed_map(params, NULLSPACE_PARAMETER_KEYS, "parameters")
    epsilon = number(params["epsilon"], "parameters.epsilon", 0.0)
    desired = names(params["desired"], "parameters.desired", 1, MAX_REAL_DIM, limits)
    confidential = names(params["confidential"], "parameters.confidential", 1, MAX_REAL_DIM, limits)
    if len(set(features) | set(desired) | set(confidential)) != len(features) + len(desired) + len(confidential):
        raise BundleFormatError("released, desired and confidential columns must be distinct")
    raw = params["directions"]
    k = len(raw) if type(raw) is list else 0
    if not 1 <= k <= n:
        raise BundleFormatError(f"parameters.directions must be an array of 1..{n} directions")
    directions = matrix(raw, "parameters.directions", k, n)
    lambda_d = vector(params["lambda_d"], "parameters.lambda_d", k, 0.0)
    a_d = matrix(params["a_d"], "parameters.a_d", n, len(desired))
    columns = tuple(zip(*a_d))  # N_d columns of n entries
    frobenius = sum(dot(c, c) for c in columns)
    projected: list[tuple[float, ...]] = []
    for i, v in enumerate(directions):
        if not abs(dot(v, v) - 1.0) <= LOAD_TOLERANCE:
            raise MetricsError(f"direction {i} is not of unit norm")
        u = tuple(dot(c, v) for c in columns)
        if not abs(dot(u, u) - lambda_d[i]) <= LOAD_TOLERANCE * max(frobenius, 1e-300):
            raise MetricsError(f"lambda_d[{i}] is not ||A_d^T v_{i}||^2")
        for j, w in enumerate(projected):
            if not abs(dot(u, w)) <= LOAD_TOLERANCE * max(frobenius, 1e-300):
                raise MetricsError(f"directions {j} and {i} are not A_d A_d^T-orthogonal")
        projected.append(u)
    return {"epsilon": epsilon, "desired": desired, "confidential": confidential,
            "directions": directions, "lambda_d": lambda_d, "a_d": a_d, "columns": columns,
            "abs_a_d": sum(abs(e) for c in columns for e in c)}


def clean_row(x: Sequence[float], p: Mapping[str, Any]) -> Vector:
    """Algorithm 1 on one parsed row ``x`` with validated parameters ``p``; returns x~.

    Raises :class:`TheoremCheckError` if the Theorem 1 check fails (see the module docstring).
    """
    epsilon, directions, lambda_d = p["epsilon"], p["directions"], p["lambda_d"]
    coeffs = []  # alpha_i * a_i
    spent = 0.0
    target = None
    for v, lam in zip(directions, lambda_d):
        a = dot(v, x)
        delta = lam * a * a
        if spent + delta < epsilon:
            coeffs.append(a)
            spent += delta
        else:
            alpha = math.sqrt((epsilon - spent) / delta) if delta > 0 else 0.0
            coeffs.append(alpha * a)
            target = epsilon
            break
    if target is None:
        target = spent
    n = len(x)
    removed = [0.0] * n
    for c, v in zip(coeffs, directions):
        for j in range(n):
            removed[j] += c * v[j]
    residual = tuple(dot(col, removed) for col in p["columns"])
    e = dot(residual, residual)
    rounding = THEOREM1_ROUNDING * p["abs_a_d"] * sum(abs(c) for c in coeffs)
    tolerance = THEOREM1_RELATIVE * target + 2.0 * math.sqrt(target) * rounding + rounding * rounding
    if not abs(e - target) <= tolerance:
        raise TheoremCheckError("cleaned row fails the Theorem 1 check; nothing released")
    return tuple(xj - rj for xj, rj in zip(x, removed))


class NullspaceBundle(RealBundle):
    """A verified ``nullspace`` bundle; ``sanitize(row)`` returns the cleaned row (n floats).

    Extra attributes: ``epsilon`` (float), ``directions`` (k x n), ``lambda_d`` (k), ``a_d``
    (n x N_d), all tuples.
    """

    __slots__ = ("_params",)

    _params: dict[str, Any]

    def __init__(self, params: dict[str, Any], **fields: Any) -> None:
        super().__init__(**fields)
        object.__setattr__(self, "_params", params)

    epsilon = property(lambda self: self._params["epsilon"])
    directions = property(lambda self: self._params["directions"])
    lambda_d = property(lambda self: self._params["lambda_d"])
    a_d = property(lambda self: self._params["a_d"])

    def sanitize(self, row: Sequence[object], *, rng: SystemRandomBits | InsecureTestBits | DerivedBits | None = None) -> list:
        """The cleaned row x~ as a list of n floats (deterministic; ``rng`` is ignored).

        Raises :class:`InputError` for a bad row and :class:`TheoremCheckError` if the check fails.
        """
        return list(clean_row(parse_real_row(row, len(self.features)), self._params))


def release(bundle: NullspaceBundle, row: Sequence[object], secret: bytes) -> list:
    """The cleaned row, deterministic.

    The cleaned row for ``row`` (deterministic: ``secret`` is not needed). Raises as
    :meth:`NullspaceBundle.sanitize`.
    """
    return bundle.sanitize(row)


def make(obj: dict, limits: Limits, **fields: Any) -> NullspaceBundle:
    """Build a :class:`NullspaceBundle` from a header-checked payload ``obj``."""
    columns = tuple(f.name for f in fields["features"])
    params = parse_nullspace(obj["parameters"], len(columns), limits, columns)
    if fields["metrics"]["epsilon"] != params["epsilon"]:
        raise MetricsError("metrics.epsilon differs from parameters.epsilon")
    public = {k: v for k, v in params.items() if k not in ("columns", "abs_a_d")}
    return NullspaceBundle(params, parameters=MappingProxyType(public),
                           withheld_columns=params["desired"] + params["confidential"], **fields)
