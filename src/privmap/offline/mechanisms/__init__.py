"""Stage 3 of a build: the mechanisms, each turning a dataset into an unsigned payload.

One private sub-package per mechanism, its model and its build side by side:

- ``table/``: seed 000's table engine, naming no mechanism: the stages the quantized and exact
  mechanisms and the recommender and ranking modes build with: ``_rows`` (the rows backend the
  stages are written against), ``_in_memory`` and ``_partitioned`` (its backends: rows in memory,
  partitions on Dask), ``_program`` (alphabet, prior, program (19), codebook step), ``_pipeline``
  (compression, metrics, cross-fitting, payload), ``_codebook``, ``_missing``, ``_erasure``,
  ``_holdout`` (cross-fitted leakage for new users), ``_view`` (the evaluation view of a table);
  and the kit a table build command is written with: ``_command`` (the options every table
  build takes, and the report), ``_run`` and ``_out_of_core`` (the build run, in memory or on
  Dask);
- ``quantized/``: seed 000's MI-optimal mapping on k-means representatives, on that engine, with
  ``_autotune`` (``--clusters auto``) and its command (``privmap build quantized``, also
  ``privmap build DATA``), handed its ``--utility`` modes and ``--mechanism`` alternatives;
- ``exact/``, ``recommender/`` and ``ranking/``: seed 000's exact mechanism (tuples and erasures,
  ``privmap build exact``, and the quantized command's ``--mechanism exact``) and the quantized
  one's recommender (latent taste) and ranking (top-N scores) modes, each its options, build and
  ``_command`` on those stages;
- ``funnel/``, ``max_correlation/``, ``gaussian/``, ``nullspace/``: seeds 003, 002, 004 and 001, each
  one vertical slice behind its face: options, model, build, evaluation view and command
  (``privmap build funnel``, ...).

``_categorical`` holds the alphabet of categorical tuples the funnel and max-correlation share,
``_real_columns``, ``_real_attacks`` and ``_real_report`` what the gaussian and nullspace builds,
views and commands share; ``_header`` the header every mechanism's bundle starts with (``HeaderOptions``),
``_seed000`` the options seed 000's two mechanisms share with their guarantees, ``_result`` the
one shape every build returns (:class:`Result`). ``_registry`` holds every mechanism's record
(:data:`MECHANISMS`): what the commands and calls serving all of them ask of each one; it makes
the quantized command, handing it the modes and the exact mechanism.
"""
from ._registry import MECHANISMS, Mechanism, mechanism_of, quantized_command, view_of
from ._result import Result
from .exact import ExactOptions
from .funnel import FunnelOptions
from .gaussian import GaussianOptions
from .max_correlation import MaxCorrelationOptions
from .nullspace import NullspaceOptions
from .quantized import Auto, CrossFitting, OutputLimit, QuantizedOptions, RobustCertificate
from .recommender import RecommenderOptions
from .table import column_lines, robust_line

__all__ = ["Result", "MECHANISMS", "Mechanism", "mechanism_of", "view_of", "QuantizedOptions", "ExactOptions",
           "RecommenderOptions", "CrossFitting", "RobustCertificate", "OutputLimit", "Auto",
           "FunnelOptions", "MaxCorrelationOptions",
           "GaussianOptions", "NullspaceOptions", "quantized_command", "robust_line", "column_lines"]
