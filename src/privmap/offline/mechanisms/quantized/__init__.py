"""Seed 000's quantized mechanism (Algorithm 2) on the table engine.

Its face: :class:`QuantizedOptions` with the named guarantees (:class:`CrossFitting`,
:class:`RobustCertificate`, :class:`OutputLimit`, :class:`Auto`), :func:`build` (a
:class:`~privmap.offline.data.Dataset` in memory -> :class:`~privmap.offline.mechanisms.Result`),
:func:`build_partitioned` (the same build out of core, on Dask) and what it refuses out of core
(:func:`check_out_of_core`), :func:`build_points` (the build a model mode runs on its points),
the ``auto`` search (``_autotune``) and the users' check before it (:func:`check_enough_users`),
and its command (:func:`command_with`: ``privmap build quantized``, with the :class:`Mode` and
:class:`Alternative` records the registry hands in).
The stages it builds with are the table engine's (:mod:`privmap.offline.mechanisms.table`).

Private modules: ``_options`` (the options and :class:`Auto`), ``_build`` (:func:`build` with
the ``auto`` search, :func:`build_partitioned`, and what a build out of core refuses),
``_autotune`` (the ``auto`` search), ``_command`` (``privmap build quantized``, also ``privmap
build DATA``: its options, its body, its help), ``_enough`` (whether the users can meet its AUC target,
before the work).
"""
from .._seed000 import CrossFitting, OutputLimit, RobustCertificate
from ._build import (
    build,
    build_partitioned,
    build_points,
    check_out_of_core,
    out_of_core_reason,
    search_sample,
)
from ._command import Alternative, Mode, command_with
from ._enough import chance_auc_high, check_enough_users, users_needed
from ._options import Auto, QuantizedOptions

__all__ = ["QuantizedOptions", "CrossFitting", "RobustCertificate", "OutputLimit", "Auto",
           "build", "build_points", "build_partitioned", "check_out_of_core", "out_of_core_reason", "search_sample",
           "chance_auc_high", "check_enough_users", "users_needed", "command_with",
           "Mode", "Alternative"]
