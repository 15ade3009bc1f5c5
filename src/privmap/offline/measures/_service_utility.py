"""Utility as the service sees it: what a user's released row is worth to a recommender.

Protocol, on held-out users (users the service has never seen):

1. each held-out user with at least two ratings has ``hidden_fraction`` of them hidden, at least
   one (``max(1, round(f n_u))`` of their n_u ratings, drawn uniformly; :func:`hide_ratings`): the
   device sees the rest (the *visible* row) and releases a row from it;
2. the service trains its recommender (:mod:`._service_svd`: scikit-surprise's SVD, 50 factors) on
   the training users' true ratings plus each held-out user's row as the service receives it,
   in three cases: their true visible ratings (*true*), their released row (*released*), and no
   row at all (*nothing*: the model knows the items, not the user);
3. it predicts the hidden ratings, which are compared with the truth.

Figures (:meth:`ServiceUtility.measure`):

- RMSE of the hidden ratings in each case, predictions clipped to the rating scale;
- value kept = (RMSE_nothing - RMSE_released) / (RMSE_nothing - RMSE_true): 1 when the released
  rows are as good as the true ones, 0 when they are worth no more than no row, below 0 when they
  mislead; None when the true rows do not beat no row (the ratio then means nothing);
- NDCG@k over each held-out user's hidden items (users with at least two): the hidden items ranked
  by predicted rating, gain 2^(r - lo) - 1 for true rating r on the scale lo..hi, the mean over
  users of DCG@k / ideal DCG@k (users whose hidden ratings are all lo are left out);
- recall@k: each held-out user's items that are not in their visible row ranked by predicted rating
  (what the service would recommend), the share of their hidden items among the top k (divided by
  min(k, hidden items)), the mean over users with a hidden rating;
- the ranking figures of the lists users receive (:mod:`._service_ranking`: recall@k and NDCG@k
  of EASE on the true visible profiles, of popularity and of the released rows, and the ranking
  value kept), prefixed ``ranking_``.

A released row is a float row of the same columns: NaN (blank) cells are not ratings; it may be
dense (a value in every column) even where the user rated few items, and values need not be whole
numbers. The rating scale is the lowest and highest true rating of the training and held-out rows.
The true and nothing fits do not depend on the release: :class:`ServiceUtility` fits them once for
any number of releases, and keeps the last few (keyed by a digest of the rows and settings) so
that a sweep measuring many mappings on the same split fits them once.
"""
from __future__ import annotations

import hashlib
import math
from collections import OrderedDict
from collections.abc import Callable

import numpy as np

from ._service_ranking import RankingService
from ._service_svd import EPOCHS, FACTORS, REGULARISATION, ServiceModel, fit_svd

__all__ = ["HIDDEN_FRACTION", "TOP", "hide_ratings", "ServiceUtility", "recommender_utility", "format_utility"]

#: Share of each held-out user's ratings hidden from the device and the service.
HIDDEN_FRACTION = 0.1
#: Length of the ranked lists of NDCG@k and recall@k.
TOP = 10
#: Splits whose baseline fits (two models' predictions, not the models) and ranking protocol
#: (EASE's m x m weights) are kept for reuse.
_KEEP = 4
_baselines: OrderedDict = OrderedDict()


def hide_ratings(rows, fraction: float = HIDDEN_FRACTION, *, rng: np.random.Generator | int) -> np.ndarray:
    """Which rated cells to hide: ``max(1, round(fraction * n_u))`` of each row's n_u >= 2 ratings.

    Parameters
    ----------
    rows : array-like of float, shape (n, m)
        Ratings, NaN = not rated.
    fraction : float
        In (0, 1).
    rng : numpy.random.Generator or int

    Returns
    -------
    ndarray of bool, shape (n, m)
        True at hidden cells; rows with fewer than two ratings have none, and every row keeps at
        least one rating visible.

    Raises
    ------
    ValueError
        ``fraction`` outside (0, 1).
    """
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"the hidden fraction must lie in (0, 1), got {fraction}")
    rng = np.random.default_rng(rng)
    rated = ~np.isnan(np.asarray(rows, dtype=float))
    hidden = np.zeros_like(rated)
    for u in range(rated.shape[0]):
        cells = np.flatnonzero(rated[u])
        if cells.size >= 2:
            k = min(max(1, int(round(fraction * cells.size))), cells.size - 1)
            hidden[u, rng.choice(cells, size=k, replace=False)] = True
    return hidden


class ServiceUtility:
    """The protocol for one set of training users and held-out users; :meth:`measure` any release.

    Parameters
    ----------
    train : array-like of float, shape (n_train, m)
        True ratings of the training users (NaN = not rated).
    heldout : array-like of float, shape (n_test, m)
        True rows of the held-out users (NaN = not rated).
    hidden : array-like of bool, shape (n_test, m), optional
        The hidden cells (rated cells of ``heldout``); default :func:`hide_ratings` with
        ``hidden_fraction`` and ``seed``.
    hidden_fraction : float
    factors, epochs : int
    regularisation : float
        The service's SVD (:func:`._service_svd.fit_svd`).
    top : int
        k of NDCG@k and recall@k.
    seed : int
        Seeds the hidden cells and the SVD's initial factors.

    Raises
    ------
    ValueError
        Shapes that do not agree, hidden cells that are not rated, or no hidden rating at all.
    """

    def __init__(self, train, heldout, *, hidden=None, hidden_fraction: float = HIDDEN_FRACTION,
                 factors: int = FACTORS, epochs: int = EPOCHS, regularisation: float = REGULARISATION,
                 top: int = TOP, seed: int = 0):
        self.train = np.asarray(train, dtype=float)
        self.heldout = np.asarray(heldout, dtype=float)
        if self.train.ndim != 2 or self.heldout.ndim != 2 or self.train.shape[1] != self.heldout.shape[1]:
            raise ValueError(f"training rows {self.train.shape} and held-out rows {self.heldout.shape} "
                             "must be matrices with the same columns")
        rated = ~np.isnan(self.heldout)
        self.hidden = (hide_ratings(self.heldout, hidden_fraction, rng=seed) if hidden is None
                       else np.asarray(hidden, dtype=bool))
        if self.hidden.shape != self.heldout.shape:
            raise ValueError(f"hidden cells {self.hidden.shape} do not match the held-out rows {self.heldout.shape}")
        if np.any(self.hidden & ~rated):
            raise ValueError("a hidden cell is not a rating of the held-out user")
        if not self.hidden.any():
            raise ValueError("no held-out user has a rating to hide (each needs at least two)")
        self.visible = np.where(self.hidden, np.nan, self.heldout)
        observed = np.concatenate([self.train[~np.isnan(self.train)], self.heldout[rated]])
        self.scale = (float(observed.min()), float(observed.max()))
        self.hidden_fraction = float(hidden_fraction)
        self.factors, self.epochs, self.top, self.seed = int(factors), int(epochs), int(top), int(seed)
        self.regularisation = float(regularisation)
        self._baseline: dict | None = None

    # ------------------------------------------------------------------ the three cases
    def _fit(self, released: np.ndarray) -> ServiceModel:
        return fit_svd(np.vstack([self.train, released]), scale=self.scale, factors=self.factors,
                       epochs=self.epochs, regularisation=self.regularisation, seed=self.seed)

    def _figures(self, released: np.ndarray) -> dict:
        """RMSE, NDCG@k and recall@k of the model trained with ``released`` as the held-out rows."""
        model = self._fit(released)
        users = self.train.shape[0] + np.arange(self.heldout.shape[0])
        u, i = np.nonzero(self.hidden)
        rmse = float(np.sqrt(np.mean((model.predict(users[u], i) - self.heldout[u, i]) ** 2)))
        scores = model.scores(users)
        return {"rmse": rmse, "ndcg": self._ndcg(scores), "recall": self._recall(scores)}

    def _ndcg(self, scores: np.ndarray) -> float | None:
        lo = self.scale[0]
        values = []
        for u in range(scores.shape[0]):
            items = np.flatnonzero(self.hidden[u])
            if items.size < 2:
                continue
            gain = 2.0 ** (self.heldout[u, items] - lo) - 1.0
            ideal = np.sort(gain)[::-1][:self.top]
            discount = 1.0 / np.log2(np.arange(2, ideal.size + 2))
            best = float(ideal @ discount)
            if best <= 0:
                continue
            order = np.argsort(-scores[u, items], kind="stable")[:self.top]
            values.append(float(gain[order] @ discount[:order.size]) / best)
        return float(np.mean(values)) if values else None

    def _recall(self, scores: np.ndarray) -> float | None:
        values = []
        candidates = np.isnan(self.visible)
        for u in range(scores.shape[0]):
            n_hidden = int(self.hidden[u].sum())
            if not n_hidden:
                continue
            items = np.flatnonzero(candidates[u])
            top = items[np.argsort(-scores[u, items], kind="stable")[:self.top]]
            values.append(float(self.hidden[u, top].sum()) / min(self.top, n_hidden))
        return float(np.mean(values)) if values else None

    def _key(self) -> bytes:
        h = hashlib.sha256()
        for a in (self.train, self.heldout, self.hidden):
            h.update(str(a.shape).encode())
            h.update(np.ascontiguousarray(a).tobytes())
        h.update(repr((self.factors, self.epochs, self.regularisation, self.top, self.seed,
                       self.hidden_fraction)).encode())
        return h.digest()

    @property
    def ranking(self) -> RankingService:
        """The ranking protocol of this split (:class:`RankingService`), its EASE weights fitted once per split.

        Kept beside the baseline fits (a sweep measures every point on one).
        """
        key = (self._key(), "ranking")
        if key in _baselines:
            _baselines.move_to_end(key)
        else:
            _baselines[key] = RankingService(self.train, self.heldout, self.hidden, top=self.top)
            while len(_baselines) > 2 * _KEEP:
                _baselines.popitem(last=False)
        return _baselines[key]

    @property
    def baseline(self) -> dict:
        """Figures of the true visible rows and of no row.

        ``rmse_true``, ``rmse_nothing``, ``ndcg_at_k_true``, ``ndcg_at_k_nothing``,
        ``recall_at_k_true``, ``recall_at_k_nothing``.
        """
        if self._baseline is None:
            key = self._key()
            if key in _baselines:
                _baselines.move_to_end(key)
            else:
                figures = {"true": self._figures(self.visible),
                           "nothing": self._figures(np.full(self.heldout.shape, np.nan))}
                _baselines[key] = {f"{name}_{case}": fig[short] for case, fig in figures.items()
                                   for name, short in (("rmse", "rmse"), ("ndcg_at_k", "ndcg"), ("recall_at_k", "recall"))}
                while len(_baselines) > 2 * _KEEP:
                    _baselines.popitem(last=False)
            self._baseline = dict(_baselines[key])
        return dict(self._baseline)

    def describe(self) -> dict:
        """The protocol's settings and sizes (JSON-ready)."""
        n_hidden = self.hidden.sum(axis=1)
        return {"model": "scikit-surprise SVD", "factors": self.factors, "epochs": self.epochs,
                "regularisation": self.regularisation, "k": self.top,
                "train_users": int(self.train.shape[0]), "heldout_users": int(self.heldout.shape[0]),
                "hidden_fraction": self.hidden_fraction, "hidden_ratings": int(n_hidden.sum()),
                "ndcg_users": int(np.sum(n_hidden >= 2)), "recall_users": int(np.sum(n_hidden >= 1)),
                "visible_ratings_per_user": float(np.mean(np.sum(~np.isnan(self.visible), axis=1))),
                "scale": list(self.scale)}

    def measure(self, released) -> dict:
        """All figures for the held-out users' ``released`` rows.

        Parameters
        ----------
        released : array-like of float, shape (n_test, m)
            Each held-out user's released row, made from their visible row only (NaN = blank).

        Returns
        -------
        dict
            :meth:`describe`, :attr:`baseline`, ``rmse_released``, ``ndcg_at_k_released``,
            ``recall_at_k_released``, ``value_kept`` (None when ``rmse_true >= rmse_nothing``),
            ``released_cells_per_user`` (mean non-blank released cells) and the ranking figures
            (:meth:`RankingService.measure`).

        Raises
        ------
        ValueError
            ``released`` not of the held-out rows' shape.
        """
        released = np.asarray(released, dtype=float)
        if released.shape != self.heldout.shape:
            raise ValueError(f"released rows {released.shape} do not match the held-out rows {self.heldout.shape}")
        base = self.baseline
        fig = self._figures(released)
        gain = base["rmse_nothing"] - base["rmse_true"]
        kept = (base["rmse_nothing"] - fig["rmse"]) / gain if gain > 1e-12 else None
        return {**self.describe(), **base, "rmse_released": fig["rmse"], "value_kept": kept,
                "ndcg_at_k_released": fig["ndcg"], "recall_at_k_released": fig["recall"],
                "released_cells_per_user": float(np.mean(np.sum(~np.isnan(released), axis=1))),
                **self.ranking.measure(released)}


def recommender_utility(train, heldout, release: Callable[[np.ndarray], np.ndarray] | np.ndarray, *, hidden=None,
                        hidden_fraction: float = HIDDEN_FRACTION, factors: int = FACTORS, epochs: int = EPOCHS,
                        top: int = TOP, seed: int = 0) -> dict:
    """The service's figures for one release of the held-out users (:class:`ServiceUtility`).

    Parameters
    ----------
    train : array-like of float, shape (n_train, m)
        True ratings of the training users, NaN = not rated.
    heldout : array-like of float, shape (n_test, m)
        True rows of the held-out users, NaN = not rated.
    release : callable or array-like
        ``release(visible) -> released``: given the held-out users' visible rows (shape
        (n_test, m), hidden and unrated cells NaN) the released rows of the same shape (NaN =
        blank). Or the released rows themselves, made from the visible rows of ``hidden``, which
        must then be given.
    hidden, hidden_fraction, factors, epochs, top, seed
        As :class:`ServiceUtility` takes them.

    Returns
    -------
    dict
        :meth:`ServiceUtility.measure`'s figures: ``rmse_true``, ``rmse_released``,
        ``rmse_nothing``, ``value_kept``, ``ndcg_at_k_*``, ``recall_at_k_*`` and the settings.

    Raises
    ------
    ValueError
        Released rows given as an array without ``hidden``, or shapes that do not agree.
    """
    if not callable(release) and hidden is None:
        raise ValueError("released rows given as an array need the hidden cells they were made without (hidden=)")
    service = ServiceUtility(train, heldout, hidden=hidden, hidden_fraction=hidden_fraction, factors=factors,
                             epochs=epochs, top=top, seed=seed)
    released = release(service.visible.copy()) if callable(release) else release
    return service.measure(released)


def format_utility(r: dict) -> str:
    """The recommender figures of :meth:`ServiceUtility.measure` as a small table."""
    def f(x, nd=4):
        return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{nd}f}"

    k = r["k"]
    head = (f"recommender ({r['model']}, {r['factors']} factors) on {r['heldout_users']} held-out users, "
            f"{r['hidden_fraction']:.0%} of their ratings hidden ({r['hidden_ratings']} ratings; "
            f"{r['train_users']} training users' true ratings beside):")
    lines = [head, f"  {'the service gets':<34}{'RMSE':>8}{f'NDCG@{k}':>9}{f'recall@{k}':>11}"]
    for label, case in (("their true visible ratings", "true"), ("their released rows", "released"),
                        ("no row", "nothing")):
        lines.append(f"  {label:<34}{f(r[f'rmse_{case}']):>8}{f(r[f'ndcg_at_k_{case}']):>9}"
                     f"{f(r[f'recall_at_k_{case}']):>11}")
    lines.append(f"  value kept (RMSE) {f(r['value_kept'], 3)}; released cells per user "
                 f"{r['released_cells_per_user']:.1f} (visible ratings {r['visible_ratings_per_user']:.1f})")
    if "ranking_recall_released" in r:
        lines.append(f"  {f'top-{k} lists of unseen items (relevant: hidden >= 4)':<50}{f'NDCG@{k}':>9}"
                     f"{f'recall@{k}':>11}")
        for label, case in (("EASE on their true visible profile", "true"), ("popularity, one list for all",
                                                                             "popularity"),
                            (f"their released rows ({r['ranking_released_by']})", "released")):
            lines.append(f"  {label:<50}{f(r[f'ranking_ndcg_{case}']):>9}{f(r[f'ranking_recall_{case}']):>11}")
        lines.append(f"  ranking value kept (recall) {f(r['ranking_value_kept'], 3)}")
    return "\n".join(lines)
