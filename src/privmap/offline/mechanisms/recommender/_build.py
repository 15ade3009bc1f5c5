"""The recommendation-grade build (``privmap build --utility recommender``).

Program (19) solved over the latent taste of users, so that the released row is what a
recommender can use.

Quantizing a sparse, wide ratings row straight into K centres loses most of the taste before
privacy costs anything: most cells are blank, and k-means on them spends its centres on which
items were rated. Here a latent-factor model (:mod:`._factors`) is fitted to the training
ratings, every user is folded into a point of its whitened factor space (rank + 1 coordinates
whose Euclidean distance is the root mean square difference of predicted ratings, in stars),
and the seed-000 pipeline runs on those points unchanged: k-means (or class-blind clusters where
the ``auto`` search finds them better, :mod:`privmap.offline.mechanisms.table._class_blind`),
the prior p(a, c), program (19) with the l2 metric, the codebook step, compression, the
cross-fitted new-user leakage, ``--clusters auto`` and ``--robust``. The bundle carries the item side of the model; the device
folds its user's ratings in, finds the nearest centre, samples the released output and releases
that output's predicted ratings for every column (:mod:`privmap.device.kinds.recommender`).

What the declared figures mean here: the leakage is I(A; C^) of the released output, and the
released row is a function of that output alone, so it leaks no more. The distortion is the
mean root-mean-square difference (stars, over all columns, before clipping to the rating
domain; clipping only shrinks it) between the predicted ratings of a user's own factor and of
the released output. The factor model is fitted on all training users in memory (on a seeded
sample of them when the ratings are partitioned, :mod:`._partitioned`), the private attribute
unseen; the cross-fitted folds refit the mapping, not the model (the model sees no attribute).
:func:`recommender_result` makes the pipeline's payload a recommender bundle's on both paths.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..._errors import BuildError
from ...data import Dataset, resolve
from .._result import Result
from ..quantized import QuantizedOptions, build_points, check_enough_users
from ..table import Build, start
from ._calibrate import calibrate_payload
from ._factors import FactorModel, choose_reg, fit_factors
from ._options import MECHANISM, RecommenderOptions

__all__ = ["RecommenderBuild", "RatingModel", "Prepared",
           "build", "prepare", "build_prepared", "recommender_result", "rating_model", "fit_model", "missing_token",
           "factor_options", "factor_names", "FACTOR_PREFIX"]

#: Names of the factor-space features in the bundle: factor_0 (the user-bias axis) .. factor_rank.
FACTOR_PREFIX = "factor_"
@dataclass(frozen=True)
class RatingModel:
    """What a recommender bundle says of its training ratings and their model.

    Whichever path built it (ratings in memory, or partitions out of core).

    Attributes
    ----------
    columns : tuple of str, length m
        The rating columns, in the bundle's order.
    lo, hi : float
        The rating domain (declared, or inferred from the ratings).
    integer : bool
        Whether every rating is a whole number.
    missing_token : str
        The text that spells "not rated" besides a blank cell.
    model : FactorModel
        The fitted model (the ranking mechanism's score space, for a ranking bundle).
    reg_scores : dict
        Validation RMSE (stars) of each penalty tried; empty when the penalty was given.
    dropped_rows : int
        Rows left out for rating nothing.
    inferred : bool
        Whether the domain was inferred from the data (not declared).
    missing_cell_fraction : float
        Share of blank cells among the kept rows' ratings.
    sha256 : str
        The training data's SHA-256 (:func:`privmap.offline.data.source_sha256` for files).
    """

    columns: tuple[str, ...]
    lo: float
    hi: float
    integer: bool
    missing_token: str
    model: FactorModel | Any
    reg_scores: dict
    dropped_rows: int
    inferred: bool
    missing_cell_fraction: float
    sha256: str


@dataclass(frozen=True)
class Prepared:
    """The training ratings in memory turned into factor points, ready for the seed-000 pipeline.

    ``factors`` the :class:`Dataset` of points (n, rank + 1) with the ratings' private column, and
    ``fitted`` the ratings' domain and model, ``ratings`` (n, m; NaN = not rated) the training
    ratings in the order of the points (the released rows are calibrated to them:
    :mod:`._calibrate`).
    """

    factors: Dataset
    fitted: RatingModel
    ratings: np.ndarray


def build(dataset: Dataset, options: RecommenderOptions, *, progress=None) -> Result:
    """Build a recommender bundle's payload from labelled ratings in memory.

    Parameters
    ----------
    dataset : Dataset
        One numeric column per item (NaN = not rated) and the private column; rows that rate
        nothing are left out.
    options : RecommenderOptions
    progress : callable(stage: str, fraction: float) or StageTimer, optional
        As :func:`privmap.offline.mechanisms.quantized.build`; the factor model is the stage
        ``factor-model``.

    Returns
    -------
    Result
        ``detail`` is a :class:`RecommenderBuild`.

    Raises
    ------
    BuildError
        Too few users for the ``auto`` search's AUC target (before the factor model:
        :func:`~privmap.offline.mechanisms.quantized.check_enough_users`); as :func:`prepare` and
        the quantized pipeline.
    """
    tell, rows, dropped = start(dataset, progress)
    check_enough_users(rows, options.mapping)
    tell("factor-model", 0.0)
    prepared = prepare(rows, options, dropped_rows=dropped, progress=lambda f: tell("factor-model", FACTOR_SHARE * f))
    return build_prepared(prepared, options, tell)


#: The share of a build's progress the factor model is told as (the mapping's stages take the rest).
FACTOR_SHARE = 0.05


def prepare(dataset: Dataset, options: RecommenderOptions, *, dropped_rows: int = 0,
            progress: Callable[[float], None] | None = None) -> Prepared:
    """Fit the factor model to the training ratings and fold every user in.

    Parameters
    ----------
    dataset : Dataset
        The ratings (no row without a rating), ``dropped_rows`` those left out.
    options : RecommenderOptions
        ``mapping.declared`` gives the rating domain; ``mapping.seed`` seeds the fit.
    progress : callable(fraction), optional, keyword-only
        Told the fraction of the fit done (:func:`fit_model`).

    Raises
    ------
    BuildError
        A rating outside the declared domain, missing-answer tokens that differ by column.
    """
    token = missing_token(options, dataset.features)
    schema = resolve(dataset.features, dataset.public, options.mapping.declared)
    R = dataset.public
    model, scores = fit_model(R, options, progress=progress)
    factors = Dataset(features=factor_names(options.rank), public=model.points(R),
                      private=dataset.private, classes=dataset.classes, private_name=dataset.private_name,
                      categorical=False, sha256=dataset.sha256, columns=dataset.columns)
    return Prepared(factors=factors, fitted=rating_model(
        schema, token, model, scores, dropped_rows=dropped_rows, missing_cell_fraction=float(np.isnan(R).mean()),
        sha256=dataset.sha256), ratings=R)


def build_prepared(prepared: Prepared, options: RecommenderOptions, tell) -> Result:
    """The quantized pipeline (with its ``auto`` search, if any) on ``prepared.factors``, as a recommender bundle.

    Its outputs calibrated to the training ratings they serve
    (:func:`._calibrate.calibrate_payload`) and its payload made a recommender bundle's
    (:func:`recommender_result`); ``tell`` is the build's
    :class:`~privmap.offline.mechanisms.table.StageTimer`. The mapping's domain declarations
    are the ratings' (the factor space's domain is inferred from the points). Raises as the
    pipeline.
    """
    built = build_points(prepared.factors, factor_options(options.mapping), tell,
                         dropped_rows=prepared.fitted.dropped_rows)
    labels = built.alphabet.labels
    assert labels is not None                  # an in-memory alphabet assigns every row
    payload = calibrate_payload(built.payload, prepared.fitted.model, prepared.ratings, prepared.factors.public,
                                labels)
    return recommender_result(dataclasses.replace(built, payload=payload), prepared.fitted, options)


def missing_token(options: RecommenderOptions | Any, columns) -> str:
    """The one text spelling "not rated" besides a blank cell ("" if none is declared).

    Raises
    ------
    BuildError
        The declared missing-answer tokens differ between rating ``columns``.
    """
    declared = options.mapping.declared
    tokens = declared.missing_tokens() if declared else {}
    token = tokens.get("*", "")
    if any(tokens.get(c, token) != token for c in columns):
        raise BuildError("the recommender mode reads one missing-answer token for every rating column")
    return token


def fit_model(R: np.ndarray, options: RecommenderOptions, *,
              progress: Callable[[float], None] | None = None) -> tuple[FactorModel, dict]:
    """The factor model of ratings ``R`` and the validation RMSE of each penalty tried.

    ``R`` is (n, m; NaN = not rated; no row without a rating). :func:`._factors.choose_reg` unless
    ``options.reg`` is given, then :func:`._factors.fit_factors`, both drawing from one generator
    seeded by ``options.mapping.seed``; ``progress`` is told the fraction done after each penalty
    tried and the final fit. Raises :class:`BuildError` as they do (too few ratings).
    """
    rng = np.random.default_rng(options.mapping.seed)
    tried = None if progress is None else (lambda f: progress(0.9 * f))
    reg, scores = ((options.reg, {}) if options.reg is not None
                   else choose_reg(R, rank=options.rank, rng=rng, progress=tried))
    model = fit_factors(R, rank=options.rank, reg=reg, rng=rng)
    if progress is not None:
        progress(1.0)
    return model, scores


def rating_model(schema, token: str, model: FactorModel | Any, scores: dict, *, dropped_rows: int,
                 missing_cell_fraction: float, sha256: str) -> RatingModel:
    """The :class:`RatingModel` of ratings whose columns :func:`privmap.offline.data.resolve` gave ``schema``.

    The domain spans every column's (one lowest and one highest rating), whole numbers when every
    column holds them.
    """
    return RatingModel(columns=tuple(c.name for c in schema), lo=min(float(c.min) for c in schema),
                       hi=max(float(c.max) for c in schema), integer=all(c.integer for c in schema),
                       missing_token=token, model=model, reg_scores=scores, dropped_rows=dropped_rows,
                       inferred=any("domain" in c.inferred for c in schema),
                       missing_cell_fraction=missing_cell_fraction, sha256=sha256)


def recommender_result(built: Build, fitted: RatingModel, options: RecommenderOptions) -> Result:
    """The quantized pipeline's build on the factor points made a recommender bundle's.

    In memory or partitioned: the model in the payload, the ratings' figures among the metrics,
    and the ratings' rows left out and SHA-256 in place of the points' (which the pipeline saw).
    """
    payload = dict(built.payload)
    payload["mechanism"] = MECHANISM
    payload["model"] = fitted.model.payload(fitted.columns, _bound(fitted.lo, fitted.integer),
                                            _bound(fitted.hi, fitted.integer), fitted.integer,
                                            fitted.missing_token, options.decimals)
    payload["metrics"] = {**payload["metrics"], "rows_all_missing_dropped": fitted.dropped_rows,
                          "missing_cell_fraction": fitted.missing_cell_fraction,
                          "rating_columns": len(fitted.columns), "factor_rank": fitted.model.rank,
                          "factor_reg": fitted.model.reg}
    if fitted.reg_scores:
        payload["metrics"]["factor_validation_rmse"] = fitted.reg_scores[fitted.model.reg]
    payload["provenance"] = {**payload["provenance"], "data_sha256": fitted.sha256, "utility": "recommender"}
    detail = RecommenderBuild(**{f.name: getattr(built, f.name) for f in dataclasses.fields(Build)},
                              fitted=fitted)
    return Result("recommender", payload, dataclasses.replace(detail, payload=payload,
                                                              dropped_rows=fitted.dropped_rows))


def factor_names(rank: int) -> tuple[str, ...]:
    """The factor space's feature names: factor_0 (the user-bias axis) .. factor_<rank>."""
    return tuple(f"{FACTOR_PREFIX}{i}" for i in range(rank + 1))


@dataclass(frozen=True)
class RecommenderBuild(Build):
    """A recommender build's record: the quantized pipeline's on the factor points, and ``fitted``.

    ``fitted`` is the ratings' domain and the fitted model.
    """

    fitted: RatingModel | None = None


def factor_options(options: QuantizedOptions) -> QuantizedOptions:
    """The mapping's options as the factor space takes them.

    The declared domains are the ratings' (the factor points' domain is inferred from them).
    """
    return dataclasses.replace(options, declared=None)


def _bound(value: float, integer: bool):
    return int(value) if integer else float(value)
