"""The recommendation-grade build (``privmap build --utility recommender``): program (19) solved
over the latent taste of users, so that the released row is what a recommender can use.

Quantizing a sparse, wide ratings row straight into K centres loses most of the taste before
privacy costs anything: most cells are blank, and k-means on them spends its centres on which
items were rated. Here a latent-factor model (:mod:`._factors`) is fitted to the training
ratings, every user is folded into a point of its whitened factor space (rank + 1 coordinates
whose Euclidean distance is the root mean square difference of predicted ratings, in stars),
and the seed-000 pipeline runs on those points unchanged: k-means, the prior p(a, c), program
(19) with the l2 metric, the codebook step, compression, the cross-fitted new-user leakage,
``--clusters auto`` and ``--robust``. The bundle carries the item side of the model; the device
folds its user's ratings in, finds the nearest centre, samples the released output and releases
that output's predicted ratings for every column (:mod:`privmap.device.kinds.recommender`).

What the declared figures mean here: the leakage is I(A; C^) of the released output, and the
released row is a function of that output alone, so it leaks no more. The distortion is the
mean root-mean-square difference (stars, over all columns, before clipping to the rating
domain; clipping only shrinks it) between the predicted ratings of a user's own factor and of
the released output. The factor model is fitted on all training users, the private attribute
unseen; the cross-fitted folds refit the mapping, not the model (the model sees no attribute).
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from ..._errors import BuildError
from ...data import Dataset, resolve
from .._result import Result
from ..quantized import Build, QuantizedOptions, build_points, start
from ._factors import DEFAULT_RANK, MAX_RANK, FactorModel, choose_reg, fit_factors

__all__ = ["RecommenderOptions", "RecommenderBuild", "Prepared", "build", "prepare", "build_prepared", "FACTOR_PREFIX"]

#: Names of the factor-space features in the bundle: factor_0 (the user-bias axis) .. factor_rank.
FACTOR_PREFIX = "factor_"


@dataclass(frozen=True, kw_only=True)
class RecommenderOptions:
    """The recommender's options: ``mapping``, the quantized mechanism's options that map the
    factor points (its ``declared`` domains are the ratings'; ``seed`` also seeds the fit), and
    how the ratings are modelled: the latent ``rank``, the ridge penalty ``reg`` (None: chosen
    by validation among :data:`._factors.CANDIDATE_REGS`), and the ``decimals`` released ratings
    are rounded to.

    Raises
    ------
    BuildError
        At construction, for a value out of range, or a mapping that is not the l2 metric with
        blank cells as unrated (the distortion is in stars over the factor space).
    """

    mapping: QuantizedOptions
    rank: int = DEFAULT_RANK
    reg: float | None = None
    decimals: int = 2

    def __post_init__(self):
        if self.mapping.metric != "l2" or self.mapping.missing != "mask":
            raise BuildError("--utility recommender maps latent taste with the quantized mechanism, the l2 metric "
                             "(stars) and blank cells as unrated (--missing mask)")
        if not 1 <= self.rank <= MAX_RANK:
            raise BuildError(f"--factors must be in 1..{MAX_RANK}, got {self.rank}")
        if self.reg is not None and not (math.isfinite(self.reg) and self.reg > 0):
            raise BuildError(f"--factor-reg must be a finite number > 0, got {self.reg}")
        if not 0 <= self.decimals <= 6:
            raise BuildError(f"decimals must be in 0..6, got {self.decimals}")


@dataclass(frozen=True)
class Prepared:
    """The training ratings turned into factor points, ready for the seed-000 pipeline.

    ``factors`` is the :class:`Dataset` of points (n, rank + 1) with the ratings' private column;
    ``ratings`` the ratings (n, m; NaN = not rated) in ``columns`` order; ``lo``, ``hi``,
    ``integer`` and ``missing_token`` the rating domain; ``model`` the fitted model;
    ``reg_scores`` the validation RMSE of each penalty tried (empty when ``reg`` was given);
    ``dropped_rows`` the rows left out for rating nothing; ``inferred`` whether the domain was
    inferred from the data (not declared).
    """

    factors: Dataset
    ratings: np.ndarray
    columns: tuple[str, ...]
    lo: float
    hi: float
    integer: bool
    missing_token: str
    model: FactorModel
    reg_scores: dict
    dropped_rows: int
    inferred: bool


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
        As :func:`prepare` and the quantized pipeline.
    """
    tell, rows, dropped = start(dataset, progress)
    tell("factor-model", 0.0)
    prepared = prepare(rows, options, dropped_rows=dropped)
    return build_prepared(prepared, options, tell)


def prepare(dataset: Dataset, options: RecommenderOptions, *, dropped_rows: int = 0) -> Prepared:
    """Fit the factor model to the training ratings and fold every user in.

    Parameters
    ----------
    dataset : Dataset
        The ratings (no row without a rating), ``dropped_rows`` those left out.
    options : RecommenderOptions
        ``mapping.declared`` gives the rating domain; ``mapping.seed`` seeds the fit.

    Raises
    ------
    BuildError
        A rating outside the declared domain, missing-answer tokens that differ by column.
    """
    declared = options.mapping.declared
    schema = resolve(dataset.features, dataset.public, declared)
    lo, hi = min(float(c.min) for c in schema), max(float(c.max) for c in schema)
    integer = all(c.integer for c in schema)
    tokens = declared.missing_tokens() if declared else {}
    token = tokens.get("*", "")
    if any(tokens.get(c, token) != token for c in dataset.features):
        raise BuildError("the recommender mode reads one missing-answer token for every rating column")
    rng = np.random.default_rng(options.mapping.seed)
    R = dataset.public
    reg, scores = (options.reg, {}) if options.reg is not None else choose_reg(R, rank=options.rank, rng=rng)
    model = fit_factors(R, rank=options.rank, reg=reg, rng=rng)
    points = model.points(R)
    factors = Dataset(features=tuple(f"{FACTOR_PREFIX}{i}" for i in range(options.rank + 1)), public=points,
                      private=dataset.private, classes=dataset.classes, private_name=dataset.private_name,
                      categorical=False, sha256=dataset.sha256, columns=dataset.columns)
    return Prepared(factors=factors, ratings=R, columns=dataset.features, lo=lo, hi=hi, integer=integer,
                    missing_token=token, model=model, reg_scores=scores, dropped_rows=dropped_rows,
                    inferred=any("domain" in c.inferred for c in schema))


def build_prepared(prepared: Prepared, options: RecommenderOptions, tell) -> Result:
    """The quantized pipeline (with its ``auto`` search, if any) on ``prepared.factors``, its
    payload made a recommender bundle's; ``tell`` is the build's
    :class:`~privmap.offline.mechanisms.quantized.StageTimer`. The mapping's domain declarations
    are the ratings' (the factor space's domain is inferred from the points). Raises as the
    pipeline."""
    built = build_points(prepared.factors, _factor_options(options.mapping), tell,
                         dropped_rows=prepared.dropped_rows)
    payload = dict(built.payload)
    payload["mechanism"] = "recommender"
    payload["model"] = prepared.model.payload(prepared.columns, _bound(prepared.lo, prepared.integer),
                                              _bound(prepared.hi, prepared.integer), prepared.integer,
                                              prepared.missing_token, options.decimals)
    ratings = prepared.ratings
    payload["metrics"] = {**payload["metrics"], "missing_cell_fraction": float(np.isnan(ratings).mean()),
                          "rating_columns": len(prepared.columns), "factor_rank": prepared.model.rank,
                          "factor_reg": prepared.model.reg}
    if prepared.reg_scores:
        payload["metrics"]["factor_validation_rmse"] = prepared.reg_scores[prepared.model.reg]
    payload["provenance"] = {**payload["provenance"], "utility": "recommender"}
    detail = RecommenderBuild(**{f.name: getattr(built, f.name) for f in dataclasses.fields(Build)},
                              prepared=prepared)
    return Result("recommender", payload, dataclasses.replace(detail, payload=payload))


@dataclass(frozen=True)
class RecommenderBuild(Build):
    """A recommender build's record: the quantized pipeline's on the factor points, and
    ``prepared`` (the ratings, their domain and the fitted model)."""

    prepared: Prepared | None = None


def _factor_options(options: QuantizedOptions) -> QuantizedOptions:
    """The mapping's options as the factor space takes them: the declared domains are the ratings'
    (the factor points' domain is inferred from them)."""
    return dataclasses.replace(options, declared=None)


def _bound(value: float, integer: bool):
    return int(value) if integer else float(value)
