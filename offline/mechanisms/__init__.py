"""Stage 3 of a build: the mechanisms, each turning a dataset into an unsigned payload.

Private modules: ``_pipeline`` (the quantized and exact MI-optimal mappings of seed 000 and the
:func:`build` entry point), ``_erasure`` (the exact mechanism's alphabet of tuples and erasures),
``_missing`` (the quantized alphabet under the "mask" and "impute" missing-answer policies),
``_codebook`` (released rows moved to the metric's optimum, then re-solved), ``_holdout`` (the
cross-fitted leakage for new users), ``_autotune`` (``--clusters auto`` / ``--smoothing auto``); for
real-valued rows ``_nullspace`` (seed 001), ``_gaussian`` (seed 004) and ``_realvalued`` (their
payloads); for categorical rows ``_funnel`` / ``_funnel_build`` (seed 003's greedy privacy funnel and its bundle),
``_maxcorr`` / ``_maxcorr_build`` (seed 002's marginal-only max-correlation design and its bundle).
"""
from .funnel._model import FunnelResult, greedy_funnel
from .funnel._build import FunnelBuild, FunnelOptions, build_funnel
from .realvalued._gaussian import GaussianModel, GreedyResult, fisher_information, greedy_noise
from ._header import HeaderOptions
from .maxcorr._design import design_max_correlation, rho_m_squared, s_star_upper_bound
from .maxcorr._build import MaxCorrBuild, MaxCorrOptions, build_max_correlation
from .quantized._missing import DEFAULT_MISSING, MISSING_POLICIES
from .realvalued._nullspace import NullspaceDirections, clean, fit_linear, nullspace_directions
from .quantized._pipeline import MECHANISMS, Build, BuildOptions, build
from .realvalued._build import RealBuild, build_gaussian, build_nullspace

__all__ = ["build", "Build", "BuildOptions", "MECHANISMS", "MISSING_POLICIES", "DEFAULT_MISSING",
           "build_nullspace", "build_gaussian", "RealBuild", "HeaderOptions",
           "GaussianModel", "GreedyResult", "greedy_noise", "fisher_information",
           "NullspaceDirections", "nullspace_directions", "clean", "fit_linear",
           "greedy_funnel", "FunnelResult", "build_funnel", "FunnelOptions", "FunnelBuild",
           "design_max_correlation", "rho_m_squared", "s_star_upper_bound",
           "build_max_correlation", "MaxCorrOptions", "MaxCorrBuild"]
