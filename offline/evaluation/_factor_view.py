"""The evaluation view of a recommender bundle: what its devices do, as arrays.

:class:`~privmap.offline.evaluation._evaluate.MappingView` looks a row up by its nearest input;
a recommender device first folds the ratings row into the factor space. :class:`FactorView`
does the same with numpy (the ridge solve of :mod:`._factors`, the whitening, the clamp to the
factor domain, the nearest centre), and releases the outputs' predicted rating rows.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...data._distortion import nearest
from ...evaluation._evaluate import MappingView
from ._factors import _ridge_rows

__all__ = ["FactorView", "view_of_recommender"]


@dataclass(frozen=True)
class FactorView(MappingView):
    """A :class:`MappingView` whose rows are ratings (n, m; NaN = not rated) folded into the factor
    space before the lookup. ``inputs`` are the factor-space centres (K_in, rank + 1), ``outputs``
    the released rating rows (K_out, m); the extra fields hold the model as the device reads it:
    ``mean``, ``bias`` (m,), ``design`` (m, rank + 1) rows x_j = (1, v_j), ``reg``, ``whiten``
    (rank + 1, rank + 1) and the factor domain ``space_lo``, ``space_hi`` (rank + 1,)."""

    mean: float = 0.0
    bias: np.ndarray | None = None
    design: np.ndarray | None = None
    reg: float = 1.0
    whiten: np.ndarray | None = None
    space_lo: np.ndarray | None = None
    space_hi: np.ndarray | None = None

    def points(self, public) -> np.ndarray:
        """z of each ratings row, clamped to the factor domain, shape (n, rank + 1); rows with
        nothing rated get NaN."""
        R = np.asarray(public, float)
        observed = ~np.isnan(R)
        some = observed.any(axis=1)
        z = np.full((R.shape[0], self.design.shape[1]), np.nan)
        theta = _ridge_rows(np.where(observed, R - self.mean - self.bias, 0.0)[some], observed[some],
                            self.design, self.reg)
        z[some] = np.clip(theta @ self.whiten.T, self.space_lo, self.space_hi)
        return z

    def lookup(self, public) -> np.ndarray:
        """Input index of each ratings row (the device's rule); -1 for a row with nothing rated."""
        z = self.points(public)
        refused = np.isnan(z).any(axis=1)
        symbols = np.full(z.shape[0], -1, dtype=np.int64)
        if (~refused).any():
            symbols[~refused] = nearest(z[~refused], np.asarray(self.inputs, float), "l2")
        return symbols

    def costs(self, rows, targets) -> np.ndarray:
        """Root mean square difference (stars, over the columns) between each row's own predicted
        ratings and each target row, shape (len(rows), len(targets))."""
        theta = np.linalg.solve(self.whiten, np.nan_to_num(self.points(rows)).T).T
        own = self.mean + self.bias + theta @ self.design.T
        T = np.asarray(targets, float)
        return np.sqrt(np.maximum(((own ** 2).sum(1)[:, None] - 2 * own @ T.T + (T ** 2).sum(1)[None, :])
                                  / own.shape[1], 0.0))


def view_of_recommender(bundle) -> FactorView:
    """The :class:`FactorView` of a verified recommender :class:`privmap.device.Bundle`."""
    q = np.zeros((len(bundle.inputs), len(bundle.outputs)))
    scale = float(1 << int(bundle.bits))
    for c, (idx, w) in enumerate(zip(bundle.index, bundle.weight)):
        q[c, list(idx)] = np.asarray(w, dtype=float) / scale
    model = bundle.model
    return FactorView(mechanism="quantized", metric="l2", inputs=np.asarray(bundle.inputs, float),
                      outputs=np.asarray(bundle.output_cells, float), q=q, classes=tuple(bundle.classes),
                      features=tuple(f.name for f in bundle.features), private_name=bundle.private_name,
                      delta=bundle.metrics.get("delta"), prior=np.asarray(bundle.prior, float), categorical=False,
                      mean=model.mean, bias=np.asarray(model.bias), design=np.asarray(model.factors),
                      reg=model.reg, whiten=np.asarray(model.whiten),
                      space_lo=np.array([f.min for f in bundle.space], float),
                      space_hi=np.array([f.max for f in bundle.space], float))
