"""Ranking value as the service sees it: the top-k lists users receive, from true or released rows.

The protocol of ``SERVICE.md`` ("Ranking value"), on held-out users whose hidden cells are fixed
(:func:`privmap.offline.measures.hide_ratings`):

- the service ranks, for each held-out user, every item not in the user's visible profile (the
  device removes what its user has seen) and recommends the top ``k``;
- relevant items are the user's hidden cells rated ``liked`` or more; recall@k = relevant items in
  the top k / min(k, relevant items), NDCG@k the same list with gain 1 per relevant item, both the
  mean over users with a relevant item;
- *true*: EASE (Steck 2019: ``B = -P / diag(P)``, ``P = (X^T X + lambda I)^-1``, zero diagonal)
  fitted on the training users' rated/unrated matrix ``X``, scoring the visible profile's
  rated/unrated row;
- *popularity*: every user gets the items most often rated by training users;
- *released*: the best of three readings of the released row (the service picks whichever serves
  its users best): its own values (higher first, blank last), EASE fed the cells >= ``liked`` as
  liked items, EASE fed the values as weights (blank 0);
- ranking value kept = (recall released - recall popularity) / (recall true - recall popularity):
  1 when the released rows rank as well as the user's true profile does, 0 when they are worth no
  more than the same list for everybody; None when the true profile does not beat popularity.

Why EASE: a closed-form item-item model that is among the strongest top-N rankers on implicit
data, with one hyper-parameter; the same model the outside protocol uses, so the figures agree.
"""
from __future__ import annotations

import numpy as np

__all__ = ["EASE_PENALTY", "LIKED", "ease_weights", "RankingService"]

#: EASE's ridge penalty lambda.
EASE_PENALTY = 200.0
#: A hidden rating at or above this is a relevant item.
LIKED = 4.0


def ease_weights(X, penalty: float = EASE_PENALTY) -> np.ndarray:
    """EASE's item-item weights ``B`` (m, m), zero diagonal, of the implicit matrix ``X`` (n, m).

    Parameters
    ----------
    X : array-like of float, shape (n, m)
        1 where a user rated an item, 0 elsewhere (non-negative weights also work).
    penalty : float
        lambda > 0.

    Raises
    ------
    ValueError
        ``penalty`` not a positive number.
    """
    if not penalty > 0:
        raise ValueError(f"the EASE penalty must be > 0, got {penalty}")
    X = np.asarray(X, dtype=float)
    gram = X.T @ X
    gram[np.diag_indices_from(gram)] += penalty
    P = np.linalg.inv(gram)
    B = -P / np.diag(P)
    np.fill_diagonal(B, 0.0)
    return B


class RankingService:
    """The ranking protocol (module docstring) for one split; :meth:`measure` any release.

    Parameters
    ----------
    train : array-like of float, shape (n_train, m)
        True ratings of the training users, NaN = not rated.
    heldout : array-like of float, shape (n_test, m)
        True rows of the held-out users, NaN = not rated.
    hidden : array-like of bool, shape (n_test, m)
        The hidden cells (rated cells of ``heldout``).
    top : int
        k of recall@k and NDCG@k.
    liked : float
        A hidden rating at or above it is relevant.
    penalty : float
        EASE's lambda.

    Raises
    ------
    ValueError
        Shapes that do not agree.
    """

    def __init__(self, train, heldout, hidden, *, top: int = 10, liked: float = LIKED,
                 penalty: float = EASE_PENALTY):
        train, heldout = np.asarray(train, dtype=float), np.asarray(heldout, dtype=float)
        self.hidden = np.asarray(hidden, dtype=bool)
        if train.shape[1:] != heldout.shape[1:] or self.hidden.shape != heldout.shape:
            raise ValueError(f"training rows {train.shape}, held-out rows {heldout.shape} and hidden cells "
                             f"{self.hidden.shape} must share their columns")
        self.top, self.liked = int(top), float(liked)
        self.seen = ~np.isnan(heldout) & ~self.hidden
        self.relevant = self.hidden & (np.nan_to_num(heldout, nan=-np.inf) >= self.liked)
        rated = ~np.isnan(train)
        self.weights = ease_weights(rated.astype(float), penalty)
        self.popularity = rated.sum(axis=0).astype(float)
        self._baseline: dict | None = None

    def figures(self, scores) -> tuple[float | None, float | None]:
        """(recall@k, NDCG@k) of ranking each held-out user's unseen items by ``scores``.

        ``scores`` (n_test, m); NaN ranks after every score, ties by column order. None when no user
        has a relevant item.
        """
        big = np.finfo(float).max
        s = np.nan_to_num(np.asarray(scores, dtype=float), nan=-big, posinf=big, neginf=-big)
        s = np.where(self.seen, -np.inf, s)
        users = np.flatnonzero(self.relevant.any(axis=1))
        if users.size == 0:
            return None, None
        # a stable sort of the negated scores keeps ties in column order: blank cells sort after
        # every score, seen items after them (never relevant: relevant items are hidden)
        order = np.argsort(-s[users], axis=1, kind="stable")[:, :self.top]
        hits = np.take_along_axis(self.relevant[users], order, axis=1)
        n_rel = self.relevant[users].sum(axis=1)
        best = np.minimum(self.top, n_rel)
        discount = 1.0 / np.log2(np.arange(2, order.shape[1] + 2))      # fewer columns than k: a shorter list
        ideal = np.cumsum(discount)[best - 1]
        return float(np.mean(hits.sum(axis=1) / best)), float(np.mean((hits * discount).sum(axis=1) / ideal))

    @property
    def baseline(self) -> dict:
        """The baseline ranking figures: true visible profiles and popularity.

        ``ranking_recall_true``, ``ranking_ndcg_true`` (EASE on the visible profiles) and
        ``ranking_recall_popularity``, ``ranking_ndcg_popularity``.
        """
        if self._baseline is None:
            true = self.figures(self.seen.astype(float) @ self.weights)
            popular = self.figures(np.broadcast_to(self.popularity, self.seen.shape))
            self._baseline = {"ranking_recall_true": true[0], "ranking_ndcg_true": true[1],
                              "ranking_recall_popularity": popular[0], "ranking_ndcg_popularity": popular[1]}
        return dict(self._baseline)

    def readings(self, released) -> dict:
        """The three readings of ``released`` (n_test, m; NaN = blank) as score matrices, by name."""
        released = np.asarray(released, dtype=float)
        if released.shape != self.seen.shape:
            raise ValueError(f"released rows {released.shape} do not match the held-out rows {self.seen.shape}")
        values = np.nan_to_num(released, nan=0.0)
        liked = (np.nan_to_num(released, nan=-np.inf) >= self.liked).astype(float)
        return {"values": released, "ease_liked": liked @ self.weights, "ease_weighted": values @ self.weights}

    def measure(self, released) -> dict:
        """The ranking figures of the held-out users' ``released`` rows.

        Returns
        -------
        dict
            :attr:`baseline`, ``ranking_recall_released`` and ``ranking_ndcg_released`` (the best
            reading by recall), ``ranking_released_by`` (its name: ``values``, ``ease_liked`` or
            ``ease_weighted``) and ``ranking_value_kept`` (None when EASE on the true profiles
            does not beat popularity, or no user has a relevant item).

        Raises
        ------
        ValueError
            ``released`` not of the held-out rows' shape.
        """
        base = self.baseline
        scored = {name: self.figures(s) for name, s in self.readings(released).items()}
        name = max(scored, key=lambda n: -1.0 if scored[n][0] is None else float(scored[n][0] or 0.0))
        recall, ndcg = scored[name]
        true, popular = base["ranking_recall_true"], base["ranking_recall_popularity"]
        gain = None if true is None or popular is None else true - popular
        kept = (recall - popular) / gain if gain is not None and recall is not None and gain > 1e-12 else None
        return {**base, "ranking_recall_released": recall, "ranking_ndcg_released": ndcg,
                "ranking_released_by": name, "ranking_value_kept": kept}
