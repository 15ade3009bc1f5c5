"""Seed 000's table engine: the stages a table mechanism builds with, naming no mechanism.

A table mechanism (the quantized and exact mechanisms, and the recommender and ranking modes on
the quantized one) passes its options (:class:`~privmap.offline.mechanisms._seed000.Seed000Options`,
whose ``quantizes`` says which alphabet its rows take) and its rows to the engine, and gets a
:class:`Build` back: alphabet, prior, program (19) with its guarantees (robust certificate,
per-output limit), the codebook step, the cross-fitted leakage for new users, and the payload;
:class:`MappingView` is the evaluation view of any table bundle.

Private modules: ``_rows`` (the rows backend the stages are written against, and the alphabet),
``_in_memory`` and ``_partitioned`` (its backends: rows in memory, partitions on a Dask cluster),
``_pipeline`` (integer table, metrics, cross-fitting, payload; :class:`StageTimer`), ``_program``
(alphabet, prior, program (19), codebook step), ``_missing`` (k-means representatives under the
"mask" and "impute" missing-answer policies), ``_erasure`` (the alphabet of observed tuples and
their erasures), ``_class_blind`` (clusters with the classes' mean differences projected out),
``_codebook`` (released rows moved to the metric's optimum, then re-solved), ``_holdout`` (the
cross-fitted leakage for new users), ``_tasks`` (the folds' worker processes), ``_reuse`` (folds
started from the build's answers), ``_view`` (the evaluation view).

A table mechanism's command is written with the engine's kit too: ``_command`` (the options every
table build takes, the command made from a slice's body, and its report: the bundle signed and
written, and the summary), ``_run`` (DATA opened, the key loaded, the build run),
``_out_of_core`` (which DATA a command builds partitioned, and that build on a Dask cluster).
"""
from ._codebook import metric_center, refine
from ._command import (
    TABLE_OPTIONS,
    TABLE_SECTIONS,
    TableOption,
    Told,
    column_lines,
    needs_private,
    private_columns,
    report,
    robust_line,
    table_command,
    table_keywords,
)
from ._erasure import (
    categorical_code,
    erasure_problem,
    format_cell,
    input_alphabet,
    lookup,
    most_probable_mapping,
)
from ._holdout import (
    CONFIDENCE,
    STARTS,
    FoldKMeans,
    HoldoutLeakage,
    PendingAttackers,
    attack_pending,
    cross_fitted_leakage,
    cross_fitted_many,
    fold_options,
)
from ._in_memory import InMemoryRows
from ._missing import DEFAULT_MISSING, MISSING_POLICIES
from ._out_of_core import OutOfCore
from ._partitioned import IN_CORE_BYTES, PartitionedRows, SourceSummary, in_core
from ._pipeline import Build, StageTimer, build_rows, start
from ._program import Solved, solve_rows
from ._reuse import BuildStart, starts_folds
from ._rows import Progress
from ._run import Placement, run
from ._view import (
    MappingView,
    evaluate_view,
    format_summary,
    rated_figures,
    table_probabilities,
    view_from_bundle,
    view_from_payload,
    view_from_table,
    view_release,
)

__all__ = ["build_rows", "start", "Build", "StageTimer", "Progress", "InMemoryRows",
           "PartitionedRows", "SourceSummary", "in_core", "IN_CORE_BYTES", "Solved", "solve_rows", "metric_center",
           "refine", "HoldoutLeakage", "cross_fitted_leakage",
           "cross_fitted_many", "PendingAttackers", "attack_pending",
           "FoldKMeans", "STARTS", "CONFIDENCE", "fold_options",
           "BuildStart", "starts_folds", "DEFAULT_MISSING", "MISSING_POLICIES", "erasure_problem",
           "input_alphabet", "categorical_code", "lookup", "format_cell",
           "most_probable_mapping", "MappingView", "evaluate_view", "view_from_payload",
           "view_from_table", "view_from_bundle", "view_release", "table_probabilities", "format_summary",
           "rated_figures",
           "TableOption", "TABLE_OPTIONS", "TABLE_SECTIONS", "table_command", "private_columns", "needs_private",
           "table_keywords", "Placement", "OutOfCore", "run", "Told", "report", "robust_line",
           "column_lines"]
