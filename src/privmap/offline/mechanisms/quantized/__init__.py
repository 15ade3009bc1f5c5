"""Seed 000's quantized mechanism (Algorithm 2), and the seed-000 stages the exact mechanism shares.

Its face: :class:`QuantizedOptions` with the named guarantees (:class:`CrossFitting`,
:class:`RobustCertificate`, :class:`OutputLimit`, :class:`Auto`), :func:`build` (a
:class:`~privmap.offline.data.Dataset` in memory -> :class:`~privmap.offline.mechanisms.Result`),
:func:`build_partitioned` (the same build out of core, on Dask), the stages both run
(:func:`build_rows`, :func:`solve_rows`) with the rows' backends they are written against
(:class:`Rows`: :class:`InMemoryRows`, :class:`PartitionedRows`), and the evaluation view.

Private modules: ``_options`` (the options and :class:`Auto`), ``_build`` (:func:`build` with
the ``auto`` search, and :func:`build_partitioned`), ``_rows`` (the backend interface and the
alphabet), ``_in_memory`` and ``_partitioned`` (the backends: rows in memory, partitions on a Dask
cluster), ``_pipeline`` (integer table, metrics, cross-fitting, payload; :class:`StageTimer`),
``_program`` (alphabet, prior, program (19), codebook step), ``_erasure`` (the exact mechanism's
alphabet of tuples and erasures), ``_missing`` (the quantized alphabet under the "mask" and
"impute" missing-answer policies), ``_codebook`` (released rows moved to the metric's optimum,
then re-solved), ``_holdout`` (the cross-fitted leakage for new users), ``_tasks`` (the folds'
worker processes), ``_reuse`` (folds started from the build's answers), ``_autotune`` (the
``auto`` search), ``_enough`` (whether the users can meet its AUC target, before the work),
``_view`` (the evaluation view, the exact mechanism's too).
"""
from .._seed000 import CrossFitting, OutputLimit, RobustCertificate, Seed000Options
from ._autotune import (
    CANDIDATE_DELTA_FRACTIONS,
    CANDIDATE_SMOOTHING,
    Choice,
    candidate_clusters,
    choose,
    format_candidates,
)
from ._build import (
    SEARCH_USERS,
    build,
    build_partitioned,
    build_points,
    check_out_of_core,
    out_of_core_reason,
    search_sample,
)
from ._codebook import metric_center, refine
from ._enough import chance_auc_high, check_enough_users, users_needed
from ._erasure import (
    ERASED,
    categorical_code,
    check_only_erases,
    erasure_distortion,
    erasure_problem,
    format_cell,
    input_alphabet,
    lookup,
    most_probable_mapping,
)
from ._holdout import STARTS, FoldKMeans, HoldoutLeakage, cross_fitted_leakage, fold_options, start_cross_fitting
from ._missing import DEFAULT_MISSING, MISSING_POLICIES
from ._options import PRIORS, Auto, QuantizedOptions
from ._in_memory import InMemoryRows
from ._partitioned import (
    IN_CORE_BYTES,
    KMEANS,
    PartitionedRows,
    SourceSummary,
    check_partitioned,
    dask_client,
    in_core,
)
from ._pipeline import Build, StageTimer, build_rows, start
from ._program import Solved, solve_prior, solve_rows
from ._reuse import BuildStart
from ._rows import Alphabet, Rows
from ._view import (
    Evaluation,
    MappingView,
    evaluate_view,
    format_summary,
    rated_figures,
    recommender_figures,
    table_probabilities,
    view_from_bundle,
    view_from_payload,
    view_from_table,
    view_release,
)

__all__ = ["QuantizedOptions", "Seed000Options", "CrossFitting", "RobustCertificate", "OutputLimit", "Auto", "PRIORS",
           "build", "build_points", "build_rows", "start", "Build", "StageTimer",
           "Rows", "InMemoryRows", "PartitionedRows", "SourceSummary",
           "build_partitioned", "check_partitioned", "check_out_of_core", "in_core", "out_of_core_reason",
           "IN_CORE_BYTES", "search_sample", "SEARCH_USERS", "dask_client", "KMEANS",
           "metric_center", "refine", "choose", "Choice", "format_candidates", "candidate_clusters", "CANDIDATE_SMOOTHING",
           "CANDIDATE_DELTA_FRACTIONS", "HoldoutLeakage", "cross_fitted_leakage", "start_cross_fitting",
           "FoldKMeans", "STARTS", "fold_options", "BuildStart", "chance_auc_high", "check_enough_users", "users_needed",
           "Alphabet", "Solved", "solve_rows", "solve_prior", "DEFAULT_MISSING", "MISSING_POLICIES",
           "MappingView", "Evaluation", "evaluate_view", "view_from_payload", "view_from_table", "view_from_bundle",
           "view_release", "table_probabilities", "format_summary", "recommender_figures", "rated_figures",
           "ERASED", "erasure_problem", "erasure_distortion", "input_alphabet", "categorical_code", "check_only_erases", "lookup",
           "format_cell", "most_probable_mapping"]
