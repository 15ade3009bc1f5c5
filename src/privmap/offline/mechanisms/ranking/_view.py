"""The evaluation view of a ranking bundle: what its devices do, as arrays.

A ranking device first embeds which items the row rated into the score space
(:mod:`._model`); :class:`ScoreView` does the same with numpy (the exact integer sum, the unit
scaling, the clamp to the space's domain, the nearest centre), and releases the outputs' score
rows as the device decodes them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from ..recommender import lookup_points, model_view_parts, rms_gaps
from ..table import MappingView

__all__ = ["ScoreView", "view_of_ranking"]


@dataclass(frozen=True)
class ScoreView(MappingView):
    """A :class:`MappingView` whose rows are ratings embedded in the score space before the lookup.

    Rows are ratings (n, m; NaN = not rated). ``inputs`` are the score-space centres (K_in, k),
    ``outputs`` the released score rows (K_out, m); ``embed`` (m, k, whole numbers) and ``basis``
    (m, k, the score rows as the device reads them) are the space, ``space_lo``, ``space_hi`` (k,)
    its domain.
    """

    #: Released rows are scores, higher first (not ratings).
    RELEASES: ClassVar[str] = "scores"

    # the space's arrays have no default: keyword-only, they may follow MappingView's defaulted fields
    embed: np.ndarray = field(kw_only=True)
    basis: np.ndarray = field(kw_only=True)
    space_lo: np.ndarray = field(kw_only=True)
    space_hi: np.ndarray = field(kw_only=True)

    def points(self, public) -> np.ndarray:
        """The point z of each ratings row, clamped to the space's domain, shape (n, k).

        NaN for a row the device refuses (nothing rated, or rated items whose rows cancel out).
        """
        rated = ~np.isnan(np.asarray(public, float))
        y = rated.astype(np.int64) @ self.embed
        length = np.sqrt(np.sum(y * y, axis=1).astype(float))
        z = np.full(y.shape, np.nan)
        ok = length > 0
        z[ok] = np.clip(y[ok] / length[ok, None], self.space_lo, self.space_hi)
        return z

    def lookup(self, public) -> np.ndarray:
        """Input index of each ratings row (the device's rule); -1 for a row the device refuses."""
        return lookup_points(self.points(public), self.inputs)

    def costs(self, rows, targets) -> np.ndarray:
        """Root mean square difference, over the columns, between score rows, shape (len(rows), len(targets)).

        ``rows`` and ``targets`` are each ratings rows (a row stands for the score row of its point),
        released score rows, or score-space points such as ``inputs``.
        """
        return rms_gaps(self.predicted(rows), self.predicted(targets))

    def predicted(self, X) -> np.ndarray:
        """Score rows (n, m), unrounded, of ``X``.

        Score-space points (width k, or ``inputs`` itself) through the basis; released rows (no blank
        cell) as they are; ratings rows with blanks through the embedding.
        """
        k, m = self.basis.shape[1], self.basis.shape[0]
        X = self.inputs if X is self.inputs else np.asarray(X, float)
        if X is self.inputs or (X.shape[1] == k and k != m):
            return np.asarray(X, float) @ self.basis.T
        if not np.isnan(X).any():
            return X
        return np.nan_to_num(self.points(X)) @ self.basis.T


def view_of_ranking(bundle) -> ScoreView:
    """The :class:`ScoreView` of a verified ranking :class:`privmap.device.Bundle`, or of its decoded payload.

    The decoded payload is a dict, validated here as the device would.
    """
    model, parts = model_view_parts(bundle)
    outputs = np.asarray([model.ratings(z) for z in parts.pop("space_outputs")], float)
    return ScoreView(**parts, outputs=outputs, embed=np.asarray(model.embed, dtype=np.int64),
                     basis=np.asarray(model.basis, float) / 2.0 ** model.basis_bits)
