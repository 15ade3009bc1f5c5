"""Stage 3 of a build: the mechanisms, each turning a dataset into an unsigned payload.

One private sub-package per mechanism, its model and its build side by side:

- ``quantized/``: seed 000's MI-optimal mapping, quantized (k-means) or exact (tuples and erasures):
  ``_program`` (options, alphabet, prior, program (19), codebook step), ``_pipeline`` (:func:`build`),
  ``_codebook``, ``_missing``, ``_erasure``, ``_holdout`` (cross-fitted leakage for new users),
  ``_autotune`` (``--clusters auto``), ``_partitioned_build`` (out of core on Dask);
- ``funnel/``: seed 003's greedy privacy funnel (``_model``) and its bundle (``_build``);
- ``maxcorr/``: seed 002's marginal-only max-correlation design (``_design``) and its bundle (``_build``);
- ``realvalued/``: seeds 001 (``_nullspace``) and 004 (``_gaussian``) and their payloads (``_build``).

``_header`` holds the header every mechanism's bundle starts with (:class:`HeaderOptions`),
``_seed000`` the options seed 000's two mechanisms share with their guarantees, ``_result`` the
one shape every build returns (:class:`Result`).
"""
from .funnel._model import FunnelResult, greedy_funnel
from .funnel._build import FunnelBuild, FunnelOptions, build_funnel
from .realvalued._gaussian import GaussianModel, GreedyResult, fisher_information, greedy_noise
from ._header import HeaderOptions
from .maxcorr._design import design_max_correlation, rho_m_squared, s_star_upper_bound
from .maxcorr._build import MaxCorrBuild, MaxCorrOptions, build_max_correlation
from .realvalued._nullspace import NullspaceDirections, clean, fit_linear, nullspace_directions
from ._result import Result
from ._views import VIEWS, view_of
from .exact import ExactOptions
from .quantized import (
    DEFAULT_MISSING,
    MISSING_POLICIES,
    Auto,
    Build,
    CrossFitting,
    OutputLimit,
    QuantizedOptions,
    RobustCertificate,
)
from .recommender import RecommenderOptions
from .realvalued._build import RealBuild, build_gaussian, build_nullspace

__all__ = ["Result", "VIEWS", "view_of", "QuantizedOptions", "ExactOptions", "RecommenderOptions", "CrossFitting", "RobustCertificate",
           "OutputLimit", "Auto", "Build", "MISSING_POLICIES", "DEFAULT_MISSING",
           "build_nullspace", "build_gaussian", "RealBuild", "HeaderOptions",
           "GaussianModel", "GreedyResult", "greedy_noise", "fisher_information",
           "NullspaceDirections", "nullspace_directions", "clean", "fit_linear",
           "greedy_funnel", "FunnelResult", "build_funnel", "FunnelOptions", "FunnelBuild",
           "design_max_correlation", "rho_m_squared", "s_star_upper_bound",
           "build_max_correlation", "MaxCorrOptions", "MaxCorrBuild"]
