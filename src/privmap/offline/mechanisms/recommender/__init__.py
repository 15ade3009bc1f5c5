"""The recommender mechanism: program (19) over users' latent taste.

It releases full rows of predicted ratings.

Its face: :class:`RecommenderOptions` (the quantized mapping's options and the factor model's),
:func:`build` (labelled ratings in memory -> :class:`~privmap.offline.mechanisms.Result`),
:func:`build_partitioned` (the same build on partitioned ratings, out of core on Dask), and its
evaluation view. Private modules: ``_options`` (:class:`RecommenderOptions`), ``_build`` (the
build in memory, and ``recommender_result`` that makes the quantized pipeline's payload a
recommender bundle's on both paths), ``_command`` (its part of ``privmap build --utility
recommender``: :data:`MODE`, the mode the quantized command is handed), ``_partitioned`` (the
build out of core: the model fitted on a sample, every partition folded in), ``_factors`` (the
factor model), ``_calibrate`` (the released rows fitted to the ratings of the users who release
them), ``_view`` (the evaluation view: the released rows of predicted ratings measured on
labelled rows).
"""
from ._build import (
    Prepared,
    RatingModel,
    RecommenderBuild,
    build,
    factor_options,
    missing_token,
    prepare,
    rating_model,
)
from ._calibrate import calibrate_payload, calibrated_outputs, pooled_sums
from ._command import MODE
from ._factors import DEFAULT_RANK, choose_reg, fit_factors
from ._options import RecommenderOptions
from ._partitioned import (
    PartitionedMode,
    build_model_partitioned,
    build_partitioned,
    sample_ratings,
)
from ._view import FactorView, lookup_points, model_view_parts, rms_gaps, view_of_recommender

__all__ = ["MODE", "RecommenderOptions", "build",
           "build_partitioned", "RecommenderBuild", "RatingModel", "Prepared", "prepare", "factor_options",
           "missing_token", "rating_model", "FactorView",
           "view_of_recommender", "model_view_parts", "lookup_points", "rms_gaps", "fit_factors",
           "choose_reg", "DEFAULT_RANK", "sample_ratings",
           "build_model_partitioned", "PartitionedMode", "pooled_sums",
           "calibrated_outputs", "calibrate_payload"]
