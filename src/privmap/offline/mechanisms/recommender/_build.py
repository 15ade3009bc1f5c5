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
that output's predicted ratings for every column (:mod:`privmap.device.mechanisms._recommender`).

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
from ...data._dataset import Dataset
from ...data._schema import resolve
from ..quantized._pipeline import Build, BuildOptions, StageTimer, build_dataset, load_training
from ._factors import DEFAULT_RANK, MAX_RANK, FactorModel, choose_reg, fit_factors

__all__ = ["RecommenderOptions", "Prepared", "prepare", "build_prepared", "factor_options", "FACTOR_PREFIX"]

#: Names of the factor-space features in the bundle: factor_0 (the user-bias axis) .. factor_rank.
FACTOR_PREFIX = "factor_"


@dataclass(frozen=True, kw_only=True)
class RecommenderOptions:
    """How the ratings are modelled: the latent ``rank``, the ridge penalty ``reg`` (None:
    chosen by validation among :data:`._factors.CANDIDATE_REGS`), and the ``decimals`` released
    ratings are rounded to.

    Raises
    ------
    BuildError
        At construction, for a value out of range.
    """

    rank: int = DEFAULT_RANK
    reg: float | None = None
    decimals: int = 2

    def __post_init__(self):
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


def prepare(csv_path, options: BuildOptions, rec: RecommenderOptions, *, progress=None) -> Prepared:
    """Read the training ratings of ``csv_path``, fit the factor model and fold every user in.

    Parameters
    ----------
    csv_path : path-like
        Labelled CSV: one column per item (blank = not rated) and ``options.private``.
    options : BuildOptions
        The build's options (``declared`` gives the rating domain; ``seed`` seeds the fit).
    rec : RecommenderOptions
    progress : callable(stage: str, fraction: float), optional

    Raises
    ------
    BuildError
        Bad data (DatasetError), a rating outside the declared domain, no ratings.
    """
    tell = progress or (lambda stage, fraction: None)
    tell("load", 0.0)
    dataset, dropped = load_training(csv_path, options)
    schema = resolve(dataset.features, dataset.public, options.declared)
    lo, hi = min(float(c.min) for c in schema), max(float(c.max) for c in schema)
    integer = all(c.integer for c in schema)
    tokens = options.declared.missing_tokens() if options.declared else {}
    token = tokens.get("*", "")
    if any(tokens.get(c, token) != token for c in dataset.features):
        raise BuildError("the recommender mode reads one missing-answer token for every rating column")
    tell("factors", 0.02)
    rng = np.random.default_rng(options.seed)
    R = dataset.public
    reg, scores = (rec.reg, {}) if rec.reg is not None else choose_reg(R, rank=rec.rank, rng=rng)
    model = fit_factors(R, rank=rec.rank, reg=reg, rng=rng)
    points = model.points(R)
    factors = Dataset(features=tuple(f"{FACTOR_PREFIX}{i}" for i in range(rec.rank + 1)), public=points,
                      private=dataset.private, classes=dataset.classes, private_name=dataset.private_name,
                      categorical=False, sha256=dataset.sha256)
    return Prepared(factors=factors, ratings=R, columns=dataset.features, lo=lo, hi=hi, integer=integer,
                    missing_token=token, model=model, reg_scores=scores, dropped_rows=dropped,
                    inferred=any("domain" in c.inferred for c in schema))


def build_prepared(prepared: Prepared, options: BuildOptions, rec: RecommenderOptions, *, progress=None,
                   holdout=None, solved=None) -> Build:
    """The seed-000 pipeline on ``prepared.factors``, its payload made a recommender bundle's.

    ``holdout`` and ``solved`` are as in :func:`privmap.offline.mechanisms.quantized._pipeline.build`
    (what ``--clusters auto`` measured). The options' metric must be l2 and its domain
    declarations are the ratings' (the factor space's domain is inferred from the points).

    Raises
    ------
    BuildError
        As the pipeline.
    """
    if options.metric != "l2":
        raise BuildError("the recommender mode measures distortion in stars (l2 over the factor space); "
                         f"--metric {options.metric} does not apply")
    tell = StageTimer(progress)
    tell("load", 0.0)
    built = build_dataset(prepared.factors, factor_options(options), tell, dropped_rows=prepared.dropped_rows,
                          holdout=holdout, solved=solved)
    payload = dict(built.payload)
    payload["mechanism"] = "recommender"
    payload["model"] = prepared.model.payload(prepared.columns, _bound(prepared.lo, prepared.integer),
                                              _bound(prepared.hi, prepared.integer), prepared.integer,
                                              prepared.missing_token, rec.decimals)
    ratings = prepared.ratings
    payload["metrics"] = {**payload["metrics"], "missing_cell_fraction": float(np.isnan(ratings).mean()),
                          "rating_columns": len(prepared.columns), "factor_rank": prepared.model.rank,
                          "factor_reg": prepared.model.reg}
    if prepared.reg_scores:
        payload["metrics"]["factor_validation_rmse"] = prepared.reg_scores[prepared.model.reg]
    payload["provenance"] = {**payload["provenance"], "utility": "recommender"}
    return dataclasses.replace(built, payload=payload)


def factor_options(options: BuildOptions) -> BuildOptions:
    """The build's options as the factor space takes them: the declared domains are the ratings'
    (the factor points' domain is inferred from them), and a point has no missing coordinate."""
    return dataclasses.replace(options, declared=None, missing="mask")


def _bound(value: float, integer: bool):
    return int(value) if integer else float(value)
