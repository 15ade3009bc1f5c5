"""Recommender utility: matrix-factorization RMSE on true vs released ratings (seed 000, Table I).

Protocol (Table I: "5-fold cross validation and randomly removing 10% of the
ratings in each test set"): users are split into ``folds`` groups; in fold f a
random ``holdout`` share of the ratings of the users of group f is held out.
A biased matrix factorization (alternating least squares) is trained on every
other rating and predicts the held-out ones:

- RMSE1: trained on the true ratings;
- RMSE2: trained on the released ratings (what the service receives: the
  released vectors, their nonzero cells read as ratings), the held-out cells
  removed;

both are compared with the true held-out ratings. A rating value of 0 means
"not rated".
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Factorization:
    """r_hat(u, i) = mu + b_u + b_i + U_u . V_i."""

    mu: float
    user_bias: np.ndarray
    item_bias: np.ndarray
    U: np.ndarray
    V: np.ndarray

    def predict(self, users: np.ndarray, items: np.ndarray, *, lo: float | None = None,
                hi: float | None = None) -> np.ndarray:
        """Predicted ratings for (user, item) pairs, clipped to [lo, hi] when given."""
        r = self.mu + self.user_bias[users] + self.item_bias[items] + np.sum(self.U[users] * self.V[items], axis=1)
        if lo is not None or hi is not None:
            r = np.clip(r, lo, hi)
        return r


def factorize(R: np.ndarray, observed: np.ndarray, *, rank: int = 4, reg: float = 2.0, iters: int = 20,
              seed: int = 0) -> Factorization:
    """Biased matrix factorization by alternating (ridge) least squares on the observed cells.

    Parameters
    ----------
    R : ndarray, shape (n_users, n_items)
        Ratings (values outside ``observed`` are ignored).
    observed : ndarray of bool, same shape
        Training cells.
    rank, reg, iters, seed
        Latent dimension, ridge penalty (on factors and biases), ALS sweeps, initialisation seed.
    """
    R = np.asarray(R, dtype=float)
    M = np.asarray(observed, dtype=bool)
    n, m = R.shape
    if not M.any():
        raise ValueError("no observed ratings to train on")
    rng = np.random.default_rng(seed)
    mu = float(R[M].mean())
    U = 0.1 * rng.standard_normal((n, rank))
    V = 0.1 * rng.standard_normal((m, rank))
    bu = np.zeros(n)
    bi = np.zeros(m)
    W = M.astype(float)
    eye = reg * np.eye(rank + 1)
    for _ in range(iters):
        # users: [U_u, b_u] against targets r - mu - b_i, with item features [V_i, 1]
        F = np.hstack([V, np.ones((m, 1))])
        G = np.einsum("ui,ik,il->ukl", W, F, F) + eye
        y = W * (R - mu - bi[None, :])
        sol = np.linalg.solve(G, (y @ F)[:, :, None])[:, :, 0]
        U, bu = sol[:, :rank], sol[:, rank]
        # items: [V_i, b_i] against targets r - mu - b_u, with user features [U_u, 1]
        F = np.hstack([U, np.ones((n, 1))])
        G = np.einsum("ui,uk,ul->ikl", W, F, F) + eye
        y = W * (R - mu - bu[:, None])
        sol = np.linalg.solve(G, (y.T @ F)[:, :, None])[:, :, 0]
        V, bi = sol[:, :rank], sol[:, rank]
    return Factorization(mu=mu, user_bias=bu, item_bias=bi, U=U, V=V)


def rmse_true_vs_released(true: np.ndarray, released: np.ndarray, *, folds: int = 5, holdout: float = 0.1,
                          rank: int = 4, reg: float = 2.0, iters: int = 20, seed: int = 0) -> list[dict]:
    """Table I: per fold, RMSE of predictions trained on true (RMSE1) and on released (RMSE2) ratings.

    Parameters
    ----------
    true, released : ndarray, shape (n_users, n_items)
        Ratings; 0 = not rated. ``released`` is what the service would receive.

    Returns
    -------
    list of dict with ``fold``, ``held_out`` (number of ratings), ``rmse_true``, ``rmse_released``.
    """
    true = np.asarray(true, dtype=float)
    released = np.asarray(released, dtype=float)
    if true.shape != released.shape:
        raise ValueError(f"true ratings {true.shape} and released ratings {released.shape} differ in shape")
    rated = true != 0
    lo, hi = float(true[rated].min()), float(true[rated].max())
    rng = np.random.default_rng(seed)
    n = true.shape[0]
    group = rng.permutation(n) % folds
    out = []
    for f in range(folds):
        cells = np.argwhere(rated & (group == f)[:, None])
        pick = rng.random(len(cells)) < holdout
        held = cells[pick]
        hidden = np.zeros_like(rated)
        hidden[held[:, 0], held[:, 1]] = True
        u, i = held[:, 0], held[:, 1]
        truth = true[u, i]
        model_true = factorize(true, rated & ~hidden, rank=rank, reg=reg, iters=iters, seed=seed)
        model_rel = factorize(released, (released != 0) & ~hidden, rank=rank, reg=reg, iters=iters, seed=seed)
        rmse1 = float(np.sqrt(np.mean((model_true.predict(u, i, lo=lo, hi=hi) - truth) ** 2)))
        rmse2 = float(np.sqrt(np.mean((model_rel.predict(u, i, lo=lo, hi=hi) - truth) ** 2)))
        out.append({"fold": f + 1, "held_out": int(len(held)), "rmse_true": rmse1, "rmse_released": rmse2})
    return out
