"""Seed 002: the marginal-only max-correlation design (P_X alone), one slice: its options, build,
evaluation view and command.

Its face: :class:`MaxCorrelationOptions`, :func:`build` (a public categorical CSV -> a
:class:`~privmap.offline.mechanisms.Result` whose ``detail`` is a :class:`MaxCorrelationRecord`),
the design (:func:`design_max_correlation`, :func:`rho_m_squared` and the S* bounds), the evaluation
view (:func:`compare_max_correlation`) and ``command`` (``privmap build max-correlation``).

Private modules: ``_options``, ``_design`` (the design and rho_m^2), ``_build`` (its table as a
bundle payload), ``_view``, ``_command``.
"""
from ._build import MAX_INPUTS, MaxCorrelationRecord, build, read_public
from ._command import max_correlation as command
from ._design import (
    MaxCorrResult,
    design_max_correlation,
    joint_from_q,
    rho_m_squared,
    s_star_lower_bound,
    s_star_upper_bound,
    witsenhausen_q,
)
from ._options import MAXCORR_BITS, MaxCorrelationOptions
from ._view import compare_max_correlation

__all__ = ["MaxCorrelationOptions", "MAXCORR_BITS", "MAX_INPUTS", "build", "MaxCorrelationRecord", "read_public",
           "command", "design_max_correlation", "MaxCorrResult", "rho_m_squared", "s_star_lower_bound",
           "s_star_upper_bound", "witsenhausen_q", "joint_from_q", "compare_max_correlation"]
