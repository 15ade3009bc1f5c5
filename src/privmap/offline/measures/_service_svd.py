"""The service's recommender: scikit-surprise's SVD (biased matrix factorisation by SGD) on a ratings matrix.

:func:`fit_svd` trains ``surprise.SVD`` on the non-blank cells of a matrix and returns its learned
parameters as arrays (:class:`ServiceModel`), so that predictions for many (user, item) pairs,
or a user's whole row, are one vectorised expression. The prediction is surprise's own
(``SVD.estimate`` then ``predict``'s clipping to the rating scale):

    r_hat(u, i) = mu + b_u + b_i + p_u . q_i,

where a user or item with no rating in the matrix is unknown to the model and contributes no bias
and no factor term (a user with no row gets mu + b_i). The library is a maintained, widely used
recommender; 50 factors and surprise's defaults otherwise (20 epochs of SGD, learning rate 0.005,
regularisation 0.02, factors initialised N(0, 0.1^2) from ``seed``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._errors import BuildError

__all__ = ["FACTORS", "EPOCHS", "REGULARISATION", "ServiceModel", "fit_svd"]

#: Latent factors of the service's SVD.
FACTORS = 50
#: SGD epochs (surprise's default).
EPOCHS = 20
#: The factors' and biases' L2 penalty (surprise's default ``reg_all``).
REGULARISATION = 0.02


@dataclass(frozen=True)
class ServiceModel:
    """What the service's SVD learned, indexed by the rows and columns of the matrix it was fitted on.

    Attributes
    ----------
    mu : float
        Mean of the training ratings.
    user_bias : ndarray, shape (n_users,)
    item_bias : ndarray, shape (n_items,)
    P : ndarray, shape (n_users, factors)
    Q : ndarray, shape (n_items, factors)
        Factors; rows of unknown users or items are zero, as are their biases.
    scale : (float, float)
        The rating scale predictions are clipped to.
    """

    mu: float
    user_bias: np.ndarray
    item_bias: np.ndarray
    P: np.ndarray
    Q: np.ndarray
    scale: tuple[float, float]

    def predict(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        """Predicted ratings of (user, item) pairs, clipped to the scale, shape (len(users),)."""
        users, items = np.asarray(users, np.int64), np.asarray(items, np.int64)
        raw = (self.mu + self.user_bias[users] + self.item_bias[items]
               + np.einsum("ij,ij->i", self.P[users], self.Q[items]))
        return np.clip(raw, *self.scale)

    def scores(self, users: np.ndarray) -> np.ndarray:
        """Unclipped predicted ratings of every item for ``users``, shape (len(users), n_items).

        The ranking a recommendation list follows (clipping would tie the top items).
        """
        users = np.asarray(users, np.int64)
        return self.mu + self.user_bias[users, None] + self.item_bias[None, :] + self.P[users] @ self.Q.T


def fit_svd(R, *, scale: tuple[float, float], factors: int = FACTORS, epochs: int = EPOCHS,
            regularisation: float = REGULARISATION, seed: int = 0) -> ServiceModel:
    """Train surprise's SVD on the non-blank cells of ``R``.

    Parameters
    ----------
    R : array-like of float, shape (n_users, n_items)
        Ratings; NaN = no rating. Row u is user u, column i item i (inner ids in this order, so
        the initial factors of a row do not depend on the rows after it).
    scale : (float, float)
        The lowest and highest rating, for clipping.
    factors, epochs, regularisation, seed
        surprise.SVD's ``n_factors``, ``n_epochs``, ``reg_all`` and ``random_state``.

    Returns
    -------
    ServiceModel

    Raises
    ------
    BuildError
        No rating in ``R``, or scikit-surprise is not installed.
    """
    try:
        from surprise import SVD, Trainset
    except ImportError:  # pragma: no cover - the offline extra installs it
        raise BuildError("the recommender figures need scikit-surprise: pip install 'privmap[offline]'") from None
    R = np.asarray(R, dtype=float)
    n, m = R.shape
    rated = ~np.isnan(R)
    if not rated.any():
        raise BuildError("no rating to train the recommender on")
    users_known = np.flatnonzero(rated.any(axis=1))
    items_known = np.flatnonzero(rated.any(axis=0))
    u_inner = np.full(n, -1, np.int64)
    u_inner[users_known] = np.arange(users_known.size)
    i_inner = np.full(m, -1, np.int64)
    i_inner[items_known] = np.arange(items_known.size)
    rows, cols = np.nonzero(rated)
    values = R[rows, cols].tolist()
    ur: dict = {}
    ir: dict = {}
    for u, i, r in zip(u_inner[rows].tolist(), i_inner[cols].tolist(), values):
        ur.setdefault(u, []).append((i, r))
        ir.setdefault(i, []).append((u, r))
    trainset = Trainset(ur, ir, int(users_known.size), int(items_known.size), len(values),
                        (float(scale[0]), float(scale[1])), {}, {})
    algo = SVD(n_factors=int(factors), n_epochs=int(epochs), reg_all=float(regularisation), biased=True,
               random_state=int(seed))
    from threadpoolctl import threadpool_limits
    with threadpool_limits(limits=1, user_api="blas"):
        algo.fit(trainset)
    bu, bi = np.zeros(n), np.zeros(m)
    P, Q = np.zeros((n, int(factors))), np.zeros((m, int(factors)))
    bu[users_known], P[users_known] = algo.bu, algo.pu
    bi[items_known], Q[items_known] = algo.bi, algo.qi
    return ServiceModel(mu=float(trainset.global_mean), user_bias=bu, item_bias=bi, P=P, Q=Q,
                        scale=(float(scale[0]), float(scale[1])))
