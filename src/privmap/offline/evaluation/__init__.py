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
    baselines,
    channel_release,
    constant_release,
    format_quantization_alone,
    ldp_epsilon_bound_bits,
    oue_channel,
    per_output_leakage,
    quantization_alone,
    rr_channel,
)
from ._bundle_report import evaluate_table_bundle, format_table_report, load_for
from ._curve import build_problem, format_table, json_points, sweep, swept, write_csv

__all__ = ["evaluate_table_bundle", "format_table_report", "load_for",
           "sweep", "swept", "build_problem", "format_table", "write_csv", "json_points",
           "baselines", "format_quantization_alone",
           "constant_release", "quantization_alone", "rr_channel", "oue_channel",
           "channel_release", "ldp_epsilon_bound_bits", "per_output_leakage", "audit_bundle",
           "format_audit"]
