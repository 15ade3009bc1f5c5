"""Stage 3 of a build: the mechanisms, each turning a dataset into an unsigned payload.

Private modules: ``_pipeline`` (the quantized and exact MI-optimal mappings of seed 000 and the
:func:`build` entry point), ``_erasure`` (the exact mechanism's alphabet of tuples and erasures),
``_missing`` (the quantized alphabet under the "mask" and "impute" missing-answer policies),
``_codebook`` (released rows moved to the metric's optimum, then re-solved), ``_holdout`` (the
cross-fitted leakage for new users), ``_autotune`` (``--clusters auto`` / ``--smoothing auto``); for
real-valued rows ``_nullspace`` (seed 001), ``_gaussian`` (seed 004) and ``_realvalued`` (their
payloads).
"""
from ._gaussian import GaussianModel, GreedyResult, fisher_information, greedy_noise
from ._missing import DEFAULT_MISSING, MISSING_POLICIES
from ._nullspace import NullspaceDirections, clean, fit_linear, nullspace_directions
from ._pipeline import MECHANISMS, Build, BuildOptions, build
from ._realvalued import HeaderOptions, RealBuild, build_gaussian, build_nullspace

__all__ = ["build", "Build", "BuildOptions", "MECHANISMS", "MISSING_POLICIES", "DEFAULT_MISSING",
           "build_nullspace", "build_gaussian", "RealBuild", "HeaderOptions",
           "GaussianModel", "GreedyResult", "greedy_noise", "fisher_information",
           "NullspaceDirections", "nullspace_directions", "clean", "fit_linear"]
