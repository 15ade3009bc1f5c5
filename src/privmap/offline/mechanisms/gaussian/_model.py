"""Greedy Gaussian noise with a utility cap and a gain-ratio floor (seed 004, Sharma & Amariucai).

Model: released X (n), private X_p (n_p) and utility X_u (n_u) jointly Gaussian; the release is
``Y = X + N`` with ``N ~ N(0, diag(sigma2))``. All logs are natural (nats) here.

- ``I(X_p;Y) = 1/2 (log|S_p| + log|S_X + D| - log|S_{X+p} + diag(D, 0)|)``, the same for X_u;
- utility loss ``I(X_u;X) - I(X_u;Y)`` must stay <= delta, and the end totals must satisfy
  ``(I(X_p;X) - I(X_p;Y)) / (I(X_u;X) - I(X_u;Y)) >= gamma``;
- the Fisher variant (n_u = 1) measures utility by ``F = (S_{Y+u}^{-1})_{uu} - 1/s_u`` instead,
  with the floor ``F >= (exp(2 (I(X_u;X) - delta)) - 1) / s_u`` (identity (13)).

The greedy adds variance increments ``dtheta`` to the coordinate with the best privacy gain per
unit utility loss, halving ``dtheta`` whenever the best step would break a constraint, until
``dtheta < stop``. Each candidate is scored in O(1) from the diagonals of the three inverses via
``log|M + t e_i e_i^T| = log|M| + log(1 + t (M^{-1})_ii)``, and a commit updates the inverses by
Sherman-Morrison in O(n^2): an iteration is O(n^2), not the naive O(n^4).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..._errors import BuildError

__all__ = ["GaussianModel", "GreedyResult", "greedy_noise", "check_greedy", "fisher_information"]


#: A Cholesky pivot^2 below this fraction of the largest variance counts as singular.
SINGULAR_RELATIVE = 1e-12


def _logdet(m: np.ndarray, what: str) -> float:
    """log|m| by Cholesky.

    BuildError if m is not positive definite, or numerically singular (a squared pivot at most
    SINGULAR_RELATIVE times the largest diagonal entry).
    """
    try:
        c = np.linalg.cholesky(m)
    except np.linalg.LinAlgError:
        raise BuildError(f"{what} is not positive definite (Cholesky failed); "
                         "regularise or re-estimate the covariance") from None
    d = np.diag(c)
    if not np.all(np.isfinite(d)) or np.any(d * d <= SINGULAR_RELATIVE * float(np.max(np.diag(m)))):
        raise BuildError(f"{what} is not positive definite (numerically singular); "
                         "drop collinear columns or regularise")
    return 2.0 * float(np.sum(np.log(d)))


def _symmetric(m, size, what) -> np.ndarray:
    m = np.asarray(m, dtype=np.float64)
    if m.shape != (size, size) or not np.isfinite(m).all():
        raise BuildError(f"{what} must be a finite {size}x{size} matrix")
    if not np.allclose(m, m.T, rtol=1e-12, atol=1e-12 * max(1.0, float(np.abs(m).max()))):
        raise BuildError(f"{what} is not symmetric")
    return (m + m.T) / 2


@dataclass(frozen=True)
class GaussianModel:
    """Joint covariances of the Gaussian model.

    Attributes
    ----------
    cov_private : ndarray, shape (n + n_p, n + n_p)
        Covariance of (X, X_p), released coordinates first.
    cov_utility : ndarray, shape (n + n_u, n + n_u)
        Covariance of (X, X_u); its top-left n x n block must equal ``cov_private``'s.
    n : int
        Number of released coordinates.
    """

    cov_private: np.ndarray
    cov_utility: np.ndarray
    n: int

    @classmethod
    def from_blocks(cls, cov_private, cov_utility, n: int) -> GaussianModel:
        """Validate and build the model.

        Raises :class:`BuildError` for a shape mismatch, an asymmetric or non-positive-definite matrix,
        or released blocks that disagree.
        """
        cp = np.asarray(cov_private, dtype=np.float64)
        cu = np.asarray(cov_utility, dtype=np.float64)
        if cp.ndim != 2 or cu.ndim != 2 or not 0 < n < min(len(cp), len(cu)):
            raise BuildError("covariances must be square, with at least one private/utility coordinate")
        cp = _symmetric(cp, len(cp), "cov(X, X_p)")
        cu = _symmetric(cu, len(cu), "cov(X, X_u)")
        if not np.allclose(cp[:n, :n], cu[:n, :n], rtol=1e-12, atol=0):
            raise BuildError("cov(X, X_p) and cov(X, X_u) disagree on cov(X)")
        model = cls(cp, cu, n)
        for m, what in ((cp, "cov(X, X_p)"), (cu, "cov(X, X_u)"), (cp[n:, n:], "cov(X_p)"),
                        (cu[n:, n:], "cov(X_u)")):
            _logdet(m, what)
        return model

    @classmethod
    def estimate(cls, x: np.ndarray, x_p: np.ndarray, x_u: np.ndarray) -> GaussianModel:
        """Unbiased sample covariance (``numpy.cov``, ddof=1) of the stacked columns.

        Parameters
        ----------
        x : (m, n); x_p : (m, n_p); x_u : (m, n_u) float arrays of the same m rows.
        """
        joint = np.cov(np.hstack([x, x_p, x_u]), rowvar=False, ddof=1)
        n, n_p = x.shape[1], x_p.shape[1]
        p_idx = list(range(n + n_p))
        u_idx = list(range(n)) + list(range(n + n_p, joint.shape[0]))
        return cls.from_blocks(joint[np.ix_(p_idx, p_idx)], joint[np.ix_(u_idx, u_idx)], n)

    def _with_noise(self, m: np.ndarray, sigma2) -> np.ndarray:
        out = m.copy()
        out[np.arange(self.n), np.arange(self.n)] += np.asarray(sigma2, dtype=np.float64)
        return out

    def information(self, which: str, sigma2) -> float:
        """``I(X_which; Y)`` in nats for noise variances ``sigma2`` (n,).

        ``which`` is ``"private"`` or ``"utility"``. Raises :class:`BuildError` if a matrix is not PD.
        """
        m = self.cov_private if which == "private" else self.cov_utility
        n = self.n
        return 0.5 * (_logdet(m[n:, n:], "cov(attribute)") + _logdet(self._with_noise(m[:n, :n], sigma2), "cov(Y)")
                      - _logdet(self._with_noise(m, sigma2), "cov(Y, attribute)"))


def fisher_information(model: GaussianModel, sigma2) -> float:
    """Fisher information of Y about a scalar X_u: ``(S_{Y+u}^{-1})_{uu} - 1/s_u``.

    Seed eq. (11), sign corrected. Raises :class:`BuildError` unless n_u = 1.
    """
    m = model.cov_utility
    if len(m) != model.n + 1:
        raise BuildError("the Fisher-information variant needs exactly one utility column")
    inv = np.linalg.inv(model._with_noise(m, sigma2))
    return float(inv[-1, -1] - 1.0 / m[-1, -1])


@dataclass(frozen=True)
class GreedyResult:
    """Outcome of :func:`greedy_noise` (nats).

    Attributes
    ----------
    sigma2 : ndarray (n,)   noise variances
    private_before, private_after : float   I(X_p;X), I(X_p;Y)
    utility_before, utility_after : float   I(X_u;X), I(X_u;Y)
    iterations : int        greedy iterations (commits + halvings)
    """

    sigma2: np.ndarray
    private_before: float
    private_after: float
    utility_before: float
    utility_after: float
    iterations: int

    @property
    def utility_loss(self) -> float:
        return self.utility_before - self.utility_after


def check_greedy(delta, gamma, *, dtheta, stop, saturation) -> None:
    """Check the greedy's parameters (:func:`greedy_noise`).

    Raises
    ------
    BuildError
        ``delta`` or ``gamma`` not a finite number >= 0, or ``dtheta``, ``stop`` or ``saturation`` not > 0.
    """
    for name, value in (("delta", delta), ("gamma", gamma)):
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
            raise BuildError(f"{name} must be a finite number >= 0")
    if not (dtheta > 0 and stop > 0 and saturation > 0):
        raise BuildError("dtheta, stop and saturation must be > 0")


def greedy_noise(model: GaussianModel, delta: float, gamma: float = 0.0, *, fisher: bool = False,
                 dtheta: float = 1.0, stop: float = 1e-3, saturation: float = 1e-6,
                 max_iterations: int = 1_000_000, progress=None) -> GreedyResult:
    """The seed's greedy algorithm (steps 1-6) with O(n^2) rank-one updates per iteration.

    Parameters
    ----------
    model : GaussianModel
    delta : float >= 0
        Utility-loss cap in nats (``fisher=True``: converted to the Fisher floor by identity (13)).
    gamma : float >= 0
        Least ratio of total privacy gain to total utility loss.
    fisher : bool
        Measure utility by the Fisher information (needs n_u = 1).
    dtheta, stop, saturation : float > 0
        Initial variance increment, the increment below which it stops, and eps_0 (a privacy
        gain below it marks a coordinate saturated).
    max_iterations : int
        Safety cap; reaching it raises :class:`BuildError`.
    progress : callable(fraction) or None

    Returns
    -------
    GreedyResult, with the mutual informations recomputed from scratch (Cholesky) at the end.
    """
    check_greedy(delta, gamma, dtheta=dtheta, stop=stop, saturation=saturation)
    n = model.n
    sigma2 = np.zeros(n)
    private_before = model.information("private", sigma2)
    utility_before = model.information("utility", sigma2)
    inv_x = np.linalg.inv(model.cov_private[:n, :n])
    inv_p = np.linalg.inv(model.cov_private)
    inv_u = np.linalg.inv(model.cov_utility)
    s_u = model.cov_utility[-1, -1]
    if fisher:
        fisher_before = fisher_information(model, sigma2)
        floor = (math.exp(2.0 * (utility_before - delta)) - 1.0) / s_u
    gain_total = 0.0  # I(X_p;X) - I(X_p;Y)
    loss_total = 0.0  # utility loss (MI or Fisher)
    iterations = 0
    idx = np.arange(n)
    while dtheta >= stop:
        iterations += 1
        if iterations > max_iterations:
            raise BuildError(f"greedy noise did not stop within {max_iterations} iterations")
        gain = 0.5 * (np.log1p(dtheta * inv_p[idx, idx]) - np.log1p(dtheta * inv_x[idx, idx]))
        if fisher:
            col = inv_u[:n, -1]
            loss = dtheta * col * col / (1.0 + dtheta * inv_u[idx, idx])
        else:
            loss = 0.5 * (np.log1p(dtheta * inv_u[idx, idx]) - np.log1p(dtheta * inv_x[idx, idx]))
        loss = np.maximum(loss, 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            factor = np.where(loss > 0, gain / np.where(loss > 0, loss, 1.0), np.inf)
        factor = np.where(gain < saturation, -1.0, factor)
        j = int(np.argmax(factor))
        if factor[j] <= 0:
            break
        new_gain, new_loss = gain_total + gain[j], loss_total + loss[j]
        within = (fisher_before - new_loss >= floor) if fisher else (new_loss <= delta)
        ratio_ok = new_loss <= 0 or new_gain >= gamma * new_loss
        if within and ratio_ok:
            sigma2[j] += dtheta
            gain_total, loss_total = new_gain, new_loss
            for inv in (inv_x, inv_p, inv_u):
                c = inv[:, j].copy()
                inv -= np.outer(c, c) * (dtheta / (1.0 + dtheta * c[j]))
        else:
            dtheta /= 2.0
        if progress is not None and iterations % 256 == 0:
            progress(min(1.0, stop / dtheta))
    return GreedyResult(sigma2, private_before, model.information("private", sigma2),
                        utility_before, model.information("utility", sigma2), iterations)
