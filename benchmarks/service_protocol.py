"""The service protocol of SERVICE.md, written from its text alone: an outside check of ``evaluate``.

Nothing here imports ``privmap.offline``: the rows are released by the device runtime
(``privmap.device``, as a set-top box releases them), the service is scikit-surprise's SVD and
a hand-written EASE, the attackers scikit-learn's. ``bench_audit_agreement.py`` sets its figures
beside ``privmap evaluate --train``'s; agreement between the two says that the audit measures
what an outside service and attacker measure, not what the project's own code happens to share
with itself.

Shapes: ``R_train`` (n_train, m) and ``R_test`` (n_test, m) are float arrays of ratings, NaN =
not rated; ``y_train``, ``y_test`` are integer class codes.
"""
from __future__ import annotations

import numpy as np

#: SERVICE.md's fixed figures.
HIDDEN_FRACTION = 0.10
TOP = 10
LIKED = 4.0
EASE_LAMBDA = 200.0
SVD = {"n_factors": 50, "reg_all": 0.05, "n_epochs": 40, "lr_all": 0.005}
LOGISTIC_C = (0.01, 0.1, 1.0)


def hide(R: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Hidden cells, shape of ``R``: 10 % of each user's rated cells, at least one, never all."""
    hidden = np.zeros(R.shape, bool)
    for u in range(R.shape[0]):
        rated = np.flatnonzero(~np.isnan(R[u]))
        if rated.size >= 2:
            k = min(max(1, int(round(HIDDEN_FRACTION * rated.size))), rated.size - 1)
            hidden[u, rng.choice(rated, size=k, replace=False)] = True
    return hidden


def device_release(bundle, R: np.ndarray) -> np.ndarray:
    """Each row of ``R`` released once by the loaded device ``bundle`` (blank cells as None); a row
    the device refuses releases nothing (a row of NaN)."""
    from privmap.device import PrivmapDeviceError
    out = np.full(R.shape, np.nan)
    for u, row in enumerate(R):
        try:
            cells = bundle.sanitize([None if np.isnan(x) else float(x) for x in row])
        except PrivmapDeviceError:
            continue
        out[u] = [np.nan if c is None else float(c) for c in cells]
    return out


def _svd_rmse(train_rows: np.ndarray, extra: np.ndarray | None, R_test: np.ndarray, hidden: np.ndarray,
              scale: tuple[float, float], seed: int) -> float:
    """RMSE on the hidden cells of an SVD trained on ``train_rows`` plus ``extra`` (the test users'
    rows the service holds; None: the test users are absent)."""
    import pandas as pd
    from surprise import SVD as Svd
    from surprise import Dataset, Reader

    held = train_rows if extra is None else np.vstack([train_rows, extra])
    u, i = np.nonzero(~np.isnan(held))
    frame = pd.DataFrame({"user": u, "item": i, "rating": held[u, i]})
    trainset = Dataset.load_from_df(frame, Reader(rating_scale=scale)).build_full_trainset()
    model = Svd(random_state=seed, **SVD)
    model.fit(trainset)
    tu, ti = np.nonzero(hidden)
    predicted = np.array([model.predict(int(train_rows.shape[0] + a), int(b)).est for a, b in zip(tu, ti)])
    return float(np.sqrt(np.mean((predicted - R_test[tu, ti]) ** 2)))


def _ease(X: np.ndarray) -> np.ndarray:
    """EASE's item-item weights (Steck 2019) of the rated/unrated matrix ``X``, shape (m, m)."""
    P = np.linalg.inv(X.T @ X + EASE_LAMBDA * np.eye(X.shape[1]))
    B = -P / np.diag(P)
    np.fill_diagonal(B, 0.0)
    return B


def _ranking(scores: np.ndarray, visible: np.ndarray, relevant: np.ndarray) -> tuple[float, float]:
    """Mean recall@10 and NDCG@10 over users with a relevant hidden item; ``visible`` items are
    never recommended."""
    scores = np.where(visible, -np.inf, scores)
    top = np.argsort(-scores, axis=1, kind="stable")[:, :TOP]
    discount = 1.0 / np.log2(np.arange(2, TOP + 2))
    recalls, ndcgs = [], []
    for u in np.flatnonzero(relevant.any(axis=1)):
        hits = relevant[u, top[u]]
        best = min(TOP, int(relevant[u].sum()))
        recalls.append(hits.sum() / best)
        ndcgs.append(float(hits @ discount) / float(discount[:best].sum()))
    return float(np.mean(recalls)), float(np.mean(ndcgs))


def _symbol_scores(train: np.ndarray, y_train: np.ndarray, test: np.ndarray, classes: int) -> np.ndarray:
    """p(a | released row as its exact text), add-one smoothing shaped by the training prior
    (an unseen row gets the prior), shape (n_test, classes)."""
    prior = np.bincount(y_train, minlength=classes) / y_train.size
    def key(row) -> str:
        return " ".join("-" if np.isnan(x) else repr(float(x)) for x in row)
    counts: dict[str, np.ndarray] = {}
    for row, a in zip(train, y_train):
        counts.setdefault(key(row), np.zeros(classes))[a] += 1
    out = np.empty((test.shape[0], classes))
    for n, row in enumerate(test):
        seen = counts.get(key(row))
        out[n] = prior if seen is None else (seen + classes * prior) / (seen.sum() + classes)
    return out


def _features(R: np.ndarray) -> np.ndarray:
    return np.hstack([np.nan_to_num(R, nan=0.0), (~np.isnan(R)).astype(float)])


def _auc(y: np.ndarray, scores: np.ndarray, classes: int) -> float:
    from sklearn.metrics import roc_auc_score
    if classes == 2:
        return float(roc_auc_score(y, scores[:, 1]))
    return float(roc_auc_score(y, scores, multi_class="ovr", average="macro", labels=np.arange(classes)))


def attackers(train: np.ndarray, y_train: np.ndarray, test: np.ndarray, y_test: np.ndarray, classes: int,
              seed: int) -> dict:
    """Each attacker's AUC on ``test`` after training on ``train`` (SERVICE.md), and the strongest's."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import cross_val_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    F_train, F_test = _features(train), _features(test)
    scoring = "roc_auc" if classes == 2 else "roc_auc_ovr"

    def logistic(C):
        return make_pipeline(StandardScaler(), LogisticRegression(C=C, max_iter=2000))
    best = max(LOGISTIC_C, key=lambda C: cross_val_score(logistic(C), F_train, y_train, cv=3, scoring=scoring).mean())
    figures = {
        "logistic": _auc(y_test, logistic(best).fit(F_train, y_train).predict_proba(F_test), classes),
        "boosting": _auc(y_test, HistGradientBoostingClassifier(random_state=seed).fit(F_train, y_train)
                         .predict_proba(F_test), classes),
        "bayes": _auc(y_test, _symbol_scores(train, y_train, test, classes), classes),
    }
    strongest = max(figures, key=figures.get)
    return {"attackers": figures, "attacker": strongest, "attacker_auc": figures[strongest]}


def protocol(bundle, R_train: np.ndarray, y_train: np.ndarray, R_test: np.ndarray, y_test: np.ndarray,
             classes: int, *, seed: int) -> dict:
    """SERVICE.md's figures of the device ``bundle`` with these training and new users.

    Returns ``value_kept``, ``ranking_value_kept``, the RMSEs and recalls they come from, and
    :func:`attackers`' figures.
    """
    rng = np.random.default_rng(seed)
    hidden = hide(R_test, rng)
    visible = np.where(hidden, np.nan, R_test)
    released_test, released_train = device_release(bundle, visible), device_release(bundle, R_train)
    observed = np.concatenate([R_train[~np.isnan(R_train)], R_test[~np.isnan(R_test)]])
    scale = (float(observed.min()), float(observed.max()))
    rmse = {name: _svd_rmse(R_train, extra, R_test, hidden, scale, seed)
            for name, extra in (("true", visible), ("released", released_test), ("nothing", None))}
    B = _ease((~np.isnan(R_train)).astype(float))
    seen, relevant = ~np.isnan(visible), hidden & (np.nan_to_num(R_test) >= LIKED)
    popularity = np.broadcast_to((~np.isnan(R_train)).sum(axis=0).astype(float), R_test.shape)
    own = np.where(np.isnan(released_test), -np.inf, released_test)
    liked = (np.nan_to_num(released_test) >= LIKED).astype(float)
    recall = {"true": _ranking(seen.astype(float) @ B, seen, relevant)[0],
              "popularity": _ranking(popularity, seen, relevant)[0],
              "released": max(_ranking(own, seen, relevant)[0], _ranking(liked @ B, seen, relevant)[0],
                              _ranking(np.nan_to_num(released_test) @ B, seen, relevant)[0])}
    return {"value_kept": (rmse["nothing"] - rmse["released"]) / (rmse["nothing"] - rmse["true"]),
            "ranking_value_kept": ((recall["released"] - recall["popularity"])
                                   / (recall["true"] - recall["popularity"])),
            "rmse": rmse, "recall_at_10": recall,
            **attackers(released_train, y_train, released_test, y_test, classes, seed)}
