"""Seed 000's quantized mechanism (Algorithm 2) on the table engine (:mod:`..table`).

Its face: :class:`QuantizedOptions` with the named guarantees (:class:`CrossFitting`,
:class:`RobustCertificate`, :class:`OutputLimit`, :class:`Auto`), :func:`build` (a
:class:`~privmap.offline.data.Dataset` in memory -> :class:`~privmap.offline.mechanisms.Result`),
:func:`build_partitioned` (the same build out of core, on Dask), and, for the callers written
against it, the engine's stages, rows' backends and evaluation view it builds with
(:mod:`privmap.offline.mechanisms.table`).

Private modules: ``_options`` (the options and :class:`Auto`), ``_build`` (:func:`build` with
the ``auto`` search, :func:`build_partitioned`, and what a build out of core refuses),
``_autotune`` (the ``auto`` search), ``_enough`` (whether the users can meet its AUC target,
before the work).
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
from ._enough import chance_auc_high, check_enough_users, users_needed
from ._options import PRIORS, Auto, QuantizedOptions
from ..table import (
    DEFAULT_MISSING,
    ERASED,
    IN_CORE_BYTES,
    KMEANS,
    MISSING_POLICIES,
    STARTS,
    Alphabet,
    Build,
    build_rows,
    BuildStart,
    categorical_code,
    check_only_erases,
    check_partitioned,
    cross_fitted_leakage,
    dask_client,
    erasure_distortion,
    erasure_problem,
    evaluate_view,
    Evaluation,
    fold_options,
    FoldKMeans,
    format_cell,
    format_summary,
    HoldoutLeakage,
    in_core,
    InMemoryRows,
    input_alphabet,
    lookup,
    MappingView,
    metric_center,
    most_probable_mapping,
    PartitionedRows,
    rated_figures,
    recommender_figures,
    refine,
    Rows,
    solve_prior,
    solve_rows,
    Solved,
    SourceSummary,
    StageTimer,
    start,
    start_cross_fitting,
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
