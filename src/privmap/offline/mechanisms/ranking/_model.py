"""The score space of the ranking kind.

An item-item model of which items users rate, projected to a rank a device can afford, stored
in fixed point.

What the mapping has to keep is the *ranking* a user's profile implies: which unseen items a
service should put first. An item-item model on the rated/unrated matrix does that well (EASE,
Steck 2019: ``B = -P / diag(P)``, ``P = (X^T X + lambda I)^-1``, zero diagonal; the user's score
row is ``x B``), and a ranking does not change when its score row is scaled, so a user is
represented by the *direction* of that row. Two things make the direction cheap on a device:

- the training users' normalised score rows are summarised by their top ``k`` right singular
  vectors ``V`` (m, k): the score space;
- a user's coordinates there are ``x B V`` up to scale: the sum, over the rated columns, of the
  rows of ``E = B V`` (m, k), scaled to unit length. ``E`` is stored as whole numbers, so the sum
  is exact integer arithmetic on every device (:mod:`privmap.device.kinds.ranking`).

The distance between two users' points is then the distance between their normalised score rows
as far as rank ``k`` keeps them, and the released row of a point ``z`` is ``sqrt(m) V z``: scores
whose root mean square difference over the columns is the distance between the points (the l2
table distortion is in those units). Why written here rather than taken from a recommender
library: the device must compute the very embedding the mapping is learned on, in pure Python.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from privmap.device.constants import MAX_RANK
from privmap.device.kinds.ranking import MAX_ENTRY, MAX_SCORE_WORK

from ..._errors import BuildError
from ...measures import ease_weights

__all__ = ["ScoreSpace", "fit_score_space", "DEFAULT_RANK", "DEFAULT_PENALTY"]

#: Default rank k of the score space.
DEFAULT_RANK = 32
#: Default EASE penalty lambda (SERVICE.md's service uses the same).
DEFAULT_PENALTY = 200.0


@dataclass(frozen=True)
class ScoreSpace:
    """A fitted score space, its two item sides already whole numbers as the bundle stores them.

    Attributes
    ----------
    embed : ndarray of int64, shape (m, k)
        Each column's embedding row (a user's point is the unit vector along the sum of the rows
        of the columns they rated).
    basis : ndarray of int64, shape (m, k)
        Each column's score row times ``2**basis_bits``: the released score of column j for point
        z is ``basis[j] . z / 2**basis_bits``.
    basis_bits : int
    penalty : float
        The EASE lambda the space was fitted with.
    """

    embed: np.ndarray
    basis: np.ndarray
    basis_bits: int
    penalty: float

    @property
    def rank(self) -> int:
        """k: the dimension of the score space."""
        return self.embed.shape[1]

    def points(self, R) -> np.ndarray:
        """The unit point z of each row of ``R`` (n, m; NaN = not rated), shape (n, k).

        Computed as the device does (an exact integer sum, then one division by its length).

        Raises
        ------
        BuildError
            A row with nothing rated, or whose rated columns' rows cancel out.
        """
        rated = ~np.isnan(np.asarray(R, dtype=float))
        y = rated.astype(np.int64) @ self.embed
        length = np.sqrt(np.sum(y * y, axis=1).astype(float))
        if not np.all(length > 0):
            raise BuildError("a ratings row has no rated column, or its rated items give no direction to embed")
        return y / length[:, None]

    def scores(self, Z) -> np.ndarray:
        """The score rows (n, m) of points ``Z`` (n, k), before the device's rounding."""
        return np.asarray(Z, dtype=float) @ (self.basis / 2.0 ** self.basis_bits).T

    def payload(self, columns, lo, hi, integer: bool, missing_token: str, decimals: int) -> dict:
        """The bundle's ``model`` map (docs/bundle-format.md, "ranking")."""
        return {"columns": list(columns), "min": lo, "max": hi, "integer": bool(integer),
                "missing_token": missing_token, "embed": self.embed.tolist(), "basis": self.basis.tolist(),
                "basis_bits": int(self.basis_bits), "decimals": int(decimals)}


def _whole(values: np.ndarray) -> tuple[np.ndarray, int]:
    """``values`` times ``2**bits`` rounded to whole numbers, and bits.

    bits is the largest (<= 30) keeping every entry within :data:`MAX_ENTRY`.
    """
    peak = float(np.max(np.abs(values))) if values.size else 0.0
    bits = 30 if peak == 0.0 else max(0, min(30, int(math.floor(math.log2(MAX_ENTRY / peak)))))
    return np.clip(np.round(values * 2.0 ** bits), -MAX_ENTRY, MAX_ENTRY).astype(np.int64), bits


def fit_score_space(R, *, rank: int = DEFAULT_RANK, penalty: float = DEFAULT_PENALTY,
                    rng: np.random.Generator) -> ScoreSpace:
    """Fit the score space (module docstring) to the training ratings ``R`` (n, m; NaN = not rated).

    Parameters
    ----------
    R : array-like of float, shape (n, m)
        Training rows; only which cells are rated is used.
    rank : int
        k, in 2..min(64, m - 1); lowered to what the rows support (at most n - 1).
    penalty : float
        EASE's lambda, > 0.
    rng : numpy.random.Generator
        Seeds the randomized singular value decomposition.

    Raises
    ------
    BuildError
        Fewer than 3 columns or 3 rows, a rank or penalty out of range, or more columns x rank
        than the device's work cap. (A row that cannot embed is refused by :meth:`ScoreSpace.points`.)
    """
    rated = ~np.isnan(np.asarray(R, dtype=float))
    n, m = rated.shape
    if m < 3 or n < 3:
        raise BuildError(f"--utility ranking needs at least 3 item columns and 3 users, got {m} and {n}")
    if not 2 <= rank <= MAX_RANK:
        raise BuildError(f"the score space's rank must be in 2..{MAX_RANK}, got {rank}")
    if not (math.isfinite(penalty) and penalty > 0):
        raise BuildError(f"the EASE penalty must be a finite number > 0, got {penalty}")
    k = min(rank, m - 1, n - 1)
    if m * k > MAX_SCORE_WORK:
        raise BuildError(f"{m} item columns x rank {k} exceeds the device's work cap {MAX_SCORE_WORK}; "
                         "lower --factors or keep fewer columns")
    from sklearn.utils.extmath import randomized_svd  # here: importing the CLI stays light
    X = rated.astype(float)
    weights = ease_weights(X, penalty)
    scores = X @ weights
    length = np.linalg.norm(scores, axis=1, keepdims=True)
    directions = scores / np.where(length > 0, length, 1.0)
    _, _, vt = randomized_svd(directions, k, n_iter=6, random_state=int(rng.integers(2 ** 31)))
    V = vt.T                                              # (m, k), orthonormal columns
    V *= np.where(V.sum(axis=0) < 0, -1.0, 1.0)           # a sign per direction, fixed for reproducibility
    embed, _ = _whole(weights @ V)
    basis, bits = _whole(math.sqrt(m) * V)
    return ScoreSpace(embed=embed, basis=basis, basis_bits=bits, penalty=float(penalty))
