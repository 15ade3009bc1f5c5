"""Stage 3 of a build: the mechanisms, each turning a dataset into an unsigned payload.

Private modules: ``_pipeline`` (the quantized and exact MI-optimal mappings of seed 000 and the
:func:`build` entry point), ``_erasure`` (the exact mechanism's alphabet of tuples and erasures),
``_funnel`` / ``_funnel_build`` (seed 003's greedy privacy funnel and its bundle),
``_maxcorr`` / ``_maxcorr_build`` (seed 002's marginal-only max-correlation design and its bundle).
"""
from ._funnel import FunnelResult, greedy_funnel
from ._funnel_build import FunnelBuild, FunnelOptions, build_funnel
from ._maxcorr import design_max_correlation, rho_m_squared, s_star_upper_bound
from ._maxcorr_build import MaxCorrBuild, MaxCorrOptions, build_max_correlation
from ._pipeline import MECHANISMS, Build, BuildOptions, build

__all__ = [
    "build", "Build", "BuildOptions", "MECHANISMS",
    "greedy_funnel", "FunnelResult", "build_funnel", "FunnelOptions", "FunnelBuild",
    "design_max_correlation", "rho_m_squared", "s_star_upper_bound",
    "build_max_correlation", "MaxCorrOptions", "MaxCorrBuild",
]
