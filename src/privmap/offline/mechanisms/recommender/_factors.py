"""The latent-factor model of the recommender kind.

Fitted by alternating least squares, stored in fixed point, and the fold-in that takes a
ratings row to a point of the whitened factor space.

Why written here rather than taken from a recommender library: the device folds a user in by
one ridge solve against the item factors (pure Python, :mod:`privmap.device.kinds.recommender`),
and the points the mapping is learned on must come from that very solve. Alternating least
squares is exactly that solve repeated, with the item step of the same form; a library's SGD
model (Surprise's SVD) has no fold-in, and its user factors are not what a device would compute.

The model: ``r_uj ~ mean + b_j + x_j . theta_u`` with ``x_j = (1, v_j)`` and ``theta_u = (b_u, u)``
(user bias and rank factors), both sides ridge-penalised with ``reg``. The whitening ``W``
(upper triangular, ``W^T W = G = mean over columns of x_j x_j^T``) makes the Euclidean distance
between ``z = W theta`` points the root mean square, over the columns, of the difference in
predicted ratings: the distortion a recommender feels, in stars.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from privmap.device.constants import MAX_RANK

from ..._canonical import canonical_float
from ..._errors import BuildError

__all__ = ["FactorModel", "fit_factors", "choose_reg", "ridge_rows", "DEFAULT_RANK", "MAX_RANK", "CANDIDATE_REGS"]

#: Default latent rank.
DEFAULT_RANK = 10
#: Ridge penalties tried by :func:`choose_reg` (validation RMSE on held-back training ratings).
CANDIDATE_REGS = (2.0, 5.0, 10.0, 20.0, 40.0)
#: Alternating sweeps of a fit.
SWEEPS = 15
#: Fixed-point entries stay within int16, so that msgpack stores each in at most 3 bytes.
_FIXED_MAX = 32767


@dataclass(frozen=True)
class FactorModel:
    """A fitted model, its item side already rounded to the bundle's fixed point.

    Attributes
    ----------
    mean : float
        Global mean rating.
    items : ndarray of int64, shape (m, rank + 1)
        Per column the item bias and item factor, times ``2**scale_bits``.
    scale_bits : int
    reg : float
        Ridge penalty of the fold-in (and of the fit).
    whiten : ndarray, shape (rank + 1, rank + 1)
        Upper-triangular W (module docstring).
    """

    mean: float
    items: np.ndarray
    scale_bits: int
    reg: float
    whiten: np.ndarray

    @property
    def rank(self) -> int:
        return self.items.shape[1] - 1

    @property
    def bias(self) -> np.ndarray:
        """Item biases b_j as the device reads them, shape (m,)."""
        return self.items[:, 0] / 2.0 ** self.scale_bits

    @property
    def design(self) -> np.ndarray:
        """x_j = (1, v_j) as the device reads them, shape (m, rank + 1)."""
        x = self.items / 2.0 ** self.scale_bits
        x[:, 0] = 1.0
        return x

    def fold_in(self, R: np.ndarray) -> np.ndarray:
        """The factors theta of each row of ``R`` (n, m; NaN = not rated): shape (n, rank + 1).

        Raises :class:`BuildError` for a row with nothing rated.
        """
        observed = ~np.isnan(R)
        if not observed.any(axis=1).all():
            raise BuildError("a ratings row has no rated column")
        return ridge_rows(np.where(observed, R - self.mean - self.bias, 0.0), observed, self.design, self.reg)

    def points(self, R: np.ndarray) -> np.ndarray:
        """The point z = W theta of each row of ``R``: shape (n, rank + 1), in the units of stars."""
        return self.fold_in(R) @ self.whiten.T

    def payload(self, columns, lo, hi, integer: bool, missing_token: str, decimals: int) -> dict:
        """The bundle's ``model`` map (docs/bundle-format.md)."""
        return {"columns": list(columns), "min": lo, "max": hi, "integer": bool(integer),
                "missing_token": missing_token, "mean": float(self.mean), "reg": float(self.reg),
                "scale_bits": int(self.scale_bits), "items": self.items.tolist(),
                "whiten": self.whiten.tolist(), "decimals": int(decimals)}


def ridge_rows(Y: np.ndarray, observed: np.ndarray, X: np.ndarray, reg: float) -> np.ndarray:
    """For each row u: argmin_t sum_j observed[u, j] (Y[u, j] / observed[u, j] - X[j] . t)^2 + reg |t|^2.

    Y (n, m) with zeros where not observed, observed (n, m) bool (a user's rated cells) or
    non-negative weights (a pool of users, Y then the weighted sums: :mod:`._calibrate`),
    X (m, k1). Returns (n, k1).
    Rows are solved in chunks whose Gram stack stays near 32 MiB.
    """
    n, k1 = Y.shape[0], X.shape[1]
    out = np.empty((n, k1))
    chunk = max(1, (1 << 22) // max(k1 * k1, Y.shape[1]))
    eye = reg * np.eye(k1)
    rhs = Y @ X
    for start in range(0, n, chunk):
        M = observed[start:start + chunk].astype(float)
        gram = np.einsum("uj,ja,jb->uab", M, X, X, optimize=True) + eye
        out[start:start + chunk] = np.linalg.solve(gram, rhs[start:start + chunk, :, None])[:, :, 0]
    return out


def _to_fixed(values: np.ndarray) -> tuple[np.ndarray, int]:
    """``values`` as whole numbers times ``2**bits``, bits the largest (<= 30) keeping them in int16."""
    peak = float(np.max(np.abs(values))) if values.size else 0.0
    bits = 30 if peak == 0.0 else max(0, min(30, int(math.floor(math.log2(_FIXED_MAX / peak)))))
    fixed = np.round(values * 2.0 ** bits).astype(np.int64)
    return np.clip(fixed, -_FIXED_MAX, _FIXED_MAX), bits


def fit_factors(R: np.ndarray, *, rank: int = DEFAULT_RANK, reg: float = 10.0, sweeps: int = SWEEPS,
                rng: np.random.Generator) -> FactorModel:
    """Fit the model (module docstring) to ``R`` (n, m; NaN = not rated) by alternating least squares.

    The item side is rounded to fixed point before the whitening is computed, and the mean and
    the whitening to the payload's significant digits, so every later fold-in (here and on
    devices) uses exactly the bundle's numbers.

    Raises
    ------
    BuildError
        ``R`` has no rating, or rank/reg out of range.
    """
    if not 1 <= rank <= MAX_RANK:
        raise BuildError(f"the factor rank must be in 1..{MAX_RANK}, got {rank}")
    if not (math.isfinite(reg) and reg > 0):
        raise BuildError(f"the factor penalty must be a finite number > 0, got {reg}")
    observed = ~np.isnan(R)
    if not observed.any():
        raise BuildError("no rating to fit the factor model to")
    mean = float(np.mean(R[observed]))
    n, m = R.shape
    items = np.hstack([np.zeros((m, 1)), 0.1 * rng.standard_normal((m, rank))])      # (b_j, v_j)
    users = np.zeros((n, rank + 1))                                                    # (b_u, u)
    centred = np.where(observed, R - mean, 0.0)
    for _ in range(sweeps):
        design = np.hstack([np.ones((m, 1)), items[:, 1:]])
        users = ridge_rows(np.where(observed, centred - items[:, :1].T, 0.0), observed, design, reg)
        design = np.hstack([np.ones((n, 1)), users[:, 1:]])
        items = ridge_rows(np.where(observed.T, centred.T - users[:, :1].T, 0.0), observed.T, design, reg)
    fixed, bits = _to_fixed(items)
    x = fixed / 2.0 ** bits
    x[:, 0] = 1.0
    gram = x.T @ x / m
    gram += 1e-9 * np.trace(gram) * np.eye(rank + 1)      # a factor the penalty zeroed keeps W invertible
    whiten = np.triu(np.vectorize(canonical_float)(np.linalg.cholesky(gram).T))
    return FactorModel(mean=canonical_float(mean), items=fixed, scale_bits=bits, reg=canonical_float(float(reg)),
                       whiten=whiten)


def choose_reg(R: np.ndarray, *, rank: int = DEFAULT_RANK, candidates=CANDIDATE_REGS,
               rng: np.random.Generator, progress: Callable[[float], None] | None = None) -> tuple[float, dict]:
    """The ridge penalty of least RMSE on 10 % of ``R``'s ratings held back, and every candidate's RMSE.

    Predicted by folding each user in from the rest (as a device would); RMSE in stars.
    ``progress`` is told the fraction of the candidates fitted after each.

    Raises
    ------
    BuildError
        Too few ratings to hold any back.
    """
    observed = np.argwhere(~np.isnan(R))
    if observed.shape[0] < 20:
        raise BuildError("too few ratings to choose the factor penalty")
    held = observed[rng.random(observed.shape[0]) < 0.1]
    train = R.copy()
    train[held[:, 0], held[:, 1]] = np.nan
    keep = ~np.all(np.isnan(train), axis=1)
    held = held[keep[held[:, 0]]]
    truth = R[held[:, 0], held[:, 1]]
    scores = {}
    for reg in candidates:
        model = fit_factors(train[keep], rank=rank, reg=reg, rng=np.random.default_rng(rng.integers(2**32)))
        theta = np.zeros((R.shape[0], rank + 1))
        theta[keep] = model.fold_in(train[keep])
        predicted = model.mean + model.bias[held[:, 1]] + np.sum(theta[held[:, 0]] * model.design[held[:, 1]], axis=1)
        scores[float(reg)] = float(np.sqrt(np.mean((predicted - truth) ** 2)))
        if progress is not None:
            progress(len(scores) / len(candidates))
    best = min(scores, key=lambda r: (scores[r], r))
    return best, scores
