"""The evaluation view of a recommender bundle: what its devices do, as arrays.

:class:`~privmap.offline.mechanisms.table.MappingView` looks a row up by its nearest input;
a recommender device first folds the ratings row into the factor space. :class:`FactorView`
does the same with numpy (the ridge solve of :mod:`._factors`, the whitening, the clamp to the
factor domain, the nearest centre), and releases the outputs' predicted rating rows.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..._joint import payload_columns
from ...data import nearest
from ..table import MappingView, table_probabilities
from ._factors import ridge_rows

__all__ = ["FactorView", "view_of_recommender", "model_view_parts", "lookup_points", "rms_gaps"]


@dataclass(frozen=True)
class FactorView(MappingView):
    """A :class:`MappingView` whose rows are ratings folded into the factor space before the lookup.

    Rows are ratings (n, m; NaN = not rated). ``inputs`` are the factor-space centres
    (K_in, rank + 1), ``outputs`` the released rating rows (K_out, m); the extra fields hold the
    model as the device reads it: ``mean``, ``bias`` (m,), ``design`` (m, rank + 1) rows
    x_j = (1, v_j), ``reg``, ``whiten`` (rank + 1, rank + 1) and the factor domain ``space_lo``,
    ``space_hi`` (rank + 1,).
    """

    # the model's arrays have no default: keyword-only, they may follow MappingView's defaulted fields
    mean: float = 0.0
    bias: np.ndarray = field(kw_only=True)
    design: np.ndarray = field(kw_only=True)
    reg: float = 1.0
    whiten: np.ndarray = field(kw_only=True)
    space_lo: np.ndarray = field(kw_only=True)
    space_hi: np.ndarray = field(kw_only=True)

    def points(self, public) -> np.ndarray:
        """The point z of each ratings row, clamped to the factor domain, shape (n, rank + 1).

        Rows with nothing rated get NaN.
        """
        R = np.asarray(public, float)
        observed = ~np.isnan(R)
        some = observed.any(axis=1)
        z = np.full((R.shape[0], self.design.shape[1]), np.nan)
        theta = ridge_rows(np.where(observed, R - self.mean - self.bias, 0.0)[some], observed[some],
                            self.design, self.reg)
        z[some] = np.clip(theta @ self.whiten.T, self.space_lo, self.space_hi)
        return z

    def lookup(self, public) -> np.ndarray:
        """Input index of each ratings row (the device's rule); -1 for a row with nothing rated."""
        return lookup_points(self.points(public), self.inputs)

    def costs(self, rows, targets) -> np.ndarray:
        """Root mean square difference (stars, over the columns) between predicted rating rows.

        Shape (len(rows), len(targets)). ``rows`` and ``targets`` are each ratings rows (a row of
        ratings stands for its own predicted ratings, as the table's distortion does), released
        rows, or factor-space points such as ``inputs`` (:meth:`predicted`).
        """
        return rms_gaps(self.predicted(rows), self.predicted(targets))

    def predicted(self, X) -> np.ndarray:
        """Predicted ratings (n, m), unclipped, of ``X``.

        Factor points (width rank + 1, or ``inputs`` itself) through the inverse whitening; released
        rows (no blank cell) as they are; ratings rows with blanks through the fold-in.
        """
        k1, m = self.design.shape[1], self.design.shape[0]
        X = self.inputs if X is self.inputs else np.asarray(X, float)
        if X is self.inputs or (X.shape[1] == k1 and k1 != m):
            theta = np.linalg.solve(self.whiten, np.asarray(X, float).T).T
        elif not np.isnan(X).any():
            return X
        else:
            theta = np.linalg.solve(self.whiten, np.nan_to_num(self.points(X)).T).T
        return self.mean + self.bias + theta @ self.design.T


def lookup_points(z: np.ndarray, inputs) -> np.ndarray:
    """Input index of each point of ``z`` (n, k): the nearest of ``inputs`` (K_in, k) by the device's l2 rule.

    -1 for a row of NaN (a row the device refuses).
    """
    refused = np.isnan(z).any(axis=1)
    symbols = np.full(z.shape[0], -1, dtype=np.int64)
    if (~refused).any():
        symbols[~refused] = nearest(z[~refused], np.asarray(inputs, float), "l2")
    return symbols


def rms_gaps(own: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Root mean square difference over the columns between each row of ``own`` and each of ``targets``.

    ``own`` (n, m), ``targets`` (t, m); shape (n, t).
    """
    return np.sqrt(np.maximum(((own ** 2).sum(1)[:, None] - 2 * own @ targets.T + (targets ** 2).sum(1)[None, :])
                              / own.shape[1], 0.0))


def view_of_recommender(bundle) -> FactorView:
    """The :class:`FactorView` of a verified recommender :class:`privmap.device.Bundle`, or of its decoded payload.

    The decoded payload is a dict, validated here as the device would.
    """
    model, parts = model_view_parts(bundle)
    outputs = np.asarray([model.ratings(z) for z in parts.pop("space_outputs")], float)
    return FactorView(**parts, outputs=outputs, mean=model.mean, bias=np.asarray(model.bias),
                      design=np.asarray(model.factors), reg=model.reg, whiten=np.asarray(model.whiten))


def model_view_parts(bundle) -> tuple:
    """What every view of a table bundle over a model's space takes from a bundle or its payload.

    From a verified :class:`privmap.device.Bundle`, or from its decoded payload (a dict, validated
    here as the device would): the device's model, and the view's fields by name
    (``space_outputs`` the outputs as points of the space, for the view to decode with the model).
    """
    if isinstance(bundle, dict):
        from privmap.device import Limits
        from privmap.device.kinds import parse_table_body
        body = parse_table_body(bundle, Limits())
        model, space, inputs, outputs = body["model"], body["features"], body["inputs"], body["outputs"]
        index, weight, bits = body["index"], body["weight"], body["bits"]
        classes, private_name, prior, delta = body["classes"], body["private_name"], body["prior"], \
            body["metrics"].get("delta")
    else:
        model, space, inputs, outputs = bundle.model, bundle.space, bundle.inputs, bundle.outputs
        index, weight, bits = bundle.index, bundle.weight, bundle.bits
        classes, private_name, prior, delta = bundle.classes, bundle.private_name, bundle.prior, \
            bundle.metrics.get("delta")
    q = table_probabilities(index, weight, bits, len(outputs))
    return model, dict(mechanism="quantized", metric="l2", inputs=np.asarray(inputs, float), space_outputs=outputs,
                       q=q, classes=tuple(classes), features=tuple(f.name for f in model.columns),
                       private_name=private_name, delta=delta, prior=np.asarray(prior, float), categorical=False,
                       space_lo=np.array([f.min for f in space], float), space_hi=np.array([f.max for f in space], float),
                       columns=payload_columns({"private": {"name": private_name, "classes": list(classes)}}))
