"""Seed 002: the marginal-only max-correlation design (P_X alone), one slice.

Its options, build, evaluation view and command.

Its face: :class:`MaxCorrelationOptions`, :func:`build` (a public categorical CSV -> a
:class:`~privmap.offline.mechanisms.Result` whose ``detail`` is a ``_build.MaxCorrelationRecord``),
the design's S* bounds (the design itself, ``design_max_correlation`` and ``rho_m_squared``, in
``_design``), the evaluation
view (:func:`compare_max_correlation`) and ``command`` (``privmap build max-correlation``).

Private modules: ``_options``, ``_design`` (the design and rho_m^2), ``_build`` (its table as a
bundle payload), ``_view``, ``_command``.
"""
from ._build import build
from ._command import max_correlation as command
from ._options import MAXCORR_BITS, MaxCorrelationOptions
from ._view import compare_max_correlation

__all__ = ["MaxCorrelationOptions", "MAXCORR_BITS", "build", "command", "compare_max_correlation"]
