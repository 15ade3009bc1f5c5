"""Measuring what a bundle delivers, whatever its mechanism: the bundle report, curves and baselines.

A bundle is measured by its mechanism's evaluation view (the registry
:func:`privmap.offline.mechanisms.view_of` dispatches on the payload's ``mechanism``) with what
any release is measured by (:mod:`privmap.offline.measures`: attackers, drift, utility, plots).

Private modules: ``_bundle_report`` (a bundle measured on labelled rows, as ``privmap evaluate``
and the notebook API report it), ``_curve`` (privacy-distortion sweeps), ``_baselines``
(constant release, randomized response and quantization alone: the figures a bundle must beat),
``_audit`` (a bundle audited from outside with the operator's training users, ``evaluate --train``),
``_exposure`` (the share of users whose release raises the odds of their own class 2x or 4x).
"""
from ._audit import audit_bundle, format_audit
from ._baselines import (
    DEFAULT_EPSILONS,
    baselines,
    bundle_baselines,
    channel_release,
    constant_release,
    format_baselines,
    format_quantization_alone,
    ldp_epsilon_bound_bits,
    oue_channel,
    per_output_leakage,
    quantization_alone,
    randomized_response,
    rr_channel,
)
from ._bundle_report import declared, evaluate_table_bundle, format_declared, format_table_report, load_for
from ._curve import (
    COLUMN_POINT_FIGURES,
    CSV_COLUMNS,
    RECOMMENDER_COLUMNS,
    build_problem,
    format_table,
    json_points,
    point_columns,
    sweep,
    swept,
    write_csv,
)
from ._exposure import users_exposure

__all__ = ["evaluate_table_bundle", "format_table_report", "load_for", "declared", "format_declared",
           "sweep", "swept", "build_problem", "format_table", "write_csv", "json_points", "CSV_COLUMNS", "RECOMMENDER_COLUMNS",
           "COLUMN_POINT_FIGURES", "point_columns",
           "baselines", "bundle_baselines", "format_baselines", "format_quantization_alone", "DEFAULT_EPSILONS",
           "constant_release", "randomized_response", "quantization_alone", "rr_channel", "oue_channel",
           "channel_release", "ldp_epsilon_bound_bits", "per_output_leakage", "users_exposure", "audit_bundle",
           "format_audit"]
