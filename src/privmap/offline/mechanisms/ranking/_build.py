"""The ranking-grade build (``privmap build --utility ranking``).

Program (19) solved over the directions of users' item-item score rows, so that the released
row ranks what its user would pick next.

A row of predicted ratings says how much a user would like an item, not which items they would
pick, and top-N lists are ranked by the latter: the recommender mode's releases rank no better
than the most popular items. Here every user is embedded by which items they rated into the
score space of :mod:`._model` (a unit vector; the distance between two is the root mean square
difference of their normalised EASE score rows), and the seed-000 pipeline runs on those points
unchanged: k-means or class-blind clusters (the ``auto`` search tries both), the prior p(a, c),
program (19) with the l2 metric, the codebook step, compression, the cross-fitted new-user
leakage, ``--clusters auto`` with a target, ``--robust`` and the per-output limit. The bundle
carries both item sides of the space; the device embeds its user's row, finds the nearest
centre, samples the released output and releases that output's score for every column
(:mod:`privmap.device.kinds.ranking`): higher = recommend sooner.

What the declared figures mean here: the leakage is I(A; C^) of the released output, and the
released row is a function of that output alone, so it leaks no more. The distortion is the mean
root mean square difference, over the columns, between the score rows of a user's own point and of
the released output (0 to 2: the points are unit vectors). The space is fitted on all training
users, the private attribute unseen; the cross-fitted folds refit the mapping, not the space.
"""
from __future__ import annotations

import dataclasses
from typing import cast

import numpy as np

from ...data import Dataset, resolve
from .._result import Result
from ..quantized import build_points, check_enough_users
from ..recommender import Prepared, RatingModel, RecommenderBuild, factor_options, missing_token, rating_model
from ..table import Build, start
from ._model import ScoreSpace, fit_score_space
from ._options import MECHANISM, RankingOptions

__all__ = ["build", "prepare", "build_prepared", "ranking_result",
           "score_names", "SCORE_PREFIX"]

#: Names of the score-space features in the bundle: score_0 .. score_<k-1>.
SCORE_PREFIX = "score_"
def build(dataset: Dataset, options: RankingOptions, *, progress=None) -> Result:
    """Build a ranking bundle's payload from labelled ratings in memory.

    Parameters
    ----------
    dataset : Dataset
        One numeric column per item (NaN = not rated) and the private column; rows that rate
        nothing are left out.
    options : RankingOptions
    progress : callable(stage: str, fraction: float) or StageTimer, optional
        As :func:`privmap.offline.mechanisms.quantized.build`; fitting the score space is the
        stage ``score-space``.

    Returns
    -------
    Result
        ``detail`` is a :class:`~privmap.offline.mechanisms.recommender.RecommenderBuild` whose
        ``fitted.model`` is the :class:`ScoreSpace`.

    Raises
    ------
    BuildError
        Too few users for the ``auto`` search's AUC target (before the score space:
        :func:`~privmap.offline.mechanisms.quantized.check_enough_users`); as :func:`prepare` and
        the quantized pipeline.
    """
    tell, rows, dropped = start(dataset, progress)
    check_enough_users(rows, options.mapping)
    tell("score-space", 0.0)
    prepared = prepare(rows, options, dropped_rows=dropped)
    return build_prepared(prepared, options, tell)


def prepare(dataset: Dataset, options: RankingOptions, *, dropped_rows: int = 0) -> Prepared:
    """Fit the score space to the training rows and embed every user.

    Raises
    ------
    BuildError
        A rating outside the declared domain, missing-answer tokens that differ by column, or
        what :func:`._model.fit_score_space` refuses.
    """
    token = missing_token(options, dataset.features)
    schema = resolve(dataset.features, dataset.public, options.mapping.declared)
    R = dataset.public
    space = fit_score_space(R, rank=options.rank, penalty=options.penalty,
                            rng=np.random.default_rng(options.mapping.seed))
    points = Dataset(features=score_names(space.rank), public=space.points(R), private=dataset.private,
                     classes=dataset.classes, private_name=dataset.private_name, categorical=False,
                     sha256=dataset.sha256, columns=dataset.columns)
    return Prepared(factors=points, fitted=rating_model(
        schema, token, space, {}, dropped_rows=dropped_rows, missing_cell_fraction=float(np.isnan(R).mean()),
        sha256=dataset.sha256), ratings=R)


def build_prepared(prepared: Prepared, options: RankingOptions, tell) -> Result:
    """The quantized pipeline (with its ``auto`` search, if any) on ``prepared.factors``, as a ranking bundle.

    Its payload is made a ranking bundle's (:func:`ranking_result`). The outputs are released
    where the pipeline placed them: each is the l2 optimum of the points it serves, and the score
    row of a pool's centre ranks as well as the pool's mean score row does. Raises as the pipeline.
    """
    built = build_points(prepared.factors, factor_options(options.mapping), tell,
                         dropped_rows=prepared.fitted.dropped_rows)
    return ranking_result(built, prepared.fitted, options)


def ranking_result(built: Build, fitted: RatingModel, options: RankingOptions) -> Result:
    """The quantized pipeline's build on the score-space points made a ranking bundle's.

    The space in the payload, its figures among the metrics, and the ratings' rows left out and
    SHA-256 in place of the points'.
    """
    space = cast(ScoreSpace, fitted.model)
    payload = dict(built.payload)
    payload["mechanism"] = MECHANISM
    payload["model"] = space.payload(fitted.columns, _bound(fitted.lo, fitted.integer),
                                     _bound(fitted.hi, fitted.integer), fitted.integer, fitted.missing_token,
                                     options.decimals)
    payload["metrics"] = {**payload["metrics"], "rows_all_missing_dropped": fitted.dropped_rows,
                          "missing_cell_fraction": fitted.missing_cell_fraction,
                          "rating_columns": len(fitted.columns), "score_rank": space.rank,
                          "score_penalty": space.penalty}
    payload["provenance"] = {**payload["provenance"], "data_sha256": fitted.sha256, "utility": "ranking"}
    detail = RecommenderBuild(**{f.name: getattr(built, f.name) for f in dataclasses.fields(Build)},
                              fitted=fitted)
    return Result("ranking", payload, dataclasses.replace(detail, payload=payload, dropped_rows=fitted.dropped_rows))


def score_names(rank: int) -> tuple[str, ...]:
    """The score space's feature names: score_0 .. score_<rank - 1>."""
    return tuple(f"{SCORE_PREFIX}{i}" for i in range(rank))


def _bound(value: float, integer: bool):
    return int(value) if integer else float(value)
